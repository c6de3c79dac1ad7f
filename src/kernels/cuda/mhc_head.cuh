#pragma once
// The mHC head on CUDA (docs/MATH.md, section 6): after the last layer, the hc
// streams collapse into one row per token, with no Sinkhorn and no post gates.
// One key per (hc, hidden): a single compile covers every T. Two kernels, the
// launcher picks one by T (backends/cuda/hc_head_cuda.cpp):
//   mhc_head_cluster  decode sizes: every tile's dot products spread over a
//                     cluster of SMs, so a few tokens still use much of the GPU;
//   mhc_head_rows     prefill sizes: one block per TOKENS whole rows, no
//                     cross-block step; fn is read from L2 once per block.
// (The split is HCWARM_MHC_HEAD_CLUSTER_BLOCKS_PER_SM.)
//
// mhc_head_cluster: a cluster of CLUSTER blocks takes one tile of
// HCWARM_MHC_HEAD_TOKENS tokens (grid y: the tiles);
// block `rank` owns one slice of the hidden positions in every stream
// (common/mhc_head_params.hpp):
//   1. each thread loads its token's 16-byte vector of every stream into
//      registers and accumulates its share of the hc dot products with fn
//      (read from L2; the tile's token lanes of one vector share each load)
//      and of the sum of squares;
//   2. a warp and block reduction gives the block's partial sums, and the
//      cluster adds the CLUSTER blocks' partials through distributed shared
//      memory: every block computes the tile's pre gates (f32, accurate expf and
//      sqrtf);
//   3. each thread writes y = sum_i pre_i * x_i for its vector from the
//      registers of step 1: the residual is read once.
// Compiled by NVRTC: no includes beyond these headers.
#include "common/mhc_head_params.hpp"
#include "cuda/mhc_post_mix.cuh"
#include "cuda/ptx/cluster.cuh"
#include "cuda/ptx/memory.cuh"

