#pragma once
// A study, not a library kernel (docs/BENCHMARKS.md, "What was tried and rejected"):
// the first layer's pre from the embedding in one pass on thread-block clusters.
// A cluster of kEmbedCluster blocks splits every token's row into column slices.
// Each block copies its slice of a tile of TOKENS rows into shared memory once
// and multiplies it by its slice of fn (folded over the streams, held in
// registers for the whole launch). The cluster sums the slices' partials in
// distributed shared memory, each block runs the scalar part of
// TOKENS / kEmbedCluster of the tile's tokens, the cluster shares their pre
// weights, and each block writes y of its slice from the rows it still holds:
// the embedding is read once and the partials never leave the chip. Persistent:
// cluster c walks tiles c, c + clusters, ...; the next STAGES - 1 tiles' copies
// are in flight while one is worked on. Three cluster barriers a tile (partials,
// pre weights, y's squares for the fused norm) keep the cluster in lockstep.
// Built with src/kernels on the include path (bench/experiments/build.sh).
#include "cuda/mhc_pre_scalar.cuh"
#include "cuda/ptx/cluster.cuh"

namespace hcwarm_kernels {
namespace cuda {

// The cluster, its block, and the widths it takes: slices of whole 128-byte
// rows that fit 3 stages of 32 tokens (or 2 of 64) in an sm_90 block's shared memory.
inline constexpr int kEmbedCluster = 8;
inline constexpr int kEmbedClusterThreads = 256;
constexpr bool embed_cluster_shape(int hc, int hidden) {
  return hc == 4 && hidden > 0 && hidden % (64 * kEmbedCluster) == 0 && hidden <= 7168;
}
// Dynamic shared memory: the stages of rows, the warps' partial sums (kMix + 1
// floats per warp and token) and the block's partials (32 floats per token; two
// buffers where every block forms pre itself, SELF_PRE below).
constexpr int embed_cluster_smem(int hidden, int tokens, int stages, int part_buffers = 1) {
  return stages * tokens * (hidden / kEmbedCluster) * 2 + (kEmbedClusterThreads / 32) * tokens * 25 * 4 +
         part_buffers * tokens * 32 * 4;
}

// The shapes one specialization works with, each a compile-time constant.
template <int HIDDEN, int TOKENS, int STAGES, int PART_BUFFERS = 1>
struct EmbedClusterShape {
  static constexpr int kCluster = kEmbedCluster;
  static constexpr int kThreads = kEmbedClusterThreads;
  static constexpr int kWarps = kThreads / 32;
  static constexpr int kMix = 24;
  static constexpr int kSlice = HIDDEN / kCluster;               // a block's columns of every row
  static constexpr int kSteps = kSlice / 32;                     // 32-column mma steps of a slice
  static constexpr int kMaxSteps = (kSteps + kWarps - 1) / kWarps;  // a warp's steps (its fn in registers)
  static constexpr int kMTiles = TOKENS / 16;                    // mma row tiles of a tile
  static constexpr int kOwn = TOKENS / kCluster;                 // tokens whose scalar part a block runs
  static constexpr int kGranules = kSlice / 8;                   // 16-byte granules of a row's slice
  static constexpr int kGranIters = (kGranules + 31) / 32;       // a lane's granules of a row in the y phase
  static constexpr int kRowsPerWarp = TOKENS / kWarps;           // rows a warp writes y of
  static constexpr int kRowBytes = kSlice * 2;
  static constexpr int kStageBytes = TOKENS * kRowBytes;
  static constexpr int kRedStride = kMix + 1;                    // a warp's sums of a token, then its squares
  static constexpr int kRedOffset = STAGES * kStageBytes;
  static constexpr int kPartOffset = kRedOffset + kWarps * TOKENS * kRedStride * 4;
  static constexpr int kSmem = kPartOffset + PART_BUFFERS * TOKENS * 32 * 4;
  static_assert(embed_cluster_shape(4, HIDDEN),
                "HIDDEN: a multiple of 512 (slices of whole 128-byte rows), at most 7168");
  static_assert(TOKENS % 16 == 0 && TOKENS >= 16, "TOKENS: whole mma row tiles");
  static_assert(TOKENS % kCluster == 0 && kOwn <= kWarps, "TOKENS: a whole number of tokens per block, one warp each");
  static_assert(TOKENS % kWarps == 0, "TOKENS: the same rows per warp in the y phase");
  static_assert((TOKENS * kGranules) % kThreads == 0, "a tile's copies: the same count per thread");
  static_assert(kRowBytes % 128 == 0, "rows of whole 128-byte lines: the granule swizzle keeps the mma reads conflict-free");
  static_assert(STAGES >= 2 && STAGES <= 8, "STAGES: the tile worked on and at least one in flight (cp.async groups <= 7)");
  static_assert(kSmem == embed_cluster_smem(HIDDEN, TOKENS, STAGES, PART_BUFFERS), "the launcher's dynamic shared memory");
  static_assert(kSmem <= 227 * 1024, "dynamic shared memory beyond an sm_90 block's 227 KB");
};

// Shared address of granule c of row `row` in a stage: granule c ^ 4 (row & 1),
// so the 8 lanes of an mma fragment's read phase (rows g, g + 1) hit 32 banks.
template <class S>
__device__ __forceinline__ unsigned int embed_cluster_granule(unsigned int stage_base, int row, int c) {
  return stage_base + row * S::kRowBytes + ((c ^ ((row & 1) << 2)) << 4);
}

// HIDDEN, TOKENS, STAGES: EmbedClusterShape. The launch: a 1-D grid of whole
// clusters (kEmbedCluster blocks each, __cluster_dims__) of kEmbedClusterThreads
// threads, dynamic shared memory embed_cluster_smem; as the fold kernel's
// programmatic dependent when p.fn_folded is set (else each block folds its slice of fn itself).
// SELF_PRE: every block forms the pre weights of all the tile's tokens from the
// cluster's partials itself (the same sums in the same order as the owner's), so
// no barrier round shares them, and the owners' post and Sinkhorn run after the
// tile's y: two cluster barriers a tile with the fused norm, one without (the
// partials double-buffered). Slower than the broadcast round on an H100 (docs/BENCHMARKS.md,
// "What was tried and rejected").
template <int HIDDEN, int TOKENS, int STAGES, bool FUSED_NORM, bool FAST, bool SELF_PRE = false>
__device__ __forceinline__ void mhc_pre_embed_cluster(const hcwarm_mhc_pre_params& p) {
  using S = EmbedClusterShape<HIDDEN, TOKENS, STAGES, SELF_PRE ? 2 : 1>;
  constexpr int HC = 4;
  constexpr int kMix = S::kMix;
  constexpr int D = HIDDEN;
  constexpr long long K = (long long)HC * D;
  // The same for every block of a cluster: none returns alone (cluster barriers follow).
  if (p.input != hcwarm_mhc::kInputEmbed || p.hc_mult != HC || p.hidden != HIDDEN ||
      (FUSED_NORM && p.norm_weight == nullptr)) {
    return;
  }
  extern __shared__ __align__(128) unsigned char smem[];
  float* red = reinterpret_cast<float*>(smem + S::kRedOffset);    // [warp][row][kRedStride]
  float* part = reinterpret_cast<float*>(smem + S::kPartOffset);  // [row][32]: the block's slice sums
  __shared__ float mix_s[S::kOwn][32];
  __shared__ float pre_own[S::kOwn][HC];
  __shared__ float pre_all[TOKENS][HC];
  __shared__ float ssq_s[TOKENS];
  __shared__ float base_s[kMix];
  __shared__ float scale_s[3];

  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const int g = lane >> 2;
  const int q = lane & 3;
  const int rank = (int)cluster_rank();
  const long long T = p.num_tokens;
  const long long tiles = (T + TOKENS - 1) / TOKENS;
  const long long cluster = blockIdx.x / S::kCluster;
  const long long clusters = gridDim.x / S::kCluster;
  const int col0 = rank * S::kSlice;
  const unsigned int xs = smem_u32(smem);

  // Tile `tile`'s rows (zeros past T or past the last tile) into stage `stage`.
  auto issue = [&](long long tile, int stage) {
#pragma unroll 4
    for (int e = tid; e < TOKENS * S::kGranules; e += S::kThreads) {
      const int row = e / S::kGranules;
      const int c = e - row * S::kGranules;
      const long long t = tile * TOKENS + row;
      const bool ok = tile < tiles && t < T;
      cp_async16(embed_cluster_granule<S>(xs + stage * S::kStageBytes, row, c),
                 ok ? p.residual + t * D + col0 + c * 8 : p.residual, ok);
    }
    cp_async_commit();
  };
#pragma unroll
  for (int s = 0; s + 1 < STAGES; ++s) issue(cluster + s * clusters, s);
  load_base_scale<HC>(p, base_s, scale_s, tid);
  U4 nw[S::kGranIters];
  if constexpr (FUSED_NORM) {
#pragma unroll
    for (int j = 0; j < S::kGranIters; ++j) {
      const int c = lane + 32 * j;
      if (c < S::kGranules) nw[j] = ldg_u4(p.norm_weight + col0 + c * 8);
    }
  }

  // This warp's mma steps [u0, u1) of the slice, and their fn B fragments
  // (hi and lo bf16 of each n-tile, the order mma_step_smem reads from shared memory).
  const int u0 = warp * S::kSteps / S::kWarps;
  const int u1 = (warp + 1) * S::kSteps / S::kWarps;
  const float* folded = p.fn_folded;
  if (folded != nullptr) griddep_wait();  // the fold kernel wrote it
  U4 bh[S::kMaxSteps][3], bl[S::kMaxSteps][3];
#pragma unroll
  for (int s = 0; s < S::kMaxSteps; ++s) {
    const int u = u0 + s;
#pragma unroll
    for (int j = 0; j < 3; ++j) {
      const int n = 8 * j + g;
      const int col = col0 + 32 * u + 8 * q;
      F4 f0 = {0.f, 0.f, 0.f, 0.f}, f1 = f0;
      if (u < u1) {
        if (folded != nullptr) {
          f0 = ldcg_f4(folded + n * D + col);
          f1 = ldcg_f4(folded + n * D + col + 4);
        } else {
          f0 = fold_fn4<HC>(p.fn + n * K + col, D, true, true);
          f1 = fold_fn4<HC>(p.fn + n * K + col + 4, D, true, true);
        }
      }
      split_fn_pair(f0.x, f0.y, bh[s][j].x, bl[s][j].x);
      split_fn_pair(f0.z, f0.w, bh[s][j].y, bl[s][j].y);
      split_fn_pair(f1.x, f1.y, bh[s][j].z, bl[s][j].z);
      split_fn_pair(f1.z, f1.w, bh[s][j].w, bl[s][j].w);
    }
  }

  int stage = 0;
  int it = 0;  // the tile's index in this cluster's walk: its partials' buffer with SELF_PRE
  for (long long tile = cluster; tile < tiles; tile += clusters, ++it) {
    float* part_t = part + (SELF_PRE ? (it & 1) * TOKENS * 32 : 0);
    __syncthreads();  // the stage refilled next was last read in the previous tile's y phase
    issue(tile + (STAGES - 1) * clusters, stage == 0 ? STAGES - 1 : stage - 1);
    cp_async_wait<STAGES - 1>();
    __syncthreads();
    const unsigned int xst = xs + stage * S::kStageBytes;

    // 1. The slice's partials: warp w multiplies every row by its steps of fn.
    {
      float acc[S::kMTiles][3][4];
      float ss[S::kMTiles][2];
#pragma unroll
      for (int m = 0; m < S::kMTiles; ++m) {
        ss[m][0] = ss[m][1] = 0.f;
#pragma unroll
        for (int j = 0; j < 3; ++j) acc[m][j][0] = acc[m][j][1] = acc[m][j][2] = acc[m][j][3] = 0.f;
      }
#pragma unroll
      for (int s = 0; s < S::kMaxSteps; ++s) {
        const int u = u0 + s;
        if (u < u1) {
#pragma unroll
          for (int m = 0; m < S::kMTiles; ++m) {
            const U4 xa = lds_u4(embed_cluster_granule<S>(xst, 16 * m + g, 4 * u + q));
            const U4 xb = lds_u4(embed_cluster_granule<S>(xst, 16 * m + g + 8, 4 * u + q));
            add_squares8(xa, ss[m][0]);
            add_squares8(xb, ss[m][1]);
#pragma unroll
            for (int j = 0; j < 3; ++j) {
              mma_bf16_16816(acc[m][j], xa.x, xb.x, xa.y, xb.y, bh[s][j].x, bh[s][j].y);
              mma_bf16_16816(acc[m][j], xa.x, xb.x, xa.y, xb.y, bl[s][j].x, bl[s][j].y);
              mma_bf16_16816(acc[m][j], xa.z, xb.z, xa.w, xb.w, bh[s][j].z, bh[s][j].w);
              mma_bf16_16816(acc[m][j], xa.z, xb.z, xa.w, xb.w, bl[s][j].z, bl[s][j].w);
            }
          }
        }
      }
#pragma unroll
      for (int m = 0; m < S::kMTiles; ++m) {
        float* r0 = red + (warp * TOKENS + 16 * m + g) * S::kRedStride;
        float* r1 = r0 + 8 * S::kRedStride;
        store_acc_rows(acc[m], r0, r1, true, true, q);
        const float s0 = quad_sum(ss[m][0]), s1 = quad_sum(ss[m][1]);
        if (q == 0) {  // every stream's squares: exact, HC is a power of two
          r0[kMix] = s0 * (float)HC;
          r1[kMix] = s1 * (float)HC;
        }
      }
    }
    __syncthreads();
    for (int e = tid; e < TOKENS * S::kRedStride; e += S::kThreads) {
      const int row = e / S::kRedStride;
      const int m = e - row * S::kRedStride;
      float s = 0.f;
#pragma unroll
      for (int w = 0; w < S::kWarps; ++w) s += red[(w * TOKENS + row) * S::kRedStride + m];
      part_t[row * 32 + m] = s;
    }
    cluster_sync();  // every block's partials of the tile

    // 2. The scalar part of this block's tokens, from the cluster's partials in rank order.
    // Every rank's value in flight before the first add: one round trip, not eight.
    auto gather = [&](int row, int m) {
      float v[S::kCluster];
#pragma unroll
      for (int r = 0; r < S::kCluster; ++r) v[r] = ld_cluster_f32(smem_u32(part_t + row * 32 + m), r);
      float sum = 0.f;
#pragma unroll
      for (int r = 0; r < S::kCluster; ++r) sum += v[r];
      return sum;
    };
    if (warp < S::kOwn) {
      mix_s[warp][lane] = lane <= kMix ? gather(rank * S::kOwn + warp, lane) : 0.f;
      __syncwarp();
    }
    // An owner warp's token: pre (into pre_own), post and the Sinkhorn, from its gathered mix sums.
    auto owner_scalar = [&]() {
      if (warp < S::kOwn) {
        const int row = rank * S::kOwn + warp;
        const long long t = tile * TOKENS + row;
        const float rs = scalar_rms_inv<FAST>(p, mix_s[warp], kMix, (float)K);
        scalar_sigmoids<HC, FAST>(p, t, t < T, mix_s[warp], base_s, scale_s, pre_own[warp], lane, rs);
        scalar_comb<HC, FAST>(p, t, t < T, mix_s[warp], base_s, scale_s, lane, rs);
      }
    };
    if constexpr (SELF_PRE) {
      // pre of every row here: its stream's sum and the sum of squares, as the owner forms them.
      if (tid < TOKENS * HC) {
        const int row = tid / HC, i = tid % HC;
        const float m = gather(row, i), ss = gather(row, kMix);
        const float ms = FAST ? ss * (1.0f / (float)K) : ss / (float)K;
        pre_all[row][i] = pre_weight<FAST>(p, m, rcp_sel<FAST>(sqrtf(ms + p.rms_eps)), scale_s[0], base_s[i]);
      }
      __syncthreads();
    } else {
      owner_scalar();
      cluster_sync();  // every block's pre weights
      if (tid < TOKENS * HC) {
        const int row = tid / HC;
        pre_all[row][tid % HC] = ld_cluster_f32(smem_u32(&pre_own[row % S::kOwn][tid % HC]), row / S::kOwn);
      }
      __syncthreads();
    }

    // 3. y of the slice, from the rows still in shared memory (the finish's arithmetic).
    U4 yv[S::kRowsPerWarp][S::kGranIters];
#pragma unroll
    for (int k = 0; k < S::kRowsPerWarp; ++k) {
      const int row = warp + S::kWarps * k;
      const long long t = tile * TOKENS + row;
      float pre[HC];
#pragma unroll
      for (int i = 0; i < HC; ++i) pre[i] = pre_all[row][i];
      float ssq = 0.f;
#pragma unroll
      for (int j = 0; j < S::kGranIters; ++j) {
        const int c = lane + 32 * j;
        if (c < S::kGranules) {
          const U4 e = lds_u4(embed_cluster_granule<S>(xst, row, c));
          const U4 x4[HC] = {e, e, e, e};
          yv[k][j] = mix_streams8<HC>(x4, pre, ssq);
          if (!FUSED_NORM && t < T) stg_u4(p.y + t * D + col0 + c * 8, yv[k][j]);
        }
      }
      if constexpr (FUSED_NORM) {
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) ssq += __shfl_xor_sync(0xffffffffu, ssq, off);
        if (lane == 0) ssq_s[row] = ssq;
      }
    }
    if constexpr (FUSED_NORM) {
      cluster_sync();  // every block's squares of y
#pragma unroll
      for (int k = 0; k < S::kRowsPerWarp; ++k) {
        const int row = warp + S::kWarps * k;
        const long long t = tile * TOKENS + row;
        const float v = lane < S::kCluster ? ld_cluster_f32(smem_u32(&ssq_s[row]), lane) : 0.f;
        float tot = 0.f;
#pragma unroll
        for (int r = 0; r < S::kCluster; ++r) tot += __shfl_sync(0xffffffffu, v, r);
        const float rn = rcp_sel<FAST>(sqrtf(tot / (float)D + p.norm_eps));
#pragma unroll
        for (int j = 0; j < S::kGranIters; ++j) {
          const int c = lane + 32 * j;
          if (c < S::kGranules && t < T) stg_u4(p.y + t * D + col0 + c * 8, norm8(yv[k][j], nw[j], rn));
        }
      }
    }
    if constexpr (SELF_PRE) owner_scalar();  // the owners' post and Sinkhorn, after the tile's y
    stage = stage + 1 == STAGES ? 0 : stage + 1;
  }
  cp_async_wait<0>();
  cluster_sync();  // no block leaves while another may still read its shared memory
}

// kEmbedClusterThreads a block, one block per SM, clusters of kEmbedCluster fixed at compile time.
template <int HIDDEN, int TOKENS, int STAGES, bool FUSED_NORM, bool FAST, bool SELF_PRE = false>
__global__ void __cluster_dims__(kEmbedCluster, 1, 1) __launch_bounds__(kEmbedClusterThreads, 1)
    mhc_pre_embed_cluster_kernel(hcwarm_mhc_pre_params p) {
  mhc_pre_embed_cluster<HIDDEN, TOKENS, STAGES, FUSED_NORM, FAST, SELF_PRE>(p);
}

}  // namespace cuda
}  // namespace hcwarm_kernels
