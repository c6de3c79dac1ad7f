#pragma once
// The argument block of the mHC pre kernels, shared by the host JIT (.so), the
// CUDA kernels (NVRTC / nvcc) and the library that fills it. Plain C types only:
// this header is compiled by NVRTC with no system headers at all.
//
// Two stages (REFERENCE.md section 1):
//   partial: for each token and each K-part, the 24 mix dot-products of the
//            residual row with fn over that part, and the sum of squares.
//            Layout of `partials`: (T, num_parts, HCWARM_MHC_PARTIAL_STRIDE) floats,
//            entries [0, mix) are the dot products, entry `mix` the sum of squares.
//   finish:  reduce the parts, rsqrt, sigmoids, Sinkhorn, y (and the fused norm).
// num_parts = num_splits on the CPU, num_splits * HCWARM_MHC_CUDA_SUBSPLITS(num_splits)
// on CUDA. The policy's grid is ceil(T / 64) tiles and its split count about
// sms / tiles, so the CUDA partial launch has num_parts * tiles blocks:
//   num_splits >= 64 (T <= 128): 1 sub-part (64-128 parts are plenty);
//   8 <= num_splits < 64:        3 sub-parts, about 3 blocks per multiprocessor
//                                (one block of 4 warps per SM cannot keep enough
//                                loads in flight);
//   num_splits < 8 (large T):    ceil(24 / num_splits), 24-28 parts per tile.
// Partials cost num_parts * 128 bytes per token (at most 24 KB, against 57 KB of
// residual for hidden 7168), read once by the finish kernel.

#define HCWARM_MHC_PRE_ABI 3
#define HCWARM_MHC_PARTIAL_STRIDE 32
#define HCWARM_MHC_TOKENS_PER_TILE 64
#define HCWARM_MHC_CUDA_SUBSPLITS(s) ((s) >= 64 ? 1 : (s) >= 8 ? 3 : (24 + (s) - 1) / (s))
#define HCWARM_MHC_CUDA_THREADS 128
// Warps of the specialized mma_smem partial kernel (16 tokens each): 8 for the
// large-T buckets (num_splits <= 2, at least 45 tiles of 64), where a 128-token
// tile halves the fn reads from L2 (one fn chunk serves twice the tokens; H200:
// 1.5-6% off stage a at T >= 4096, but 24% slower at T = 2048, num_splits 4,
// for lack of blocks); 4 (64 tokens, HCWARM_MHC_CUDA_THREADS) otherwise and in
// the generic kernel.
#define HCWARM_MHC_CUDA_PARTIAL_WARPS(s) ((s) >= 1 && (s) <= 2 ? 8 : 4)
// Dynamic shared memory of the mma_smem partial kernel: two stages of its
// warps' residual rows (16 rows x 128 k x bf16 per warp), 64 KB for 8 warps.
#define HCWARM_MHC_CUDA_PARTIAL_SMEM_STAGES(warps, stages) ((stages) * (warps) * 16 * 128 * 2)
#define HCWARM_MHC_CUDA_PARTIAL_SMEM(warps) HCWARM_MHC_CUDA_PARTIAL_SMEM_STAGES(warps, 2)
// The specialized finish kernel of the large-T buckets (num_splits <= 4) reads
// the partials first and streams the residual after the scalar part, in fewer
// registers (64): 8 blocks of 128 threads per SM instead of 3.
#define HCWARM_MHC_CUDA_FINISH_STREAMS(s) ((s) >= 1 && (s) <= 4)
// The CUDA one-pass kernel (num_splits == 1, sm_90; mhc_pre_stream in
// cuda/mhc_pre_stream.cuh): groups of STREAM_SLICES blocks, one per SM, each
// group taking STREAM_TILE tokens at a time. Block j of a group owns columns
// [j * hidden / 64, +hidden / 64) of every stream (K-part j: num_parts =
// STREAM_SLICES), one compute warp per 16 of them, after STREAM_ROLE_WARPS
// warps with one job each (copy, pre, comb, signal, fetch): hidden / 1024 + 5
// warps. hidden must be a multiple of 1024 and at most STREAM_MAX_HIDDEN. The
// blocks of a group exchange per-token sums through the workspace (a ring of
// STREAM_RING tiles); the launch is cooperative (every block resident), grid =
// STREAM_SLICES * groups.
#define HCWARM_MHC_STREAM_SLICES 64
#define HCWARM_MHC_STREAM_TILE 32
#define HCWARM_MHC_STREAM_MAX_HIDDEN 7168
#define HCWARM_MHC_STREAM_ROLE_WARPS 5
// hidden is a multiple of this: 64 slices of whole 16-column compute warps.
#define HCWARM_MHC_STREAM_HIDDEN_STEP (HCWARM_MHC_STREAM_SLICES * 16)
// The block for `hidden` (the launcher's, the kernel's launch bounds).
#define HCWARM_MHC_STREAM_THREADS(hidden) \
  (((hidden) / HCWARM_MHC_STREAM_HIDDEN_STEP + HCWARM_MHC_STREAM_ROLE_WARPS) * 32)
