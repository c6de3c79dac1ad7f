// The first layer's pre from the embedding with fn folded once per call (the
// fold kernel, cuda/mhc_pre_fold.cuh, then the partial as its programmatic
// dependent) against the partial folding fn per chunk: graph-replay time of
// the whole pair and of the partial stage alone, at the library's split rule
// and part count (132 SMs), fused norm on; y, post and comb of the two routes
// compared bit for bit. Standalone: bench/experiments/build.sh embed_fold, then
// ./embed_fold [T...] on the GPU machine.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include "cuda/mhc_pre.cuh"
#include "cuda/mhc_pre_fold.cuh"
using namespace hcwarm_kernels::cuda;

#define CK(x)                                                        \
  do {                                                               \
    cudaError_t e_ = (x);                                            \
    if (e_ != cudaSuccess) {                                         \
      printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                       \
    }                                                                \
  } while (0)

constexpr int kEmbed = hcwarm_mhc::kInputEmbed;

__global__ void fill_bf16(unsigned short* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 15; h *= 2246822519u; h ^= h >> 13;
    const float u = ((h & 0xffff) + 0.5f) / 65536.f, v = ((h >> 16) + 0.5f) / 65536.f;
    const float g = sqrtf(-2.f * logf(u)) * cosf(6.2831853f * v);
    p[i] = (unsigned short)(__float_as_uint(g) >> 16);
  }
}
__global__ void fill_f32(float* p, size_t n, unsigned seed, float scale) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 15; h *= 2246822519u; h ^= h >> 13;
    p[i] = scale * (((h & 0xffffff) + 0.5f) / 16777216.f - 0.5f);
  }
}

template <int CLASS, int D>
struct Kernels {
  static constexpr int kWarps = hcwarm_mhc::cuda_partial_warps(CLASS);
  static constexpr bool kStream = hcwarm_mhc::cuda_finish_streams(CLASS);
  static void* partial() { return (void*)mhc_pre_partial_kernel<CLASS, 4, D, kEmbed, 32 * kWarps, kWarps == 8 ? 2 : 3>; }
  static void* finish() { return (void*)mhc_pre_finish_kernel<CLASS, 4, D, true, true, kEmbed, kStream ? 8 : 3>; }
  static void* fold() { return (void*)mhc_pre_fold_kernel<4, D>; }
};

struct Launch {
  void *partial, *finish, *fold;
  int warps, sms;
};

void launch(const Launch& k, hcwarm_mhc_pre_params p, bool use_fold, int stages, cudaStream_t s) {
  void* args[] = {&p};
  cudaLaunchAttribute pdl;
  pdl.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  pdl.val.programmaticStreamSerializationAllowed = 1;
  const int tile = 16 * k.warps;
  const unsigned tiles = (unsigned)((p.num_tokens + tile - 1) / tile);
  if (use_fold) {
    const int quads = 24 * p.hidden / 4;
    CK(cudaLaunchKernel(k.fold, dim3((quads + hcwarm_mhc::kCudaFoldThreads - 1) / hcwarm_mhc::kCudaFoldThreads),
                        dim3(hcwarm_mhc::kCudaFoldThreads), args, 0, s));
  } else {
    p.fn_folded = nullptr;
  }
  cudaLaunchConfig_t c{};
  c.gridDim = dim3(p.num_parts, tiles);
  c.blockDim = dim3(32 * k.warps);
  c.dynamicSmemBytes = hcwarm_mhc::cuda_partial_smem(k.warps);
  c.stream = s;
  c.attrs = &pdl;
  c.numAttrs = use_fold ? 1 : 0;
  CK(cudaLaunchKernelExC(&c, k.partial, args));
  if (stages & 2) {
    cudaLaunchConfig_t f{};
    const bool split = p.num_tokens <= hcwarm_mhc::kCudaFinishSplitTokens &&
                       !hcwarm_mhc::cuda_finish_streams(hcwarm_mhc::cuda_split_class(p.num_splits));
    f.gridDim = dim3((unsigned)p.num_tokens * (split ? 2 : 1));
    f.blockDim = dim3(hcwarm_mhc::kCudaThreads);
    f.stream = s;
    f.attrs = &pdl;
    f.numAttrs = 1;
    CK(cudaLaunchKernelExC(&f, k.finish, args));
  }
}

