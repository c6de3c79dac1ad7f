#pragma once
// The one-pass mHC pre kernel (num_splits == 1, sm_90): one persistent launch
// that reads the residual from memory once, and a second time from L2.
//
// HCWARM_MHC_ONE_PASS_BLOCKS blocks (one per SM, cooperative launch) take the
// tokens in chunks of 128. In block b:
//   TMA warp   from the launch on, while the other warps set up (fn's
//              fragments, base, scale, norm weight: one memory round trip),
//              streams half b / 64 of each chunk (64 tokens) over K-part b % 64
//              (4 * hidden / 64 columns) into shared memory, 64 x 64 boxes with
//              the 128-byte swizzle, STAGES in flight. Before chunk c it waits
//              for this block's own y of chunk c - WINDOW, so a chunk's rows are
//              re-read while still in L2 (loads marked evict_last, re-reads
//              evict_first), and for its comb warps' chunk c - COMB_WINDOW (the
//              record ring).
//   mma warps  (4, 16 tokens each) the 24 mix sums on the tensor cores (A =
//              the residual by ldmatrix, B = fn split into hi + lo bf16, the
//              part's fragments in shared memory for the whole launch) and the
//              sum of squares; a record per (token, part) in a ring of chunks
//              in the workspace (whole 32-byte sectors), then arrive on the
//              chunk's named barrier and go on (a fence of their own would
//              stall them, and hold the stages, every chunk).
//   signal     waits on that barrier and counts the block into the chunk's
//              counter of its half (release add).
//   comb warps (COMB_WARPS, every COMB_WARPS-th chunk each) once the counter of
//              token c * 128 + b's half is full, its 64 records: pre first,
//              handed to the y warps in shared memory (an mbarrier per slot of
//              a PRE_RING ring), then post, and the Sinkhorn for comb.
//   y warps    (hidden / 1024) token c * 128 + b's whole row from L2, y, and the
//              fused norm over the row itself (mean of the bf16 y, as
//              docs/MATH.md section 2 defines it). No global round trip on their path:
//              the rows are read-only input, loaded as soon as the registers
//              are free (token c + 1's right after token c's y); pre and the
//              norm weight are in shared memory.
// What bounds it (docs/BENCHMARKS.md, "The stages and the two-kernel path"): the loop from a
// chunk's TMA through its records, every block of the half, pre and y, back to
// the TMA of chunk c + WINDOW, which WINDOW (L2's room for rows) cannot hide.
// Same arithmetic as the two-kernel path (mhc_pre.cuh): bf16 x hi/lo bf16 fn on
// the tensor cores with f32 accumulation, the parts summed in f32.
// HEAD: the same pass computes the mHC head (docs/MATH.md, section 6) instead:
// fn holds hc rows (one mma n-tile, rows hc..7 zero) split into three bf16
// terms, not two (the head's gates see 10x larger mix terms, and its cluster
// kernel sums in f32), base hc values and scale one, the comb warps write only
// pre (no post, no Sinkhorn), and there is no fused norm (OnePassMix).
// HIDDEN == 0: hidden from the params (the generic fatbin); the block must be
// HCWARM_MHC_ONE_PASS_THREADS(hidden), its dynamic shared memory
// HCWARM_MHC_ONE_PASS_SMEM(hidden), and p.partials HCWARM_MHC_ONE_PASS_WORKSPACE_BYTES(T)
// with the counters zero.
#include "cuda/mhc_pre_scalar.cuh"
#include "cuda/ptx/cache_policy.cuh"
#include "cuda/ptx/mbarrier.cuh"
#include "cuda/ptx/named_barrier.cuh"
#include "cuda/ptx/tma.cuh"

