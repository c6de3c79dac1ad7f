#pragma once
// The scalar part of a token (sigmoids, Sinkhorn, the pre-weighted stream mix
// and the fused norm's arithmetic), shared by the finish kernel of hc_pre
// (cuda/mhc_pre_finish.cuh) and the one-pass kernel (cuda/mhc_pre_one_pass.cuh).
#include "cuda/mhc_pre_common.cuh"

namespace hcwarm_kernels {
namespace cuda {

// Sum of HC values; pairwise for hc 4 (two dependent adds instead of three).
template <int HC>
__device__ __forceinline__ float sum_n(const float (&v)[HC]) {
  if constexpr (HC == 4) {
    return (v[0] + v[1]) + (v[2] + v[3]);
  } else {
    float s = v[0];
#pragma unroll
    for (int i = 1; i < HC; ++i) s += v[i];
    return s;
  }
}

// One thread's HC x HC Sinkhorn. Every normalization multiplies by one
// reciprocal per row/column (<= 1.5 ulp from a true division), and the rows
// (columns) of a step are independent, so the latency chain is one add tree and
// one reciprocal per half-iteration: no shuffles, which cost more than the
// arithmetic they would spread.
template <int HC, bool FAST>
__device__ __forceinline__ void sinkhorn_f32(float (&c)[HC][HC], int iters, float eps) {
#pragma unroll
  for (int i = 0; i < HC; ++i) {
    float m = c[i][0];
#pragma unroll
    for (int j = 1; j < HC; ++j) m = fmaxf(m, c[i][j]);
#pragma unroll
    for (int j = 0; j < HC; ++j) c[i][j] = expf(c[i][j] - m);
    const float inv = rcp_sel<FAST>(sum_n<HC>(c[i]));
#pragma unroll
    for (int j = 0; j < HC; ++j) c[i][j] = fmaf(c[i][j], inv, eps);
  }
  for (int it = 0; it < iters; ++it) {
    if (it > 0) {
      float inv[HC];
#pragma unroll
      for (int i = 0; i < HC; ++i) inv[i] = rcp_sel<FAST>(sum_n<HC>(c[i]) + eps);
#pragma unroll
      for (int i = 0; i < HC; ++i) {
#pragma unroll
        for (int j = 0; j < HC; ++j) c[i][j] *= inv[i];
      }
    }
    float inv[HC];
#pragma unroll
    for (int j = 0; j < HC; ++j) {
      float col[HC];
#pragma unroll
      for (int i = 0; i < HC; ++i) col[i] = c[i][j];
      inv[j] = rcp_sel<FAST>(sum_n<HC>(col) + eps);
    }
#pragma unroll
    for (int i = 0; i < HC; ++i) {
#pragma unroll
      for (int j = 0; j < HC; ++j) c[i][j] *= inv[j];
    }
  }
}

// The scalar part of token t, run by one whole warp: mix[0..kMix) are the
// token's 24 mix sums and mix[kMix] its sum of squares; base and scale are the
// op's (kMix and 3 values); all three in shared memory, so that no lane waits on
// a global load here (the branches below run one after the other). Lanes
// 0..HC-1 write pre[] (shared), lanes HC..2HC-1 write post, lane 16 runs the
// Sinkhorn and writes comb. Nothing is written to global memory when !valid.
// In two halves, which the one-pass kernel and the split finish (FinishRole)
// run apart: scalar_sigmoids (pre and post) and scalar_comb (the Sinkhorn).
// r = 1 / sqrt(mean(x^2) + eps) from the sum of squares mix[kmix].
template <bool FAST>
__device__ __forceinline__ float scalar_rms_inv(const hcwarm_mhc_pre_params& p, const float* mix, int kmix, float K) {
  const float ms = FAST ? mix[kmix] * (1.0f / K) : mix[kmix] / K;
  return rcp_sel<FAST>(sqrtf(ms + p.rms_eps));
}
// pre[i] = sigmoid(mix[i] * r * scale[0] + base[i]) + hc_eps, from stream i's mix sum.
template <bool FAST>
__device__ __forceinline__ float pre_weight(const hcwarm_mhc_pre_params& p, float mix, float r, float scale0,
                                            float base) {
  return rcp_sel<FAST>(1.0f + expf(-(mix * r * scale0 + base))) + p.hc_eps;
}
template <int HC, bool FAST>
__device__ __forceinline__ void scalar_sigmoids(const hcwarm_mhc_pre_params& p, long long t, bool valid,
                                                const float* mix, const float* base, const float* scale, float* pre,
                                                int lane, float r) {
  if (lane < HC) {
    pre[lane] = pre_weight<FAST>(p, mix[lane], r, scale[0], base[lane]);
  } else if (lane < 2 * HC) {
    const float b = mix[lane] * r * scale[1] + base[lane];
    if (valid) p.post[t * HC + (lane - HC)] = p.post_mult * rcp_sel<FAST>(1.0f + expf(-b));
  }
}
template <int HC, bool FAST>
__device__ __forceinline__ void scalar_comb(const hcwarm_mhc_pre_params& p, long long t, bool valid,
                                            const float* mix, const float* base, const float* scale, int lane,
                                            float r) {
  if (lane == 16) {
    float c[HC][HC];
#pragma unroll
    for (int i = 0; i < HC; ++i) {
#pragma unroll
      for (int j = 0; j < HC; ++j) {
        const int m = 2 * HC + i * HC + j;
        c[i][j] = mix[m] * r * scale[2] + base[m];
      }
    }
    sinkhorn_f32<HC, FAST>(c, p.sinkhorn_iters, p.hc_eps);
    if (valid) {
      float* out = p.comb + t * HC * HC;
#pragma unroll
      for (int i = 0; i < HC; ++i) {
#pragma unroll
        for (int j = 0; j < HC; ++j) out[i * HC + j] = c[i][j];
      }
    }
  }
}
// base (kMix) and scale (3) into shared memory; threads 0..kMix+2 of the block.
template <int HC>
__device__ __forceinline__ void load_base_scale(const hcwarm_mhc_pre_params& p, float* base, float* scale, int tid) {
  constexpr int kMix = HC * (2 + HC);
  if (tid < kMix) {
    base[tid] = p.base[tid];
  } else if (tid < kMix + 3) {
    scale[tid - kMix] = p.scale[tid - kMix];
  }
}

// y = sum_i pre_i * x_i over 8 columns, in f32, rounded to bf16 (x[i]: stream i's
// 8 bf16 values). Adds the squares of the rounded values to ssq.
template <int HC>
__device__ __forceinline__ U4 mix_streams8(const U4 (&x)[HC], const float* pre, float& ssq) {
  float acc[8];
  {
    const unsigned int w4[4] = {x[0].x, x[0].y, x[0].z, x[0].w};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      acc[2 * e] = pre[0] * bf16_lo(w4[e]);
      acc[2 * e + 1] = pre[0] * bf16_hi(w4[e]);
    }
  }
#pragma unroll
  for (int i = 1; i < HC; ++i) {
    const unsigned int w4[4] = {x[i].x, x[i].y, x[i].z, x[i].w};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      acc[2 * e] = fmaf(pre[i], bf16_lo(w4[e]), acc[2 * e]);
      acc[2 * e + 1] = fmaf(pre[i], bf16_hi(w4[e]), acc[2 * e + 1]);
    }
  }
  unsigned int o[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    o[e] = pack_bf16x2(acc[2 * e], acc[2 * e + 1]);
    const float a = bf16_lo(o[e]), b = bf16_hi(o[e]);
    ssq = fmaf(a, a, ssq);
    ssq = fmaf(b, b, ssq);
  }
  return U4{o[0], o[1], o[2], o[3]};
}

// The fused RMSNorm of 8 bf16 y values: bf16(y * rn * w).
__device__ __forceinline__ U4 norm8(U4 y, U4 w, float rn) {
  const unsigned int w4[4] = {w.x, w.y, w.z, w.w};
  const unsigned int y4[4] = {y.x, y.y, y.z, y.w};
  unsigned int o[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    o[e] = pack_bf16x2(bf16_lo(y4[e]) * rn * bf16_lo(w4[e]), bf16_hi(y4[e]) * rn * bf16_hi(w4[e]));
  }
  return U4{o[0], o[1], o[2], o[3]};
}

}  // namespace cuda
}  // namespace hcwarm_kernels
