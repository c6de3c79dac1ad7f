#pragma once
// EXPERIMENT (sixth session, not shipped): the one-pass kernel of
// src/kernels/cuda/mhc_pre_stream.cuh rebuilt around wgmma, for
// one_pass_tune.cu. Same exchange idea (groups of 64 blocks, block j owns
// hidden columns [j D/64, +D/64) of all 4 streams, 32-token tiles); different:
//  - the sum warps: warpgroup 0 computes the block's 24 x 32 mix sums of a tile
//    as one chain of wgmma.m64n32k16 (A = fn's hi / lo bf16 rows in shared
//    memory: rows 16 w + g = hi, 16 w + 8 + g = lo of mix 8 w + g, rows 48-63
//    read whatever follows and are ignored; B = the residual tile), while the
//    sum warps take the tokens' 4 x 4 Gram matrices with mma.sync over all the
//    block's columns, so no cross-warp reduction is left;
//  - the residual tile is in the no-swizzle core-matrix layout (8 tokens x 16
//    bytes = 128 contiguous bytes), written by cp.async (8 tokens x 4 granules
//    an instruction) or by one TMA tensor copy of the whole tile (TMA);
//  - y by YW warps of their own (decoupled, the buffers bound the tiles in
//    flight), or by 8 sum warps LOCK tiles after the sums (lockstep, as the
//    shipped kernel);
//  - the exchange: as shipped (records + pre warps, 2 hops), with the records
//    staged in shared memory and written by the signal warp (STAGE2), or one
//    hop (ATOM): the blocks red.add.v4 their sums into the tile's and count
//    in; every block's fetch warp reads its tokens' sums and computes pre / rn.
// Every variant is correct (y within 1-2 bf16 ulp of the shipped kernel's on
// model-like inputs, except in a few dozen near-cancelling elements) and every
// one is slower: 442-522 us at T = 8192, D 7168 against 338 us
// (docs/BENCHMARKS.md, "sixth session"; docs/results/one-pass-tune-h200.txt).
#include "cuda/mhc_pre_stream.cuh"

namespace hcwarm_kernels {
namespace cuda {

__device__ __forceinline__ unsigned long long wg_desc(unsigned int addr, unsigned int lbo, unsigned int sbo) {
  return (unsigned long long)((addr >> 4) & 0x3FFF) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16) |
         ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32);
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
__device__ __forceinline__ void wg_pin(float (&d)[16]) {
#pragma unroll
  for (int k = 0; k < 16; ++k) asm volatile("" : "+f"(d[k])::"memory");
}
// D[64 x 32] = A[64 x 16] B[16 x 32] (the first k-step: D is only written).
__device__ __forceinline__ void wgmma_m64n32k16_first(float (&d)[16], unsigned long long da, unsigned long long db) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, 0, 1, 1, 0, 0;"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]), "=f"(d[6]), "=f"(d[7]),
        "=f"(d[8]), "=f"(d[9]), "=f"(d[10]), "=f"(d[11]), "=f"(d[12]), "=f"(d[13]), "=f"(d[14]), "=f"(d[15])
      : "l"(da), "l"(db)
      : "memory");
}
// D[64 x 32] (+)= A[64 x 16] B[16 x 32], bf16 in, f32 accumulate, both K-major in shared memory.
__device__ __forceinline__ void wgmma_m64n32k16(float (&d)[16], unsigned long long da, unsigned long long db,
                                                int accumulate) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %18, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, 0, 0;\n\t}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "l"(da), "l"(db), "r"(accumulate)
      : "memory");
}

#define HCWARM_WG_SBO(gran, pad) ((gran) * 128 + 16 * (pad))
#define HCWARM_WG_SS(gran, pad) ((4 * HCWARM_WG_SBO(gran, pad) + 127) / 128 * 128 + 32)
#define HCWARM_WG_TILE_BYTES(hidden, pad) (4 * HCWARM_WG_SS((hidden) / 64 / 8, pad))
#define HCWARM_WG_A_BYTES(hidden, pad) (6 * (4 * ((hidden) / 64) / 8 * 128 + 16 * (pad)))
#define HCWARM_WG_SMEM(hidden, bufs, pad) (HCWARM_WG_A_BYTES(hidden, pad) + (bufs) * HCWARM_WG_TILE_BYTES(hidden, pad))

