#pragma once
// Experiment (seventh session): a one-pass mHC pre kernel that reads the
// residual from memory once and a second time from L2.
//
// 128 persistent blocks (one per SM) take the tokens in chunks of 128:
//   A  block b streams the residual of its 64 tokens (half b / 64 of the chunk)
//      over its K-part (b % 64: 448 of the 28672 columns at hidden 7168) into
//      shared memory by TMA (8 KB boxes, 128-byte swizzle), and 4 mma warps
//      take the 24 mix sums (fn's hi / lo bf16 fragments resident in shared
//      memory for the whole launch) and the sum of squares: a record per
//      (token, part) in a ring of chunks in the workspace, then a count per chunk.
//   y  once the chunk's count is full, block b's y warps re-read token
//      c * 128 + b's whole row (still in L2), reduce its 64 records for pre,
//      and write y with the fused norm taken over the row itself (no Gram).
//   comb two warps reduce the same records and run the sigmoids and Sinkhorn.
// A block's TMA for chunk c waits for its own y of chunk c - W, so the rows
// between a chunk's first read and its re-read stay ~(W + 1) chunks (~22 MB).
#include <cuda.h>
#include "cuda/mhc_pre.cuh"

namespace l2c {
using namespace hcwarm_kernels::cuda;

constexpr int kParts = 64;      // K-parts (blocks per half-chunk)
constexpr int kChunk = 128;     // tokens per chunk
constexpr int kBox = 64;        // a TMA box: 64 tokens x 64 columns
constexpr int kStageBytes = kBox * kBox * 2;
constexpr int kRing = 16;       // chunks of records in the workspace ring (> 2 W, see below)
constexpr int kRec = 32;        // floats per (token, part) record: 24 mix sums, [24] = sum of squares
constexpr size_t kRecBytes = (size_t)kRing * kChunk * kParts * kRec * 4;

__device__ __forceinline__ void mbar_init(unsigned a, unsigned n) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(a), "r"(n) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(unsigned a, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(a), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned a) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(a) : "memory");
}
__device__ __forceinline__ bool mbar_try(unsigned a, unsigned parity) {
  unsigned ok;
  asm volatile(
      "{\n\t.reg .pred P;\n\tmbarrier.try_wait.parity.shared::cta.b64 P, [%1], %2;\n\tselp.u32 %0, 1, 0, P;\n\t}"
      : "=r"(ok)
      : "r"(a), "r"(parity)
      : "memory");
  return ok != 0;
}
__device__ __forceinline__ void mbar_wait(unsigned a, unsigned parity) {
  while (!mbar_try(a, parity)) {
  }
}
__device__ __forceinline__ void tma_2d(unsigned dst, const void* tmap, int k, int t, unsigned mbar,
                                       unsigned long long pol) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
      "l"(tmap), "r"(k), "r"(t), "r"(mbar), "l"(pol)
      : "memory");
}
__device__ __forceinline__ unsigned long long policy_evict_last() {
  unsigned long long p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ unsigned long long policy_evict_first() {
  unsigned long long p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ unsigned long long policy_evict_normal() {
  unsigned long long p;
  asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ U4 ldg_u4_l1(const void* ptr) {
  U4 v;
  asm("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(ptr));
  return v;
}
__device__ __forceinline__ U4 ldg_u4_pol(const void* ptr, unsigned long long pol) {
  U4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(ptr), "l"(pol));
  return v;
}
// Record loads: with a memory clobber, so that the compiler keeps them after
// the count's acquire (and the warp barrier that hands it to the other lanes).
__device__ __forceinline__ F4 ldcg_f4(const float* ptr) {
  F4 v;
  asm volatile("ld.relaxed.gpu.global.v4.f32 {%0,%1,%2,%3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(ptr)
               : "memory");
  return v;
}
__device__ __forceinline__ float ldcg1(const float* ptr) {
  float v;
  asm volatile("ld.relaxed.gpu.global.f32 %0, [%1];" : "=f"(v) : "l"(ptr) : "memory");
  return v;
}
__device__ __forceinline__ int ldcg_i(const float* ptr) {
  int v;
  asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(ptr) : "memory");
  return v;
}
__device__ __forceinline__ unsigned ld_acquire(const unsigned* ptr) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(ptr) : "memory");
  return v;
}
__device__ __forceinline__ void named_bar(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void ldsm_x4(unsigned addr, unsigned& a0, unsigned& a1, unsigned& a2, unsigned& a3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3)
               : "r"(addr));
}
__device__ __forceinline__ float sq2(unsigned w) {
  const float a = bf16_lo(w), b = bf16_hi(w);
  return fmaf(a, a, b * b);
}

