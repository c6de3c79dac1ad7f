// Where stage (a)'s time goes (H200, D 7168, T 8192, num_splits 1: 24 K-parts of
// 128-token tiles, 8 warps): the shipped partial kernel and copies with parts
// switched off (partial_breakdown.py); the same code with other warps, residual
// stages and blocks per SM; and the finish kernel (stage b) at other occupancies
// and streaming batch sizes (its GB/s column counts only the residual).
// Standalone: bench/experiments/build.sh partial_breakdown, then ./partial_breakdown on
// the GPU machine. Timing only: outputs are not checked.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include "variants.cuh"
#include "cuda_check.cuh"
using namespace hcwarm_kernels::cuda;
constexpr int D = 7168, T = 8192, P = 24;
constexpr long long K = 4LL * D;
template <int MODE>
__global__ void __launch_bounds__(256, 2) k_variant(hcwarm_mhc_pre_params p) {
  partial_variant<4, D, 8, MODE>(p, blockIdx.y, blockIdx.x, P);
}
// The shipped code with other tiles (16 tokens per warp), residual stages and blocks per SM.
template <int WARPS, int STAGES, int MINB>
__global__ void __launch_bounds__(32 * WARPS, MINB) k_shape(hcwarm_mhc_pre_params p) {
  partial_variant<4, D, WARPS, 0, STAGES>(p, blockIdx.y, blockIdx.x, P);
}
// The finish kernel of the bucket at MINB blocks per SM (8 = 64 registers, shipped).
template <int MINB>
__global__ void __launch_bounds__(128, MINB) k_finish(hcwarm_mhc_pre_params p) {
  mhc_pre_finish<1, 4, D, true, true>(p);
}
// The finish streaming BATCH vectors per stream at a time (shipped: 1).
template <int BATCH, int MINB>
__global__ void __launch_bounds__(128, MINB) k_finish_batch(hcwarm_mhc_pre_params p) {
  finish_impl<4, D, P, BATCH, true, true>(p, p.num_tokens - 1 - (long long)blockIdx.x, P);
}
int main() {
  const size_t xbytes = (size_t)T * K * 2;
  unsigned short* x[2];
  float *fn, *part;
  for (auto& b : x) { CK(cudaMalloc(&b, xbytes)); CK(cudaMemset(b, 0x3c, xbytes)); }
  CK(cudaMalloc(&fn, 24 * K * 4)); CK(cudaMemset(fn, 0, 24 * K * 4));
  CK(cudaMalloc(&part, (size_t)T * P * 32 * 4));
  hcwarm_mhc_pre_params p{};
  p.num_tokens = T; p.fn = fn; p.partials = part; p.num_splits = 1; p.num_parts = P; p.hc_mult = 4; p.hidden = D;
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  unsigned short* y;
  float *scale, *base, *post, *comb;
  CK(cudaMalloc(&y, (size_t)T * D * 2)); CK(cudaMalloc(&p.norm_weight, D * 2)); CK(cudaMemset((void*)p.norm_weight, 0x3f, D * 2));
  CK(cudaMalloc(&scale, 64)); CK(cudaMemset(scale, 0, 64)); CK(cudaMalloc(&base, 128)); CK(cudaMemset(base, 0, 128));
  CK(cudaMalloc(&post, T * 16)); CK(cudaMalloc(&comb, T * 64));
  p.y = y; p.scale = scale; p.base = base; p.post = post; p.comb = comb; p.sinkhorn_iters = 20;
  p.hc_eps = 1e-6f; p.rms_eps = 1e-6f; p.norm_eps = 1e-6f; p.post_mult = 2.f;
  auto run = [&](auto kern, const char* name, int warps = 8, bool finish = false, int stages = 2) {
    const int smem = finish ? 0 : hcwarm_mhc::cuda_partial_smem_stages(warps, stages);
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    auto launch = [&](int i) {
      p.residual = x[i & 1];
      if (finish) kern<<<T, 128>>>(p);
      else kern<<<dim3(P, T / (16 * warps)), 32 * warps, smem>>>(p);
    };
    for (int i = 0; i < 3; ++i) launch(i);
    CK(cudaDeviceSynchronize());
    const int iters = 30;
    cudaEventRecord(a);
    for (int i = 0; i < iters; ++i) launch(i);
    cudaEventRecord(b); CK(cudaEventSynchronize(b)); CK(cudaGetLastError());
    float ms; cudaEventElapsedTime(&ms, a, b);
    const double us = ms * 1000 / iters;
    printf("%-40s %8.1f us  %6.0f GB/s of residual\n", name, us, xbytes / (us * 1e-6) / 1e9);
  };
  run(k_variant<0>, "shipped");
  run(k_variant<1>, "no fn loads");
  run(k_variant<2>, "no mma");
  run(k_variant<4>, "no fn split");
  run(k_variant<5>, "no fn loads, no split");
  run(k_variant<8>, "no block barrier");
  run(k_variant<7>, "no fn, no split, no mma");
  run(k_variant<15>, "none of them (x stream + squares)");
  run(k_shape<4, 2, 3>, "4 warps, 2 stages, 3 blocks/SM", 4);
  run(k_shape<4, 2, 4>, "4 warps, 2 stages, 4 blocks/SM", 4);
  run(k_shape<8, 3, 1>, "8 warps, 3 stages, 1 block/SM", 8, false, 3);
  run(k_shape<16, 2, 1>, "16 warps, 2 stages, 1 block/SM", 16, false, 2);
  run(k_shape<16, 3, 1>, "16 warps, 3 stages, 1 block/SM", 16, false, 3);
  run(k_shape<4, 3, 3>, "4 warps, 3 stages, 3 blocks/SM", 4, false, 3);
  run(k_shape<4, 4, 2>, "4 warps, 4 stages, 2 blocks/SM", 4, false, 4);
  run(k_finish<8>, "finish (stage b), 8 blocks/SM (shipped)", 0, true);
  run(k_finish<6>, "finish (stage b), 6 blocks/SM", 0, true);
  run(k_finish<12>, "finish (stage b), 12 blocks/SM", 0, true);
  run(k_finish<16>, "finish (stage b), 16 blocks/SM", 0, true);
  run(k_finish_batch<1, 8>, "finish, batch 1 (shipped), 8 blocks/SM", 0, true);
  run(k_finish_batch<2, 6>, "finish, batch 2, 6 blocks/SM", 0, true);
  run(k_finish_batch<2, 8>, "finish, batch 2, 8 blocks/SM", 0, true);
  run(k_finish_batch<3, 5>, "finish, batch 3, 5 blocks/SM", 0, true);
  run(k_finish_batch<4, 4>, "finish, batch 4, 4 blocks/SM", 0, true);
  run(k_finish_batch<7, 3>, "finish, batch 7 (whole row), 3 blocks/SM", 0, true);
  return 0;
}
