// The floor under hc_pre's decode calls on the H200: what CUDA-graph replay
// charges for the launch shapes a call can have, with kernels that do nothing
// (or only stream fn), in the grids of hidden 7168 at T = 1 (112 partial
// blocks of 128 threads, 2 finish blocks). Each figure: one graph of 72 calls
// in stream order, replayed 20 times after 3, the median per call.
//   one          one kernel
//   two          two kernels in stream order
//   two pdl      the second a programmatic dependent (launch_dependents at the
//                first's start, griddepcontrol.wait at the second's), as hc_pre's
//   memset+one   a 256-byte memset, then one kernel: a single launch that
//                needs a zeroed completion counter
//   fn           one kernel whose 112 blocks read fn (24 x 4 x 7168 f32,
//                2.75 MB; 72 copies, over 3x the L2) once, 16 bytes a thread
//                at a time with 4 loads in flight
//   fn+pdl       the same, then the 2-block dependent
//   memset+fn    the 256-byte memset, then the fn kernel
// Then the fn kernel alone in other grids: blocks x threads x 16-byte loads in
// flight per thread (how fast a decode call could read fn).
// Standalone: bench/experiments/build.sh launch_floor, then ./launch_floor.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda/ptx/grid_dependency.cuh"
#include "cuda_check.cuh"


namespace {

constexpr int kCalls = 72;
constexpr int kPartialBlocks = 112;
constexpr int kFinishBlocks = 2;
constexpr int kThreads = 128;
constexpr long long kFnFloats = 24LL * 4 * 7168;

using hcwarm_kernels::cuda::griddep_launch_dependents;
using hcwarm_kernels::cuda::griddep_wait;

__global__ void k_first(float* out) {
  griddep_launch_dependents();
  if (out != nullptr && threadIdx.x == 0 && blockIdx.x == 0) out[0] = 1.f;
}
__global__ void k_second(float* out) {
  griddep_wait();
  if (out != nullptr && threadIdx.x == 0 && blockIdx.x == 0) out[1] = 2.f;
}
// Block b sums its 1 / gridDim share of fn (float4s, four loads in flight per
// thread) and stores one float, so the loads cannot be dropped.
template <int UNROLL>
__global__ void k_fn(const float4* fn, long long n4, float* out) {
  griddep_launch_dependents();
  const long long per = (n4 + gridDim.x - 1) / gridDim.x;
  const long long begin = blockIdx.x * per, end = begin + per < n4 ? begin + per : n4;
  float s = 0.f;
  for (long long i = begin + threadIdx.x; i < end; i += (long long)UNROLL * blockDim.x) {
    float4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const long long j = i + (long long)u * blockDim.x;
      v[u] = j < end ? __ldg(fn + j) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) s += v[u].x + v[u].y + v[u].z + v[u].w;
  }
  if (s == 12345.f) out[2 + blockIdx.x] = s;  // never true for the zero-filled fn
}

void launch_pdl(void (*k)(float*), unsigned grid, float* out, cudaStream_t s) {
  cudaLaunchAttribute a;
  a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  a.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t c = {};
  c.gridDim = dim3(grid);
  c.blockDim = dim3(kThreads);
  c.stream = s;
  c.attrs = &a;
  c.numAttrs = 1;
  CK(cudaLaunchKernelEx(&c, k, out));
}

struct Ctx {
  cudaStream_t s;
  float* out;
  float* fn;  // kCalls copies
  void* counter;
};

void call(int pattern, int i, const Ctx& c) {
  switch (pattern) {
    case 0: k_first<<<kPartialBlocks, kThreads, 0, c.s>>>(c.out); break;
    case 1:
      k_first<<<kPartialBlocks, kThreads, 0, c.s>>>(c.out);
      k_second<<<kFinishBlocks, kThreads, 0, c.s>>>(c.out);
      break;
    case 2:
      k_first<<<kPartialBlocks, kThreads, 0, c.s>>>(c.out);
      launch_pdl(k_second, kFinishBlocks, c.out, c.s);
      break;
    case 3:
      CK(cudaMemsetAsync(c.counter, 0, 256, c.s));
      k_first<<<kPartialBlocks, kThreads, 0, c.s>>>(c.out);
      break;
    case 4:
    case 5:
    case 6:
      if (pattern == 6) CK(cudaMemsetAsync(c.counter, 0, 256, c.s));
      k_fn<4><<<kPartialBlocks, kThreads, 0, c.s>>>(reinterpret_cast<const float4*>(c.fn + i * kFnFloats), kFnFloats / 4,
                                                 c.out);
      if (pattern == 5) launch_pdl(k_second, kFinishBlocks, c.out, c.s);
      break;
  }
}

// The fn kernel in another grid (pattern -1).
struct FnGrid {
  int blocks, threads, unroll;
};
void call_fn(const FnGrid& f, int i, const Ctx& c) {
  const float4* fn = reinterpret_cast<const float4*>(c.fn + i * kFnFloats);
  switch (f.unroll) {
    case 4: k_fn<4><<<f.blocks, f.threads, 0, c.s>>>(fn, kFnFloats / 4, c.out); break;
    case 8: k_fn<8><<<f.blocks, f.threads, 0, c.s>>>(fn, kFnFloats / 4, c.out); break;
    default: k_fn<16><<<f.blocks, f.threads, 0, c.s>>>(fn, kFnFloats / 4, c.out); break;
  }
}

float time_graph(int pattern, const Ctx& c, FnGrid f = {}) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(c.s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kCalls; ++i) {
    if (pattern < 0) {
      call_fn(f, i, c);
    } else {
      call(pattern, i, c);
    }
  }
  CK(cudaStreamEndCapture(c.s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> us;
  for (int r = 0; r < 23; ++r) {
    CK(cudaEventRecord(a, c.s));
    CK(cudaGraphLaunch(ge, c.s));
    CK(cudaEventRecord(b, c.s));
    CK(cudaEventSynchronize(b));
    float ms = 0.f;
    CK(cudaEventElapsedTime(&ms, a, b));
    if (r >= 3) us.push_back(1000.f * ms / kCalls);
  }
  std::sort(us.begin(), us.end());
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  return us[us.size() / 2];
}

}  // namespace

int main() {
  Ctx c;
  CK(cudaStreamCreateWithFlags(&c.s, cudaStreamNonBlocking));
  CK(cudaMalloc(&c.out, 4096));
  CK(cudaMalloc(&c.counter, 256));
  CK(cudaMalloc(&c.fn, kCalls * kFnFloats * sizeof(float)));
  CK(cudaMemset(c.fn, 0, kCalls * kFnFloats * sizeof(float)));
  const char* names[] = {"one", "two", "two pdl", "memset+one", "fn", "fn+pdl", "memset+fn"};
  std::printf("us per call, graph replay (%d calls per graph, median of 20 replays)\n", kCalls);
  for (int round = 0; round < 2; ++round) {
    for (int p = 0; p < 7; ++p) std::printf("%-12s %7.2f\n", names[p], time_graph(p, c));
  }
  std::printf("fn alone: blocks threads loads  us\n");
  for (int blocks : {112, 132, 264, 528}) {
    for (int threads : {128, 256, 512}) {
      for (int unroll : {4, 8, 16}) {
        std::printf("%6d %7d %5d %7.2f\n", blocks, threads, unroll, time_graph(-1, c, FnGrid{blocks, threads, unroll}));
      }
    }
  }
  return 0;
}
