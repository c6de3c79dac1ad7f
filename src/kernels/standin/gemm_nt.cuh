#pragma once
// A small tiled bf16 GEMM for the shipped SwiGLU MLP sublayer on CUDA:
//   C[m, n] = sum_k A[m, k] * B[n, k]       (both operands K-contiguous, "NT")
// with f32 accumulation on the CUDA cores; the MLP's first half (gate and up,
// K = hidden) is split along K with f32 atomics, then silu(gate) * up -> bf16.
// A STAND-IN for the host engine's attention/MoE in the demo model
// (model/standin/), not a production kernel and not a tuned GEMM.
// Compiled by NVRTC: no system includes.
#include "cuda/bf16.cuh"
#include "standin/gemm_tiles.hpp"

namespace hcwarm_gemm {

using hcwarm_bf16::bf16_to_f32;
using hcwarm_bf16::f32_to_bf16;

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

// Accumulates this thread's 4 x 4 outputs of the block's 64 x 64 tile over
// k in [k_begin, k_end): acc0 against b0 and, with TWO_B, acc1 against b1.
template <bool TWO_B>
__device__ __forceinline__ void accumulate_tile(int m_total, int n_total, int k_total, int k_begin, int k_end,
                                                const unsigned short* __restrict__ a,
                                                const unsigned short* __restrict__ b0,
                                                const unsigned short* __restrict__ b1, float (&acc0)[4][4],
                                                float (&acc1)[4][4]) {
  __shared__ float as[kTileK][kTileM + 1];
  __shared__ float bs0[kTileK][kTileN + 1];
  __shared__ float bs1[TWO_B ? kTileK : 1][TWO_B ? kTileN + 1 : 1];
  const int m0 = blockIdx.y * kTileM;
  const int n0 = blockIdx.x * kTileN;
  const int tm = threadIdx.x / 16;
  const int tn = threadIdx.x % 16;
  for (int k0 = k_begin; k0 < k_end; k0 += kTileK) {
    load_slab<kTileM>(as, a, m_total, m0, k0, k_total);
    load_slab<kTileN>(bs0, b0, n_total, n0, k0, k_total);
    if constexpr (TWO_B) load_slab<kTileN>(bs1, b1, n_total, n0, k0, k_total);
    __syncthreads();
#pragma unroll 8
    for (int k = 0; k < kTileK; ++k) {
      float av[4], bv0[4], bv1[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        av[i] = as[k][tm + 16 * i];
        bv0[i] = bs0[k][tn + 16 * i];
        if constexpr (TWO_B) bv1[i] = bs1[k][tn + 16 * i];
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          acc0[i][j] += av[i] * bv0[j];
          if constexpr (TWO_B) acc1[i][j] += av[i] * bv1[j];
        }
      }
    }
    __syncthreads();
  }
}

// Writes this thread's 4 x 4 outputs of the block's tile that lie inside the
// m_total x n_total matrix: acc0 rounded to bf16 into c, or (GATE_UP) acc0 and
// acc1 added into the gate and up halves of c32's rows. The pointers stay
// __restrict__ parameters: stored through a lambda's captures instead, nvcc
// no longer proves the operands unaliased and drops the ld.global.nc loads.
template <bool GATE_UP>
__device__ __forceinline__ void store_tile(int m_total, int n_total, const float (&acc0)[4][4],
                                           const float (&acc1)[4][4], unsigned short* __restrict__ c,
                                           float* __restrict__ c32) {
  const int tm = threadIdx.x / 16;
  const int tn = threadIdx.x % 16;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int m = blockIdx.y * kTileM + tm + 16 * i;
    if (m >= m_total) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int n = blockIdx.x * kTileN + tn + 16 * j;
      if (n >= n_total) continue;
      if constexpr (GATE_UP) {
        float* row = c32 + static_cast<long long>(m) * 2 * n_total;
        atomicAdd(row + n, acc0[i][j]);
        atomicAdd(row + n_total + n, acc1[i][j]);
      } else {
        c[static_cast<long long>(m) * n_total + n] = f32_to_bf16(acc0[i][j]);
      }
    }
  }
}

// C (bf16) = A B^T over the whole K: one block per 64 x 64 output tile.
__device__ void gemm_nt(int m_total, int n_total, int k_total, const unsigned short* __restrict__ a,
                        const unsigned short* __restrict__ b, unsigned short* __restrict__ c) {
  float acc[4][4] = {};
  float unused[4][4];
  accumulate_tile<false>(m_total, n_total, k_total, 0, k_total, a, b, nullptr, acc, unused);
  store_tile<false>(m_total, n_total, acc, unused, c, nullptr);
}

// The MLP's first half, split along K so that a small batch still fills the
// GPU: block z adds its K range of A B_gate^T and A B_up^T into c32 (T, 2N)
// f32, zeroed beforehand: gate in columns [0, N), up in [N, 2N).
__device__ void gemm_nt_gate_up_splitk(int m_total, int n_total, int k_total, int k_per_split,
                                       const unsigned short* __restrict__ a, const unsigned short* __restrict__ gate,
                                       const unsigned short* __restrict__ up, float* __restrict__ c32) {
  float acc0[4][4] = {};
  float acc1[4][4] = {};
  const int k_begin = blockIdx.z * k_per_split;
  const int k_end = min(k_total, k_begin + k_per_split);
  accumulate_tile<true>(m_total, n_total, k_total, k_begin, k_end, a, gate, up, acc0, acc1);
  store_tile<true>(m_total, n_total, acc0, acc1, nullptr, c32);
}

// h = bf16(silu(gate) * up), rounded as a bf16 model's activation is.
__device__ void swiglu_activation(long long count, int n_total, const float* __restrict__ c32,
                                  unsigned short* __restrict__ h) {
  const long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= count) return;
  const long long m = idx / n_total;
  const int n = static_cast<int>(idx % n_total);
  const float g = c32[m * 2 * n_total + n];
  const float u = c32[m * 2 * n_total + n_total + n];
  h[idx] = f32_to_bf16((g / (1.0f + __expf(-g))) * u);
}

// The stand-in MLP's entry points, instantiated by name (jit/kernel_entry.hpp)
// for one (hidden, width): gate/up split along K, the activation, down.
template <int HIDDEN, int WIDTH>
__global__ void __launch_bounds__(kThreads)
    swiglu_gate_up_kernel(int t, int k_per_split, const unsigned short* x, const unsigned short* gate,
                          const unsigned short* up, float* c32) {
  gemm_nt_gate_up_splitk(t, WIDTH, HIDDEN, k_per_split, x, gate, up, c32);
}

template <int WIDTH>
__global__ void __launch_bounds__(kThreads) swiglu_act_kernel(long long count, const float* c32, unsigned short* h) {
  swiglu_activation(count, WIDTH, c32, h);
}

template <int HIDDEN, int WIDTH>
__global__ void __launch_bounds__(kThreads)
    swiglu_down_kernel(int t, const unsigned short* h, const unsigned short* down, unsigned short* out) {
  gemm_nt(t, HIDDEN, WIDTH, h, down, out);
}

}  // namespace hcwarm_gemm
