// Where a tile's time goes in the one-pass cluster kernel (H200, D 7168,
// T 8192, fused norm): the kernel as shipped, with fewer clusters, and with
// parts switched off (one_pass_breakdown.py). Standalone (CUDA runtime, static):
//   tools/experiments/build.sh one_pass_breakdown   -> .devcarry/one_pass_breakdown
// then on the GPU machine: ./one_pass_breakdown. Timing only: outputs are not checked.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
#include "variants.cuh"
using namespace hcwarm_kernels::cuda;
template <int MODE>
__global__ void __launch_bounds__((MODE & 128) ? 480 : 256, 1) k_variant(hcwarm_mhc_pre_params p) { one_pass_variant<4, 7168, true, true, MODE>(p); }
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)
int main(int argc, char**) {
  const int D = 7168, T = 8192; const long long K = 4LL * D;
  unsigned short *y, *w; float *fn, *scale, *base, *post, *comb;
  const int nbuf = 4;  // rotate to defeat L2
  std::vector<unsigned short*> resv(nbuf);
  for (int i = 0; i < nbuf; ++i) { CK(cudaMalloc(&resv[i], T * K * 2)); CK(cudaMemset(resv[i], 0x3c, T * K * 2)); }
  CK(cudaMalloc(&y, (size_t)T * D * 2)); CK(cudaMalloc(&w, D * 2)); CK(cudaMemset(w, 0x3f, D*2));
  CK(cudaMalloc(&fn, 24 * K * 4)); CK(cudaMemset(fn, 0, 24*K*4));
  CK(cudaMalloc(&scale, 64)); CK(cudaMemset(scale, 0, 64)); CK(cudaMalloc(&base, 128)); CK(cudaMemset(base, 0, 128));
  CK(cudaMalloc(&post, T * 16)); CK(cudaMalloc(&comb, T * 64));
  hcwarm_mhc_pre_params p{}; p.num_tokens = T; p.fn = fn; p.scale = scale; p.base = base; p.norm_weight = w; p.y = y;
  p.post = post; p.comb = comb; p.num_splits = 1; p.num_parts = 16; p.hc_mult = 4; p.hidden = D; p.sinkhorn_iters = 20;
  p.hc_eps = 1e-6f; p.rms_eps = 1e-6f; p.norm_eps = 1e-6f; p.post_mult = 2.f;
  // narrow: GEMM warps of 32 columns (MODE & 128), else 64; plus the scalar warp.
  auto run = [&](auto kern, const char* name, int clusters_req, bool narrow = false) {
    const int warp_d = narrow ? 32 : 64;
    const int W = D / (16 * warp_d); const int threads = (W + 1) * 32;
    const int smem = W * 4 * (warp_d / 32) * 6 * 32 * 4 * 4;  // fn words per warp (as kFnWords), 4 bytes each
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    cudaLaunchConfig_t cfg = {}; cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = 16; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
    cfg.gridDim = dim3(16 * 64); cfg.blockDim = dim3(threads); cfg.dynamicSmemBytes = smem; cfg.attrs = at; cfg.numAttrs = 1;
    int maxc = 0; CK(cudaOccupancyMaxActiveClusters(&maxc, (void*)kern, &cfg));
    int nc = clusters_req > 0 ? clusters_req : maxc;
    cfg.gridDim = dim3(16 * nc);
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    for (int i = 0; i < 3; ++i) { p.residual = resv[i % nbuf]; CK(cudaLaunchKernelEx(&cfg, kern, p)); }
    CK(cudaDeviceSynchronize());
    const int iters = 40;
    cudaEventRecord(a);
    for (int i = 0; i < iters; ++i) { p.residual = resv[i % nbuf]; cudaLaunchKernelEx(&cfg, kern, p); }
    cudaEventRecord(b); CK(cudaEventSynchronize(b));
    float ms; cudaEventElapsedTime(&ms, a, b);
    const double us = ms * 1000 / iters;
    const long long tiles = T / 16;
    printf("%-34s maxclusters %2d used %2d  %8.1f us  per-tile %.2f us  %.0f GB/s\n", name, maxc, nc, us,
           us / ((tiles + nc - 1) / nc), (T * K * 2.0 + T * D * 2.0) / (us * 1e-6) / 1e9);
  };
  run(k_variant<0>, "full", 0);
  if (argc > 1) return 0;  // one launch set, for a profiler
  run(k_variant<0>, "full, 4 clusters", 4);
  run(k_variant<0>, "full, 2 clusters", 2);
  run(k_variant<1>, "no scalar part", 0);
  run(k_variant<4>, "no gemm (mma, Gram)", 0);
  run(k_variant<32>, "no Gram", 0);
  run(k_variant<8>, "no y", 0);
  run(k_variant<16>, "no loads", 0);
  run(k_variant<256>, "loads as asm volatile", 0);
  run(k_variant<512>, "L2 prefetch of tile i + 3", 0);
  run(k_variant<1024>, "L2 prefetch of tile i + 4", 0);
  run(k_variant<29>, "exchange only", 0);
  run(k_variant<28>, "exchange + scalar only", 0);
  run(k_variant<128>, "32-column warps (14 + 1 a block)", 0, true);
  run(k_variant<128 + 16>, "32-column warps, no loads", 0, true);
  return 0;
}
