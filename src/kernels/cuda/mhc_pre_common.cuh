#pragma once
// What every CUDA hc_pre kernel shares: the fn split into bf16 terms, the mma
// fragment helpers, the input kinds' addressing and the shape check of the
// params against a specialization. The kernels' overview is in cuda/mhc_pre.cuh.
// No includes beyond common/, cuda/bf16.cuh, cuda/mhc_post_mix.cuh and the PTX wrappers in cuda/ptx/:
// NVRTC sees no toolkit headers.
#include "common/mhc_params.hpp"
#include "cuda/bf16.cuh"
#include "cuda/mhc_post_mix.cuh"
#include "cuda/ptx/cp_async.cuh"
#include "cuda/ptx/grid_dependency.cuh"
#include "cuda/ptx/math.cuh"
#include "cuda/ptx/memory.cuh"
#include "cuda/ptx/mma.cuh"

namespace hcwarm_kernels {
namespace cuda {

using hcwarm_bf16::bf16_hi;
using hcwarm_bf16::bf16_lo;
using hcwarm_bf16::pack_bf16x2;

// fn pair (a, b) -> hi pair and lo pair, a + ~= float(hi) + float(lo).
__device__ __forceinline__ void split_fn_pair(float a, float b, unsigned int& hi, unsigned int& lo) {
  hi = pack_bf16x2(a, b);
  lo = pack_bf16x2(a - bf16_lo(hi), b - bf16_hi(hi));
}

// fn pair (a, b) -> hi, mid and lo pairs, a ~= float(hi) + float(mid) + float(lo)
// to 24 significant bits (the head's one-pass form: as exact as an f32 FMA).
__device__ __forceinline__ void split_fn_triple(float a, float b, unsigned int& hi, unsigned int& mid,
                                                unsigned int& lo) {
  hi = pack_bf16x2(a, b);
  const float ra = a - bf16_lo(hi), rb = b - bf16_hi(hi);
  mid = pack_bf16x2(ra, rb);
  lo = pack_bf16x2(ra - bf16_lo(mid), rb - bf16_hi(mid));
}

// Sum over the 4 threads (q = lane % 4) that share a row of an mma fragment.
__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  v += __shfl_xor_sync(0xffffffffu, v, 2);
  return v;
}

// [k0, k1): K-part `part` of P equal parts, each rounded up to a 32-k mma step.
__device__ __forceinline__ void k_part_range(long long K, int P, int part, long long& k0, long long& k1) {
  long long chunk = (K + P - 1) / P;
  chunk = (chunk + 31) & ~31LL;
  k0 = part * chunk;
  if (k0 > K) k0 = K;
  k1 = k0 + chunk;
  if (k1 > K) k1 = K;
}

// Whether `residual` is the (T, D) embedding: INPUT, or the params' for hcwarm_mhc::kInputRuntime.
template <int INPUT>
__device__ __forceinline__ bool input_is_embed(const hcwarm_mhc_pre_params& p) {
  return INPUT == hcwarm_mhc::kInputRuntime ? p.input == hcwarm_mhc::kInputEmbed : INPUT == hcwarm_mhc::kInputEmbed;
}
// Whether `residual` is the previous residual of the fused boundary (input POST).
template <int INPUT>
__device__ __forceinline__ bool input_is_post(const hcwarm_mhc_pre_params& p) {
  return INPUT == hcwarm_mhc::kInputRuntime ? p.input == hcwarm_mhc::kInputPost : INPUT == hcwarm_mhc::kInputPost;
}
// Input POST: part `part` of P covers the hidden positions [d0, d1) of every
// stream, whole 8-feature granules. Returned as the part's range [4 d0, 4 d1)
// of "virtual" columns: a 128-column chunk starting at kc is then the 32
// positions from kc / 4 for all 4 streams, virtual column kc + 32u + 8j + e
// being stream j, position kc / 4 + 8u + e (see post_col), so the mma loop's
// bounds (kc + 32u < k1) hold as they are.
__device__ __forceinline__ void post_part_range(int D, int P, int part, long long& k0, long long& k1) {
  long long chunk = ((long long)D + P - 1) / P;
  chunk = (chunk + 7) & ~7LL;
  long long d0 = part * chunk;
  if (d0 > D) d0 = D;
  long long d1 = d0 + chunk;
  if (d1 > D) d1 = D;
  k0 = 4 * d0;
  k1 = 4 * d1;
}
// The real column (j * D + d) of virtual column kc + cc of an input-POST chunk (cc < 128).
__device__ __forceinline__ long long post_col(long long kc, int cc, int D) {
  return (long long)((cc >> 3) & 3) * D + (kc >> 2) + ((cc >> 5) << 3) + (cc & 7);
}
// Token t's row: residual[t] (K wide), or the embedding row (D wide, every stream).
__device__ __forceinline__ const unsigned short* input_row(const hcwarm_mhc_pre_params& p, long long t, long long K,
                                                           int D, bool embed) {
  return p.residual + t * (embed ? (long long)D : K);
}
// fn at col, or with fold the embedding's fn column: the f32 sum over the HC
// streams of fn's columns j * D + col, in stream order (sum_k fn[k] e[k % D] =
// sum_d (sum_j fn[j D + d]) e[d]); zero where !ok. The loads are predicated.
template <int HC>
__device__ __forceinline__ F4 fold_fn4(const float* col, int D, bool ok, bool fold) {
  const F4 z = {0.f, 0.f, 0.f, 0.f};
  F4 g[HC];
#pragma unroll
  for (int j = 0; j < HC; ++j) g[j] = ok && (j == 0 || fold) ? ldg_f4(col + (long long)j * D) : z;
  F4 f = g[0];
  if (fold) {
#pragma unroll
    for (int j = 1; j < HC; ++j) f.x += g[j].x, f.y += g[j].y, f.z += g[j].z, f.w += g[j].w;
  }
  return f;
}

// Writes the mma accumulators of thread (g, q) as two rows of the 24 mix
// columns: acc[j][0..1] are row g, columns 8j + 2q + {0,1}; acc[j][2..3] row g + 8.
__device__ __forceinline__ void store_acc_rows(const float (&acc)[3][4], float* row0, float* row1, bool v0, bool v1,
                                               int q) {
#pragma unroll
  for (int j = 0; j < 3; ++j) {
    if (v0) {
      row0[8 * j + 2 * q] = acc[j][0];
      row0[8 * j + 2 * q + 1] = acc[j][1];
    }
    if (v1) {
      row1[8 * j + 2 * q] = acc[j][2];
      row1[8 * j + 2 * q + 1] = acc[j][3];
    }
  }
}

// Adds the squares of 8 bf16 values to ss (f32 FMA).
__device__ __forceinline__ void add_squares8(U4 x, float& ss) {
  const unsigned int w[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const float a = bf16_lo(w[e]), b = bf16_hi(w[e]);
    ss = fmaf(a, a, ss);
    ss = fmaf(b, b, ss);
  }
}

// One 32-k step of a warp's GEMM: rows g / g + 8 hold xa / xb, the 8 values
// k + 8q + [0, 8); B fragments of the 3 n-tiles come from shared memory as
// frag[(n-tile * 32 + lane) * 8 + (hi 0..3 | lo 4..7)]. The k order inside the
// mma is permuted identically for A and B (logical column 2q + e <-> k + 8q + e,
// 8 + 2q + e <-> k + 8q + 2 + e; second mma: + 4), which leaves the dot
// products unchanged.
__device__ __forceinline__ void mma_step_smem(float (&acc)[3][4], U4 xa, U4 xb, const unsigned int* frag, int lane) {
#pragma unroll
  for (int j = 0; j < 3; ++j) {
    const U4 h = *reinterpret_cast<const U4*>(frag + (j * 32 + lane) * 8);
    const U4 l = *reinterpret_cast<const U4*>(frag + (j * 32 + lane) * 8 + 4);
    mma_bf16_16816(acc[j], xa.x, xb.x, xa.y, xb.y, h.x, h.y);
    mma_bf16_16816(acc[j], xa.x, xb.x, xa.y, xb.y, l.x, l.y);
    mma_bf16_16816(acc[j], xa.z, xb.z, xa.w, xb.w, h.z, h.w);
    mma_bf16_16816(acc[j], xa.z, xb.z, xa.w, xb.w, l.z, l.w);
  }
}

template <int SPLIT_CLASS, int HC, int HIDDEN, bool ONE_PASS = false, int INPUT = hcwarm_mhc::kInputResidual>
__device__ __forceinline__ bool shape_ok(const hcwarm_mhc_pre_params& p) {
  static_assert(SPLIT_CLASS == 0 || SPLIT_CLASS == hcwarm_mhc::kCudaAnyStreamingClass ||
                    SPLIT_CLASS == hcwarm_mhc::cuda_split_class(SPLIT_CLASS),
                "SPLIT_CLASS must be a class's smallest split count (hcwarm_mhc::cuda_split_class: 1, 2, 3, 5, 22), "
                "0: any split count, or hcwarm_mhc::kCudaAnyStreamingClass: any of the streaming classes'");
  static_assert(INPUT == hcwarm_mhc::kInputResidual || INPUT == hcwarm_mhc::kInputEmbed ||
                    INPUT == hcwarm_mhc::kInputPost || INPUT == hcwarm_mhc::kInputRuntime,
                "INPUT must be hcwarm_mhc::kInputResidual, kInputEmbed, kInputPost or kInputRuntime");
  static_assert(!ONE_PASS || INPUT == hcwarm_mhc::kInputResidual, "the one-pass kernel reads residual streams only");
  if (p.input != hcwarm_mhc::kInputResidual && p.input != hcwarm_mhc::kInputEmbed && p.input != hcwarm_mhc::kInputPost) {
    return false;
  }
  if (INPUT != hcwarm_mhc::kInputRuntime && p.input != INPUT) return false;
  if (ONE_PASS && p.input != hcwarm_mhc::kInputResidual) return false;
  if (p.input == hcwarm_mhc::kInputPost &&
      (p.post_x == nullptr || p.prev_post == nullptr || p.prev_comb == nullptr || p.residual_out == nullptr)) {
    return false;
  }
  static_assert(HC == 4, "the CUDA mHC pre kernels are written for hc_mult 4 (24 mix columns = 3 mma n-tiles)");
  static_assert(HIDDEN >= 0 && HIDDEN % 8 == 0, "HIDDEN must be a multiple of 8 (or 0: run time)");
  static_assert(HIDDEN <= hcwarm_mhc::kCudaMaxHidden, "HIDDEN must be <= hcwarm_mhc::kCudaMaxHidden (y of one token is held in registers)");
  if (p.hc_mult != HC) return false;
  if (HIDDEN != 0 && p.hidden != HIDDEN) return false;
  if (p.hidden <= 0 || p.hidden % 8 != 0 || p.hidden > hcwarm_mhc::kCudaMaxHidden) return false;
  if (p.num_splits < 1) return false;
  if (SPLIT_CLASS == hcwarm_mhc::kCudaAnyStreamingClass) {
    if (!hcwarm_mhc::cuda_finish_streams(hcwarm_mhc::cuda_split_class(p.num_splits))) return false;
  } else if (SPLIT_CLASS != 0 && hcwarm_mhc::cuda_split_class(p.num_splits) != SPLIT_CLASS) {
    return false;
  }
  if (ONE_PASS) return p.num_parts == hcwarm_mhc::kOnePassParts;
  // The plan may run fewer, wider parts than the split count's (hcwarm_mhc::cuda_embed_parts,
  // cuda_one_wave_parts) or, where the grid is coarse, more (cuda_residual_parts): the finish
  // sums any count, its batch and then a loop.
  return p.num_parts >= 1 && p.num_parts <= hcwarm_mhc::cuda_max_parts(p.num_splits);
}

}  // namespace cuda
}  // namespace hcwarm_kernels