// ATOM: the blocks add their sums into the tile's 32 x 36 floats in the
// workspace (red.add.v4.f32) and count themselves in (one counter per tile);
// every block's fetch warp then reads its tokens' sums and computes pre / rn
// itself (one hop instead of two; the pre warp idles). Workspace: counters
// (tiles u32, 256-byte aligned), then sums [tiles][32][36]; all zero at launch.
#define HCWARM_WG_ATOM_COUNTER_BYTES(tiles) (((tiles) * 4 + 255) / 256 * 256)
#define HCWARM_WG_ATOM_BYTES(tiles) (HCWARM_WG_ATOM_COUNTER_BYTES(tiles) + (tiles) * 32 * 36 * 4)
__device__ __forceinline__ void red_add_v4(float* p, F4 v) {
  asm volatile("red.relaxed.gpu.global.add.v4.f32 [%0], {%1,%2,%3,%4};" ::"l"(p), "f"(v.x), "f"(v.y), "f"(v.z),
               "f"(v.w)
               : "memory");
}
// TMA: the copy warp loads a tile with one tensor copy (tmap: the residual as
// [T][4][D / 8][8] viewed (8, token, granule, stream), box (8, 32, gran, 4));
// the tile is then [stream][granule][token][16 B]: x_off = s * gran * 512 + c * 512 + t * 16.
__device__ __forceinline__ void mbar_expect_tx(unsigned int addr, unsigned int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(addr), "r"(bytes) : "memory");
}
__device__ __forceinline__ void tma_load_4d(unsigned int dst, const void* tmap, int c0, int c1, int c2, int c3,
                                            unsigned int mbar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];" ::"r"(dst),
      "l"(tmap), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(mbar)
      : "memory");
}
template <int HC, int HIDDEN, bool FUSED_NORM, bool FAST, int BUFS, int YW, bool SWAP_LS = false, int PAD = 0,
          bool ATOM = false, int CW = 1, int PRE_SLOTS = 2, bool NOCOMB = false, bool TMA = false, int SIGW = 1,
          int LOCK = 0, bool STAGE2 = false>
__device__ __forceinline__ void mhc_pre_stream_wg(const hcwarm_mhc_pre_params& p, const void* tmap = nullptr) {
  constexpr int kSlices = HCWARM_MHC_STREAM_SLICES;
  constexpr int kTile = HCWARM_MHC_STREAM_TILE;
  constexpr int kRing = HCWARM_MHC_STREAM_RING;
  constexpr int kBufs = BUFS;
  constexpr int kRec = HCWARM_MHC_STREAM_RECORD;
  constexpr int kMix = HC * (2 + HC);
  constexpr int kGram = HC * (HC + 1) / 2;
  constexpr int kVals = kMix + kGram;
  // LOCK > 0: 8 sum warps (warpgroup 0 issues the wgmma, all 8 take the Gram
  // of 4 tokens each) that also write y of tile i - LOCK in step i.
  constexpr int kSumWarps = LOCK > 0 ? 8 : 4;
  constexpr int kRole0 = kSumWarps + YW;  // copy, pre, comb, signal, fetch
  static_assert(HC == 4 && kTile == 32 && kSlices == 64, "as mhc_pre_stream");
  static_assert(kVals <= kRec, "a record holds the 34 values");
  static_assert(kBufs >= 3 && kRing >= kBufs + 1, "a ring slot is reused only after its pre was read");
  static_assert((YW >= 1) != (LOCK > 0), "y warps, or the sum warps write y");
  // STAGE2: the 2-hop exchange, but the sum warps stage their sums in shared
  // memory and the signal warp writes the records (coalesced) before the count.
  constexpr bool kStaged = ATOM || STAGE2;
  static_assert(SIGW == 1 || (kStaged && CW == 1), "several signal warps: staged sums, one copy warp");
  // Staged sums with SIGW signal warps: stage buffers of the block's sums, 2 per signal warp.
  constexpr int kStages = kStaged ? 2 * SIGW : 1;
  static_assert(3 + 2 * kStages <= 16, "named barriers 3 .. 3 + 2 stages");
  if (!shape_ok<1, HC, HIDDEN, true>(p)) return;
  if (FUSED_NORM && p.norm_weight == nullptr) return;
  const int D = HIDDEN != 0 ? HIDDEN : p.hidden;
  const int DS = D / kSlices;
  const int gran = DS / 8;  // granules of a (token, stream) row
  if (D % (kSlices * 16) != 0 || D > HCWARM_MHC_STREAM_MAX_HIDDEN || (int)blockDim.x != (kRole0 + 4 + CW + SIGW - 1) * 32 ||
      gridDim.x % kSlices != 0) {
    return;
  }
  const long long K = (long long)HC * D;
  const long long T = p.num_tokens;
  const int SS = TMA ? gran * 512 : HCWARM_WG_SS(gran, PAD);
  const int SBO = TMA ? 128 : HCWARM_WG_SBO(gran, PAD);  // 8 tokens on
  const int LBO = TMA ? 512 : 128;                        // a granule on
  const int tile_bytes = 4 * SS;
  const int a_sbo = 4 * DS / 8 * 128 + 16 * PAD;  // 8 rows of A on
  const int a_bytes = 6 * a_sbo;

  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* a_s = smem;                // fn hi/lo, [6 row groups][K granules][8 rows][16 B]
  unsigned char* x_s = smem + a_bytes;      // [kBufs][tile_bytes]
  __shared__ __align__(8) unsigned long long full_bar[kBufs];
  __shared__ __align__(8) unsigned long long empty_bar[kBufs];
  __shared__ float mix_s[32];
  __shared__ float gram_s[kGram];
  __shared__ float comb_in[4][20];
  __shared__ __align__(8) unsigned long long comb_full[4];
  __shared__ __align__(8) unsigned long long comb_empty[4];
  __shared__ float mix_c[32];
  __shared__ float pre_s[PRE_SLOTS][kTile][5];
  __shared__ __align__(8) unsigned long long pre_full[PRE_SLOTS];
  __shared__ __align__(8) unsigned long long pre_empty[PRE_SLOTS];
  __shared__ float base_s[kMix];
  __shared__ float scale_s[3];
  __shared__ __align__(16) float pre_tmp[8];
  // ATOM: the block's sums of a tile, from the sum warps to the signal warp (2 tiles).
  __shared__ __align__(16) float stage_s[kStages][kStaged ? kTile : 1][kRec];
  unsigned int* const tile_cnt = reinterpret_cast<unsigned int*>(p.partials);
  float* const tile_sums = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(p.partials) +
                                                    HCWARM_WG_ATOM_COUNTER_BYTES(ATOM ? (T + kTile - 1) / kTile : 0));

