#pragma once
// The one-pass kernel's layout (overview: cuda/mhc_pre_one_pass.cuh): its warp
// roles, named barriers, mix form, shared memory and one block's view of the
// launch (OnePassBlock), which the roles share.
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
// the comb warps, one signal warp (hcwarm_mhc::one_pass_threads counts them).
struct OnePassWarps {
  static constexpr int kTma = 0;
  static constexpr int kFirstMma = 1;
  static constexpr int kMma = 4;  // 16 tokens each: a half-chunk of one TMA box height
  static constexpr int kFirstY = kFirstMma + kMma;
  int y;  // hidden / hcwarm_mhc::kOnePassHiddenStep
  __device__ int first_comb() const { return kFirstY + y; }
  __device__ int signal() const { return first_comb() + hcwarm_mhc::kOnePassCombWarps; }
  __device__ int count() const { return signal() + 1; }
};
static_assert(OnePassWarps::kMma * 16 == hcwarm_mhc::kOnePassBox, "the mma warps cover one box height of tokens");
static_assert(hcwarm_mhc::one_pass_threads(1024) == 32 * (OnePassWarps::kFirstY + 1 + hcwarm_mhc::kOnePassCombWarps + 1),
              "hcwarm_mhc::one_pass_threads must count every role");

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
  static_assert(kSsq + 8 <= hcwarm_mhc::kOnePassRecord, "a record holds the columns and the sum of squares' sector");
};

// Dynamic shared memory, in bytes from the first 1024-aligned address (the
// 128-byte swizzle of the TMA boxes repeats every 1024 bytes).
template <int HC>
struct OnePassSmem {
  static constexpr int kMix = HC * (2 + HC);
  static constexpr unsigned kStageBytes = hcwarm_mhc::kOnePassBox * hcwarm_mhc::kOnePassBox * 2;
  static constexpr unsigned kStageRing = 0;  // [STAGES][64 x 64 bf16]
  static constexpr unsigned kFnFrags = kStageRing + hcwarm_mhc::kOnePassStages * kStageBytes;  // [k-step][lane][12] u32
  __host__ __device__ static constexpr unsigned norm_weight(unsigned d) { return kFnFrags + 6 * d; }  // [D] bf16
  __host__ __device__ static constexpr unsigned small(unsigned d) { return norm_weight(d) + 2 * d; }
  // Inside the small region:
  static constexpr unsigned kFull = 0;                                          // u64 [STAGES]: TMA landed
  static constexpr unsigned kEmpty = kFull + 8 * hcwarm_mhc::kOnePassStages;       // u64 [STAGES]: mma warps done
  static constexpr unsigned kPreFull = kEmpty + 8 * hcwarm_mhc::kOnePassStages;    // u64 [PRE_RING]: pre written
  static constexpr unsigned kYDone = kPreFull + 8 * hcwarm_mhc::kOnePassPreRing;  // int: chunks the y warps finished
  static constexpr unsigned kCombDone = kYDone + 4;                             // int [COMB_WARPS]
  static constexpr unsigned kPre = kYDone + 16;                                 // float [PRE_RING][4]
  static constexpr unsigned kSsq = kPre + 16 * hcwarm_mhc::kOnePassPreRing;       // float [2][8]
  static constexpr unsigned kBase = kSsq + 64;                                  // float [kMix]
  static constexpr unsigned kScale = kBase + 4 * kMix;                          // float [3] (+1)
  static constexpr unsigned kMixSums = kScale + 16;                             // float [COMB_WARPS][32]
  static constexpr unsigned kScratch = kMixSums + 128 * hcwarm_mhc::kOnePassCombWarps;  // float [COMB_WARPS][32][25]
  static constexpr unsigned kSmallBytes = kScratch + 4 * 32 * 25 * hcwarm_mhc::kOnePassCombWarps;
  // With the alignment slack: what the launch must give the block.
  __host__ __device__ static constexpr unsigned bytes(unsigned d) { return 1024 + small(d) + kSmallBytes; }
  static_assert(kCombDone + 4 * hcwarm_mhc::kOnePassCombWarps <= kPre, "the progress counters share 16 bytes");
  static_assert(kFnFrags % 16 == 0 && kPre % 16 == 0, "16-byte shared loads need 16-byte offsets");
};
// The launcher's budget (linear in hidden with the same slope) covers the layout.
static_assert(OnePassSmem<4>::bytes(hcwarm_mhc::kOnePassMaxHidden) <= hcwarm_mhc::one_pass_smem(hcwarm_mhc::kOnePassMaxHidden),
              "hcwarm_mhc::one_pass_smem is smaller than the kernel's shared-memory layout");


