// The one-pass kernel (cuda/mhc_pre_stream.cuh) at other LAG / BUFS settings and
// group counts (H200, D 7168, T 8192, fused norm): us per call, and y against
// the first variant's (bit-exact share, elements > 1 ulp apart). Inputs as
// models see them (residual ~ U(-2, 2) in bf16, fn ~ 1e-3). The sixth
// session's wgmma variants (one_pass_wg.cuh, with TMA tensor maps) are at
// commit 5c920df. Standalone (CUDA runtime, static):
//   tools/experiments/build.sh one_pass_tune   -> .devcarry/one_pass_tune
// then on the GPU machine: ./one_pass_tune [T [VARIANT [SINKHORN_ITERS]]]
// (VARIANT: run only that one, 0-based, e.g. for a profiler; ITERS=N timed
// calls, default 40; PER_BLOCK=1 adds each block's lag). The kernels are built
// with HCWARM_MHC_STREAM_TRACE: their stamps (group 0, tiles 8..119) cost ~2%.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>
#define HCWARM_MHC_STREAM_TRACE  // the kernel stamps its exchange (group 0, first 128 tiles)
#include "cuda/mhc_pre_stream.cuh"
using namespace hcwarm_kernels::cuda;
constexpr int kD = 7168;
template <int LAG, int BUFS>
__global__ void __launch_bounds__((kD / 1024 + HCWARM_MHC_STREAM_ROLE_WARPS) * 32, 1) k_variant(hcwarm_mhc_pre_params p) {
  mhc_pre_stream<4, kD, true, true, LAG, BUFS>(p);
}
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)
int main(int argc, char** argv) {
  const long long T = argc > 1 ? atoll(argv[1]) : 8192;
  const int only = argc > 2 ? atoi(argv[2]) : -1;
  const int iters_sk = argc > 3 ? atoi(argv[3]) : 20;
  const long long K = 4LL * kD;
  const int nbuf = 4;  // rotate to defeat L2
  std::vector<unsigned short*> resv(nbuf);
  std::vector<unsigned short> host(T * K);
  unsigned s = 12345;
  // Residual ~ U(-2, 2) in bf16 (rounded down), as models see it in scale.
  for (auto& v : host) {
    s = s * 1664525u + 1013904223u;
    const float f = ((s >> 8) / 16777216.0f - 0.5f) * 4.0f;
    unsigned int u; memcpy(&u, &f, 4); v = (unsigned short)(u >> 16);
  }
  for (int i = 0; i < nbuf; ++i) { CK(cudaMalloc(&resv[i], T * K * 2)); CK(cudaMemcpy(resv[i], host.data(), T * K * 2, cudaMemcpyHostToDevice)); }
  std::vector<float> fnh(24 * K);
  for (auto& v : fnh) { s = s * 1664525u + 1013904223u; v = ((s >> 8) / 16777216.0f - 0.5f) * 2e-3f; }
  unsigned short *y, *w; float *fn, *scale, *base, *post, *comb, *ws;
  CK(cudaMalloc(&y, T * kD * 2)); CK(cudaMalloc(&w, kD * 2)); CK(cudaMemset(w, 0x3f, kD * 2));
  CK(cudaMalloc(&fn, 24 * K * 4)); CK(cudaMemcpy(fn, fnh.data(), 24 * K * 4, cudaMemcpyHostToDevice));
  const float sc[3] = {0.1f, 0.2f, 0.3f}; float bs[24]; for (int i = 0; i < 24; ++i) bs[i] = 0.01f * i;
  CK(cudaMalloc(&scale, 64)); CK(cudaMemcpy(scale, sc, 12, cudaMemcpyHostToDevice));
  CK(cudaMalloc(&base, 128)); CK(cudaMemcpy(base, bs, 96, cudaMemcpyHostToDevice));
  CK(cudaMalloc(&post, T * 16)); CK(cudaMalloc(&comb, T * 64));
  const size_t ws_bytes = HCWARM_MHC_STREAM_WORKSPACE_BYTES(4);
  CK(cudaMalloc(&ws, ws_bytes));
  hcwarm_mhc_pre_params p{}; p.num_tokens = T; p.fn = fn; p.scale = scale; p.base = base; p.norm_weight = w; p.y = y;
  p.post = post; p.comb = comb; p.partials = ws; p.num_splits = 1; p.num_parts = HCWARM_MHC_STREAM_SLICES; p.hc_mult = 4;
  p.hidden = kD; p.sinkhorn_iters = iters_sk; p.hc_eps = 1e-6f; p.rms_eps = 1e-6f; p.norm_eps = 1e-6f; p.post_mult = 2.f;
  std::vector<unsigned short> y0(T * kD), y1(T * kD);
  bool first = true;
  int sms = 0; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  int index = -1;
  unsigned long long* trace;
  const size_t trace_n = 128 * 8 * 64;
  CK(cudaMalloc(&trace, trace_n * 8));
  CK(cudaMemset(trace, 0, trace_n * 8));
  CK(cudaMemcpyToSymbol(hcwarm_stream_trace, &trace, sizeof(trace)));
  auto stamps = [&]() {
  // The exchange of tiles 8..119 of group 0 (last launch of the variant above), us.
  std::vector<unsigned long long> h(trace_n);
  CK(cudaMemcpy(h.data(), trace, trace_n * 8, cudaMemcpyDeviceToHost));
  auto ev = [&](int i, int e, int b) { return (double)h[(i * 8 + e) * 64 + b]; };
  double a[8] = {};
  int cnt = 0;
  for (int i = 8; i < 120; ++i) {
    double rec = 0, sig = 0, seen0 = 1e30, seen1 = 0, pub = 0, pres = 0, start0 = 1e30, start1 = 0;
    for (int b = 0; b < 64; ++b) {
      rec = std::max(rec, ev(i, 0, b)); sig = std::max(sig, ev(i, 1, b)); pres = std::max(pres, ev(i, 4, b));
      start0 = std::min(start0, ev(i, 5, b)); start1 = std::max(start1, ev(i, 5, b));
    }
    for (int t = 0; t < 32; ++t) {
      const int b = t + 32 * (i & 1);
      seen0 = std::min(seen0, ev(i, 2, b)); seen1 = std::max(seen1, ev(i, 2, b)); pub = std::max(pub, ev(i, 3, b));
    }
    double next = 0; for (int b = 0; b < 64; ++b) next = std::max(next, ev(i + 1, 5, b));
    a[0] += sig - rec; a[1] += seen0 - sig; a[2] += seen1 - sig; a[3] += pub - seen1; a[4] += pres - pub;
    a[5] += start1 - start0; a[6] += rec - start1; a[7] += next - start1;
    ++cnt;
  }
  const char* names[8] = {"last records stored -> last signal", "last signal -> first pre warp sees it",
                          "last signal -> last pre warp sees it", "last pre warp sees -> last pre published",
                          "last pre published -> last block sees it", "GEMM start spread over blocks",
                          "last GEMM start -> last records stored", "step (last GEMM start to the next)"};
  for (int k = 0; k < 8; ++k) printf("  %-44s %6.2f us\n", names[k], a[k] / cnt / 1000);
  double w6 = 0, w7 = 0, w0 = 0; int c2 = 0;
  for (int i = 8; i < 120; ++i) for (int b = 0; b < 64; ++b) {
    if (ev(i, 6, b) == 0) continue;
    w6 += ev(i, 6, b) - ev(i, 5, b); w7 += ev(i, 7, b) - ev(i, 5, b); w0 += ev(i, 0, b) - ev(i, 5, b); ++c2;
  }
  {
    double m[8] = {}; int k8[8] = {};
    for (int i = 8; i < 120; ++i) for (int b = 0; b < 64; ++b) for (int e = 0; e < 8; ++e) {
      if (ev(i, e, b) == 0 || ev(i, 5, b) == 0) continue;
      m[e] += ev(i, e, b) - ev(i, 5, b); ++k8[e];
    }
    double sig2first = 0, sig2mean = 0, spread1 = 0; int nt = 0;
    for (int i = 8; i < 120; ++i) {
      double mx = 0, mn1 = 1e30, f0 = 1e30, fm = 0;
      for (int b = 0; b < 64; ++b) {
        mx = std::max(mx, ev(i, 1, b)); mn1 = std::min(mn1, ev(i, 1, b));
        f0 = std::min(f0, ev(i, 4, b)); fm += ev(i, 4, b) / 64;
      }
      sig2first += f0 - mx; sig2mean += fm - mx; spread1 += mx - mn1; ++nt;
    }
    if (getenv("PER_BLOCK")) {
      printf("  per block: lag of signal behind the tile's first (us), copy issue -> GEMM start (us)\n");
      for (int b = 0; b < 64; ++b) {
        double lagsum = 0, lat = 0; int c3 = 0;
        for (int i = 8; i < 120; ++i) {
          double mn = 1e30; for (int b2 = 0; b2 < 64; ++b2) mn = std::min(mn, ev(i, 1, b2));
          lagsum += ev(i, 1, b) - mn; lat += ev(i, 5, b) - ev(i, 6, b); ++c3;
        }
        printf(" %2d:%5.2f/%4.2f%s", b, lagsum / c3 / 1000, lat / c3 / 1000, b % 8 == 7 ? "\n" : "");
      }
    }
    printf("  signal spread %.2f, last signal -> first fetch %.2f, -> mean fetch %.2f us\n", spread1 / nt / 1000,
           sig2first / nt / 1000, sig2mean / nt / 1000);
    printf("  events rel. to GEMM start (us):");
    for (int e = 0; e < 8; ++e) printf(" %d:%.2f", e, k8[e] ? m[e] / k8[e] / 1000 : 0.0);
    printf("\n");
  }
  if (c2) printf("  block: start -> issued+Gram %.2f, -> wgmma done %.2f, -> records %.2f us\n", w6 / c2 / 1000, w7 / c2 / 1000, w0 / c2 / 1000);
  CK(cudaMemset(trace, 0, trace_n * 8));
  };
  auto run = [&](auto kern, int bufs, const char* name, int groups_req) {
    if (++index != only && only >= 0) return;
    const int smem = HCWARM_MHC_STREAM_SMEM_BUFS(kD, bufs);
    const int threads = (kD / 1024 + HCWARM_MHC_STREAM_ROLE_WARPS) * 32;
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int per_sm = 0; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, threads, smem));
    const int maxg = per_sm * sms / 64;
    const int groups = groups_req > 0 && groups_req < maxg ? groups_req : maxg;
    cudaLaunchConfig_t cfg = {}; cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeCooperative; at[0].val.cooperative = 1;
    cfg.gridDim = dim3(64 * groups); cfg.blockDim = dim3(threads); cfg.dynamicSmemBytes = smem; cfg.attrs = at; cfg.numAttrs = 1;
    auto launch = [&](int i) {
      p.residual = resv[i % nbuf];
      CK(cudaMemsetAsync(ws, 0, HCWARM_MHC_STREAM_COUNTER_BYTES(groups)));
      CK(cudaLaunchKernelEx(&cfg, kern, p));
    };
    CK(cudaMemset(y, 0xff, T * kD * 2));
    launch(0);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(first ? y0.data() : y1.data(), y, T * kD * 2, cudaMemcpyDeviceToHost));
    const bool same = first || memcmp(y0.data(), y1.data(), T * kD * 2) == 0;
    long long exact = 0, over1 = 0; int maxd = 0;
    char ycmp[128] = "";
    if (!first) {
      for (long long e = 0; e < T * kD; ++e) {
        const int a = (short)y0[e] < 0 ? -(int)(y0[e] & 0x7fff) : (int)y0[e];
        const int b = (short)y1[e] < 0 ? -(int)(y1[e] & 0x7fff) : (int)y1[e];
        const int dd = a > b ? a - b : b - a;
        exact += dd == 0; over1 += dd > 1; maxd = dd > maxd ? dd : maxd;
      }
      snprintf(ycmp, sizeof ycmp, "  y against the first: %.3f%% bit-exact, %lld > 1 ulp, max %d ulp\n",
               100.0 * exact / (T * kD), over1, maxd);
    }
    first = false;
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    const int iters = getenv("ITERS") ? atoi(getenv("ITERS")) : 40;
    cudaEventRecord(a);
    for (int i = 0; i < iters; ++i) launch(i);
    cudaEventRecord(b); CK(cudaEventSynchronize(b));
    float ms; cudaEventElapsedTime(&ms, a, b);
    const double us = ms * 1000 / iters;
    const long long tiles = (T + 31) / 32;
    printf("%-22s groups %d smem %6d  %8.1f us  per-tile-step %.2f us  %.0f GB/s  y %s\n", name, groups, smem, us,
           us / ((tiles + groups - 1) / groups), (T * K * 2.0 + T * kD * 2.0) / (us * 1e-6) / 1e9,
           same ? "same" : "DIFFERS");
    printf("%s", ycmp);
    if (groups > 1 || only >= 0) stamps();
  };
  run(k_variant<3, 5>, 5, "lag 3, 5 buffers", 0);
  run(k_variant<4, 6>, 6, "lag 4, 6 buffers", 0);
  run(k_variant<3, 6>, 6, "lag 3, 6 buffers", 0);
  run(k_variant<2, 4>, 4, "lag 2, 4 buffers", 0);
  run(k_variant<3, 5>, 5, "lag 3, 5 buffers, 1 group", 1);
  return 0;
}
