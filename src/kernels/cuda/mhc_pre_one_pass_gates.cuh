#pragma once
// The one-pass kernel's gate side (overview: cuda/mhc_pre_one_pass.cuh): the
// comb warps turn a token's 64 records into pre, post and comb (the head: pre),
// and the y warps write y from the token's row re-read from L2.
#include "cuda/mhc_pre_one_pass_block.cuh"

namespace hcwarm_kernels {
namespace cuda {
namespace one_pass {

// The y warps: token c * 128 + b's y (and the fused norm) for every chunk c.
template <int HC, int HIDDEN, bool FUSED_NORM, bool FAST, bool HEAD>
__device__ __forceinline__ void OnePassBlock<HC, HIDDEN, FUSED_NORM, FAST, HEAD>::y() const {
  // ---- y: token c * 128 + b. No global round trip on the way: the rows are
  // read-only input (their loads need no acquire, and go out as soon as the
  // registers are free), pre comes from the comb warps through shared memory,
  // the norm weight sits in shared memory ----
  const int yw = warp - OnePassWarps::kFirstY;
  const int yt = tid - 32 * OnePassWarps::kFirstY;
  const int nvec = D / 8;
  const unsigned long long policy = policy_evict_first();
  U4 xv[kGran][HC];
  auto load_x = [&](int c) {
    const long long t = (long long)c * kChunk + b;
    if (t < T) {
      const unsigned short* x = p.residual + t * K;
#pragma unroll
      for (int v = 0; v < kGran; ++v) {
        const int idx = yt + y_threads * v;
#pragma unroll
        for (int i = 0; i < HC; ++i) xv[v][i] = ldg_u4_policy(x + (long long)i * D + idx * 8, policy);
      }
    }
  };
  load_x(0);
  for (int c = 0; c < nchunks; ++c) {
    const long long t = (long long)c * kChunk + b;
    const int slot = c % kPreRing;
    MBarrier(pre_full + slot).wait((unsigned)(c / kPreRing) & 1u);
    float pre[HC];
#pragma unroll
    for (int i = 0; i < HC; ++i) pre[i] = pre_s[4 * slot + i];
    float ssq = 0.f;
    U4 yv[kGran];
#pragma unroll
    for (int v = 0; v < kGran; ++v) yv[v] = mix_streams8<HC>(xv[v], pre, ssq);
    if (c + 1 < nchunks) load_x(c + 1);
    float rn = 1.f;
    if (FUSED_NORM) {
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) ssq += __shfl_xor_sync(0xffffffffu, ssq, off);
      if (lane == 0) ssq_s[(c & 1) * 8 + yw] = ssq;
    }
    // Every y warp is past chunk c's rows and pre slot: the TMA may run on,
    // and the comb warps may reuse the slot (PRE_RING >= WINDOW).
    y_barrier.sync();
    if (yt == 0) *y_done = c + 1;
    if (FUSED_NORM) {
      float tot = 0.f;
      for (int w = 0; w < y_warps; ++w) tot += ssq_s[(c & 1) * 8 + w];
      rn = rcp_sel<FAST>(sqrtf(tot / (float)D + p.norm_eps));
    }
    if (t < T) {
      unsigned short* y = p.y + t * D;
#pragma unroll
      for (int v = 0; v < kGran; ++v) {
        const int idx = yt + y_threads * v;
        if (idx < nvec) {
          stg_u4(y + idx * 8, FUSED_NORM ? norm8(yv[v], lds_u4(smem_u32(nw_s + idx * 8)), rn) : yv[v]);
        }
      }
    }
  }
}

// The comb warps: chunk k, k + COMB_WARPS, ... of token b's half.
template <int HC, int HIDDEN, bool FUSED_NORM, bool FAST, bool HEAD>
__device__ __forceinline__ void OnePassBlock<HC, HIDDEN, FUSED_NORM, FAST, HEAD>::comb() const {
  // ---- comb: chunks k, k + kCombWarps, ...: pre to the y warps first, then
  // the next one's records (when its chunk is complete), then post and the
  // Sinkhorn for comb (the head: pre only) ----
  const int k = warp - c0;
  float* mine = mix_s + 32 * k;
  float* scr = scratch + k * 32 * kValues;
  // Chunk c's records, once its counter was seen full (acquire) by lane 0.
  auto load_records = [&](int c, float (&v)[kValues]) {
    const float* rr = rec + ((size_t)(c % kRing) * kChunk + b) * kParts * kRec;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float* r = rr + (lane + 32 * h) * kRec;
#pragma unroll
      for (int e = 0; e < 2 * kTiles; ++e) {
        const F4 f = ld_relaxed_f4(r + 4 * e);
        v[4 * e] = h == 0 ? f.x : v[4 * e] + f.x;
        v[4 * e + 1] = h == 0 ? f.y : v[4 * e + 1] + f.y;
        v[4 * e + 2] = h == 0 ? f.z : v[4 * e + 2] + f.z;
        v[4 * e + 3] = h == 0 ? f.w : v[4 * e + 3] + f.w;
      }
      const float s = ld_relaxed_f32(r + kSsq);
      v[kSsq] = h == 0 ? s : v[kSsq] + s;
    }
  };
  auto load = [&](int c, float (&v)[kValues]) {
    if (lane == 0) {
      while (ld_acquire_u32(my_counters + 2 * c) < full_count) __nanosleep(kCombPollNs);
    }
    __syncwarp();
    load_records(c, v);
  };
  float v[kValues], vn[kValues];
  if (k < nchunks) load(k, v);
  for (int c = k; c < nchunks; c += kCombWarps) {
    const long long t = (long long)c * kChunk + b;
    const bool more = c + kCombWarps < nchunks;
    // Lane l holds parts l and l + 32: the column sums over the lanes, in a fixed order.
#pragma unroll
    for (int e = 0; e < kValues; ++e) scr[lane * kValues + e] = v[e];
    __syncwarp();
    if (lane < kValues) {
      float s = 0.f;
#pragma unroll 8
      for (int l = 0; l < 32; ++l) s += scr[l * kValues + lane];
      mine[lane] = s;
    }
    __syncwarp();
    const float r = scalar_rms_inv<FAST>(p, mine, kSsq, (float)K);
    const int slot = c % kPreRing;
    if (HEAD) {
      if (lane < HC) pre_s[4 * slot + lane] = pre_weight<FAST>(p, mine[lane], r, scale_s[0], base_s[lane]);
    } else {
      scalar_sigmoids<HC, FAST>(p, t, t < T, mine, base_s, scale_s, pre_s + 4 * slot, lane, r);
    }
    __syncwarp();
    if (lane == 0) MBarrier(pre_full + slot).arrive();  // release: pre[0..HC) to the y warps
    // The next chunk's records go out before the Sinkhorn if they are in.
    bool fetched = false;
    if (more) {
      unsigned ready = 0;
      if (lane == 0) ready = ld_acquire_u32(my_counters + 2 * (c + kCombWarps)) >= full_count;
      if (__shfl_sync(0xffffffffu, ready, 0)) {
        __syncwarp();  // orders the other lanes' record loads after lane 0's acquire
        load_records(c + kCombWarps, vn);
        fetched = true;
      }
    }
    if (!HEAD) scalar_comb<HC, FAST>(p, t, t < T, mine, base_s, scale_s, lane, r);
    __syncwarp();
    if (lane == 0) comb_done[k] = c / kCombWarps + 1;
    if (more && !fetched) load(c + kCombWarps, vn);
    if (more) {
#pragma unroll
      for (int e = 0; e < kValues; ++e) v[e] = vn[e];
    }
  }
}

}  // namespace one_pass
}  // namespace cuda
}  // namespace hcwarm_kernels
