#pragma once
// The one-pass mHC pre kernel (num_splits == 1, sm_90): one persistent launch
// that reads the residual from memory once, and a second time from L2.
//
// hcwarm_mhc::kOnePassBlocks blocks (one per SM, cooperative launch) take the
// tokens in chunks of 128. In block b:
//   TMA warp   from the launch on, while the other warps set up (fn's
//              fragments, base, scale, norm weight: one memory round trip),
//              streams half b / 64 of each chunk (64 tokens) over K-part b % 64
//              (4 * hidden / 64 columns) into shared memory, 64 x 64 boxes with
//              the 128-byte swizzle, STAGES in flight. Before chunk c it waits
//              for this block's own y of chunk c - WINDOW (p.one_pass_window: 5,
//              4 at hidden 7168 on a 50 MiB L2), so a chunk's rows are
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
// hcwarm_mhc::one_pass_threads(hidden), its dynamic shared memory
// hcwarm_mhc::one_pass_smem(hidden), and p.partials hcwarm_mhc::one_pass_workspace_bytes(T)
// with the counters zero.
#include "cuda/mhc_pre_one_pass_gates.cuh"
#include "cuda/mhc_pre_one_pass_load.cuh"

namespace hcwarm_kernels {
namespace cuda {

template <int HC, int HIDDEN, bool FUSED_NORM, bool FAST, bool HEAD = false>
__device__ __forceinline__ void mhc_pre_one_pass(const hcwarm_mhc_pre_params& p, const void* tmap) {
  using namespace one_pass;
  static_assert(!(HEAD && FUSED_NORM), "the head has no fused norm");
  static_assert(HC == 4, "the one-pass kernel is written for hc_mult 4 (24 mix columns = 3 mma n-tiles)");
  static_assert(HIDDEN % hcwarm_mhc::kOnePassHiddenStep == 0 && HIDDEN <= hcwarm_mhc::kOnePassMaxHidden,
                "hidden must be a multiple of 1024 (whole 64-column boxes per part), at most 7168 (7 y warps)");
  // Block b writes chunk c's records after its TMA of chunk c, which waited for
  // its own y of chunk c - WINDOW (so every block of its half did chunk c -
  // WINDOW's TMA, which waited for their comb of chunk c - WINDOW - COMB_WINDOW)
  // and for its own comb of c - COMB_WINDOW (so, likewise, theirs of c - 2 *
  // COMB_WINDOW). The records of a half are read by that half's comb warps only.
  static_assert(hcwarm_mhc::kOnePassRing > hcwarm_mhc::kOnePassWindow + hcwarm_mhc::kOnePassCombWindow &&
                    hcwarm_mhc::kOnePassCombWindow >= hcwarm_mhc::kOnePassWindow,
                "the ring's slot of chunk c - RING is rewritten only when every comb warp of the half is done with it");
  static_assert(hcwarm_mhc::kOnePassBlocks == 2 * hcwarm_mhc::kOnePassParts &&
                    hcwarm_mhc::kOnePassTokens == 2 * hcwarm_mhc::kOnePassBox,
                "a chunk is two halves of one box height, each over every part");
  static_assert(hcwarm_mhc::kOnePassCombWarps >= 1 && hcwarm_mhc::kOnePassCombWarps <= 3,
                "1-3 comb warps (their progress shares 16 bytes with y's)");
  // The comb warp of chunk c writes pre slot c % PRE_RING once its counter is
  // full, i.e. after this block's TMA of chunk c, which waited for this block's
  // y of chunk c - WINDOW: every y warp has read the slot's chunk c - PRE_RING.
  static_assert(hcwarm_mhc::kOnePassPreRing >= hcwarm_mhc::kOnePassWindow, "a pre slot is rewritten WINDOW chunks later");
  // The mma warps hand chunk c to the signal warp on signal_barrier(c): they
  // reach chunk c + kSignalRing only after this block's y of chunk
  // c + kSignalRing - WINDOW, which the signal of chunk c preceded, so no
  // barrier is reused early.
  static_assert(hcwarm_mhc::kOnePassWindow <= OnePassBarriers::kSignalRing, "the signal barriers are reused every kSignalRing chunks");
  const int D = HIDDEN != 0 ? HIDDEN : p.hidden;
  // The launcher checked all of this; never write garbage.
  if (!shape_ok<1, HC, HIDDEN, true>(p) || D % hcwarm_mhc::kOnePassHiddenStep != 0 ||
      D > hcwarm_mhc::kOnePassMaxHidden || (FUSED_NORM && p.norm_weight == nullptr) ||
      (int)blockDim.x != hcwarm_mhc::one_pass_threads(D) || gridDim.x != hcwarm_mhc::kOnePassBlocks) {
    return;
  }
  extern __shared__ unsigned char smem_raw[];
  const OnePassBlock<HC, HIDDEN, FUSED_NORM, FAST, HEAD> block(p, tmap, smem_raw);
  if (block.tid == 0) block.init_barriers();
  __syncthreads();
  // The roles (OnePassWarps): the TMA warp streams from the launch on; every
  // other warp first takes part in the set-up.
  const int warp = block.warp;
  if (warp == OnePassWarps::kTma) {
    block.tma();
    return;
  }
  block.set_up();
  if (warp < OnePassWarps::kFirstY) {
    block.mma();
  } else if (warp == block.roles.signal()) {
    block.signal();
  } else if (warp < block.c0) {
    block.y();
  } else {
    block.comb();
  }
}

// The entry point instantiated by name (jit/kernel_entry.hpp): THREADS is
// hcwarm_mhc::one_pass_threads of the hidden size (the largest one for HIDDEN 0),
// one block per SM. The residual's TMA map is a kernel parameter (__grid_constant__).
template <int HC, int HIDDEN, bool FUSED_NORM, bool FAST, bool HEAD, int THREADS>
__global__ void __launch_bounds__(THREADS, 1)
    mhc_pre_one_pass_kernel(hcwarm_mhc_pre_params p, const __grid_constant__ hcwarm_tensor_map tmap) {
  mhc_pre_one_pass<HC, HIDDEN, FUSED_NORM, FAST, HEAD>(p, &tmap);
}

}  // namespace cuda
}  // namespace hcwarm_kernels