#ifdef HCWARM_MHC_STREAM_TRACE
  unsigned long long* const stamp_buf = hcwarm_stream_trace;
#endif
  const int tid = threadIdx.x;
  // Warp-uniform as far as the compiler can tell (a broadcast): wgmma in a
  // branch it cannot prove uniform is serialized.
  const int warp = __shfl_sync(0xffffffffu, tid >> 5, 0);
  const int lane = tid & 31;
  const int g = lane >> 2;
  const int q = lane & 3;
  const int groups = gridDim.x / kSlices;
  const int grp = blockIdx.x / kSlices;
  const int slice = blockIdx.x % kSlices;
  const long long tiles = (T + kTile - 1) / kTile;
  const long long n = grp < tiles ? (tiles - 1 - grp) / groups + 1 : 0;
  auto tile_t0 = [&](long long i) { return (grp + i * groups) * kTile; };
  unsigned int* cnt = reinterpret_cast<unsigned int*>(p.partials) + grp * kRing * 2;
  float* pre_g = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(p.partials) +
                                          HCWARM_MHC_STREAM_COUNTER_BYTES(groups)) +
                 (long long)grp * (HCWARM_MHC_STREAM_PRE_FLOATS + HCWARM_MHC_STREAM_RECORD_FLOATS);
  float* rec_g = pre_g + HCWARM_MHC_STREAM_PRE_FLOATS;
  const unsigned int full_l = smem_u32(&full_bar[0]);
  const unsigned int empty_l = smem_u32(&empty_bar[0]);
  const unsigned int x_l = smem_u32(x_s);
  const unsigned int a_l = smem_u32(a_s);
  // Granule c of token t, stream s, in a tile.
  auto x_off = [&](int t, int s, int c) {
    return (unsigned int)(s * SS + (t >> 3) * SBO + c * LBO + (t & 7) * 16);
  };

  if (tid == 0) {
    for (int b = 0; b < kBufs; ++b) {
      mbar_init(full_l + 8 * b, TMA ? 1 : 32 * CW);
      mbar_init(empty_l + 8 * b, LOCK > 0 ? kSumWarps : YW);
    }
    for (int c = 0; c < 4; ++c) {
      mbar_init(smem_u32(&comb_full[c]), 1);
      mbar_init(smem_u32(&comb_empty[c]), 1);
    }
    for (int c = 0; c < PRE_SLOTS; ++c) {
      mbar_init(smem_u32(&pre_full[c]), 1);
      mbar_init(smem_u32(&pre_empty[c]), LOCK > 0 ? kSumWarps : YW);
    }
  }
  load_base_scale<HC>(p, base_s, scale_s, tid);
  // fn's hi / lo rows into A: row 16 w + 8 h + gg = term h of mix 8 w + gg; k = s * DS + col.
  {
    const int kk = 4 * DS;
    for (int e = tid; e < kMix * (kk / 2); e += blockDim.x) {
      const int m = e / (kk / 2);
      const int k = 2 * (e - m * (kk / 2));
      const int s = k / DS, col = k - s * DS;
      const float* f = p.fn + (long long)m * K + (long long)s * D + slice * DS + col;
      unsigned int hi, lo;
      split_fn_pair(f[0], f[1], hi, lo);
      const int w = m >> 3, gg = m & 7;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = 16 * w + 8 * h + gg;
        const unsigned int off = (r >> 3) * a_sbo + (k >> 3) * 128 + (r & 7) * 16 + (k & 7) * 2;
        *reinterpret_cast<unsigned int*>(a_s + off) = h == 0 ? hi : lo;
      }
    }
  }
  fence_async_shared();
  __syncthreads();

  if (warp == kRole0 || (CW > 1 && warp >= kRole0 + 5)) {
    // ---- The copy warp(s). An instruction copies 8 tokens x 4 granules of a
    // stream: lane (token 8 tg + lane % 8, granule cb + lane / 8), so each
    // 8-lane phase writes one 128-byte core matrix row block (no bank
    // conflicts) and each token's 64 bytes are two whole sectors. Copy warp
    // cw takes token groups tg = cw, cw + CW, ...
    const int cw = warp == kRole0 ? 0 : warp - kRole0 - 4;
    const int lt = lane & 7, lg = lane >> 3;
    if (TMA) {
      if (cw != 0 || lane != 0) return;
      if ((x_l & 127) != 0) __trap();  // a tensor copy's destination is 128-byte aligned
      for (long long i = 0; i < n; ++i) {
        const int b = (int)(i % kBufs);
        if (i >= kBufs) mbar_wait(empty_l + 8 * b, (unsigned int)((i / kBufs - 1) & 1));
        if (ATOM) HCWARM_STREAM_STAMP(3, i, slice);
        mbar_expect_tx(full_l + 8 * b, (unsigned int)tile_bytes);
        tma_load_4d(x_l + b * tile_bytes, tmap, 0, (int)tile_t0(i), slice * gran, 0, full_l + 8 * b);
        if (ATOM) HCWARM_STREAM_STAMP(6, i, slice);
      }
      return;
    }
    for (long long i = 0; i < n; ++i) {
      const int b = (int)(i % kBufs);
      if (i >= kBufs) mbar_wait(empty_l + 8 * b, (unsigned int)((i / kBufs - 1) & 1));
      if (ATOM && cw == 0 && lane == 0) HCWARM_STREAM_STAMP(3, i, slice);
      const long long t0 = tile_t0(i);
      const unsigned int dst0 = x_l + b * tile_bytes;
      for (int tg = cw; tg < kTile / 8; tg += CW) {
        const int t = 8 * tg + lt;
        // Rows past T read row T - 1 (nothing is written for them).
        const unsigned short* src = p.residual + (t0 + t < T ? t0 + t : T - 1) * K + slice * DS;
#pragma unroll
        for (int s = 0; s < HC; ++s) {
#pragma unroll
          for (int cb = 0; cb < HCWARM_MHC_STREAM_MAX_HIDDEN / kSlices / 8; cb += 4) {
            const int c = cb + lg;
            if (c < gran) cp_async16(dst0 + x_off(t, s, c), src + s * D + 8 * c, true);
          }
        }
      }
      cp_async_mbar_arrive(full_l + 8 * b);
      if (ATOM && cw == 0 && lane == 0) HCWARM_STREAM_STAMP(6, i, slice);
    }
    asm volatile("cp.async.wait_all;" ::: "memory");
    return;
  }

  auto my_token = [&](long long i) { return slice - (int)(i & 1) * kTile; };
  auto records_of = [&](long long i, int tok) {
    return rec_g + ((long long)((i % kRing) * kTile + tok) * kSlices) * kRec;
  };
  auto sum_records = [&](const float* r, float (&sum)[2]) {
    float v[64];
    {
      F4 a[kRec / 4], b[kRec / 4];
#pragma unroll
      for (int c = 0; c < kRec / 4; ++c) {
        a[c] = ldcg_f4(r + lane * kRec + 4 * c);
        b[c] = ldcg_f4(r + (32 + lane) * kRec + 4 * c);
      }
#pragma unroll
      for (int c = 0; c < kRec / 4; ++c) {
        v[4 * c] = a[c].x + b[c].x;
        v[4 * c + 1] = a[c].y + b[c].y;
        v[4 * c + 2] = a[c].z + b[c].z;
        v[4 * c + 3] = a[c].w + b[c].w;
      }
    }
#pragma unroll
    for (int k = kRec; k < 64; ++k) v[k] = 0.f;
    halve_across_lanes<16>(v, lane);
    halve_across_lanes<8>(v, lane);
    halve_across_lanes<4>(v, lane);
    halve_across_lanes<2>(v, lane);
    halve_across_lanes<1>(v, lane);
    sum[0] = v[0];
    sum[1] = v[1];
  };

  if (ATOM && warp == kRole0 + 1) return;
  if (warp == kRole0 + 1) {
    // ---- The pre warp (as mhc_pre_stream).
    long long k = 0;
    for (long long i = 0; i < n; ++i) {
      const int tok = my_token(i);
      if (tok < 0 || tok >= kTile) continue;
      const int slot = (int)(i % kRing);
      wait_count(cnt + 2 * slot, (unsigned int)(kSlices * (i / kRing + 1)));
      if (lane == 0) HCWARM_STREAM_STAMP(2, i, slice);
      const float* r = records_of(i, tok);
      float sums[2];
      sum_records(r, sums);
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int v = 2 * lane + e;
        if (v < kMix) {
          mix_s[v] = sums[e];
        } else if (v < kVals) {
          gram_s[v - kMix] = sums[e];
        }
      }
      __syncwarp();
      if (lane == 0) mix_s[kMix] = (gram_s[0] + gram_s[1]) + (gram_s[2] + gram_s[3]);
      __syncwarp();
      const long long t = tile_t0(i) + tok;
      const float rr = scalar_rms_inv<FAST>(p, mix_s, kMix, (float)K);
      scalar_sigmoids<HC, FAST>(p, t, false, mix_s, base_s, scale_s, pre_tmp, lane, rr);
      __syncwarp();
      if (lane == 0) {
        float rn = 0.f;
        if (FUSED_NORM) {
          const float* G = gram_s;
          const float* w = pre_tmp;
          const float diag = w[0] * w[0] * G[0] + w[1] * w[1] * G[1] + w[2] * w[2] * G[2] + w[3] * w[3] * G[3];
          const float off = w[0] * (w[1] * G[4] + w[2] * G[5] + w[3] * G[6]) + w[1] * (w[2] * G[7] + w[3] * G[8]) +
                            w[2] * w[3] * G[9];
          const float yss = fmaxf(fmaf(2.0f, off, diag), 0.f);
          rn = rcp_sel<FAST>(sqrtf(yss / (float)D + p.norm_eps));
        }
        float* dst = pre_g + (slot * kTile + tok) * 8;
        stg_u4(dst, U4{__float_as_uint(pre_tmp[0]), __float_as_uint(pre_tmp[1]), __float_as_uint(pre_tmp[2]),
                       __float_as_uint(pre_tmp[3])});
        dst[4] = rn;
        signal_count(cnt + 2 * slot + 1);
        HCWARM_STREAM_STAMP(3, i, slice);
      }
      if (lane >= HC) scalar_sigmoids<HC, FAST>(p, t, t < T, mix_s, base_s, scale_s, nullptr, lane, rr);
      const int c = (int)(k % 4);
      if (k >= 4) mbar_wait(smem_u32(&comb_empty[c]), (unsigned int)((k / 4 - 1) & 1));
      if (lane < HC * HC) comb_in[c][lane] = mix_s[2 * HC + lane];
      if (lane == HC * HC) comb_in[c][lane] = rr;
      __syncwarp();
      if (lane == 0) mbar_arrive(smem_u32(&comb_full[c]));
      ++k;
      __syncwarp();
    }
    return;
  }

  if (NOCOMB && warp == kRole0 + 2) return;
  if (warp == kRole0 + 2) {
    // ---- The comb warp.
    long long k = 0;
    for (long long i = 0; i < n; ++i) {
      const int tok = my_token(i);
      if (tok < 0 || tok >= kTile) continue;
      const int c = (int)(k % 4);
      mbar_wait(smem_u32(&comb_full[c]), (unsigned int)((k / 4) & 1));
      if (lane < HC * HC) mix_c[2 * HC + lane] = comb_in[c][lane];
      const float rr = comb_in[c][HC * HC];
      __syncwarp();
      if (lane == 0) mbar_arrive(smem_u32(&comb_empty[c]));
      ++k;
      const long long t = tile_t0(i) + tok;
      scalar_comb<HC, FAST>(p, t, t < T, mix_c, base_s, scale_s, lane, rr);
      __syncwarp();
    }
    return;
  }

  if (kStaged && (warp == kRole0 + 3 || (SIGW > 1 && warp >= kRole0 + 5))) {
    // ---- Signal warp r of SIGW: tiles r, r + SIGW, ...: the block's sums of
    // token `lane` (stage i % kStages, named barrier 3 + stage) into the
    // tile's, the count, then the stage is free again (barrier 3 + kStages + stage).
    const int r = warp == kRole0 + 3 ? 0 : warp - kRole0 - 4;
    const int threads = kSumWarps * 32 + 32;
    for (long long i = r; i < n; i += SIGW) {
      const int k = (int)(i % kStages);
      asm volatile("bar.sync %0, %1;" ::"r"(3 + k), "r"(threads) : "memory");
      const long long gt = grp + i * groups;
      const float* src = stage_s[k][lane];
      if (ATOM) {
        float* dst = tile_sums + (gt * kTile + lane) * kRec;
#pragma unroll
        for (int c = 0; c < kRec / 4; ++c) red_add_v4(dst + 4 * c, *reinterpret_cast<const F4*>(src + 4 * c));
      } else {
        float* dst = records_of(i, lane) + slice * kRec;
#pragma unroll
        for (int c = 0; c < kRec / 4; ++c) {
          const F4 v = *reinterpret_cast<const F4*>(src + 4 * c);
          stg_u4(dst + 4 * c, U4{__float_as_uint(v.x), __float_as_uint(v.y), __float_as_uint(v.z), __float_as_uint(v.w)});
        }
      }
      __syncwarp();
      if (lane == 0) {
        signal_count(ATOM ? tile_cnt + gt : cnt + 2 * (int)(i % kRing));
        HCWARM_STREAM_STAMP(1, i, slice);
      }
      __syncwarp();
      if (i + kStages < n) asm volatile("bar.arrive %0, %1;" ::"r"(3 + kStages + k), "r"(threads) : "memory");
    }
    return;
  }
  if (warp == kRole0 + 3) {
    // ---- The signal warp: counts the block in once the sum warps stored a tile's records.
    // It lets the sum warps store tile i + 2's records only after that, so no
    // barrier ever holds the arrivals of two tiles.
    const int threads = kSumWarps * 32 + 32;
    for (long long i = 0; i < 2 && i < n; ++i) compute_warps_arrive(i, threads);
    for (long long i = 0; i < n; ++i) {
      records_stored_sync(i, threads);
      if (ATOM) {
        // The block's sums of token `lane` into the tile's, then the count.
        const long long gt = grp + i * groups;
        float* dst = tile_sums + (gt * kTile + lane) * kRec;
        const float* src = stage_s[i & 1][lane];
#pragma unroll
        for (int c = 0; c < kRec / 4; ++c) red_add_v4(dst + 4 * c, *reinterpret_cast<const F4*>(src + 4 * c));
        __syncwarp();
        if (lane == 0) {
          signal_count(tile_cnt + gt);
          HCWARM_STREAM_STAMP(1, i, slice);
        }
        __syncwarp();
        if (i + 2 < n) compute_warps_arrive(i + 2, threads);
        continue;
      }
      if (lane == 0) {
        signal_count(cnt + 2 * (int)(i % kRing));
        HCWARM_STREAM_STAMP(1, i, slice);
      }
      __syncwarp();
      if (i + 2 < n) compute_warps_arrive(i + 2, threads);
    }
    return;
  }

  if (warp == kRole0 + 4) {
    // ---- The fetch warp.
    long long kc = 0;  // tokens handed to the comb warp
    for (long long j = 0; j < n && ATOM; ++j) {
      // Token `lane` of tile j: its sums -> pre and rn for the y warps; post
      // and the comb sums if this block finishes it.
      const int c = (int)(j % PRE_SLOTS);
      if (j >= PRE_SLOTS) mbar_wait(smem_u32(&pre_empty[c]), (unsigned int)((j / PRE_SLOTS - 1) & 1));
      const long long gt = grp + j * groups;
      wait_count(tile_cnt + gt, (unsigned int)kSlices);
      if (lane == 0) HCWARM_STREAM_STAMP(4, j, slice);
      float v[kRec];
      const float* src = tile_sums + (gt * kTile + lane) * kRec;
#pragma unroll
      for (int e = 0; e < kRec / 4; ++e) {
        const F4 f = ldcg_f4(src + 4 * e);
        v[4 * e] = f.x;
        v[4 * e + 1] = f.y;
        v[4 * e + 2] = f.z;
        v[4 * e + 3] = f.w;
      }
      const float* G = v + kMix;
      const float ssq = (G[0] + G[1]) + (G[2] + G[3]);  // trace(G) = sum x^2
      const float ms = FAST ? ssq * (1.0f / (float)K) : ssq / (float)K;
      const float rr = rcp_sel<FAST>(sqrtf(ms + p.rms_eps));
      float w[HC];
#pragma unroll
      for (int h = 0; h < HC; ++h) w[h] = rcp_sel<FAST>(1.0f + expf(-(v[h] * rr * scale_s[0] + base_s[h]))) + p.hc_eps;
      float rn = 0.f;
      if (FUSED_NORM) {
        const float diag = w[0] * w[0] * G[0] + w[1] * w[1] * G[1] + w[2] * w[2] * G[2] + w[3] * w[3] * G[3];
        const float off = w[0] * (w[1] * G[4] + w[2] * G[5] + w[3] * G[6]) + w[1] * (w[2] * G[7] + w[3] * G[8]) +
                          w[2] * w[3] * G[9];
        const float yss = fmaxf(fmaf(2.0f, off, diag), 0.f);
        rn = rcp_sel<FAST>(sqrtf(yss / (float)D + p.norm_eps));
      }
      pre_s[c][lane][0] = w[0];
      pre_s[c][lane][1] = w[1];
      pre_s[c][lane][2] = w[2];
      pre_s[c][lane][3] = w[3];
      pre_s[c][lane][4] = rn;
      __syncwarp();
      if (lane == 0) mbar_arrive(smem_u32(&pre_full[c]));
      const int tok = my_token(j);
      if (!NOCOMB && tok >= 0 && tok < kTile) {
        const long long t = tile_t0(j) + tok;
        const int kk = (int)(kc % 4);
        if (kc >= 4 && lane == tok) mbar_wait(smem_u32(&comb_empty[kk]), (unsigned int)((kc / 4 - 1) & 1));
        if (lane == tok) {
          if (t < T) {
#pragma unroll
            for (int h = 0; h < HC; ++h) {
              const float b = v[HC + h] * rr * scale_s[1] + base_s[HC + h];
              p.post[t * HC + h] = p.post_mult * rcp_sel<FAST>(1.0f + expf(-b));
            }
          }
#pragma unroll
          for (int e = 0; e < HC * HC; ++e) comb_in[kk][e] = v[2 * HC + e];
          comb_in[kk][HC * HC] = rr;
          mbar_arrive(smem_u32(&comb_full[kk]));
        }
        ++kc;
        __syncwarp();
      }
    }
    for (long long j = 0; j < n && !ATOM; ++j) {
      const int c = (int)(j % PRE_SLOTS);
      if (j >= PRE_SLOTS) mbar_wait(smem_u32(&pre_empty[c]), (unsigned int)((j / PRE_SLOTS - 1) & 1));
      wait_count(cnt + 2 * (int)(j % kRing) + 1, (unsigned int)(kTile * (j / kRing + 1)));
      if (lane == 0) HCWARM_STREAM_STAMP(4, j, slice);
      const float* pr = pre_g + ((int)(j % kRing) * kTile + lane) * 8;
      const F4 pv = ldcg_f4(pr);
      const float rn = ldcg_f32_v(pr + 4);
      pre_s[c][lane][0] = pv.x;
      pre_s[c][lane][1] = pv.y;
      pre_s[c][lane][2] = pv.z;
      pre_s[c][lane][3] = pv.w;
      pre_s[c][lane][4] = rn;
      __syncwarp();
      if (lane == 0) mbar_arrive(smem_u32(&pre_full[c]));
    }
    return;
  }

  if (warp >= kSumWarps && warp < kRole0) {
    // ---- The y warps: token `lane`, granules yw, yw + YW, ... of the slice.
    const int yw = warp - kSumWarps;
    constexpr int kPer = 2 * ((HCWARM_MHC_STREAM_MAX_HIDDEN / kSlices / 16 + YW - 1) / (YW > 0 ? YW : 1));
    U4 wv[kPer];
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int c = 2 * (yw + YW * (k / 2)) + (k & 1);
      wv[k] = FUSED_NORM && c < gran ? ldg_u4(p.norm_weight + slice * DS + 8 * c) : U4{0u, 0u, 0u, 0u};
    }
    for (long long j = 0; j < n; ++j) {
      const int c2 = (int)(j % PRE_SLOTS);
      mbar_wait(smem_u32(&pre_full[c2]), (unsigned int)((j / PRE_SLOTS) & 1));
      const float pre[HC] = {pre_s[c2][lane][0], pre_s[c2][lane][1], pre_s[c2][lane][2], pre_s[c2][lane][3]};
      const float rn = pre_s[c2][lane][4];
      __syncwarp();
      if (lane == 0) mbar_arrive(smem_u32(&pre_empty[c2]));
      const long long t = tile_t0(j) + lane;
      const int b = (int)(j % kBufs);
      const unsigned int xb = x_l + b * tile_bytes;
#pragma unroll
      for (int k = 0; k < kPer; ++k) {
        const int c = 2 * (yw + YW * (k / 2)) + (k & 1);
        if (c < gran) {
          U4 xs[HC];
#pragma unroll
          for (int s = 0; s < HC; ++s) xs[s] = lds_u4(xb + x_off(lane, s, c));
          U4 y = weigh_streams8<HC>(xs, pre);
          if (FUSED_NORM) y = norm8(y, wv[k], rn);
          if (t < T) stg_u4(p.y + t * D + slice * DS + 8 * c, y);
        }
      }
      __syncwarp();
      if (lane == 0) mbar_arrive(empty_l + 8 * b);
      if (ATOM && yw == 0 && lane == 0) HCWARM_STREAM_STAMP(2, j, slice);
    }
    return;
  }

  // ---- The sum warps (warpgroup 0 issues the wgmma).
  const int w = warp;
  const int lm = lane >> 3, lr = lane & 7;
  constexpr int kTGW = kTile / 4 / kSumWarps;  // token groups (4 tokens) of a warp's Gram
  // Gram: warp w takes token groups tg = kTGW w + u; ldmatrix row (token
  // 4 tg + row / 4, stream row % 4), row = 8 (lm % 2) + lr, granule 2 cc + lm / 2.
  unsigned int gram_off[kTGW];
