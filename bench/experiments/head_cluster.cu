// How many tokens per thread (TPT) and resident blocks per SM (MB, through
// __launch_bounds__) the head's cluster kernel (cuda/mhc_head.cuh) wants at
// each T, on the H200 for hidden 4096 and 7168: the grid behind
// hcwarm_mhc::head_wide_tpt, hcwarm_mhc::head_blocks_per_sm and the launcher's
// narrow/wide switch. Each figure: one CUDA graph of 20 launches over residual
// rows that together exceed the L2, replayed 10 times, the median per launch.
// Every variant's y is compared bit for bit with the first one's.
// Standalone: bench/experiments/build.sh head_cluster, then ./head_cluster.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "cuda/mhc_head.cuh"
#include "cuda_check.cuh"


template <int HID, int TPT, int MB>
__global__ void __cluster_dims__(hcwarm_mhc::head_cluster(HID), 1, 1)
    __launch_bounds__(hcwarm_mhc::head_threads(HID), MB) k_cluster(hcwarm_mhc_head_params p) {
  hcwarm_head::mhc_head_cluster<4, HID, TPT>(p);
}

struct Bufs {
  unsigned short* res;  // n_elems values; call i reads the T rows at offset i * T * K (wrapped)
  long long n_elems;
  float *fn, *scale, *base;
  unsigned short* y;
};

using Launch = void (*)(const hcwarm_mhc_head_params&, cudaStream_t);

template <int HID, int TPT, int MB>
void launch_cluster(const hcwarm_mhc_head_params& p, cudaStream_t s) {
  const int tile = hcwarm_mhc::kHeadTokens * TPT;
  dim3 grid(hcwarm_mhc::head_cluster(HID), (unsigned)((p.num_tokens + tile - 1) / tile));
  k_cluster<HID, TPT, MB><<<grid, hcwarm_mhc::head_threads(HID), 0, s>>>(p);
}

hcwarm_mhc_head_params params(const Bufs& b, int i, long long T, int hid) {
  hcwarm_mhc_head_params p{};
  p.num_tokens = T;
  const long long need = T * 4LL * hid;
  p.residual = b.res + ((long long)i * need) % (b.n_elems - need + 1) / 8 * 8;
  p.fn = b.fn;
  p.scale = b.scale;
  p.base = b.base;
  p.y = b.y;
  p.hc_mult = 4;
  p.hidden = hid;
  p.hc_eps = 1e-6f;
  p.rms_eps = 1e-6f;
  return p;
}

float time_graph(Launch f, const Bufs& b, long long T, int hid, cudaStream_t s) {
  constexpr int kCalls = 20;
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kCalls; ++i) f(params(b, i, T, hid), s);
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphLaunch(ge, s));
  CK(cudaStreamSynchronize(s));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int r = 0; r < 10; ++r) {
    CK(cudaEventRecord(e0, s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float m;
    CK(cudaEventElapsedTime(&m, e0, e1));
    ms.push_back(m);
  }
  std::sort(ms.begin(), ms.end());
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  return ms[ms.size() / 2] * 1000.f / kCalls;
}

template <int HID>
void run(const std::vector<long long>& tokens) {
  constexpr long long K = 4LL * HID;
  const long long tmax = tokens.back();
  Bufs b;
  b.n_elems = std::max<long long>(2 * tmax * K, 1LL << 29);  // >= 1 GiB: 20 calls of any T leave the L2
  std::vector<unsigned short> host(b.n_elems);
  unsigned st = 12345;
  for (auto& v : host) {
    st = st * 1664525u + 1013904223u;
    float f = ((st >> 8) & 0xffff) / 32768.f - 1.f;
    unsigned u;
    std::memcpy(&u, &f, 4);
    v = (unsigned short)(u >> 16);
  }
  CK(cudaMalloc(&b.res, b.n_elems * 2));
  CK(cudaMemcpy(b.res, host.data(), b.n_elems * 2, cudaMemcpyHostToDevice));
  std::vector<float> fn(4 * K);
  for (auto& v : fn) {
    st = st * 1664525u + 1013904223u;
    v = (((st >> 8) & 0xffff) / 32768.f - 1.f) * 0.02f;
  }
  CK(cudaMalloc(&b.fn, fn.size() * 4));
  CK(cudaMemcpy(b.fn, fn.data(), fn.size() * 4, cudaMemcpyHostToDevice));
  float sc = 0.7f, base[4] = {0.1f, -0.2f, 0.3f, 0.05f};
  CK(cudaMalloc(&b.scale, 4));
  CK(cudaMalloc(&b.base, 16));
  CK(cudaMemcpy(b.scale, &sc, 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(b.base, base, 16, cudaMemcpyHostToDevice));
  CK(cudaMalloc(&b.y, (size_t)tmax * HID * 2));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  struct V {
    const char* name;
    Launch f;
  };
  const V vs[] = {{"tpt1_mb1", launch_cluster<HID, 1, 1>}, {"tpt1_mb2", launch_cluster<HID, 1, 2>},
                  {"tpt1_mb3", launch_cluster<HID, 1, 3>}, {"tpt2_mb1", launch_cluster<HID, 2, 1>},
                  {"tpt2_mb2", launch_cluster<HID, 2, 2>}, {"tpt2_mb3", launch_cluster<HID, 2, 3>},
                  {"tpt4_mb1", launch_cluster<HID, 4, 1>}, {"tpt4_mb2", launch_cluster<HID, 4, 2>}};
  std::printf("hidden %d (us per call, graph replay)\n%8s", HID, "T");
  for (const V& v : vs) std::printf(" %9s", v.name);
  std::printf("\n");
  std::vector<unsigned short> ref(tmax * HID), got(tmax * HID);
  for (long long T : tokens) {
    std::printf("%8lld", T);
    for (const V& v : vs) {
      CK(cudaMemset(b.y, 0, (size_t)T * HID * 2));
      v.f(params(b, 0, T, HID), s);
      CK(cudaStreamSynchronize(s));
      CK(cudaGetLastError());
      CK(cudaMemcpy(&v == vs ? ref.data() : got.data(), b.y, (size_t)T * HID * 2, cudaMemcpyDeviceToHost));
      const bool same = &v == vs || std::memcmp(ref.data(), got.data(), (size_t)T * HID * 2) == 0;
      std::printf(" %8.2f%s", time_graph(v.f, b, T, HID, s), same ? " " : "!");
    }
    std::printf("\n");
  }
  std::printf("(! = y differs from the first variant's)\n\n");
  CK(cudaFree(b.res));
  CK(cudaFree(b.fn));
  CK(cudaFree(b.scale));
  CK(cudaFree(b.base));
  CK(cudaFree(b.y));
  CK(cudaStreamDestroy(s));
}

int main() {
  const std::vector<long long> tokens = {1, 8, 64, 128, 256, 384, 512, 1024, 2048, 4096, 8192, 16384};
  run<4096>(tokens);
  run<7168>(tokens);
  return 0;
}
