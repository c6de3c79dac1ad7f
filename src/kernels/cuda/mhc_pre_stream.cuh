#pragma once
// One-pass mHC pre for large T (num_splits == 1, sm_90): reads the residual
// from memory once. Compiled by NVRTC as the third part of a num_splits == 1
// specialization and by nvcc into the generic fatbin (HIDDEN = 0).
//
// A group of 64 blocks (one per SM; a 132-SM H200 runs 2 groups) takes tiles
// of 32 tokens in turn (group c: tiles c, c + groups, ...). Block j owns the
// slice [j * D/64, +D/64) of the hidden columns of all 4 streams. Its warps:
//  - 0, copy: the slice of each tile into shared memory (cp.async, BUFS tiles
//    in flight or held), row (token, stream) by row, XOR-swizzled so that every
//    read below is free of bank conflicts;
//  - 5.., compute (one per 16 columns): per tile, the 24 mix sums of their
//    columns on the tensor cores (C[mix][token] = fn x^T, fn's hi/lo bf16 terms
//    as A fragments held in registers) and the streams' 4 x 4 Gram matrix
//    G_st = sum_d x_s[d] x_t[d], also on the tensor cores (bf16 products are
//    exact, sums in f32): X X^T over rows (token, stream), whose diagonal 4 x 4
//    blocks are the tokens' Gram matrices. The block adds its warps' 34 values
//    per token in a fixed order and stores them as the (token, slice) record of
//    the tile in the workspace (shared memory holds one tile's sums: a warp
//    writes tile i's once every warp has read tile i - 1's);
//  - 3, signal: then counts the block in (a release add on the group's counter);
//  - 1, pre: for the tile's token j (blocks 0..31 on even tiles, 32..63 on odd
//    ones), waits for the 64 records of its token, adds them in a fixed order
//    (pairs of records, then a reduce-scatter across the lanes),
//    computes pre and rn = rsqrt(pre^T G pre / D + eps) (the norm's mean over
//    the unrounded y; trace(G) is the sum of squares), publishes them for the
//    group, then writes post and hands the comb sums to
//  - 2, comb: the Sinkhorn and comb, off the path the group waits on;
//  - 4, fetch: waits for the group's pre / rn of each tile and copies them into
//    shared memory, so that the compute warps never poll global memory;
//  - LAG tiles later the compute warps write y of their columns from the tile,
//    still in shared memory, and free its buffer.
// Blocks wait for each other only through these counts, and the exchange of a
// tile runs under the next LAG tiles' GEMMs. Every block must be resident (the
// launcher uses a cooperative launch); the counters start at zero (the launcher
// clears them), and a ring slot is rewritten only after every block has read
// the pre of the tile that last used it (RING >= LAG + 1).
//
// On the H200 the exchange of a tile takes ~8 us end to end (signal 0.6, the
// pre warps seeing it 0.8, their work 3.4, the fetch 1.3, the GEMM 2.0;
// tools/experiments/one_pass_tune.cu) and a tile ~2.7 us, the same with LAG 4
// (which shared memory also holds) and with one group alone: the bound is a
// block's own work per tile, not the exchange. docs/BENCHMARKS.md.
#include "cuda/mhc_pre.cuh"

namespace hcwarm_kernels {
namespace cuda {

// Timestamps of the exchange, for tools/experiments/one_pass_tune.cu only
// (which defines HCWARM_MHC_STREAM_TRACE and the buffer): event e of tile i of
// group 0, block `slice`.
#ifdef HCWARM_MHC_STREAM_TRACE
__device__ unsigned long long* hcwarm_stream_trace;
#define HCWARM_STREAM_STAMP(e, i, blk)                                                         \
  do {                                                                                          \
    if (grp == 0 && (i) < 128) {                                                                \
      unsigned long long now_;                                                                  \
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now_));                                  \
      stamp_buf[((i) * 8 + (e)) * 64 + (blk)] = now_;                                           \
    }                                                                                           \
  } while (0)
#else
#define HCWARM_STREAM_STAMP(e, i, blk) \
  do {                                 \
  } while (0)
#endif

