#pragma once
// The one-pass kernel's load side (overview: cuda/mhc_pre_one_pass.cuh): the
// TMA warp, the set-up, the mma warps and the signal warp, which turn the
// residual into a record per (token, part) and count each block in.
#include "cuda/mhc_pre_one_pass_block.cuh"

namespace hcwarm_kernels {
namespace cuda {
namespace one_pass {

// The TMA warp (lane 0): half b / 64 of each chunk over K-part b % 64.
template <int HC, int HIDDEN, bool FUSED_NORM, bool FAST, bool HEAD>
__device__ __forceinline__ void OnePassBlock<HC, HIDDEN, FUSED_NORM, FAST, HEAD>::tma() const {
  // ---- TMA ----
  if (lane != 0) return;
  const unsigned long long policy = policy_evict_last();
  int n = 0;
  for (int c = 0; c < nchunks; ++c) {
    const int d = c - window;
    if (d >= 0) {
      while (*y_done <= d) __nanosleep(kTmaPollNs);
    }
    const int e = c - kCombWindow;
    if (e >= 0) {
      while (comb_done[e % kCombWarps] < e / kCombWarps + 1) __nanosleep(kTmaPollNs);
    }
    for (int s = 0; s < spc; ++s, ++n) {
      const int st = n % kStages;
      MBarrier(empty + st).wait(((unsigned)(n / kStages) & 1u) ^ 1u);
      MBarrier(full + st).arrive_expect_tx(kStageBytes);
      tma_load_2d(stages + st * kStageBytes, tmap, part * part_k + kBox * s, c * kChunk + kBox * half,
                  MBarrier(full + st), policy);
    }
  }
  return;
}

// The set-up, while the TMA warp already streams the first chunks: fn's part
// as mma B fragments, split once (thread (g, q) of n-tile j holds fn[8j + g][k
// + 2q, +1] and [k + 2q + 8, +1], hi and lo; rows past fn's are zero), base,
// scale and the norm weight. Every warp but the TMA warp.
template <int HC, int HIDDEN, bool FUSED_NORM, bool FAST, bool HEAD>
__device__ __forceinline__ void OnePassBlock<HC, HIDDEN, FUSED_NORM, FAST, HEAD>::set_up() const {
  const int n = (int)blockDim.x - 32;
  const int u = tid - 32;
  // fn in 16-byte loads along its rows (whole sectors, a warp on 512
  // contiguous bytes), each thread turning its 4 columns into two pairs.
  const int row_f4 = part_k / 4;
  const int total = 8 * kTiles * row_f4;
  // Every global load of the set-up goes out before the first store: one
  // memory round trip, where a load per iteration took one each. 6 fn
  // granules and 2 norm-weight granules per thread cover the widest block
  // (hidden 7168: 2688 and 896 granules, 480 threads).
  constexpr int kBatch = 6;
  constexpr int kNormBatch = 2;
  U4 nwv[kNormBatch];
  if (FUSED_NORM) {
#pragma unroll
    for (int v = 0; v < kNormBatch; ++v) nwv[v] = ldg_u4(p.norm_weight + 8 * (u + v * n < D / 8 ? u + v * n : 0));
  }
  const bool base_lane = u < Mix::kMix + Mix::kScales;
  const float bsv = base_lane ? __ldg(u < Mix::kMix ? p.base + u : p.scale + (u - Mix::kMix)) : 0.f;
  for (int i0 = u; i0 < total; i0 += kBatch * n) {
    F4 fv[kBatch];
#pragma unroll
    for (int v = 0; v < kBatch; ++v) {
      const int i = i0 + v * n;
      const int row = i / row_f4;
      // Predicated, not branched around: a branch per load serializes them.
      const bool ok = i < total && row < Mix::kMix;
      const F4 f = ldg_f4(ok ? p.fn + row * K + (long long)part * part_k + 4 * (i % row_f4) : p.fn);
      fv[v] = ok ? f : F4{0.f, 0.f, 0.f, 0.f};
    }
#pragma unroll
    for (int v = 0; v < kBatch; ++v) {
      const int i = i0 + v * n;
      if (i < total) {
        const int row = i / row_f4, k = 4 * (i % row_f4);
        const int j = row >> 3, g = row & 7;
        const int r = (k >> 3) & 1;     // columns 8..15 of a k-step: the second register
        const int q0 = (k & 7) >> 1;  // columns k, k + 1 -> lane q0; k + 2, k + 3 -> q0 + 1
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float a = h == 0 ? fv[v].x : fv[v].z, b = h == 0 ? fv[v].y : fv[v].w;
          unsigned* w = fnf_ptr + ((k >> 4) * 32 + 4 * g + q0 + h) * Mix::kLaneWords + j * 4;
          if constexpr (HEAD) {
            unsigned hi = 0, mid = 0, lo = 0;
            split_fn_triple(a, b, hi, mid, lo);
            w[r] = hi;
            w[2 + r] = mid;
            w[4 + r] = lo;
            w[6 + r] = 0;
          } else {
            split_fn_pair(a, b, w[r], w[2 + r]);
          }
        }
      }
    }
  }
  if (base_lane) (u < Mix::kMix ? base_s[u] : scale_s[u - Mix::kMix]) = bsv;
  if (FUSED_NORM) {
#pragma unroll
    for (int v = 0; v < kNormBatch; ++v) {
      if (u + v * n < D / 8) *reinterpret_cast<U4*>(nw_s + 8 * (u + v * n)) = nwv[v];
    }
    for (int i = u + kNormBatch * n; i < D / 8; i += n) *reinterpret_cast<U4*>(nw_s + 8 * i) = ldg_u4(p.norm_weight + 8 * i);
  }
  DynamicNamedBarrier{OnePassBarriers::kSetUp, n}.sync();
}

// The mma warps: the 24 mix sums and the sum of squares of their 16 tokens, as records.
template <int HC, int HIDDEN, bool FUSED_NORM, bool FAST, bool HEAD>
__device__ __forceinline__ void OnePassBlock<HC, HIDDEN, FUSED_NORM, FAST, HEAD>::mma() const {
  // ---- mma: tokens [16m, +16) of the half-chunk ----
  const int m = warp - OnePassWarps::kFirstMma;
  const int g = lane >> 2, q = lane & 3;
  const int row = 16 * m + (lane & 7) + ((lane >> 3) & 1) * 8;  // ldmatrix: this lane's row of the 4 8x8 tiles
  const unsigned row_off = row * 128;
  const int swz = row & 7;
  int n = 0;
  int prev = -1;
  for (int c = 0; c < nchunks; ++c) {
    float ah[kTiles][4], al[kTiles][4];
#pragma unroll
    for (int j = 0; j < kTiles; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) ah[j][e] = al[j][e] = 0.f;
    float ss0 = 0.f, ss1 = 0.f;
    for (int s = 0; s < spc; ++s, ++n) {
      const int st = n % kStages;
      MBarrier(full + st).wait((unsigned)(n / kStages) & 1u);
      // The stage before is released only now: an arrive right after its
      // ldmatrix can overtake the shared-memory read (the barrier unit and
      // the load unit are not ordered), and the TMA would then overwrite the
      // stage mid-read. Its HMMAs, issued before this wait, had their operands.
      if (prev >= 0 && lane == 0) MBarrier(empty + prev).arrive();
      prev = st;
      const unsigned tile = stages + st * kStageBytes + row_off;
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        unsigned a0, a1, a2, a3;
        ldmatrix_x4(tile + (((2 * kk + (lane >> 4)) ^ swz) << 4), a0, a1, a2, a3);
        const unsigned fa = fnf + ((s * 4 + kk) * 32 + lane) * 4 * Mix::kLaneWords;
        if constexpr (HEAD) {
          const U4 f0 = lds_u4(fa), f1 = lds_u4(fa + 16);
          mma_bf16_16816(ah[0], a0, a1, a2, a3, f0.x, f0.y);
          mma_bf16_16816(al[0], a0, a1, a2, a3, f0.z, f0.w);
          mma_bf16_16816(al[0], a0, a1, a2, a3, f1.x, f1.y);
        } else {
          U4 f[kTiles];
#pragma unroll
          for (int j = 0; j < kTiles; ++j) f[j] = lds_u4(fa + 16 * j);
#pragma unroll
          for (int j = 0; j < kTiles; ++j) {
            mma_bf16_16816(ah[j], a0, a1, a2, a3, f[j].x, f[j].y);
            mma_bf16_16816(al[j], a0, a1, a2, a3, f[j].z, f[j].w);
          }
        }
        ss0 += squares2(a0) + squares2(a2);
        ss1 += squares2(a1) + squares2(a3);
      }
    }
    ss0 = quad_sum(ss0);
    ss1 = quad_sum(ss1);
    const int lt0 = kBox * half + 16 * m + g;  // token in the chunk
    const long long t0 = (long long)c * kChunk + lt0;
    float* r0 = rec + (((size_t)(c % kRing) * kChunk + lt0) * kParts + part) * kRec;
    float* r1 = r0 + (size_t)8 * kParts * kRec;
    // Whole 32-byte sectors (the sum of squares' sector padded with zeros):
    // a partial sector costs the L2 a fill from memory.
    if (t0 < T) {
#pragma unroll
      for (int j = 0; j < kTiles; ++j) stg_f2(r0 + 8 * j + 2 * q, ah[j][0] + al[j][0], ah[j][1] + al[j][1]);
      stg_f2(r0 + kSsq + 2 * q, q == 0 ? ss0 : 0.f, 0.f);
    }
    if (t0 + 8 < T) {
#pragma unroll
      for (int j = 0; j < kTiles; ++j) stg_f2(r1 + 8 * j + 2 * q, ah[j][2] + al[j][2], ah[j][3] + al[j][3]);
      stg_f2(r1 + kSsq + 2 * q, q == 0 ? ss1 : 0.f, 0.f);
    }
    // Records written: to the signal warp (bar.arrive orders them before its bar.sync).
    signal_barrier(c).arrive();
  }
}

// The signal warp: chunk c's records are in; count the block in.
template <int HC, int HIDDEN, bool FUSED_NORM, bool FAST, bool HEAD>
__device__ __forceinline__ void OnePassBlock<HC, HIDDEN, FUSED_NORM, FAST, HEAD>::signal() const {
  // ---- signal: chunk c's records are in; count the block in ----
  for (int c = 0; c < nchunks; ++c) {
    signal_barrier(c).sync();
    if (lane == 0) red_release_add_u32(my_counters + 2 * c, 1);
  }
}

}  // namespace one_pass
}  // namespace cuda
}  // namespace hcwarm_kernels