// One block's view of the launch, shared by its warp roles: the shape, the
// shared-memory carve-up, its place in the grid and the workspace. The roles
// are its methods (load side: cuda/mhc_pre_one_pass_load.cuh; gates:
// cuda/mhc_pre_one_pass_gates.cuh); the kernel only dispatches on the warp.
template <int HC, int HIDDEN, bool FUSED_NORM, bool FAST, bool HEAD>
struct OnePassBlock {
  using Mix = OnePassMix<HC, HEAD>;
  using Smem = OnePassSmem<HC>;
  static_assert(Mix::kMix <= Smem::kMix && Mix::kValues <= 25,
                "the shared-memory layout holds hc_pre's 24 bases and 25 values per lane of scratch");
  static constexpr int kTiles = Mix::kTiles;
  static constexpr int kSsq = Mix::kSsq;
  static constexpr int kValues = Mix::kValues;
  static constexpr int kParts = hcwarm_mhc::kOnePassParts;
  static constexpr int kChunk = hcwarm_mhc::kOnePassTokens;
  static constexpr int kBox = hcwarm_mhc::kOnePassBox;
  static constexpr int kStages = hcwarm_mhc::kOnePassStages;
  static constexpr int kStageBytes = kBox * kBox * 2;
  static constexpr int kCombWindow = hcwarm_mhc::kOnePassCombWindow;
  static constexpr int kRing = hcwarm_mhc::kOnePassRing;
  static constexpr int kRec = hcwarm_mhc::kOnePassRecord;
  static constexpr int kCombWarps = hcwarm_mhc::kOnePassCombWarps;
  static constexpr int kPreRing = hcwarm_mhc::kOnePassPreRing;
  static constexpr int kGran = 4;  // 16-byte granules per y thread and stream: hidden / 8 over 32 * hidden / 1024 threads

  const hcwarm_mhc_pre_params& p;
  const void* tmap;
  // The shape.
  int D;
  long long K;
  int part_k;  // K / kParts
  int spc;     // TMA stages per chunk
  int y_warps, y_threads;
  int window;  // chunks of TMA ahead of this block's y (p.one_pass_window, at most kOnePassWindow)
  OnePassWarps roles;
  int c0;  // the first comb warp
  DynamicNamedBarrier y_barrier;
  // Shared memory (shared-window addresses, or pointers).
  unsigned stages;  // [STAGES][64 x 64 bf16]
  unsigned fnf;     // [k-step][lane][n-tile j: hi b0, hi b1, lo b0, lo b1]
  unsigned* fnf_ptr;
  unsigned short* nw_s;
  unsigned long long *full, *empty, *pre_full;
  volatile int *y_done, *comb_done;
  float *pre_s, *ssq_s, *base_s, *scale_s, *mix_s, *scratch;
  // This thread and block.
  int tid, warp, lane, b, part, half;
  long long T;
  int nchunks;
  // The workspace: a counter per (chunk, half), then the ring of records. A
  // token's records come from the 64 blocks of its half, and block b's y and
  // comb token is in b's own half.
  float* rec;
  unsigned* my_counters;
  unsigned full_count;  // every block of the half adds 1 per chunk