// Warps: 0 TMA, 1..4 mma, 5 .. 5 + D / 1024 - 1 y, then CW comb.
template <int D, int CW>
__host__ __device__ constexpr int threads() {
  return 32 * (1 + 4 + D / 1024 + CW);
}
// Shared memory: TMA stages, fn's fragments, two residual rows for y, the rest.
template <int D, int STAGES>
__host__ __device__ constexpr int smem_bytes() {
  return 1024 + STAGES * kStageBytes + (4 * D / kParts / 16) * 32 * 48 + 12 * 1024;
}
__device__ __forceinline__ void bulk_g2s(unsigned dst, const void* src, unsigned bytes, unsigned mbar,
                                         unsigned long long pol) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
          dst),
      "l"(src), "r"(bytes), "r"(mbar), "l"(pol)
      : "memory");
}

// W: chunks a block's TMA may run ahead of its own y. HINT: L2 evict_last on
// the first read, evict_first on the re-read.
// MODE (timing only, outputs wrong): 16 = no flow control (the TMA never waits
// for y or comb), 32 = no records or counters, 64 = y and comb warps exit at once
// (needs 16 and 32); 1 = y reads no residual, 2 = no mma,
// 4 = comb warps only count, 8 = y stores nothing.
template <int D, int W, bool HINT, int STAGES, int CW, bool CHECK = false, int MODE = 0>
__device__ __forceinline__ void l2_chunk(const hcwarm_mhc_pre_params& p, const void* tmap, unsigned* counters,
                                         float* rec, unsigned* dbg = nullptr, int nonce = 0) {
  constexpr int HC = 4;
  constexpr int kMix = 24;
  constexpr long long K = 4LL * D;
  constexpr int kPartK = (int)(K / kParts);
  static_assert(D % 1024 == 0, "hidden must be a multiple of 1024 (whole 64-column boxes per part)");
  static_assert(kPartK % kBox == 0, "a part is whole boxes");
  constexpr int kSpc = kPartK / kBox;  // stages per chunk
  constexpr int kKSteps = kPartK / 16;
  constexpr int kYW = D / 1024;
  constexpr int kYThreads = 32 * kYW;
  constexpr int kGran = D / 8 / kYThreads;  // 16-byte granules per y thread and stream
  static_assert(kGran * kYThreads * 8 == D, "y threads cover the row");
  constexpr int kY0 = 5, kC0 = 5 + kYW;
  // A block's TMA of chunk c waits for its y of chunk c - W, which waited for every
  // block's mma of chunk c - W, which waited for their y of chunk c - 2W: so when
  // chunk c's records are written, the readers of chunk c - 2W are done.
  static_assert(kRing > 2 * W, "the record ring must be longer than 2 W chunks");
  static_assert(CW >= 1 && CW <= 3, "1-3 comb warps (their counters share 16 bytes with y_done)");

  extern __shared__ unsigned char smem_raw[];
  const unsigned base_addr = (smem_u32(smem_raw) + 1023u) & ~1023u;
  unsigned char* base_ptr = smem_raw + (base_addr - smem_u32(smem_raw));
  const unsigned stages = base_addr;
  unsigned* fnf = reinterpret_cast<unsigned*>(base_ptr + STAGES * kStageBytes);
  const unsigned fnf_addr = stages + STAGES * kStageBytes;
  unsigned char* small = base_ptr + STAGES * kStageBytes + kKSteps * 32 * 48;
  unsigned long long* full = reinterpret_cast<unsigned long long*>(small);
  unsigned long long* empty = full + STAGES;
  volatile int* y_done = reinterpret_cast<volatile int*>(empty + STAGES);
  volatile int* comb_cnt = y_done + 1;  // [CW]
  float* pre_s = reinterpret_cast<float*>(small + 16 * STAGES + 16);  // [2][8]
  float* ssq_s = pre_s + 16;                                          // [2][8]
  float* base_s = ssq_s + 16;                                         // [24]
  float* scale_s = base_s + 24;                                       // [3] (+1)
  float* mix_s = scale_s + 4;                                         // [2][32]
  float* pre_dummy = mix_s + 32 * CW;                                 // [CW][4]
  float* scratch = pre_dummy + 4 * CW;                                // [CW][32][25]

  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const int b = blockIdx.x;
  const int part = b & (kParts - 1);
  const int half = b / kParts;
  const long long T = p.num_tokens;
  const int nchunks = (int)((T + kChunk - 1) / kChunk);

  // fn's part as mma B fragments: [k-step][lane][n-tile j][hi b0, hi b1, lo b0, lo b1].
  for (int i = tid; i < kKSteps * 32 * 6; i += threads<D, CW>()) {
    const int r = i & 1;
    const int j = (i >> 1) % 3;
    const int ln = (i / 6) & 31;
    const int ks = i / 192;
    const int g = ln >> 2, q = ln & 3;
    const long long k = (long long)part * kPartK + ks * 16 + 2 * q + 8 * r;
    const float* f = p.fn + (8 * j + g) * K + k;
    unsigned hi, lo;
    split_fn_pair(f[0], f[1], hi, lo);
    fnf[(ks * 32 + ln) * 12 + j * 4 + r] = hi;
    fnf[(ks * 32 + ln) * 12 + j * 4 + 2 + r] = lo;
  }
  load_base_scale<HC>(p, base_s, scale_s, tid);
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(smem_u32(full + s), 1);
      mbar_init(smem_u32(empty + s), 4);
    }

    *y_done = 0;
    for (int k = 0; k < CW; ++k) comb_cnt[k] = 0;
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  if (warp == 0) {
    // ---- TMA ----
    if (lane != 0) return;
    const unsigned long long pol = HINT ? policy_evict_last() : policy_evict_normal();
    int n = 0;
    for (int c = 0; c < nchunks; ++c) {
      const int d = c - W;
      if (d >= 0 && !(MODE & 16)) {
        while (*y_done <= d || comb_cnt[d % CW] < d / CW + 1) __nanosleep(32);
      }
      for (int s = 0; s < kSpc; ++s, ++n) {
        const int st = n % STAGES;
        const unsigned ph = (unsigned)(n / STAGES) & 1u;
        mbar_wait(smem_u32(empty + st), ph ^ 1u);
        mbar_expect_tx(smem_u32(full + st), kStageBytes);
        tma_2d(stages + st * kStageBytes, tmap, part * kPartK + kBox * s, c * kChunk + kBox * half,
               smem_u32(full + st), pol);
      }
    }
  } else if (warp < kY0) {
    // ---- mma: 16 tokens of the half-chunk each ----
    const int m = warp - 1;
    const int g = lane >> 2, q = lane & 3;
    const int row = 16 * m + (lane & 7) + ((lane >> 3) & 1) * 8;
    const unsigned row_off = row * 128;
    const int sw = row & 7;
    int n = 0;
    int prev = -1;  // the stage read last, released once the next one is waited for
    for (int c = 0; c < nchunks; ++c) {
      float ah[3][4], al[3][4];
#pragma unroll
      for (int j = 0; j < 3; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) ah[j][e] = al[j][e] = 0.f;
      float ss0 = 0.f, ss1 = 0.f;
      for (int s = 0; s < kSpc; ++s, ++n) {
        const int st = n % STAGES;
        mbar_wait(smem_u32(full + st), (unsigned)(n / STAGES) & 1u);
        // An arrive right after the ldmatrix can overtake its shared-memory read
        // (SYNCS and the load unit are not ordered), and the TMA then overwrites
        // the stage mid-read. The previous stage's HMMAs, issued before this wait,
        // have their operands: its reads are done.
        if (prev >= 0 && lane == 0) mbar_arrive(smem_u32(empty + prev));
        prev = st;
        const unsigned tile = stages + st * kStageBytes + row_off;
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
          const int gk = 2 * kk + (lane >> 4);
          unsigned a0, a1, a2, a3;
          if (MODE & 2) continue;
          ldsm_x4(tile + ((gk ^ sw) << 4), a0, a1, a2, a3);
          const unsigned fa = fnf_addr + (((s * 4 + kk) * 32 + lane) * 12) * 4;
          const U4 f0 = lds_u4(fa), f1 = lds_u4(fa + 16), f2 = lds_u4(fa + 32);
          mma_bf16_16816(ah[0], a0, a1, a2, a3, f0.x, f0.y);
          mma_bf16_16816(al[0], a0, a1, a2, a3, f0.z, f0.w);
          mma_bf16_16816(ah[1], a0, a1, a2, a3, f1.x, f1.y);
          mma_bf16_16816(al[1], a0, a1, a2, a3, f1.z, f1.w);
          mma_bf16_16816(ah[2], a0, a1, a2, a3, f2.x, f2.y);
          mma_bf16_16816(al[2], a0, a1, a2, a3, f2.z, f2.w);
          ss0 += sq2(a0) + sq2(a2);
          ss1 += sq2(a1) + sq2(a3);
        }
      }
      ss0 = quad_sum(ss0);
      ss1 = quad_sum(ss1);
      const int lt0 = kBox * half + 16 * m + g;  // token in the chunk
      const long long t0 = (long long)c * kChunk + lt0;
      float* r0 = rec + (((size_t)(c % kRing) * kChunk + lt0) * kParts + part) * kRec;
      float* r1 = r0 + (size_t)8 * kParts * kRec;
      if (MODE & 32) continue;
      if (t0 < T) {
#pragma unroll
        for (int j = 0; j < 3; ++j)
          *reinterpret_cast<float2*>(r0 + 8 * j + 2 * q) = make_float2(ah[j][0] + al[j][0], ah[j][1] + al[j][1]);
        if (q == 0) r0[kMix] = ss0;
        if (CHECK && q == 1) r0[26] = __int_as_float((int)t0), r0[27] = __int_as_float(nonce);
      }
      if (t0 + 8 < T) {
#pragma unroll
        for (int j = 0; j < 3; ++j)
          *reinterpret_cast<float2*>(r1 + 8 * j + 2 * q) = make_float2(ah[j][2] + al[j][2], ah[j][3] + al[j][3]);
        if (q == 0) r1[kMix] = ss1;
        if (CHECK && q == 1) r1[26] = __int_as_float((int)t0 + 8), r1[27] = __int_as_float(nonce);
      }
      __threadfence();
      named_bar(1, 128);
      if (warp == 1 && lane == 0) asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(counters + c) : "memory");
    }
  } else if (MODE & 64) {
    return;
  } else if (warp < kC0) {
    // ---- y: token c * 128 + b, the whole row (L2 evict_first); token
    // c + 1's loads go out before token c's norm barrier and stores, if its
    // chunk is complete by then ----
    const int yw = warp - kY0;
    const int yt = tid - 32 * kY0;
    const unsigned long long pol = HINT ? policy_evict_first() : policy_evict_normal();
    U4 xv[kGran][HC];
    if (MODE & 1) {
#pragma unroll
      for (int v = 0; v < kGran; ++v)
#pragma unroll
        for (int i = 0; i < HC; ++i) xv[v][i] = U4{0u, 0u, 0u, 0u};
    }
    float rv[5];
    auto wait_chunk = [&](int c) {
      if (lane == 0) {
        while (ld_acquire(counters + c) < (unsigned)(2 * kParts)) __nanosleep(20);
      }
      __syncwarp();
    };
    auto load_x = [&](int c) {
      const long long t = (long long)c * kChunk + b;
      if (t < T && !(MODE & 1)) {
        const unsigned short* x = p.residual + t * K;
#pragma unroll
        for (int v = 0; v < kGran; ++v)
#pragma unroll
          for (int i = 0; i < HC; ++i) xv[v][i] = ldg_u4_pol(x + (long long)i * D + (yt + kYThreads * v) * 8, pol);
      }
    };
    auto load_rec = [&](int c) {
      const float* rr = rec + ((size_t)(c % kRing) * kChunk + b) * kParts * kRec;
      const F4 m0 = ldcg_f4(rr + lane * kRec), m1 = ldcg_f4(rr + (lane + 32) * kRec);
      const float s0 = ldcg1(rr + lane * kRec + kMix), s1 = ldcg1(rr + (lane + 32) * kRec + kMix);
      rv[0] = m0.x + m1.x, rv[1] = m0.y + m1.y, rv[2] = m0.z + m1.z, rv[3] = m0.w + m1.w, rv[4] = s0 + s1;
    };
    auto publish_pre = [&](int c) {
#pragma unroll
      for (int off = 16; off > 0; off >>= 1)
#pragma unroll
        for (int e = 0; e < 5; ++e) rv[e] += __shfl_xor_sync(0xffffffffu, rv[e], off);
      const float r = rcp_fast(sqrtf(rv[4] * (1.0f / (float)K) + p.rms_eps));
      if (lane < HC) {
        const float mx = lane == 0 ? rv[0] : lane == 1 ? rv[1] : lane == 2 ? rv[2] : rv[3];
        pre_s[(c & 1) * 8 + lane] = rcp_fast(1.0f + expf(-(mx * r * scale_s[0] + base_s[lane]))) + p.hc_eps;
      }
    };
    wait_chunk(0);
    load_x(0);
    if (yw == 0) {
      load_rec(0);
      publish_pre(0);
    }
    for (int c = 0; c < nchunks; ++c) {
      const long long t = (long long)c * kChunk + b;
      named_bar(2, kYThreads);
      float pre[HC];
#pragma unroll
      for (int i = 0; i < HC; ++i) pre[i] = pre_s[(c & 1) * 8 + i];
      float ssq = 0.f;
      U4 yv[kGran];
#pragma unroll
      for (int v = 0; v < kGran; ++v) yv[v] = mix_streams8<HC>(xv[v], pre, ssq);
      bool fetched = false;
      if (c + 1 < nchunks) {
        unsigned ready = 0;
        if (lane == 0) ready = ld_acquire(counters + c + 1) >= (unsigned)(2 * kParts);
        if (__shfl_sync(0xffffffffu, ready, 0)) {
          load_x(c + 1);
          if (yw == 0) load_rec(c + 1);
          fetched = true;
        }
      }
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) ssq += __shfl_xor_sync(0xffffffffu, ssq, off);
      if (lane == 0) ssq_s[(c & 1) * 8 + yw] = ssq;
      named_bar(3, kYThreads);
      float tot = 0.f;
#pragma unroll
      for (int w = 0; w < kYW; ++w) tot += ssq_s[(c & 1) * 8 + w];
      const float rn = rcp_fast(sqrtf(tot / (float)D + p.norm_eps));
      if (t < T && !(MODE & 8)) {
        unsigned short* y = p.y + t * D;
#pragma unroll
        for (int v = 0; v < kGran; ++v)
          stg_u4(y + (yt + kYThreads * v) * 8, norm8(yv[v], ldg_u4_l1(p.norm_weight + (yt + kYThreads * v) * 8), rn));
      }
      if (yt == 0) *y_done = c + 1;
      if (c + 1 < nchunks && !fetched) {
        wait_chunk(c + 1);
        load_x(c + 1);
        if (yw == 0) load_rec(c + 1);
      }
      if (yw == 0 && c + 1 < nchunks) publish_pre(c + 1);
    }
  } else {
    // ---- comb: chunks c = k, k + CW, ...; the next one's records are
    // loaded before this one is reduced ----
    const int k = warp - kC0;
    float* mine = mix_s + 32 * k;
    float* scr = scratch + k * 32 * 25;
    auto load_c = [&](int c, float (&v)[25]) {
      if (lane == 0) {
        while (ld_acquire(counters + c) < (unsigned)(2 * kParts)) __nanosleep(20);
      }
      __syncwarp();
      const float* rr = rec + ((size_t)(c % kRing) * kChunk + b) * kParts * kRec;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float* r = rr + (lane + 32 * h) * kRec;
#pragma unroll
        for (int e = 0; e < 6; ++e) {
          const F4 f = ldcg_f4(r + 4 * e);
          if (h == 0) {
            v[4 * e] = f.x, v[4 * e + 1] = f.y, v[4 * e + 2] = f.z, v[4 * e + 3] = f.w;
          } else {
            v[4 * e] += f.x, v[4 * e + 1] += f.y, v[4 * e + 2] += f.z, v[4 * e + 3] += f.w;
          }
        }
        const float s = ldcg1(r + kMix);
        v[24] = h == 0 ? s : v[24] + s;
      }
    };
    float v[25], vn[25];
    if (k < nchunks) load_c(k, v);
    for (int c = k; c < nchunks; c += CW) {
      const long long t = (long long)c * kChunk + b;
      const bool valid = t < T;
      const bool more = c + CW < nchunks;
      // The next one's records now if its count is full, else after this one.
      bool fetched = false;
      if (more) {
        unsigned ready = 0;
        if (lane == 0) ready = ld_acquire(counters + c + CW) >= (unsigned)(2 * kParts);
        if (__shfl_sync(0xffffffffu, ready, 0)) {
          load_c(c + CW, vn);
          fetched = true;
        }
      }
#pragma unroll
      for (int e = 0; e < 25; ++e) scr[lane * 25 + e] = v[e];
      __syncwarp();
      if (lane < 25) {
        float s = 0.f;
#pragma unroll 8
        for (int l = 0; l < 32; ++l) s += scr[l * 25 + lane];
        mine[lane] = s;
      }
      __syncwarp();
      const float r = scalar_rms_inv<true>(p, mine, kMix, (float)K);
      scalar_sigmoids<HC, true>(p, t, valid, mine, base_s, scale_s, pre_dummy + 4 * k, lane, r);
      scalar_comb<HC, true>(p, t, valid, mine, base_s, scale_s, lane, r);
      __syncwarp();
      if (lane == 0) comb_cnt[k] = c / CW + 1;
      if (more && !fetched) load_c(c + CW, vn);
      if (more) {
#pragma unroll
        for (int e = 0; e < 25; ++e) v[e] = vn[e];
      }
    }
  }
}

}  // namespace l2c