// Residual tiles in shared memory, and how many tiles behind its sums a block
// writes y (the exchanges of a tile run under the next LAG tiles' GEMMs); the
// ring of exchanged tiles must be longer than LAG.
#define HCWARM_MHC_STREAM_BUFFERS 5
#define HCWARM_MHC_STREAM_LAG 3
#define HCWARM_MHC_STREAM_RING 8
// A token's sums over a slice: 24 mix sums and the 10 Gram entries (hc 4); as
// a (token, slice) record in the workspace, padded to whole float4s.
#define HCWARM_MHC_STREAM_SUMS 34
#define HCWARM_MHC_STREAM_RECORD 36
// A row (token, stream) of a residual tile in shared memory: the slice's
// columns, padded to 128 bytes (the swizzle spans 8 16-byte granules).
#define HCWARM_MHC_STREAM_ROW_BYTES(hidden) (((hidden) / HCWARM_MHC_STREAM_SLICES * 2 + 127) / 128 * 128)
// Dynamic shared memory: `bufs` residual tiles and the compute warps' 34 sums
// per token (4 streams) of one tile.
#define HCWARM_MHC_STREAM_SMEM_BUFS(hidden, bufs)                              \
  ((bufs) * HCWARM_MHC_STREAM_TILE * 4 * HCWARM_MHC_STREAM_ROW_BYTES(hidden) + \
   (hidden) / HCWARM_MHC_STREAM_HIDDEN_STEP * HCWARM_MHC_STREAM_TILE * HCWARM_MHC_STREAM_SUMS * 4)
#define HCWARM_MHC_STREAM_SMEM(hidden) HCWARM_MHC_STREAM_SMEM_BUFS(hidden, HCWARM_MHC_STREAM_BUFFERS)
// Workspace: per group, 2 counters per ring slot (records in, pre out) in the
// first STREAM_COUNTER_BYTES, then per group pre / rn of a ring of tiles (8
// floats a token) and the records of a ring of tiles.
#define HCWARM_MHC_STREAM_COUNTER_BYTES(groups) (((groups) * HCWARM_MHC_STREAM_RING * 2 * 4 + 255) / 256 * 256)
#define HCWARM_MHC_STREAM_PRE_FLOATS (HCWARM_MHC_STREAM_RING * HCWARM_MHC_STREAM_TILE * 8)
#define HCWARM_MHC_STREAM_RECORD_FLOATS \
  (HCWARM_MHC_STREAM_RING * HCWARM_MHC_STREAM_TILE * HCWARM_MHC_STREAM_SLICES * HCWARM_MHC_STREAM_RECORD)
#define HCWARM_MHC_STREAM_WORKSPACE_BYTES(groups) \
  (HCWARM_MHC_STREAM_COUNTER_BYTES(groups) +      \
   (groups) * (HCWARM_MHC_STREAM_PRE_FLOATS + HCWARM_MHC_STREAM_RECORD_FLOATS) * 4)

// Error codes returned by the host entry points (and by the library's launchers).
#define HCWARM_MHC_OK 0
#define HCWARM_MHC_BAD_SHAPE 1       // hc/hidden/num_splits differ from the compiled ones
#define HCWARM_MHC_BAD_ARGUMENT 2    // a null pointer or a negative count

extern "C" {
struct hcwarm_mhc_pre_params {
  long long num_tokens;
  const unsigned short* residual;     // (T, hc, D) bf16 bits
  const float* fn;                    // (mix, hc*D)
  const float* scale;                 // (3,)
  const float* base;                  // (mix,)
  const unsigned short* norm_weight;  // (D,) bf16 bits, or null without the fused norm
  unsigned short* y;                  // (T, D) bf16 bits
  float* post;                        // (T, hc)
  float* comb;                        // (T, hc, hc)
  float* partials;                    // workspace (T, num_parts, PARTIAL_STRIDE)
  int num_splits;                     // the policy's split count (== the compiled one when specialized)
  int num_parts;                      // K-parts in `partials` (see above)
  int hc_mult;
  int hidden;
  int sinkhorn_iters;
  float hc_eps;
  float rms_eps;
  float norm_eps;
  float post_mult;
  int reserved;
};
}
