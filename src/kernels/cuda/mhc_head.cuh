#pragma once
// The mHC head on CUDA (docs/MATH.md, section 6): after the last layer, the hc
// streams collapse into one row per token, with no Sinkhorn and no post gates.
// One key per (hc, hidden): the head runs once per forward, so it is not split
// along K per token-count bucket (a single compile covers every T).
//
// Block b takes TOKENS consecutive tokens with THREADS threads. Pass 1: each
// thread walks 16-byte vectors of the K = hc * hidden row, loads fn's hc rows at
// that column once for all the block's tokens, and accumulates (f32 FMA) the hc
// dot products and the sum of squares; a block reduction gives each token's
// pre gates (f32, accurate expf and sqrtf). Pass 2 re-reads the rows (from L2)
// and writes y = sum_i pre_i * x_i, summed in f32 and rounded once to bf16.
// Compiled by NVRTC: no includes beyond these two headers.
#include "common/mhc_head_params.hpp"
#include "cuda/bf16.cuh"

namespace hcwarm_head {

using hcwarm_bf16::bf16_hi;
using hcwarm_bf16::bf16_lo;
using hcwarm_bf16::pack_bf16x2;

__device__ __forceinline__ void unpack8(const uint4& v, float (&f)[8]) {
  const unsigned int w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = bf16_lo(w[i]);
    f[2 * i + 1] = bf16_hi(w[i]);
  }
}

template <int HC, int HIDDEN, int THREADS, int TOKENS>
__device__ __forceinline__ void mhc_head(const hcwarm_mhc_head_params& p) {
  static_assert(HC >= 1 && HC <= 8, "mhc_head: hc_mult must be in [1, 8]");
  static_assert(HIDDEN > 0 && HIDDEN % 8 == 0, "mhc_head: hidden size must be a positive multiple of 8 (16-byte vectors)");
  static_assert(THREADS >= 32 && THREADS <= 1024 && THREADS % 32 == 0,
                "mhc_head: the block must be whole warps, at most 1024 threads");
  static_assert(TOKENS >= 1 && TOKENS <= 8, "mhc_head: tokens per block must be in [1, 8] (accumulators live in registers)");
  constexpr long long kK = (long long)HC * HIDDEN;
  constexpr int kRowVec = HC * HIDDEN / 8;  // 16-byte vectors of one token's row
  constexpr int kWarps = THREADS / 32;
  if (p.hc_mult != HC || p.hidden != HIDDEN) return;  // the launcher checked; never write garbage
  const long long t0 = (long long)blockIdx.x * TOKENS;
  if (t0 >= p.num_tokens) return;
  const int nt = p.num_tokens - t0 < TOKENS ? (int)(p.num_tokens - t0) : TOKENS;
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;

  float acc[TOKENS][HC + 1];  // [HC]: the sum of squares
#pragma unroll
  for (int u = 0; u < TOKENS; ++u) {
#pragma unroll
    for (int i = 0; i <= HC; ++i) acc[u][i] = 0.f;
  }
  for (int v = tid; v < kRowVec; v += THREADS) {
    float f[HC][8];
#pragma unroll
    for (int i = 0; i < HC; ++i) {
      const float4* fp = reinterpret_cast<const float4*>(p.fn + i * kK + 8LL * v);
      const float4 a = __ldg(fp), b = __ldg(fp + 1);
      f[i][0] = a.x; f[i][1] = a.y; f[i][2] = a.z; f[i][3] = a.w;
      f[i][4] = b.x; f[i][5] = b.y; f[i][6] = b.z; f[i][7] = b.w;
    }
#pragma unroll
    for (int u = 0; u < TOKENS; ++u) {
      if (u < nt) {
        float x[8];
        unpack8(__ldg(reinterpret_cast<const uint4*>(p.residual + (t0 + u) * kK) + v), x);
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          acc[u][HC] = fmaf(x[e], x[e], acc[u][HC]);
#pragma unroll
          for (int i = 0; i < HC; ++i) acc[u][i] = fmaf(f[i][e], x[e], acc[u][i]);
        }
      }
    }
  }

  __shared__ float red[kWarps][TOKENS][HC + 1];
  __shared__ float pre_s[TOKENS][HC];
#pragma unroll
  for (int u = 0; u < TOKENS; ++u) {
#pragma unroll
    for (int i = 0; i <= HC; ++i) {
      float s = acc[u][i];
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
      if (lane == 0) red[warp][u][i] = s;
    }
  }
  __syncthreads();
  if (tid < TOKENS * HC) {
    const int u = tid / HC, i = tid % HC;
    float m = 0.f, ss = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      m += red[w][u][i];
      ss += red[w][u][HC];
    }
    const float r = 1.0f / sqrtf(ss / (float)kK + p.rms_eps);
    pre_s[u][i] = 1.0f / (1.0f + expf(-(m * r * p.scale[0] + p.base[i]))) + p.hc_eps;
  }
  __syncthreads();

  for (int u = 0; u < nt; ++u) {
    const uint4* x = reinterpret_cast<const uint4*>(p.residual + (t0 + u) * kK);
    uint4* y = reinterpret_cast<uint4*>(p.y + (t0 + u) * HIDDEN);
    for (int v = tid; v < HIDDEN / 8; v += THREADS) {
      float o[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int i = 0; i < HC; ++i) {
        float xi[8];
        unpack8(x[i * (HIDDEN / 8) + v], xi);
        const float w = pre_s[u][i];
#pragma unroll
        for (int e = 0; e < 8; ++e) o[e] = fmaf(w, xi[e], o[e]);
      }
      uint4 out;
      out.x = pack_bf16x2(o[0], o[1]);
      out.y = pack_bf16x2(o[2], o[3]);
      out.z = pack_bf16x2(o[4], o[5]);
      out.w = pack_bf16x2(o[6], o[7]);
      y[v] = out;
    }
  }
}

}  // namespace hcwarm_head
