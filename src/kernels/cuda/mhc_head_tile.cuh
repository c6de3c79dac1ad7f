#pragma once
// The steps of one token tile of the mHC head (docs/MATH.md, section 6), shared
// by the cluster kernel (mhc_head.cuh) and the cluster-free one
// (mhc_head_portable.cuh): load a thread's rows, accumulate the dots with fn and
// the sum of squares, reduce them over the block, turn full sums into gates,
// write y. No cluster, TMA or sm_90 instruction: these compile for sm_80.
// Compiled by NVRTC: no includes beyond these headers.
#include "common/mhc_head_params.hpp"
#include "cuda/mhc_post_mix.cuh"
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
// reductions are shared by as many. The steps below are shared by the cluster
// kernel and the cluster-free one (mhc_head_portable.cuh).
template <int HC, int HIDDEN, int TPT>
struct HeadTile {
  using S = HeadShape<HC, HIDDEN>;
  static constexpr int kLanes = S::kTokens;  // token lanes of a vector
  static constexpr int kTokens = kLanes * TPT;
  static_assert(TPT == 1 || TPT == 2 || TPT == 4,
                "mhc_head: 1, 2 or 4 tokens per thread (their rows live in registers)");
  using Rows = ptx::U4[TPT][HC];      // one 16-byte vector of every stream, per token of the thread
  using Sums = float[TPT][HC + 1];    // the HC dots and the sum of squares ([HC]), per token
  using Reduce = float[S::kWarps][kTokens][HC + 1];
  using Part = float[kTokens][HC + 1];
  using Gates = float[kTokens][HC];

  // The vector of the hidden positions that a thread at vl of its slice takes in the slice of
  // cluster rank r, and whether it has one there (the last slice may be short).
  struct Column {
    int v;
    bool in;
  };
  static __device__ __forceinline__ Column column(int r, int vl) {
    const int v = r * S::kSlice + vl;
    return {v, vl < S::kSlice && v < S::kVectors};
  }

  static __device__ __forceinline__ void zero(Sums& acc) {
#pragma unroll
    for (int k = 0; k < TPT; ++k) {
#pragma unroll
      for (int j = 0; j <= HC; ++j) acc[k][j] = 0.f;
    }
  }

  // Step 1a: the thread's rows of vector v (zeros where col is false or past T).
  static __device__ __forceinline__ void load(const hcwarm_mhc_head_params& p, long long t0, int v, bool col,
                                              Rows& x) {
#pragma unroll
    for (int k = 0; k < TPT; ++k) {
      const long long t = t0 + k * kLanes;
      const bool live = col && t < p.num_tokens;
      const unsigned short* row = p.residual + (live ? t * S::kK + 8LL * v : 0);
#pragma unroll
      for (int i = 0; i < HC; ++i) x[k][i] = live ? ptx::ldg_u4(row + (long long)i * HIDDEN) : ptx::U4{0u, 0u, 0u, 0u};
    }
  }

  // Step 1b: adds vector v's share of the dots with fn and of the sum of squares.
  static __device__ __forceinline__ void accumulate(const hcwarm_mhc_head_params& p, int v, bool col, const Rows& x,
                                                    Sums& acc) {
    if (!col) return;
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

  // Step 2a: the block's sums per tile token into part; the caller's barrier
  // (cluster_sync or __syncthreads) publishes them.
  static __device__ __forceinline__ void block_sums(Sums& acc, Reduce& red, Part& part) {
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    // Lanes u, u + kLanes, u + 2 kLanes, ... hold the same tokens.
#pragma unroll
    for (int k = 0; k < TPT; ++k) {
#pragma unroll
      for (int j = 0; j <= HC; ++j) {
#pragma unroll
        for (int off = kLanes; off < 32; off <<= 1) acc[k][j] += __shfl_xor_sync(0xffffffffu, acc[k][j], off);
      }
    }
    if (lane < kLanes) {
#pragma unroll
      for (int k = 0; k < TPT; ++k) {
#pragma unroll
        for (int j = 0; j <= HC; ++j) red[warp][lane + k * kLanes][j] = acc[k][j];
      }
    }
    __syncthreads();
    for (int e = tid; e < kTokens * (HC + 1); e += S::kThreads) {
      float s = 0.f;
#pragma unroll
      for (int w = 0; w < S::kWarps; ++w) s += red[w][e / (HC + 1)][e % (HC + 1)];
      part[e / (HC + 1)][e % (HC + 1)] = s;
    }
  }

  // Step 2b: gate j of a token from its full dot m and sum of squares ss (f32, accurate expf and sqrtf).
  static __device__ __forceinline__ float gate(const hcwarm_mhc_head_params& p, int j, float m, float ss) {
    const float rr = 1.0f / sqrtf(ss / (float)S::kK + p.rms_eps);
    return 1.0f / (1.0f + expf(-(m * rr * p.scale[0] + p.base[j]))) + p.hc_eps;
  }

  // Step 3: y = sum_i pre_i * x_i for the thread's tokens of vector v.
  static __device__ __forceinline__ void store(const hcwarm_mhc_head_params& p, long long t0, int u, int v, bool col,
                                               const Rows& x, const Gates& pre) {
#pragma unroll
    for (int k = 0; k < TPT; ++k) {
      const long long t = t0 + k * kLanes;
      if (col && t < p.num_tokens) {
        float o[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int i = 0; i < HC; ++i) {
          float xf[8];
          unpack8(x[k][i], xf);
          const float w = pre[u + k * kLanes][i];
#pragma unroll
          for (int e = 0; e < 8; ++e) o[e] = fmaf(w, xf[e], o[e]);
        }
        ptx::stg_u4(p.y + t * HIDDEN + 8LL * v,
                    ptx::U4{pack_bf16x2(o[0], o[1]), pack_bf16x2(o[2], o[3]), pack_bf16x2(o[4], o[5]),
                            pack_bf16x2(o[6], o[7])});
      }
    }
  }
};

}  // namespace hcwarm_head