namespace hcwarm_head {

using hcwarm_bf16::pack_bf16x2;
using hcwarm_post::unpack8;
namespace ptx = hcwarm_kernels::cuda;

template <int HC, int HIDDEN>
struct HeadShape {
  static constexpr int kCluster = HCWARM_MHC_HEAD_CLUSTER(HIDDEN);
  static constexpr int kTokens = HCWARM_MHC_HEAD_TOKENS;
  static constexpr int kVectors = HIDDEN / 8;  // 16-byte vectors of one stream's row
  static constexpr int kSlice = HCWARM_MHC_HEAD_SLICE_VECTORS(HIDDEN);
  static constexpr int kThreads = HCWARM_MHC_HEAD_THREADS(HIDDEN);
  static constexpr int kWarps = kThreads / 32;
  static constexpr long long kK = (long long)HC * HIDDEN;
  static_assert(HC >= 1 && HC <= 8, "mhc_head: hc_mult must be in [1, 8]");
  static_assert(HIDDEN >= 8 && HIDDEN % 8 == 0, "mhc_head: hidden must be a positive multiple of 8 (16-byte vectors)");
  static_assert(kTokens >= 1 && kTokens <= 32 && (kTokens & (kTokens - 1)) == 0,
                "mhc_head: tokens per tile must be a power of two that divides a warp");
  static_assert(kThreads <= 1024, "mhc_head: hidden too large for one slice per block (tokens x slice vectors <= 1024)");
};

template <int HC, int HIDDEN>
__device__ __forceinline__ void mhc_head_cluster(const hcwarm_mhc_head_params& p) {
  using S = HeadShape<HC, HIDDEN>;
  constexpr int T_ = S::kTokens;
  if (p.hc_mult != HC || p.hidden != HIDDEN) return;  // the launcher checked; never write garbage

  __shared__ float red[S::kWarps][T_][HC + 1];  // per warp: the HC dots and the sum of squares ([HC])
  __shared__ float part[T_][HC + 1];            // the block's partials, read by the whole cluster
  __shared__ float pre_s[T_][HC];

  const int rank = (int)ptx::cluster_rank();
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int u = tid % T_;   // token of the tile
  const int vl = tid / T_;  // vector of the slice
  const int v = rank * S::kSlice + vl;
  const bool col = vl < S::kSlice && v < S::kVectors;

  const long long t = (long long)blockIdx.y * T_ + u;  // one tile per cluster: the launcher's rule
  const bool live = col && t < p.num_tokens;
  ptx::U4 x[HC];
  const unsigned short* row = p.residual + (live ? t * S::kK + 8LL * v : 0);
#pragma unroll
  for (int i = 0; i < HC; ++i) x[i] = live ? ptx::ldg_u4(row + (long long)i * HIDDEN) : ptx::U4{0u, 0u, 0u, 0u};

  float acc[HC + 1];
#pragma unroll
  for (int j = 0; j <= HC; ++j) acc[j] = 0.f;
  if (col) {
#pragma unroll
    for (int i = 0; i < HC; ++i) {
      float xf[8];
      unpack8(x[i], xf);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[HC] = fmaf(xf[e], xf[e], acc[HC]);
#pragma unroll
      for (int j = 0; j < HC; ++j) {
        const float* f = p.fn + j * S::kK + (long long)i * HIDDEN + 8LL * v;  // the tile's lanes of v share it
        const ptx::F4 a = ptx::ldg_f4(f), b = ptx::ldg_f4(f + 4);
        float d = acc[j];
        d = fmaf(a.x, xf[0], d);
        d = fmaf(a.y, xf[1], d);
        d = fmaf(a.z, xf[2], d);
        d = fmaf(a.w, xf[3], d);
        d = fmaf(b.x, xf[4], d);
        d = fmaf(b.y, xf[5], d);
        d = fmaf(b.z, xf[6], d);
        d = fmaf(b.w, xf[7], d);
        acc[j] = d;
      }
    }
  }
  // Lanes u, u + T_, u + 2 T_, ... hold the same token.
#pragma unroll
  for (int j = 0; j <= HC; ++j) {
#pragma unroll
    for (int off = T_; off < 32; off <<= 1) acc[j] += __shfl_xor_sync(0xffffffffu, acc[j], off);
  }
  if (lane < T_) {
#pragma unroll
    for (int j = 0; j <= HC; ++j) red[warp][lane][j] = acc[j];
  }
  __syncthreads();
  if (tid < T_ * (HC + 1)) {
    float s = 0.f;
#pragma unroll
    for (int w = 0; w < S::kWarps; ++w) s += red[w][tid / (HC + 1)][tid % (HC + 1)];
    part[tid / (HC + 1)][tid % (HC + 1)] = s;
  }
  ptx::cluster_sync();
  if (tid < T_ * HC) {
    const int uu = tid / HC, j = tid % HC;
    const unsigned dot_addr = ptx::smem_u32(&part[uu][j]);
    const unsigned ss_addr = ptx::smem_u32(&part[uu][HC]);
    float m = 0.f, ss = 0.f;
#pragma unroll
    for (int r = 0; r < S::kCluster; ++r) {  // rank order: every block sums alike
      m += ptx::ld_cluster_f32(dot_addr, r);
      ss += ptx::ld_cluster_f32(ss_addr, r);
    }
    const float rr = 1.0f / sqrtf(ss / (float)S::kK + p.rms_eps);
    pre_s[uu][j] = 1.0f / (1.0f + expf(-(m * rr * p.scale[0] + p.base[j]))) + p.hc_eps;
  }
  __syncthreads();

  if (live) {
    float o[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int i = 0; i < HC; ++i) {
      float xf[8];
      unpack8(x[i], xf);
      const float w = pre_s[u][i];
#pragma unroll
      for (int e = 0; e < 8; ++e) o[e] = fmaf(w, xf[e], o[e]);
    }
    ptx::stg_u4(p.y + t * HIDDEN + 8LL * v,
                ptx::U4{pack_bf16x2(o[0], o[1]), pack_bf16x2(o[2], o[3]), pack_bf16x2(o[4], o[5]),
                        pack_bf16x2(o[6], o[7])});
  }
  ptx::cluster_sync();  // the other blocks may still read this block's partials
}

// mhc_head_rows: block b takes TOKENS consecutive tokens with THREADS threads.
// Pass 1: each thread walks 16-byte vectors of the K = hc * hidden row, loads
// fn's hc rows at that column once for all the block's tokens, and accumulates
// the hc dot products and the sum of squares; a block reduction gives each
// token's pre gates. Pass 2 re-reads the rows (from L2) for y.
template <int HC, int HIDDEN, int THREADS, int TOKENS>
__device__ __forceinline__ void mhc_head_rows(const hcwarm_mhc_head_params& p) {
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
      const ptx::F4 a = ptx::ldg_f4(p.fn + i * kK + 8LL * v), b = ptx::ldg_f4(p.fn + i * kK + 8LL * v + 4);
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