#pragma unroll
  for (int u = 0; u < kTGW; ++u) {
    const int row = 8 * (lm & 1) + lr;
    gram_off[u] = x_off(4 * (kTGW * w + u) + (row >> 2), row & 3, lm >> 1);
  }
  int gram_dst[2];
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    const int s = g & 3, s2 = 2 * (q & 1) + e;
    const int gi = s == s2 ? s : 4 + (s == 0 ? s2 - 1 : s == 1 ? s2 + 1 : 5);
    const bool keep = (g >> 2) == (q >> 1) && s <= s2;
    gram_dst[e] = keep ? kMix + gi : -1;
  }
  // LOCK: y granules of this warp (w, w + 8) and their norm weights.
  constexpr int kYPer = 2 * ((HCWARM_MHC_STREAM_MAX_HIDDEN / kSlices / 16 + kSumWarps - 1) / kSumWarps);  // granule pairs
  U4 wv[LOCK > 0 ? kYPer : 1];
#pragma unroll
  for (int k = 0; k < (LOCK > 0 ? kYPer : 1); ++k) {
    const int c = 2 * (w + kSumWarps * (k / 2)) + (k & 1);
    wv[k] = LOCK > 0 && FUSED_NORM && c < gran ? ldg_u4(p.norm_weight + slice * DS + 8 * c) : U4{0u, 0u, 0u, 0u};
  }
  const int nks = 4 * DS / 16;  // k-steps of 16
  const unsigned int lbo = SWAP_LS ? SBO : LBO, sbo = SWAP_LS ? LBO : SBO;
  const unsigned int albo = SWAP_LS ? a_sbo : 128, asbo = SWAP_LS ? 128 : a_sbo;
  const int sthreads = kSumWarps * 32 + 32;
  for (long long i = 0; i < n + LOCK; ++i) {
    if (i < n) {
      const int b = (int)(i % kBufs);
      mbar_wait(full_l + 8 * b, (unsigned int)((i / kBufs) & 1));
      fence_async_shared();  // the copy's writes, before the async proxy reads them
      if (tid == 0) HCWARM_STREAM_STAMP(5, i, slice);
      const unsigned int xb = x_l + b * tile_bytes;
      float d[16];
      if (w < 4) {
        wg_fence();
        wgmma_m64n32k16_first(d, wg_desc(a_l, albo, asbo), wg_desc(xb, lbo, sbo));
#pragma unroll
        for (int ks = 1; ks < (HIDDEN != 0 ? 4 * HIDDEN / kSlices / 16 : nks); ++ks) {
          const int s = ks / (DS / 16), kc = ks - s * (DS / 16);  // stream, 16-column chunk
          const unsigned long long da = wg_desc(a_l + (2 * ks) * 128, albo, asbo);
          const unsigned long long db = wg_desc(xb + s * SS + (2 * kc) * LBO, lbo, sbo);
          wgmma_m64n32k16(d, da, db, 1);
        }
        wg_commit();
      }
      // The Gram matrices of the warp's tokens, over the slice's columns.
      float c0[kTGW][4] = {}, c1[kTGW][4] = {};
      for (int cc = 0; cc < DS / 16; ++cc) {
#pragma unroll
        for (int u = 0; u < kTGW; ++u) {
          unsigned int a0, a1, a2, a3;
          ldmatrix_x4(xb + gram_off[u] + 2 * cc * LBO, a0, a1, a2, a3);
          mma_bf16_16816(c0[u], a0, a1, a2, a3, a0, a2);
          mma_bf16_16816(c1[u], a0, a1, a2, a3, a1, a3);
        }
      }
      if (!ATOM && tid == 0) HCWARM_STREAM_STAMP(6, i, slice);
      static_assert(!STAGE2 || !ATOM, "one exchange");
      const int stage = (int)(i % kStages);
      if (!kStaged) {
        compute_warps_sync(i, sthreads);  // the signal warp is done with tile i - 2
      } else if (i >= kStages) {
        // The signal warp of tile i - kStages is done with the stage.
        asm volatile("bar.sync %0, %1;" ::"r"(3 + kStages + stage), "r"(sthreads) : "memory");
      }
      const int slot = (int)(i % kRing);
      // A token's values: at rec + t * rstride (the workspace, or stage_s under ATOM).
      float* rec = kStaged ? &stage_s[stage][0][0] : rec_g + (long long)slot * kTile * kSlices * kRec + slice * kRec;
      const long long rstride = kStaged ? kRec : (long long)kSlices * kRec;
      if (w < 4) {
        wg_wait0();
        wg_pin(d);
      }
      if (tid == 0) HCWARM_STREAM_STAMP(7, i, slice);
      if (w < 3) {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int t0 = 8 * j + 2 * q;
          rec[t0 * rstride + 8 * w + g] = d[4 * j] + d[4 * j + 2];
          rec[(t0 + 1) * rstride + 8 * w + g] = d[4 * j + 1] + d[4 * j + 3];
        }
      }
#pragma unroll
      for (int u = 0; u < kTGW; ++u) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          if (gram_dst[e] >= 0) {
            const int t = 4 * (kTGW * w + u) + (g >> 2);
            rec[t * rstride + gram_dst[e]] = c0[u][e];
            rec[(t + 2) * rstride + gram_dst[e]] = c1[u][2 + e];
          }
        }
      }
      if (kStaged) {
        asm volatile("bar.arrive %0, %1;" ::"r"(3 + stage), "r"(sthreads) : "memory");
      } else {
        records_stored_arrive(i, sthreads);
      }
      if (tid == 0) HCWARM_STREAM_STAMP(0, i, slice);
    }
    const long long j = i - LOCK;
    if (LOCK > 0 && j >= 0) {
      // y of tile j: token `lane`, granules w, w + kSumWarps, ...
      const int c2 = (int)(j % PRE_SLOTS);
      mbar_wait(smem_u32(&pre_full[c2]), (unsigned int)((j / PRE_SLOTS) & 1));
      const float pre[HC] = {pre_s[c2][lane][0], pre_s[c2][lane][1], pre_s[c2][lane][2], pre_s[c2][lane][3]};
      const float rn = pre_s[c2][lane][4];
      __syncwarp();
      if (lane == 0) mbar_arrive(smem_u32(&pre_empty[c2]));
      const long long t = tile_t0(j) + lane;
      const int b = (int)(j % kBufs);
      const unsigned int xb = x_l + b * tile_bytes;
#pragma unroll
      for (int k = 0; k < kYPer; ++k) {
        const int c = 2 * (w + kSumWarps * (k / 2)) + (k & 1);
        if (c < gran) {
          U4 xs[HC];
#pragma unroll
          for (int s = 0; s < HC; ++s) xs[s] = lds_u4(xb + x_off(lane, s, c));
          U4 y = weigh_streams8<HC>(xs, pre);
          if (FUSED_NORM) y = norm8(y, wv[k], rn);
          if (t < T) stg_u4(p.y + t * D + slice * DS + 8 * c, y);
        }
      }
      __syncwarp();
      if (lane == 0) mbar_arrive(empty_l + 8 * b);
      if (ATOM && w == 0 && lane == 0) HCWARM_STREAM_STAMP(2, j, slice);
    }
  }
}

}  // namespace cuda
}  // namespace hcwarm_kernels