  __device__ __forceinline__ OnePassBlock(const hcwarm_mhc_pre_params& params, const void* map, unsigned char* smem_raw)
      : p(params), tmap(map) {
    D = HIDDEN != 0 ? HIDDEN : p.hidden;
    K = (long long)HC * D;
    part_k = D / 16;
    spc = part_k / kBox;
    window = p.one_pass_window >= 1 && p.one_pass_window <= hcwarm_mhc::kOnePassWindow ? p.one_pass_window
                                                                                          : hcwarm_mhc::kOnePassWindow;
    y_warps = D / hcwarm_mhc::kOnePassHiddenStep;
    y_threads = 32 * y_warps;
    roles = OnePassWarps{y_warps};
    c0 = roles.first_comb();
    y_barrier = DynamicNamedBarrier{OnePassBarriers::kY, y_threads};
    const unsigned raw = smem_u32(smem_raw);
    const unsigned aligned = (raw + 1023u) & ~1023u;
    unsigned char* base_ptr = smem_raw + (aligned - raw);
    stages = aligned + Smem::kStageRing;
    fnf = aligned + Smem::kFnFrags;
    fnf_ptr = reinterpret_cast<unsigned*>(base_ptr + Smem::kFnFrags);
    nw_s = reinterpret_cast<unsigned short*>(base_ptr + Smem::norm_weight(D));
    unsigned char* small = base_ptr + Smem::small(D);
    full = reinterpret_cast<unsigned long long*>(small + Smem::kFull);
    empty = reinterpret_cast<unsigned long long*>(small + Smem::kEmpty);
    pre_full = reinterpret_cast<unsigned long long*>(small + Smem::kPreFull);
    y_done = reinterpret_cast<volatile int*>(small + Smem::kYDone);
    comb_done = reinterpret_cast<volatile int*>(small + Smem::kCombDone);
    pre_s = reinterpret_cast<float*>(small + Smem::kPre);
    ssq_s = reinterpret_cast<float*>(small + Smem::kSsq);
    base_s = reinterpret_cast<float*>(small + Smem::kBase);
    scale_s = reinterpret_cast<float*>(small + Smem::kScale);
    mix_s = reinterpret_cast<float*>(small + Smem::kMixSums);
    scratch = reinterpret_cast<float*>(small + Smem::kScratch);
    tid = threadIdx.x;
    warp = tid >> 5;
    lane = tid & 31;
    b = blockIdx.x;
    part = b % kParts;
    half = b / kParts;
    T = p.num_tokens;
    nchunks = (int)((T + kChunk - 1) / kChunk);
    rec = p.partials + hcwarm_mhc::one_pass_counter_bytes(T) / 4;
    my_counters = reinterpret_cast<unsigned*>(p.partials) + half;
    full_count = kParts;
  }

  // Thread 0: the mbarriers and progress counters, before the block's first barrier.
  __device__ __forceinline__ void init_barriers() const {
    for (int s = 0; s < kStages; ++s) {
      MBarrier(full + s).init(1);
      MBarrier(empty + s).init(OnePassWarps::kMma);  // one arrival per mma warp
    }
    for (int s = 0; s < kPreRing; ++s) MBarrier(pre_full + s).init(1);
    *y_done = 0;
    for (int k = 0; k < kCombWarps; ++k) comb_done[k] = 0;
    fence_mbarrier_init();
  }

  // The roles: the load side (cuda/mhc_pre_one_pass_load.cuh) and the gates (cuda/mhc_pre_one_pass_gates.cuh).
  __device__ __forceinline__ void tma() const;
  __device__ __forceinline__ void set_up() const;
  __device__ __forceinline__ void mma() const;
  __device__ __forceinline__ void signal() const;
  __device__ __forceinline__ void y() const;
  __device__ __forceinline__ void comb() const;
};

}  // namespace one_pass
}  // namespace cuda
}  // namespace hcwarm_kernels
