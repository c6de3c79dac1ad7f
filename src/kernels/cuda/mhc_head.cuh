#pragma once
// The mHC head on CUDA (docs/MATH.md, section 6): after the last layer, the hc
// streams collapse into one row per token, with no Sinkhorn and no post gates.
// One key per (hc, hidden): a single compile covers every T. One kernel,
// mhc_head_cluster, instantiated twice; the launcher picks by T
// (backends/cuda/hc_head_cuda.cpp):
//   narrow  1 token per thread, while its grid is at most one block per SM
//           (decode sizes: a few tokens still spread over many SMs);
//   wide    hcwarm_mhc::head_wide_tpt tokens per thread beyond: each fn load
//           and each tile's barriers serve that many more tokens.
//
// mhc_head_cluster: a cluster of CLUSTER blocks takes one tile of
// TPT * hcwarm_mhc::kHeadTokens tokens (grid y: the tiles);
// block `rank` owns one slice of the hidden positions in every stream
// (common/mhc_head_params.hpp):
//   1. each thread loads its tokens' 16-byte vector of every stream into
//      registers and accumulates its share of the hc dot products with fn
//      (read from L2; the tile's token lanes of one vector share each load)
//      and of the sum of squares;
//   2. a warp and block reduction gives the block's partial sums, and the
//      cluster adds the CLUSTER blocks' partials through distributed shared
//      memory: every block computes the tile's pre gates (f32, accurate expf and
//      sqrtf);
//   3. each thread writes y = sum_i pre_i * x_i for its vectors from the
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
  static constexpr int kCluster = hcwarm_mhc::head_cluster(HIDDEN);
  static constexpr int kTokens = hcwarm_mhc::kHeadTokens;
  static constexpr int kVectors = HIDDEN / 8;  // 16-byte vectors of one stream's row
  static constexpr int kSlice = hcwarm_mhc::head_slice_vectors(HIDDEN);
  static constexpr int kThreads = hcwarm_mhc::head_threads(HIDDEN);
  static constexpr int kWarps = kThreads / 32;
  static constexpr long long kK = (long long)HC * HIDDEN;
  static_assert(HC >= 1 && HC <= 8, "mhc_head: hc_mult must be in [1, 8]");
  static_assert(HIDDEN >= 8 && HIDDEN % 8 == 0, "mhc_head: hidden must be a positive multiple of 8 (16-byte vectors)");
  static_assert(kTokens >= 1 && kTokens <= 32 && (kTokens & (kTokens - 1)) == 0,
                "mhc_head: tokens per tile must be a power of two that divides a warp");
  static_assert(kThreads <= 1024, "mhc_head: hidden too large for one slice per block (tokens x slice vectors <= 1024)");
};