__device__ __forceinline__ unsigned int ld_acquire_u32(const unsigned int* p) {
  unsigned int v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// Spins until the counter has reached `target` (the difference keeps it right
// past wrap-around), with a short sleep between polls: a spinning warp takes
// issue slots from the warps beside it.
__device__ __forceinline__ void wait_count(const unsigned int* p, unsigned int target) {
  while (static_cast<int>(ld_acquire_u32(p) - target) < 0) __nanosleep(32);
}
// Counts this block in: a release add, by one thread after a barrier that
// follows the block's stores (the barrier orders them before the release).
__device__ __forceinline__ void signal_count(unsigned int* p) {
  asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(p) : "memory");
}
__device__ __forceinline__ F4 ldcg_f4(const float* p) {
  F4 v;
  asm volatile("ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
  return v;
}
// As ldcg_f32 (mhc_pre.cuh), but volatile: it stays after the acquire poll
// before it.
__device__ __forceinline__ float ldcg_f32_v(const float* p) {
  float v;
  asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p));
  return v;
}

__device__ __forceinline__ void mbar_init(unsigned int addr, unsigned int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(addr), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned int addr) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(addr) : "memory");
}
// Arrives on the mbarrier once this thread's earlier cp.async copies have landed.
__device__ __forceinline__ void cp_async_mbar_arrive(unsigned int addr) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(addr) : "memory");
}
// Waits for the phase of parity `parity` of a block mbarrier to complete.
__device__ __forceinline__ void mbar_wait(unsigned int addr, unsigned int parity) {
  unsigned int done;
  do {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(addr), "r"(parity)
        : "memory");
  } while (!done);
}
// Named barriers 1 / 2 (by step parity): the compute warps, once a tile's sums
// are in shared memory, and the signal warp, which arrives without waiting.
__device__ __forceinline__ void compute_warps_sync(long long i, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(1 + (int)(i & 1)), "r"(threads) : "memory");
}
__device__ __forceinline__ void compute_warps_arrive(long long i, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(1 + (int)(i & 1)), "r"(threads) : "memory");
}
// Named barriers 3 / 4 (by tile parity): the compute warps arrive once a tile's
// records are stored (and go on); the signal warp waits there, then counts the
// block in.
__device__ __forceinline__ void records_stored_arrive(long long i, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(3 + (int)(i & 1)), "r"(threads) : "memory");
}
__device__ __forceinline__ void records_stored_sync(long long i, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(3 + (int)(i & 1)), "r"(threads) : "memory");
}
// One step of a reduce-scatter across a warp: lanes with bit M keep the upper
// half of v[0, 4M) (values + 2M) and send the lower one, the others the
// reverse; v[0, 2M) then holds the pair's sums of the kept half.
template <int M>
__device__ __forceinline__ void halve_across_lanes(float (&v)[64], int lane) {
  const bool up = (lane & M) != 0;
#pragma unroll
  for (int k = 0; k < 2 * M; ++k) {
    const float send = up ? v[k] : v[2 * M + k];
    const float keep = up ? v[2 * M + k] : v[k];
    v[k] = keep + __shfl_xor_sync(0xffffffffu, send, M);
  }
}
// Named barrier 5, the compute warps only: red_s holds one tile's sums, so a
// warp writes tile i's only once every warp has read tile i - 1's.
__device__ __forceinline__ void sums_read_sync(int threads) {
  asm volatile("bar.sync 5, %0;" ::"r"(threads) : "memory");
}
__device__ __forceinline__ void ldmatrix_x4(unsigned int addr, unsigned int& r0, unsigned int& r1, unsigned int& r2,
                                            unsigned int& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

// Byte offset of 16-byte granule c of row (token t, stream s) in a residual
// tile: granule c ^ ((t + 2s) % 8). The 8 rows of an ldmatrix phase (8
// consecutive tokens of one stream, or 2 tokens x 4 streams) and the 8 lanes of
// a y read (8 tokens, one stream) then hit 8 distinct 16-byte bank groups.
__device__ __forceinline__ unsigned int stream_row_off(int t, int s, int c, int row_bytes) {
  return static_cast<unsigned int>((t * 4 + s) * row_bytes + ((c ^ ((t + 2 * s) & 7)) << 4));
}

// y = sum_i pre_i * x_i over 8 columns in f32, rounded to bf16 (x[i]: stream
// i's 8 bf16 values), as mix_streams8 without the sum of squares.
template <int HC>
__device__ __forceinline__ U4 weigh_streams8(const U4 (&x)[HC], const float (&pre)[HC]) {
  float unused = 0.f;
  return mix_streams8<HC>(x, pre, unused);
}

// LAG, BUFS: see HCWARM_MHC_STREAM_LAG / _BUFFERS (dynamic shared memory
// HCWARM_MHC_STREAM_SMEM_BUFS(hidden, BUFS)).
template <int HC, int HIDDEN, bool FUSED_NORM, bool FAST, int LAG = HCWARM_MHC_STREAM_LAG,
          int BUFS = HCWARM_MHC_STREAM_BUFFERS>
__device__ __forceinline__ void mhc_pre_stream(const hcwarm_mhc_pre_params& p) {
  constexpr int kSlices = HCWARM_MHC_STREAM_SLICES;
  constexpr int kTile = HCWARM_MHC_STREAM_TILE;
  constexpr int kRing = HCWARM_MHC_STREAM_RING;
  constexpr int kBufs = BUFS;
  constexpr int kLag = LAG;
  constexpr int kRec = HCWARM_MHC_STREAM_RECORD;
  constexpr int kMix = HC * (2 + HC);
  constexpr int kGram = HC * (HC + 1) / 2;
  constexpr int kVals = kMix + kGram;  // 34 values per token and slice
  constexpr int kRed = kVals;          // a token's row of red_s (float2s: kVals is even)
  static_assert(kVals == HCWARM_MHC_STREAM_SUMS, "HCWARM_MHC_STREAM_SMEM sizes red_s by HCWARM_MHC_STREAM_SUMS");
  static_assert(kRed % 2 == 0, "red_s rows are summed as float2s");
  constexpr int kRoleWarps = HCWARM_MHC_STREAM_ROLE_WARPS;  // copy, pre, comb, signal, fetch; then compute
  static_assert(HC == 4, "the one-pass kernel is written for hc_mult 4 (a token's 4 streams fill 4 rows of an m16 tile)");
  static_assert(kVals <= kRec && kRec % 4 == 0, "a record holds the 34 values in whole float4s");
  static_assert(kRec <= 64, "the pre warp's reduce-scatter leaves two of at most 64 values per lane");
  static_assert(kTile == 32, "a tile is 4 mma n-tiles of tokens, and y gives one token to each lane");
  static_assert(kSlices == 2 * kTile, "the tile's token j is finished by block j (even tiles) or 32 + j (odd ones)");
  static_assert(kRing >= kLag + 1, "a ring slot is reused only after every block has read its pre");
  static_assert(kLag >= 1 && kBufs >= kLag + 2, "the copy warp needs a free buffer besides the LAG + 1 tiles in use");
  static_assert(HIDDEN % (kSlices * 16) == 0, "HIDDEN must be a multiple of 1024 (or 0: run time)");
  static_assert(HIDDEN <= HCWARM_MHC_STREAM_MAX_HIDDEN, "HIDDEN must be <= 7168 for the one-pass kernel");
  if (!shape_ok<1, HC, HIDDEN, true>(p)) return;
  if (FUSED_NORM && p.norm_weight == nullptr) return;
  const int D = HIDDEN != 0 ? HIDDEN : p.hidden;
  const int DS = D / kSlices;  // the slice's columns
  const int W = DS / 16;       // compute warps
  // Uniform over the grid: every block returns, or none does.
  if (D % (kSlices * 16) != 0 || D > HCWARM_MHC_STREAM_MAX_HIDDEN || (int)blockDim.x != (W + kRoleWarps) * 32 ||
      gridDim.x % kSlices != 0) {
    return;
  }
  const long long K = (long long)HC * D;
  const long long T = p.num_tokens;
  const int row_bytes = HCWARM_MHC_STREAM_ROW_BYTES(D);
  const int tile_bytes = kTile * HC * row_bytes;

  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* x_s = smem;                                          // [kBufs][tile_bytes]
  float* red_s = reinterpret_cast<float*>(smem + kBufs * tile_bytes);  // [W][kTile][kRed]
  __shared__ __align__(8) unsigned long long full_bar[kBufs];
  __shared__ __align__(8) unsigned long long empty_bar[kBufs];
  __shared__ float mix_s[32];   // the pre warp's
  __shared__ float junk_s[32];  // where the lanes without a Gram value write it
  __shared__ float gram_s[kGram];
  // The pre warp hands a token's 16 comb sums and r to the comb warp (ring of 4).
  __shared__ float comb_in[4][20];
  __shared__ __align__(8) unsigned long long comb_full[4];
  __shared__ __align__(8) unsigned long long comb_empty[4];
  __shared__ float mix_c[32];  // the comb warp's
  // pre and rn of two tiles for the compute warps, from the fetch warp.
  __shared__ float pre_s[2][kTile][5];
  __shared__ __align__(8) unsigned long long pre_full[2];
  __shared__ __align__(8) unsigned long long pre_empty[2];
  __shared__ float base_s[kMix];
  __shared__ float scale_s[3];
  __shared__ __align__(16) float pre_tmp[8];

#ifdef HCWARM_MHC_STREAM_TRACE
  unsigned long long* const stamp_buf = hcwarm_stream_trace;
#endif
  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const int g = lane >> 2;
  const int q = lane & 3;
  const int groups = gridDim.x / kSlices;
  const int grp = blockIdx.x / kSlices;
  const int slice = blockIdx.x % kSlices;
  const long long tiles = (T + kTile - 1) / kTile;
  const long long n = grp < tiles ? (tiles - 1 - grp) / groups + 1 : 0;  // this group's tiles
  auto tile_t0 = [&](long long i) { return (grp + i * groups) * kTile; };
  unsigned int* cnt = reinterpret_cast<unsigned int*>(p.partials) + grp * kRing * 2;  // [slot][records, pre]
  float* pre_g = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(p.partials) +
                                          HCWARM_MHC_STREAM_COUNTER_BYTES(groups)) +
                 (long long)grp * (HCWARM_MHC_STREAM_PRE_FLOATS + HCWARM_MHC_STREAM_RECORD_FLOATS);
  float* rec_g = pre_g + HCWARM_MHC_STREAM_PRE_FLOATS;  // [slot][token][slice][kRec]
  const unsigned int full_l = smem_u32(&full_bar[0]);
  const unsigned int empty_l = smem_u32(&empty_bar[0]);
  const unsigned int x_l = smem_u32(x_s);

  if (tid == 0) {
    for (int b = 0; b < kBufs; ++b) {
      mbar_init(full_l + 8 * b, 32);  // the copy warp's lanes
      mbar_init(empty_l + 8 * b, W);  // the compute warps
    }
    for (int c = 0; c < 4; ++c) {
      mbar_init(smem_u32(&comb_full[c]), 1);
      mbar_init(smem_u32(&comb_empty[c]), 1);
    }
    for (int c = 0; c < 2; ++c) {
      mbar_init(smem_u32(&pre_full[c]), 1);
      mbar_init(smem_u32(&pre_empty[c]), W);
    }
  }
  load_base_scale<HC>(p, base_s, scale_s, tid);
  __syncthreads();

  if (warp == 0) {
    // ---- The copy warp: tile i into buffer i % kBufs once y of tile i - kBufs is written.
    // A token's slice is HC rows of DS / 8 granules (at most 56): lanes take
    // granules lane and 32 + lane of each token, the same ones every tile.
    const int gran = DS / 8;
    int goff[2], srow[2], sgr[2], ss[2];
    bool on[2];
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int e = lane + 32 * k;
      on[k] = e < HC * gran;
      ss[k] = on[k] ? e / gran : 0;
      sgr[k] = on[k] ? e - ss[k] * gran : 0;
      goff[k] = ss[k] * D + slice * DS + 8 * sgr[k];
      srow[k] = ss[k] * row_bytes;
    }
    for (long long i = 0; i < n; ++i) {
      const int b = (int)(i % kBufs);
      if (i >= kBufs) mbar_wait(empty_l + 8 * b, (unsigned int)((i / kBufs - 1) & 1));
      const long long t0 = tile_t0(i);
      const unsigned int dst0 = x_l + b * tile_bytes;
#pragma unroll 4
      for (int t = 0; t < kTile; ++t) {
        // Rows past T read row T - 1 (nothing is written for them).
        const unsigned short* src = p.residual + (t0 + t < T ? t0 + t : T - 1) * K;
        const unsigned int dst = dst0 + t * HC * row_bytes;
#pragma unroll
        for (int k = 0; k < 2; ++k) {
          if (on[k]) cp_async16(dst + srow[k] + ((sgr[k] ^ ((t + 2 * ss[k]) & 7)) << 4), src + goff[k], true);
        }
      }
      cp_async_mbar_arrive(full_l + 8 * b);
    }
    asm volatile("cp.async.wait_all;" ::: "memory");
    return;
  }

  // The tile's token j is finished by block j (even tiles) or 32 + j (odd ones).
  auto my_token = [&](long long i) { return slice - (int)(i & 1) * kTile; };
  auto records_of = [&](long long i, int tok) {
    return rec_g + ((long long)((i % kRing) * kTile + tok) * kSlices) * kRec;
  };
  // The 34 sums of the 64 records r of a token, with every load in flight at
  // once: lane l adds records l and 32 + l (9 float4s each), then five
  // halvings across the lanes (xor 16 .. 1, a fixed order) leave values 2 l and
  // 2 l + 1 of the sum in lane l: 62 shuffles, and no shared memory.
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

  if (warp == 1) {
    // ---- The pre warp: the token's 34 sums -> pre, post and rn, published for
    // the group; then the comb sums to the comb warp.
    long long k = 0;  // tokens handled so far
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
      if (lane == 0) mix_s[kMix] = (gram_s[0] + gram_s[1]) + (gram_s[2] + gram_s[3]);  // trace(G) = sum x^2
      __syncwarp();
      const long long t = tile_t0(i) + tok;
      const float rr = scalar_rms_inv<FAST>(p, mix_s, kMix, (float)K);
      // pre now; post (global stores) only after the release below, which
      // would otherwise wait for them too.
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
      // The comb sums and r to the comb warp, through slot k % 4 of comb_in.
      const int c = (int)(k % 4);
      if (k >= 4) mbar_wait(smem_u32(&comb_empty[c]), (unsigned int)((k / 4 - 1) & 1));
      if (lane < HC * HC) comb_in[c][lane] = mix_s[2 * HC + lane];
      if (lane == HC * HC) comb_in[c][lane] = rr;
      __syncwarp();
      if (lane == 0) mbar_arrive(smem_u32(&comb_full[c]));
      ++k;
      __syncwarp();  // mix_s and pre_tmp are rewritten for the next token
    }
    return;
  }

  if (warp == 2) {
    // ---- The comb warp: the Sinkhorn and comb of the pre warp's tokens, off
    // the path the group waits on.
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
      __syncwarp();  // mix_c is rewritten for the next token
    }
    return;
  }

  if (warp == 3) {
    // ---- The signal warp: counts the block in once the compute warps have
    // stored a tile's records (they arrive at barrier 3 + i % 2 and go on). It
    // arrives at the compute warps' barrier of tile i + 2 only after that, so
    // no barrier ever holds the arrivals of two tiles.
    const int threads = W * 32 + 32;
    for (long long i = 0; i < 2 && i < n; ++i) compute_warps_arrive(i, threads);
    for (long long i = 0; i < n; ++i) {
      records_stored_sync(i, threads);
      if (lane == 0) {
        signal_count(cnt + 2 * (int)(i % kRing));
        HCWARM_STREAM_STAMP(1, i, slice);
      }
      __syncwarp();
      if (i + 2 < n) compute_warps_arrive(i + 2, threads);
    }
    return;
  }

  if (warp == 4) {
    // ---- The fetch warp: waits for the group's pre and rn of tile j and
    // copies them into pre_s[j % 2] for the compute warps (token `lane`), so
    // that they never poll global memory.
    for (long long j = 0; j < n; ++j) {
      const int c = (int)(j & 1);
      if (j >= 2) mbar_wait(smem_u32(&pre_empty[c]), (unsigned int)((j / 2 - 1) & 1));
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

  // ---- The compute warps: warp w owns columns [16w, +16) of the slice (granules 2w, 2w + 1).
  const int w = warp - kRoleWarps;
  const int ctid = w * 32 + lane;
  const int cthreads = W * 32;
  const int col0 = slice * DS + 16 * w;  // the warp's first hidden column
  // fn's A fragments, hi/lo bf16, for mix tile mt (mix 8mt + g: rows g / g + 8
  // = hi / lo term) and stream s: {hi, lo} of columns 2q, 2q + 1, then of + 8.
  U4 fa[HC][3];
#pragma unroll
  for (int s = 0; s < HC; ++s) {
#pragma unroll
    for (int mt = 0; mt < 3; ++mt) {
      const float* f = p.fn + (long long)(8 * mt + g) * K + (long long)s * D + col0 + 2 * q;
      unsigned int hi0, lo0, hi8, lo8;
      split_fn_pair(f[0], f[1], hi0, lo0);
      split_fn_pair(f[8], f[9], hi8, lo8);
      fa[s][mt] = U4{hi0, lo0, hi8, lo8};
    }
  }
  U4 wv[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) wv[h] = FUSED_NORM ? ldg_u4(p.norm_weight + col0 + 8 * h) : U4{0u, 0u, 0u, 0u};
  float* red_w = red_s + w * kTile * kRed;  // this warp's sums of the current tile
  // Shared-memory offsets of this lane, the same every tile (stream_row_off):
  // ldmatrix rows for the mix GEMM (matrix m = lane / 8: tokens 8 (2h + m / 2)
  // + lane % 8 of stream s, columns 8 (m % 2) + [0, 8); + h * 64 rows), for the
  // Gram matrices (rows 16 tg + 8 (m % 2) + lane % 8, columns 8 (m / 2) + [0, 8);
  // the swizzle depends on tg's parity; + tg * 16 rows), and y's reads (token
  // `lane`, stream s, granule 2w + h).
  const int lm = lane >> 3, lr = lane & 7;
  unsigned int mix_off[HC], y_off[HC][2], gram_off[2];
#pragma unroll
  for (int s = 0; s < HC; ++s) {
    mix_off[s] = stream_row_off(8 * (lm >> 1) + lr, s, 2 * w + (lm & 1), row_bytes);
#pragma unroll
    for (int h = 0; h < 2; ++h) y_off[s][h] = stream_row_off(lane, s, 2 * w + h, row_bytes);
  }
#pragma unroll
  for (int par = 0; par < 2; ++par) {
    const int row = 16 * par + 8 * (lm & 1) + lr;
    gram_off[par] = stream_row_off(row >> 2, row & 3, 2 * w + (lm >> 1), row_bytes) - 16 * par * row_bytes;
  }
  // Where this lane's Gram values go in red_w, relative to token 4 tg's row:
  // lane (g, q) with g / 4 == q / 2 holds G[s = g % 4][s' = 2 (q % 2) + e] of
  // token 4 tg + g / 4 (c0[e]) and 4 tg + 2 + g / 4 (c1[2 + e]); the other
  // lanes, and the lower triangle, write to junk_s (gram_dst < 0).
  int gram_dst[2];
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    const int s = g & 3, s2 = 2 * (q & 1) + e;
    // g[0..3] = G_ss, g[4..9] = G_01, G_02, G_03, G_12, G_13, G_23.
    const int gi = s == s2 ? s : 4 + (s == 0 ? s2 - 1 : s == 1 ? s2 + 1 : 5);
    const bool keep = (g >> 2) == (q >> 1) && s <= s2;
    gram_dst[e] = keep ? (g >> 2) * kRed + kMix + gi : -1;
  }

  for (long long i = 0; i < n + kLag; ++i) {
    // Step i: the sums of tile i, then y of tile j = i - kLag.
    const long long j = i - kLag;
    if (i < n) {
      const int b = (int)(i % kBufs);
      mbar_wait(full_l + 8 * b, (unsigned int)((i / kBufs) & 1));
      if (ctid == 0) HCWARM_STREAM_STAMP(5, i, slice);
      const unsigned int xb = x_l + b * tile_bytes;
      // The mix sums: C[mix][token] over the warp's 16 columns of each stream.
      float acc[3][4][4];
#pragma unroll
      for (int mt = 0; mt < 3; ++mt) {
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) acc[mt][nt][0] = acc[mt][nt][1] = acc[mt][nt][2] = acc[mt][nt][3] = 0.f;
      }
#pragma unroll
      for (int s = 0; s < HC; ++s) {
        unsigned int bf[4][2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          ldmatrix_x4(xb + mix_off[s] + h * 64 * row_bytes, bf[2 * h][0], bf[2 * h][1], bf[2 * h + 1][0],
                      bf[2 * h + 1][1]);
        }
#pragma unroll
        for (int mt = 0; mt < 3; ++mt) {
#pragma unroll
          for (int nt = 0; nt < 4; ++nt) {
            mma_bf16_16816(acc[mt][nt], fa[s][mt].x, fa[s][mt].y, fa[s][mt].z, fa[s][mt].w, bf[nt][0], bf[nt][1]);
          }
        }
      }
      if (i > 0) sums_read_sync(cthreads);  // every warp has read tile i - 1's sums
      // The Gram matrices: A = rows (token, stream) of 4 tokens, B = the same rows
      // (n-tile 0: tokens 0-1 = A rows 0-7; n-tile 1: tokens 2-3 = rows 8-15).
#pragma unroll
      for (int tg = 0; tg < kTile / 4; ++tg) {
        unsigned int a0, a1, a2, a3;
        ldmatrix_x4(xb + gram_off[tg & 1] + 16 * tg * row_bytes, a0, a1, a2, a3);
        float c0[4] = {0.f, 0.f, 0.f, 0.f}, c1[4] = {0.f, 0.f, 0.f, 0.f};
        mma_bf16_16816(c0, a0, a1, a2, a3, a0, a2);
        mma_bf16_16816(c1, a0, a1, a2, a3, a1, a3);
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float* d = gram_dst[e] >= 0 ? red_w + 4 * tg * kRed + gram_dst[e] : junk_s + lane;
          d[0] = c0[e];
          d[gram_dst[e] >= 0 ? 2 * kRed : 0] = c1[2 + e];
        }
      }
#pragma unroll
      for (int mt = 0; mt < 3; ++mt) {
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          red_w[(8 * nt + 2 * q) * kRed + 8 * mt + g] = acc[mt][nt][0] + acc[mt][nt][2];
          red_w[(8 * nt + 2 * q + 1) * kRed + 8 * mt + g] = acc[mt][nt][1] + acc[mt][nt][3];
        }
      }
      compute_warps_sync(i, cthreads + 32);  // red_s holds every warp's sums of tile i
      const int slot = (int)(i % kRing);
      float* rec = rec_g + (long long)slot * kTile * kSlices * kRec + slice * kRec;
      for (int e = ctid; e < kTile * (kRed / 2); e += cthreads) {
        const int t = e / (kRed / 2);
        const int c2 = 2 * (e - t * (kRed / 2));
        float2 v = *reinterpret_cast<const float2*>(red_s + t * kRed + c2);
        for (int w2 = 1; w2 < W; ++w2) {
          const float2 u = *reinterpret_cast<const float2*>(red_s + (w2 * kTile + t) * kRed + c2);
          v.x += u.x;
          v.y += u.y;
        }
        *reinterpret_cast<float2*>(rec + (long long)t * kSlices * kRec + c2) = v;
      }
      // The signal warp counts the block in once every compute thread is here.
      // red_s is rewritten in step i + 1 after barrier 5, which every warp
      // reaches only after this reduction.
      records_stored_arrive(i, cthreads + 32);
      if (ctid == 0) HCWARM_STREAM_STAMP(0, i, slice);
    }
    if (j >= 0) {
      // y of tile j: token `lane`, the warp's 16 columns.
      const int c = (int)(j & 1);
      mbar_wait(smem_u32(&pre_full[c]), (unsigned int)((j / 2) & 1));
      const float pre[HC] = {pre_s[c][lane][0], pre_s[c][lane][1], pre_s[c][lane][2], pre_s[c][lane][3]};
      const float rn = pre_s[c][lane][4];
      __syncwarp();
      if (lane == 0) mbar_arrive(smem_u32(&pre_empty[c]));
      const long long t = tile_t0(j) + lane;
      const int b = (int)(j % kBufs);
      const unsigned int xb = x_l + b * tile_bytes;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        U4 xs[HC];
#pragma unroll
        for (int s = 0; s < HC; ++s) xs[s] = lds_u4(xb + y_off[s][h]);
        U4 y = weigh_streams8<HC>(xs, pre);
        if (FUSED_NORM) y = norm8(y, wv[h], rn);
        if (t < T) stg_u4(p.y + t * D + col0 + 8 * h, y);
      }
      // The tile's last read of its buffer: the copy warp may refill it.
      __syncwarp();
      if (lane == 0) mbar_arrive(empty_l + 8 * b);
    }
  }
}

}  // namespace cuda
}  // namespace hcwarm_kernels
