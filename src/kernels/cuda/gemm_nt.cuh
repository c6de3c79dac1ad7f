#pragma once
// A small tiled bf16 GEMM for the shipped SwiGLU MLP sublayer on CUDA:
//   C[m, n] = sum_k A[m, k] * B[n, k]       (both operands K-contiguous, "NT")
// with f32 accumulation on the CUDA cores. SWIGLU fuses the MLP's first half:
// two B matrices (gate, up) and C = silu(A B_gate^T) * (A B_up^T), rounded to bf16.
// It is a stand-in for the host engine's attention/MoE, not a tuned GEMM.
// Compiled by NVRTC: no includes.

namespace hcwarm_gemm {

constexpr int kTileM = 64;
constexpr int kTileN = 64;
constexpr int kTileK = 32;
constexpr int kThreads = 256;  // 16 x 16 threads, 4 x 4 outputs each

__device__ __forceinline__ float bf16_to_f32(unsigned short h) {
  return __uint_as_float(static_cast<unsigned int>(h) << 16);
}
__device__ __forceinline__ unsigned short f32_to_bf16(float f) {
  unsigned short r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
  return r;
}

// Loads a kTile x kTileK slab of a K-contiguous matrix into shared memory as
// f32, zero-filling rows past `rows` and columns past `k_total`.
template <int kTile>
__device__ __forceinline__ void load_slab(float (&dst)[kTileK][kTile + 1], const unsigned short* src, int rows,
                                          int row0, int k0, int k_total) {
  for (int i = threadIdx.x; i < kTile * kTileK; i += kThreads) {
    const int r = i / kTileK;
    const int k = i % kTileK;
    const int gr = row0 + r;
    const int gk = k0 + k;
    dst[k][r] = (gr < rows && gk < k_total) ? bf16_to_f32(src[static_cast<long long>(gr) * k_total + gk]) : 0.0f;
  }
}

template <bool SWIGLU>
__device__ void gemm_nt(int m_total, int n_total, int k_total, const unsigned short* __restrict__ a,
                        const unsigned short* __restrict__ b0, const unsigned short* __restrict__ b1,
                        unsigned short* __restrict__ c) {
  __shared__ float as[kTileK][kTileM + 1];
  __shared__ float bs0[kTileK][kTileN + 1];
  __shared__ float bs1[SWIGLU ? kTileK : 1][SWIGLU ? kTileN + 1 : 1];
  const int m0 = blockIdx.y * kTileM;
  const int n0 = blockIdx.x * kTileN;
  const int tm = threadIdx.x / 16;
  const int tn = threadIdx.x % 16;
  float acc0[4][4] = {};
  float acc1[4][4] = {};
  for (int k0 = 0; k0 < k_total; k0 += kTileK) {
    load_slab<kTileM>(as, a, m_total, m0, k0, k_total);
    load_slab<kTileN>(bs0, b0, n_total, n0, k0, k_total);
    if constexpr (SWIGLU) load_slab<kTileN>(bs1, b1, n_total, n0, k0, k_total);
    __syncthreads();
#pragma unroll 8
    for (int k = 0; k < kTileK; ++k) {
      float av[4], bv0[4], bv1[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        av[i] = as[k][tm + 16 * i];
        bv0[i] = bs0[k][tn + 16 * i];
        if constexpr (SWIGLU) bv1[i] = bs1[k][tn + 16 * i];
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          acc0[i][j] += av[i] * bv0[j];
          if constexpr (SWIGLU) acc1[i][j] += av[i] * bv1[j];
        }
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int m = m0 + tm + 16 * i;
    if (m >= m_total) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int n = n0 + tn + 16 * j;
      if (n >= n_total) continue;
      float v = acc0[i][j];
      if constexpr (SWIGLU) {
        // silu(g) * u, rounded to bf16 as a bf16 model's activation is.
        v = (v / (1.0f + __expf(-v))) * acc1[i][j];
      }
      c[static_cast<long long>(m) * n_total + n] = f32_to_bf16(v);
    }
  }
}

}  // namespace hcwarm_gemm