// TPT: tokens per thread. The tile is TPT * hcwarm_mhc::kHeadTokens tokens
// (token u + k * hcwarm_mhc::kHeadTokens of the tile in thread (u, vl)'s k-th
// registers): each fn load serves TPT tokens, and a tile's barriers and
// reductions are shared by as many.
template <int HC, int HIDDEN, int TPT = 1>
__device__ __forceinline__ void mhc_head_cluster(const hcwarm_mhc_head_params& p) {
  using S = HeadShape<HC, HIDDEN>;
  constexpr int L = S::kTokens;  // token lanes of a vector
  constexpr int kTile = L * TPT;
  static_assert(TPT == 1 || TPT == 2 || TPT == 4,
                "mhc_head: 1, 2 or 4 tokens per thread (their rows live in registers)");
  if (p.hc_mult != HC || p.hidden != HIDDEN) return;  // the launcher checked; never write garbage

  __shared__ float red[S::kWarps][kTile][HC + 1];  // per warp: the HC dots and the sum of squares ([HC])
  __shared__ float part[kTile][HC + 1];            // the block's partials, read by the whole cluster
  __shared__ float pre_s[kTile][HC];

  const int rank = (int)ptx::cluster_rank();
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int u = tid % L;   // token lane of the tile
  const int vl = tid / L;  // vector of the slice
  const int v = rank * S::kSlice + vl;
  const bool col = vl < S::kSlice && v < S::kVectors;

  const long long t0 = (long long)blockIdx.y * kTile + u;  // one tile per cluster: the launcher's rule
  ptx::U4 x[TPT][HC];
#pragma unroll
  for (int k = 0; k < TPT; ++k) {
    const long long t = t0 + k * L;
    const bool live = col && t < p.num_tokens;
    const unsigned short* row = p.residual + (live ? t * S::kK + 8LL * v : 0);
#pragma unroll
    for (int i = 0; i < HC; ++i) x[k][i] = live ? ptx::ldg_u4(row + (long long)i * HIDDEN) : ptx::U4{0u, 0u, 0u, 0u};
  }

  float acc[TPT][HC + 1];
#pragma unroll
  for (int k = 0; k < TPT; ++k) {
#pragma unroll
    for (int j = 0; j <= HC; ++j) acc[k][j] = 0.f;
  }
  if (col) {
#pragma unroll
    for (int i = 0; i < HC; ++i) {
      float xf[TPT][8];
#pragma unroll
      for (int k = 0; k < TPT; ++k) {
        unpack8(x[k][i], xf[k]);
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[k][HC] = fmaf(xf[k][e], xf[k][e], acc[k][HC]);
      }
#pragma unroll
      for (int j = 0; j < HC; ++j) {
        const float* f = p.fn + j * S::kK + (long long)i * HIDDEN + 8LL * v;  // the tile's lanes of v share it
        const ptx::F4 a = ptx::ldg_f4(f), b = ptx::ldg_f4(f + 4);
#pragma unroll
        for (int k = 0; k < TPT; ++k) {
          float d = acc[k][j];
          d = fmaf(a.x, xf[k][0], d);
          d = fmaf(a.y, xf[k][1], d);
          d = fmaf(a.z, xf[k][2], d);
          d = fmaf(a.w, xf[k][3], d);
          d = fmaf(b.x, xf[k][4], d);
          d = fmaf(b.y, xf[k][5], d);
          d = fmaf(b.z, xf[k][6], d);
          d = fmaf(b.w, xf[k][7], d);
          acc[k][j] = d;
        }
      }
    }
  }
  // Lanes u, u + L, u + 2 L, ... hold the same tokens.
#pragma unroll
  for (int k = 0; k < TPT; ++k) {
#pragma unroll
    for (int j = 0; j <= HC; ++j) {
#pragma unroll
      for (int off = L; off < 32; off <<= 1) acc[k][j] += __shfl_xor_sync(0xffffffffu, acc[k][j], off);
    }
  }
  if (lane < L) {
#pragma unroll
    for (int k = 0; k < TPT; ++k) {
#pragma unroll
      for (int j = 0; j <= HC; ++j) red[warp][lane + k * L][j] = acc[k][j];
    }
  }
  __syncthreads();
  for (int e = tid; e < kTile * (HC + 1); e += S::kThreads) {
    float s = 0.f;
#pragma unroll
    for (int w = 0; w < S::kWarps; ++w) s += red[w][e / (HC + 1)][e % (HC + 1)];
    part[e / (HC + 1)][e % (HC + 1)] = s;
  }
  ptx::cluster_sync();
  for (int e = tid; e < kTile * HC; e += S::kThreads) {
    const int uu = e / HC, j = e % HC;
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

#pragma unroll
  for (int k = 0; k < TPT; ++k) {
    const long long t = t0 + k * L;
    if (col && t < p.num_tokens) {
      float o[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int i = 0; i < HC; ++i) {
        float xf[8];
        unpack8(x[k][i], xf);
        const float w = pre_s[u + k * L][i];
#pragma unroll
        for (int e = 0; e < 8; ++e) o[e] = fmaf(w, xf[e], o[e]);
      }
      ptx::stg_u4(p.y + t * HIDDEN + 8LL * v,
                  ptx::U4{pack_bf16x2(o[0], o[1]), pack_bf16x2(o[2], o[3]), pack_bf16x2(o[4], o[5]),
                          pack_bf16x2(o[6], o[7])});
    }
  }
  ptx::cluster_sync();  // the other blocks may still read this block's partials
}

// The entry point instantiated by name (jit/kernel_entry.hpp): the launcher
// passes the cluster (hcwarm_mhc::head_cluster), the block (head_threads) and its
// blocks per SM (head_blocks_per_sm) of HIDDEN.
template <int HC, int HIDDEN, int TPT, int CLUSTER, int THREADS, int MIN_BLOCKS>
__global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(THREADS, MIN_BLOCKS)
    mhc_head_cluster_kernel(hcwarm_mhc_head_params p) {
  mhc_head_cluster<HC, HIDDEN, TPT>(p);
}

}  // namespace hcwarm_head
