// How fast can stage (a) stream the residual? (H200, D 7168, T 8192, 24 K-parts
// of 128-token tiles, as the num_splits-1 bucket). Times the shipped partial
// kernel beside skeletons that only read x (sum of squares, no fn, no GEMM):
//   map 0 = the mma fragment order the partial kernel loaded in before it staged
//           the residual through shared memory (a warp load covers 8 rows x 64 B),
//   map 1 = row-contiguous (a warp load covers 2 rows x 256 B),
// with 1 or 2 chunks of 128 k in flight per thread, and a flat read of the same
// bytes (the ceiling). Standalone: bench/experiments/build.sh partial_stream, then
// ./partial_stream on the GPU machine. Timing only.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include "cuda/mhc_pre.cuh"
#include "cuda_check.cuh"
using namespace hcwarm_kernels::cuda;
constexpr int D = 7168, T = 8192, P = 24;
constexpr long long K = 4LL * D;

__global__ void __launch_bounds__(256, 2) k_partial(hcwarm_mhc_pre_params p) { mhc_pre_partial<1, 4, D>(p); }

// Rows and columns a thread loads in chunk step u (0..7): 8 x 16 B per chunk.
template <int MAP>
__device__ __forceinline__ const unsigned short* addr(const unsigned short* x, long long t0, int warp, int lane, int u,
                                                     long long k) {
  if (MAP == 0) {  // (g, q): rows g / g + 8, k + 32 (u % 4) + 8 q
    const int g = lane >> 2, q = lane & 3;
    const long long r = t0 + warp * 16 + g + 8 * (u >> 2);
    return x + r * K + k + 32 * (u & 3) + 8 * q;
  } else {  // lanes 0-15 row 2u, 16-31 row 2u + 1: 256 contiguous bytes each
    const long long r = t0 + warp * 16 + 2 * u + (lane >> 4);
    return x + r * K + k + 8 * (lane & 15);
  }
}

template <int MAP, int DEPTH, int WARPS>
__global__ void __launch_bounds__(32 * WARPS, 256 / (16 * WARPS)) k_skel(const unsigned short* x, float* out) {
  const int part = blockIdx.x, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const long long t0 = (long long)blockIdx.y * 16 * WARPS;
  long long k0, k1;
  k_part_range(K, P, part, k0, k1);
  float ss = 0.f;
  U4 buf[DEPTH][8];
#pragma unroll
  for (int d = 0; d < DEPTH; ++d) {
    const long long kc = k0 + 128LL * d;
#pragma unroll
    for (int u = 0; u < 8; ++u) buf[d][u] = kc < k1 ? ldg_u4(addr<MAP>(x, t0, warp, lane, u, kc)) : U4{0, 0, 0, 0};
  }
  for (long long kc = k0; kc < k1; kc += 128 * DEPTH) {
#pragma unroll
    for (int d = 0; d < DEPTH; ++d) {
#pragma unroll
      for (int u = 0; u < 8; ++u) add_squares8(buf[d][u], ss);
      const long long kn = kc + 128LL * (d + DEPTH);
#pragma unroll
      for (int u = 0; u < 8; ++u) buf[d][u] = kn < k1 ? ldg_u4(addr<MAP>(x, t0, warp, lane, u, kn)) : U4{0, 0, 0, 0};
    }
  }
  out[((long long)blockIdx.y * gridDim.x + part) * blockDim.x + threadIdx.x] = ss;
}

// The ceiling: the same bytes read as one flat array, 8 vectors in flight per thread.
__global__ void __launch_bounds__(256, 4) k_flat(const U4* x, long long n, float* out) {
  float ss = 0.f;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += 8 * stride) {
    U4 v[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = i + j * stride < n ? ldg_u4(x + i + j * stride) : U4{0, 0, 0, 0};
#pragma unroll
    for (int j = 0; j < 8; ++j) add_squares8(v[j], ss);
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = ss;
}

int main() {
  const size_t xbytes = (size_t)T * K * 2;
  unsigned short *x[2];
  float *fn, *part, *out;
  for (auto& b : x) { CK(cudaMalloc(&b, xbytes)); CK(cudaMemset(b, 0x3c, xbytes)); }
  CK(cudaMalloc(&fn, 24 * K * 4)); CK(cudaMemset(fn, 0, 24 * K * 4));
  CK(cudaMalloc(&part, (size_t)T * P * 32 * 4));
  CK(cudaMalloc(&out, (size_t)64 << 20));
  hcwarm_mhc_pre_params p{};
  p.num_tokens = T; p.fn = fn; p.partials = part; p.num_splits = 1; p.num_parts = P; p.hc_mult = 4; p.hidden = D;
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  auto time = [&](const char* name, auto launch) {
    for (int i = 0; i < 3; ++i) launch(x[i & 1]);
    CK(cudaDeviceSynchronize());
    const int iters = 30;
    cudaEventRecord(a);
    for (int i = 0; i < iters; ++i) launch(x[i & 1]);
    cudaEventRecord(b); CK(cudaEventSynchronize(b)); CK(cudaGetLastError());
    float ms; cudaEventElapsedTime(&ms, a, b);
    const double us = ms * 1000 / iters;
    printf("%-44s %8.1f us  %6.0f GB/s\n", name, us, xbytes / (us * 1e-6) / 1e9);
  };
  CK(cudaFuncSetAttribute(k_partial, cudaFuncAttributeMaxDynamicSharedMemorySize, hcwarm_mhc::cuda_partial_smem(8)));
  time("partial kernel (shipped, 8 warps)", [&](unsigned short* r) {
    p.residual = r;
    k_partial<<<dim3(P, T / 128), 256, hcwarm_mhc::cuda_partial_smem(8)>>>(p);
  });
  time("skeleton map 0, 1 chunk ahead, 8 warps", [&](unsigned short* r) { k_skel<0, 1, 8><<<dim3(P, T / 128), 256>>>(r, out); });
  time("skeleton map 0, 2 chunks ahead, 8 warps", [&](unsigned short* r) { k_skel<0, 2, 8><<<dim3(P, T / 128), 256>>>(r, out); });
  time("skeleton map 1, 1 chunk ahead, 8 warps", [&](unsigned short* r) { k_skel<1, 1, 8><<<dim3(P, T / 128), 256>>>(r, out); });
  time("skeleton map 1, 2 chunks ahead, 8 warps", [&](unsigned short* r) { k_skel<1, 2, 8><<<dim3(P, T / 128), 256>>>(r, out); });
  time("skeleton map 0, 1 chunk ahead, 4 warps", [&](unsigned short* r) { k_skel<0, 1, 4><<<dim3(P, T / 64), 128>>>(r, out); });
  time("skeleton map 0, 2 chunks ahead, 4 warps", [&](unsigned short* r) { k_skel<0, 2, 4><<<dim3(P, T / 64), 128>>>(r, out); });
  time("flat read (ceiling)", [&](unsigned short* r) { k_flat<<<132 * 4, 256>>>(reinterpret_cast<const U4*>(r), xbytes / 16, out); });
  return 0;
}