int split_rule(long long T, int D, int sms) {
  const long long grid = std::max(1LL, (T + 63) / 64);
  const long long cap = ((4LL * D + 63) / 64) / 4;
  return (int)std::max(1LL, std::min((long long)sms / grid, cap));
}

template <int D>
Launch kernels_for(int cls) {
  switch (cls) {
    case 1: return {Kernels<1, D>::partial(), Kernels<1, D>::finish(), Kernels<1, D>::fold(), Kernels<1, D>::kWarps};
    case 2: return {Kernels<2, D>::partial(), Kernels<2, D>::finish(), Kernels<2, D>::fold(), Kernels<2, D>::kWarps};
    case 3: return {Kernels<3, D>::partial(), Kernels<3, D>::finish(), Kernels<3, D>::fold(), Kernels<3, D>::kWarps};
    case 5: return {Kernels<5, D>::partial(), Kernels<5, D>::finish(), Kernels<5, D>::fold(), Kernels<5, D>::kWarps};
    default: return {Kernels<22, D>::partial(), Kernels<22, D>::finish(), Kernels<22, D>::fold(), Kernels<22, D>::kWarps};
  }
}

template <int D>
void run(long long T, int sms, size_t l2) {
  const int s = split_rule(T, D, sms);
  const int cls = hcwarm_mhc::cuda_split_class(s);
  Launch k = kernels_for<D>(cls);
  k.sms = sms;
  CK(cudaFuncSetAttribute(k.partial, cudaFuncAttributeMaxDynamicSharedMemorySize, hcwarm_mhc::cuda_partial_smem(k.warps)));
  const int parts = hcwarm_mhc::cuda_embed_parts(s, T, sms);
  const size_t xbytes = (size_t)T * D * 2;
  const int sets = (int)std::max<size_t>(2, (3 * l2 + 2 * xbytes - 1) / (2 * xbytes));
  std::vector<unsigned short*> x(sets), y(sets);
  for (int i = 0; i < sets; ++i) {
    CK(cudaMalloc(&x[i], xbytes));
    CK(cudaMalloc(&y[i], xbytes));
    fill_bf16<<<1024, 256>>>(x[i], (size_t)T * D, 17 + i);
  }
  float *fn, *scale, *base, *post, *comb, *partials, *folded;
  unsigned short* nw;
  CK(cudaMalloc(&fn, 24 * 4 * D * 4)); fill_f32<<<256, 256>>>(fn, 24 * 4 * D, 5, 4e-3f);
  CK(cudaMalloc(&scale, 16)); fill_f32<<<1, 32>>>(scale, 3, 7, 1.f);
  CK(cudaMalloc(&base, 128)); fill_f32<<<1, 32>>>(base, 24, 9, 1.f);
  CK(cudaMalloc(&nw, D * 2)); fill_bf16<<<16, 256>>>(nw, D, 11);
  CK(cudaMalloc(&post, T * 16)); CK(cudaMalloc(&comb, T * 64));
  CK(cudaMalloc(&partials, (size_t)T * parts * hcwarm_mhc::kPartialStride * 4));
  CK(cudaMalloc(&folded, 24 * D * 4));
  CK(cudaDeviceSynchronize());  // the fills ran on the legacy stream, which `st` does not wait for
  hcwarm_mhc_pre_params p{};
  p.num_tokens = T; p.fn = fn; p.scale = scale; p.base = base; p.norm_weight = nw; p.post = post; p.comb = comb;
  p.partials = partials; p.num_splits = s; p.num_parts = parts; p.hc_mult = 4; p.hidden = D; p.sinkhorn_iters = 20;
  p.hc_eps = 1e-6f; p.rms_eps = 1e-6f; p.norm_eps = 1e-6f; p.post_mult = 2.f; p.input = kEmbed; p.fn_folded = folded;
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));

  // Bit-for-bit: set 0 through both routes.
  std::vector<unsigned short> y0((size_t)T * D), y1((size_t)T * D);
  std::vector<float> po0(T * 4), po1(T * 4), co0(T * 16), co1(T * 16);
  auto once = [&](bool f, std::vector<unsigned short>& yy, std::vector<float>& po, std::vector<float>& co) {
    CK(cudaMemset(y[0], 0, xbytes)); CK(cudaMemset(post, 0, T * 16)); CK(cudaMemset(comb, 0, T * 64));
    hcwarm_mhc_pre_params q = p; q.residual = x[0]; q.y = y[0];
    launch(k, q, f, 3, st);
    CK(cudaStreamSynchronize(st));
    CK(cudaMemcpy(yy.data(), y[0], xbytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(po.data(), post, T * 16, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(co.data(), comb, T * 64, cudaMemcpyDeviceToHost));
  };
  once(false, y0, po0, co0);
  once(true, y1, po1, co1);
  const bool same = memcmp(y0.data(), y1.data(), xbytes) == 0 && memcmp(po0.data(), po1.data(), T * 16) == 0 &&
                    memcmp(co0.data(), co1.data(), T * 64) == 0;

  auto time = [&](bool f, int stages) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < sets; ++i) {
      hcwarm_mhc_pre_params q = p; q.residual = x[i]; q.y = y[i];
      launch(k, q, f, stages, st);
    }
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    cudaEvent_t a, b;
    cudaEventCreate(&a); cudaEventCreate(&b);
    std::vector<float> us;
    for (int r = 0; r < 23; ++r) {
      cudaEventRecord(a, st);
      CK(cudaGraphLaunch(ge, st));
      cudaEventRecord(b, st);
      CK(cudaEventSynchronize(b));
      float ms;
      cudaEventElapsedTime(&ms, a, b);
      if (r >= 3) us.push_back(ms * 1000.f / sets);
    }
    std::sort(us.begin(), us.end());
    cudaGraphExecDestroy(ge); cudaGraphDestroy(g);
    return us[us.size() / 2];
  };
  const float pair0 = time(false, 3), pair1 = time(true, 3), part0 = time(false, 1), part1 = time(true, 1);
  const double floor_us = 2.0 * xbytes / 3.0e3 / 1e3;  // at 3 TB/s, for scale only
  printf("D %d T %6lld splits %2d parts %2d | pair %8.2f -> %8.2f us (%+5.1f%%) | partial %8.2f -> %8.2f | %s | floor@3TB/s %.1f\n",
         D, T, s, parts, pair0, pair1, 100.0 * (pair1 - pair0) / pair0, part0, part1,
         same ? "bit-identical" : "DIFFERENT", floor_us);
  for (int i = 0; i < sets; ++i) { cudaFree(x[i]); cudaFree(y[i]); }
  cudaFree(fn); cudaFree(scale); cudaFree(base); cudaFree(nw); cudaFree(post); cudaFree(comb); cudaFree(partials);
  cudaFree(folded); cudaStreamDestroy(st);
}

int main(int argc, char** argv) {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("%s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  std::vector<long long> ts = {512, 2048, 4500, 8192, 16384};
  if (argc > 1) {
    ts.clear();
    for (int i = 1; i < argc; ++i) ts.push_back(atoll(argv[i]));
  }
  for (long long T : ts) run<4096>(T, prop.multiProcessorCount, prop.l2CacheSize);
  for (long long T : ts) run<7168>(T, prop.multiProcessorCount, prop.l2CacheSize);
  return 0;
}