namespace hcwarm_kernels {
namespace cuda {
namespace one_pass {

// Sum of the squares of the two bf16 values of a word.
__device__ __forceinline__ float squares2(unsigned w) {
  const float a = bf16_lo(w), b = bf16_hi(w);
  return fmaf(a, a, b * b);
}

// Warp roles of a block: one TMA warp, the mma warps, hidden / 1024 y warps,
// the comb warps, one signal warp (HCWARM_MHC_ONE_PASS_THREADS counts them).
struct OnePassWarps {
  static constexpr int kTma = 0;
  static constexpr int kFirstMma = 1;
  static constexpr int kMma = 4;  // 16 tokens each: a half-chunk of one TMA box height
  static constexpr int kFirstY = kFirstMma + kMma;
  int y;  // hidden / HCWARM_MHC_ONE_PASS_HIDDEN_STEP
  __device__ int first_comb() const { return kFirstY + y; }
  __device__ int signal() const { return first_comb() + HCWARM_MHC_ONE_PASS_COMB_WARPS; }
  __device__ int count() const { return signal() + 1; }
};
static_assert(OnePassWarps::kMma * 16 == HCWARM_MHC_ONE_PASS_BOX, "the mma warps cover one box height of tokens");
static_assert(HCWARM_MHC_ONE_PASS_THREADS(1024) == 32 * (OnePassWarps::kFirstY + 1 + HCWARM_MHC_ONE_PASS_COMB_WARPS + 1),
              "HCWARM_MHC_ONE_PASS_THREADS must count every role");

// Back-off of the spin waits, ns: the TMA warp on its own block's progress, a
// comb warp on a chunk's counter in L2. Spinning without it, or 100 ns, measured
// the same on the H200 (docs/BENCHMARKS.md, "The one-pass set-up in one round trip").
constexpr unsigned kTmaPollNs = 32;
constexpr unsigned kCombPollNs = 20;

// Named barriers (0 is __syncthreads'): the set-up; the y warps once per chunk; the mma
// warps hand chunk c to the signal warp on kFirstSignal + c % kSignalRing.
struct OnePassBarriers {
  static constexpr int kSetUp = 1;  // every warp but the TMA warp, once
  static constexpr int kY = 3;
  static constexpr int kFirstSignal = 4;
  static constexpr int kSignalRing = 8;
  static constexpr int kSignalThreads = 32 * (OnePassWarps::kMma + 1);
};
static_assert(OnePassBarriers::kFirstSignal + OnePassBarriers::kSignalRing <= 16, "a block has 16 named barriers");
__device__ __forceinline__ NamedBarrier<OnePassBarriers::kSignalThreads> signal_barrier(int chunk) {
  return {OnePassBarriers::kFirstSignal + chunk % OnePassBarriers::kSignalRing};
}

// What the mma warps compute and the comb warps turn into gates: hc_pre's 24
// mix columns (3 n-tiles of 8: pre, post, comb) or the head's hc pre columns
// (one n-tile). A record holds the n-tiles' columns, then the sum of squares.
template <int HC, bool HEAD>
struct OnePassMix {
  static constexpr int kTiles = HEAD ? 1 : 3;
  static constexpr int kMix = HEAD ? HC : HC * (2 + HC);  // fn rows, base values
  static constexpr int kScales = HEAD ? 1 : 3;
  static constexpr int kSsq = 8 * kTiles;  // the sum of squares' column in a record
  static constexpr int kValues = kSsq + 1;
  // fn's B fragments per lane and k-step, u32: per n-tile hi and lo pairs
  // (hc_pre), or hi, mid, lo pairs and a zero pair (the head: 16-byte loads).
  static constexpr int kLaneWords = HEAD ? 8 : 4 * kTiles;
  static_assert(kLaneWords <= 12, "fn's fragments (kLaneWords / 2 bytes per hidden column) fit OnePassSmem's 6");
  static_assert(kMix <= 8 * kTiles, "the n-tiles must cover fn's rows");
  static_assert(kSsq + 8 <= HCWARM_MHC_ONE_PASS_RECORD, "a record holds the columns and the sum of squares' sector");
};

// Dynamic shared memory, in bytes from the first 1024-aligned address (the
// 128-byte swizzle of the TMA boxes repeats every 1024 bytes).
template <int HC>
struct OnePassSmem {
  static constexpr int kMix = HC * (2 + HC);
  static constexpr unsigned kStageBytes = HCWARM_MHC_ONE_PASS_BOX * HCWARM_MHC_ONE_PASS_BOX * 2;
  static constexpr unsigned kStageRing = 0;  // [STAGES][64 x 64 bf16]
  static constexpr unsigned kFnFrags = kStageRing + HCWARM_MHC_ONE_PASS_STAGES * kStageBytes;  // [k-step][lane][12] u32
  __host__ __device__ static constexpr unsigned norm_weight(unsigned d) { return kFnFrags + 6 * d; }  // [D] bf16
  __host__ __device__ static constexpr unsigned small(unsigned d) { return norm_weight(d) + 2 * d; }
  // Inside the small region:
  static constexpr unsigned kFull = 0;                                          // u64 [STAGES]: TMA landed
  static constexpr unsigned kEmpty = kFull + 8 * HCWARM_MHC_ONE_PASS_STAGES;       // u64 [STAGES]: mma warps done
  static constexpr unsigned kPreFull = kEmpty + 8 * HCWARM_MHC_ONE_PASS_STAGES;    // u64 [PRE_RING]: pre written
  static constexpr unsigned kYDone = kPreFull + 8 * HCWARM_MHC_ONE_PASS_PRE_RING;  // int: chunks the y warps finished
  static constexpr unsigned kCombDone = kYDone + 4;                             // int [COMB_WARPS]
  static constexpr unsigned kPre = kYDone + 16;                                 // float [PRE_RING][4]
  static constexpr unsigned kSsq = kPre + 16 * HCWARM_MHC_ONE_PASS_PRE_RING;       // float [2][8]
  static constexpr unsigned kBase = kSsq + 64;                                  // float [kMix]
  static constexpr unsigned kScale = kBase + 4 * kMix;                          // float [3] (+1)
  static constexpr unsigned kMixSums = kScale + 16;                             // float [COMB_WARPS][32]
  static constexpr unsigned kScratch = kMixSums + 128 * HCWARM_MHC_ONE_PASS_COMB_WARPS;  // float [COMB_WARPS][32][25]
  static constexpr unsigned kSmallBytes = kScratch + 4 * 32 * 25 * HCWARM_MHC_ONE_PASS_COMB_WARPS;
  // With the alignment slack: what the launch must give the block.
  __host__ __device__ static constexpr unsigned bytes(unsigned d) { return 1024 + small(d) + kSmallBytes; }
  static_assert(kCombDone + 4 * HCWARM_MHC_ONE_PASS_COMB_WARPS <= kPre, "the progress counters share 16 bytes");
  static_assert(kFnFrags % 16 == 0 && kPre % 16 == 0, "16-byte shared loads need 16-byte offsets");
};
// The launcher's budget (linear in hidden with the same slope) covers the layout.
static_assert(OnePassSmem<4>::bytes(HCWARM_MHC_ONE_PASS_MAX_HIDDEN) <= HCWARM_MHC_ONE_PASS_SMEM(HCWARM_MHC_ONE_PASS_MAX_HIDDEN),
              "HCWARM_MHC_ONE_PASS_SMEM is smaller than the kernel's shared-memory layout");

}  // namespace one_pass

template <int HC, int HIDDEN, bool FUSED_NORM, bool FAST, bool HEAD = false>
__device__ __forceinline__ void mhc_pre_one_pass(const hcwarm_mhc_pre_params& p, const void* tmap) {
  using namespace one_pass;
  static_assert(!(HEAD && FUSED_NORM), "the head has no fused norm");
  static_assert(HC == 4, "the one-pass kernel is written for hc_mult 4 (24 mix columns = 3 mma n-tiles)");
  static_assert(HIDDEN % HCWARM_MHC_ONE_PASS_HIDDEN_STEP == 0 && HIDDEN <= HCWARM_MHC_ONE_PASS_MAX_HIDDEN,
                "hidden must be a multiple of 1024 (whole 64-column boxes per part), at most 7168 (7 y warps)");
  // Block b writes chunk c's records after its TMA of chunk c, which waited for
  // its own y of chunk c - WINDOW (so every block of its half did chunk c -
  // WINDOW's TMA, which waited for their comb of chunk c - WINDOW - COMB_WINDOW)
  // and for its own comb of c - COMB_WINDOW (so, likewise, theirs of c - 2 *
  // COMB_WINDOW). The records of a half are read by that half's comb warps only.
  static_assert(HCWARM_MHC_ONE_PASS_RING > HCWARM_MHC_ONE_PASS_WINDOW + HCWARM_MHC_ONE_PASS_COMB_WINDOW &&
                    HCWARM_MHC_ONE_PASS_COMB_WINDOW >= HCWARM_MHC_ONE_PASS_WINDOW,
                "the ring's slot of chunk c - RING is rewritten only when every comb warp of the half is done with it");
  static_assert(HCWARM_MHC_ONE_PASS_BLOCKS == 2 * HCWARM_MHC_ONE_PASS_PARTS &&
                    HCWARM_MHC_ONE_PASS_TOKENS == 2 * HCWARM_MHC_ONE_PASS_BOX,
                "a chunk is two halves of one box height, each over every part");
  static_assert(HCWARM_MHC_ONE_PASS_COMB_WARPS >= 1 && HCWARM_MHC_ONE_PASS_COMB_WARPS <= 3,
                "1-3 comb warps (their progress shares 16 bytes with y's)");
  // The comb warp of chunk c writes pre slot c % PRE_RING once its counter is
  // full, i.e. after this block's TMA of chunk c, which waited for this block's
  // y of chunk c - WINDOW: every y warp has read the slot's chunk c - PRE_RING.
  static_assert(HCWARM_MHC_ONE_PASS_PRE_RING >= HCWARM_MHC_ONE_PASS_WINDOW, "a pre slot is rewritten WINDOW chunks later");
  // The mma warps hand chunk c to the signal warp on signal_barrier(c): they
  // reach chunk c + kSignalRing only after this block's y of chunk
  // c + kSignalRing - WINDOW, which the signal of chunk c preceded, so no
  // barrier is reused early.
  static_assert(HCWARM_MHC_ONE_PASS_WINDOW <= OnePassBarriers::kSignalRing, "the signal barriers are reused every kSignalRing chunks");
  using Mix = OnePassMix<HC, HEAD>;
  static_assert(Mix::kMix <= OnePassSmem<HC>::kMix && Mix::kValues <= 25,
                "the shared-memory layout holds hc_pre's 24 bases and 25 values per lane of scratch");
  constexpr int kTiles = Mix::kTiles;
  constexpr int kSsq = Mix::kSsq;
  constexpr int kValues = Mix::kValues;
  constexpr int kParts = HCWARM_MHC_ONE_PASS_PARTS;
  constexpr int kChunk = HCWARM_MHC_ONE_PASS_TOKENS;
  constexpr int kBox = HCWARM_MHC_ONE_PASS_BOX;
  constexpr int kStages = HCWARM_MHC_ONE_PASS_STAGES;
  constexpr int kStageBytes = kBox * kBox * 2;
  constexpr int kWindow = HCWARM_MHC_ONE_PASS_WINDOW;
  constexpr int kCombWindow = HCWARM_MHC_ONE_PASS_COMB_WINDOW;
  constexpr int kRing = HCWARM_MHC_ONE_PASS_RING;
  constexpr int kRec = HCWARM_MHC_ONE_PASS_RECORD;
  constexpr int kCombWarps = HCWARM_MHC_ONE_PASS_COMB_WARPS;
  constexpr int kPreRing = HCWARM_MHC_ONE_PASS_PRE_RING;
  constexpr int kGran = 4;  // 16-byte granules per y thread and stream: hidden / 8 over 32 * hidden / 1024 threads
  const int D = HIDDEN != 0 ? HIDDEN : p.hidden;
  // The launcher checked all of this; never write garbage.
  if (!shape_ok<1, HC, HIDDEN, true>(p) || D % HCWARM_MHC_ONE_PASS_HIDDEN_STEP != 0 ||
      D > HCWARM_MHC_ONE_PASS_MAX_HIDDEN || (FUSED_NORM && p.norm_weight == nullptr) ||
      (int)blockDim.x != HCWARM_MHC_ONE_PASS_THREADS(D) || gridDim.x != HCWARM_MHC_ONE_PASS_BLOCKS) {
    return;
  }
  const long long K = (long long)HC * D;
  const int part_k = D / 16;      // K / kParts
  const int spc = part_k / kBox;  // TMA stages per chunk
  const int y_warps = D / HCWARM_MHC_ONE_PASS_HIDDEN_STEP;
  const int y_threads = 32 * y_warps;
  const OnePassWarps roles{y_warps};
  const int c0 = roles.first_comb();
  const DynamicNamedBarrier y_barrier{OnePassBarriers::kY, y_threads};

  using Smem = OnePassSmem<HC>;
  extern __shared__ unsigned char smem_raw[];
  const unsigned raw = smem_u32(smem_raw);
  const unsigned aligned = (raw + 1023u) & ~1023u;
  unsigned char* base_ptr = smem_raw + (aligned - raw);
  const unsigned stages = aligned + Smem::kStageRing;
  const unsigned fnf = aligned + Smem::kFnFrags;  // [k-step][lane][n-tile j: hi b0, hi b1, lo b0, lo b1]
  unsigned* fnf_ptr = reinterpret_cast<unsigned*>(base_ptr + Smem::kFnFrags);
  unsigned short* nw_s = reinterpret_cast<unsigned short*>(base_ptr + Smem::norm_weight(D));
  unsigned char* small = base_ptr + Smem::small(D);
  unsigned long long* full = reinterpret_cast<unsigned long long*>(small + Smem::kFull);
  unsigned long long* empty = reinterpret_cast<unsigned long long*>(small + Smem::kEmpty);
  unsigned long long* pre_full = reinterpret_cast<unsigned long long*>(small + Smem::kPreFull);
  volatile int* y_done = reinterpret_cast<volatile int*>(small + Smem::kYDone);
  volatile int* comb_done = reinterpret_cast<volatile int*>(small + Smem::kCombDone);
  float* pre_s = reinterpret_cast<float*>(small + Smem::kPre);
  float* ssq_s = reinterpret_cast<float*>(small + Smem::kSsq);
  float* base_s = reinterpret_cast<float*>(small + Smem::kBase);
  float* scale_s = reinterpret_cast<float*>(small + Smem::kScale);
  float* mix_s = reinterpret_cast<float*>(small + Smem::kMixSums);
  float* scratch = reinterpret_cast<float*>(small + Smem::kScratch);

  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const int b = blockIdx.x;
  const int part = b % kParts;
  const int half = b / kParts;
  const long long T = p.num_tokens;
  const int nchunks = (int)((T + kChunk - 1) / kChunk);
  unsigned* counters = reinterpret_cast<unsigned*>(p.partials);
  float* rec = p.partials + HCWARM_MHC_ONE_PASS_COUNTER_BYTES(T) / 4;
  // A counter per (chunk, half): a token's records come from the 64 blocks of
  // its half, and block b's y and comb token is in b's own half.
  unsigned* my_counters = counters + half;
  const unsigned full_count = kParts;  // every block of the half adds 1 per chunk

  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      MBarrier(full + s).init(1);
      MBarrier(empty + s).init(OnePassWarps::kMma);  // one arrival per mma warp
    }
    for (int s = 0; s < kPreRing; ++s) MBarrier(pre_full + s).init(1);
    *y_done = 0;
    for (int k = 0; k < kCombWarps; ++k) comb_done[k] = 0;
    fence_mbarrier_init();
  }
  __syncthreads();

  if (warp == OnePassWarps::kTma) {
    // ---- TMA ----
    if (lane != 0) return;
    const unsigned long long policy = policy_evict_last();
    int n = 0;
    for (int c = 0; c < nchunks; ++c) {
      const int d = c - kWindow;
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

  // ---- set-up, while the TMA warp already streams the first chunks: fn's part
  // as mma B fragments, split once (thread (g, q) of n-tile j holds fn[8j + g][k
  // + 2q, +1] and [k + 2q + 8, +1], hi and lo; rows past fn's are zero), base,
  // scale and the norm weight. Every warp but the TMA warp. ----
  {
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

  if (warp < OnePassWarps::kFirstY) {
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
  } else if (warp == roles.signal()) {
    // ---- signal: chunk c's records are in; count the block in ----
    for (int c = 0; c < nchunks; ++c) {
      signal_barrier(c).sync();
      if (lane == 0) red_release_add_u32(my_counters + 2 * c, 1);
    }
  } else if (warp < c0) {
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
  } else {
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
}

}  // namespace cuda
}  // namespace hcwarm_kernels
