#pragma once
// The argument block of the mHC pre kernels, shared by the host JIT (.so), the
// CUDA kernels (NVRTC / nvcc) and the library that fills it. Plain C types only:
// this header is compiled by NVRTC with no system headers at all.
//
// Two stages (docs/MATH.md, section 2):
//   partial: for each token and each K-part, the 24 mix dot-products of the
//            residual row with fn over that part, and the sum of squares.
//            Layout of `partials`: (T, num_parts, kPartialStride) floats,
//            entries [0, mix) are the dot products, entry `mix` the sum of squares.
//   finish:  reduce the parts, rsqrt, sigmoids, Sinkhorn, y (and the fused norm).
// num_parts = num_splits on the CPU, num_splits * cuda_subsplits(num_splits)
// on CUDA (the embedding: cuda_embed_parts, the one-wave pair: cuda_one_wave_parts,
// at most that; residual streams where the grid is coarse: cuda_residual_parts, twice).
// The policy's grid is ceil(T / 64) tiles and its split count about sms / tiles, so
// the CUDA partial launch has num_parts * tiles blocks:
//   num_splits >= 64 (T <= 128): 1 sub-part, about one block per multiprocessor
//                                (twice the parts where that is coarse: cuda_residual_parts);
//   8 <= num_splits < 64:        3 sub-parts, about 3 blocks per multiprocessor
//                                (one block of 4 warps per SM cannot keep enough
//                                loads in flight);
//   num_splits < 8 (large T):    ceil(24 / num_splits), 24-28 parts per tile.
// Partials cost num_parts * 128 bytes per token (at most 24 KB, against 57 KB of
// residual for hidden 7168), read once by the finish kernel.

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define HCWARM_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define HCWARM_HOST_DEVICE
#endif

// The launch parameters of the mHC pre kernels, each named once: constants and
// constexpr functions of the split count, the warps or the hidden size, which
// the kernels (as template arguments, static_asserts and bounds) and their
// launchers (grids, blocks, shared memory, workspace) read alike.
namespace hcwarm_mhc {

inline constexpr int kPreAbi = 6;
inline constexpr int kPartialStride = 32;
inline constexpr int kTokensPerTile = 64;
HCWARM_HOST_DEVICE constexpr int cuda_subsplits(int s) { return s >= 64 ? 1 : s >= 8 ? 3 : (24 + s - 1) / s; }
HCWARM_HOST_DEVICE constexpr int cuda_num_parts(int s) { return s * cuda_subsplits(s); }
inline constexpr int kCudaThreads = 128;
// The embedding's fn fold (cuda/mhc_pre_fold.cuh): its block, four columns a
// thread, its threads' count (quads of fn's (mix, D) fold) and its output's bytes.
inline constexpr int kCudaFoldThreads = 256;
HCWARM_HOST_DEVICE constexpr long long fold_quads(int hc, long long hidden) { return hc * (2LL + hc) * hidden / 4; }
HCWARM_HOST_DEVICE constexpr long long fold_bytes(int hc, long long hidden) { return 16 * fold_quads(hc, hidden); }
// Where the embedding's fn is folded once per call, not per partial block and chunk: from
// kCudaEmbedFoldMinTokens tokens, where it took 13-18% off the call; at decode sizes its
// launch would lengthen a latency chain (docs/BENCHMARKS.md, "The first layer's pre from the embedding").
inline constexpr long long kCudaEmbedFoldMinTokens = 2048;
HCWARM_HOST_DEVICE constexpr bool cuda_embed_folds(long long num_tokens) { return num_tokens >= kCudaEmbedFoldMinTokens; }
// The CUDA hc_pre kernels' largest hidden size: the finish holds a token's y in
// registers (hidden / 8 vectors over 128 threads).
inline constexpr int kCudaMaxHidden = 8192;
// Warps of the specialized mma_smem partial kernel (16 tokens each): 8 for the
// large-T buckets (num_splits <= 2, at least 45 tiles of 64), where a 128-token
// tile halves the fn reads from L2 (one fn chunk serves twice the tokens);
// smaller buckets would get too few blocks. 4 (64 tokens,
// kCudaThreads) otherwise and in the generic kernel.
HCWARM_HOST_DEVICE constexpr int cuda_partial_warps(int s) { return s >= 1 && s <= 2 ? 8 : 4; }
// The first layer's embedding (input EMBED) is one stream, a quarter of K: at
// the residual's part count a block would stream one to three 128-column
// chunks, and the partials would cost a fifth of the embedding's bytes at 4096
// (docs/BENCHMARKS.md, "The first layer's pre from the embedding"). So it runs
// fewer, wider parts where tokens are plentiful: as few as a quarter of the
// residual's (as wide as the residual's parts), as long as the partial grid
// keeps kCudaEmbedBlocksPerSm blocks per SM. Any count from 1 to
// cuda_num_parts(s) is valid for the kernels; this one is the plan's choice.
inline constexpr int kCudaEmbedBlocksPerSm = 3;
HCWARM_HOST_DEVICE constexpr int cuda_embed_parts(int s, long long num_tokens, int num_sms) {
  const int full = cuda_num_parts(s);
  const long long tile = 16LL * cuda_partial_warps(s);
  const long long tiles = (num_tokens + tile - 1) / tile;
  if (num_sms <= 0 || tiles <= 0) return full;
  const long long want = ((long long)kCudaEmbedBlocksPerSm * num_sms + tiles - 1) / tiles;
  const int fewest = (full + 3) / 4;
  return want >= full ? full : want <= fewest ? fewest : (int)want;
}
static_assert(cuda_embed_parts(1, 16384, 132) == 6 && cuda_embed_parts(4, 2048, 132) == 13 &&
                  cuda_embed_parts(16, 512, 132) == 48 && cuda_embed_parts(112, 1, 132) == 112 &&
                  cuda_embed_parts(1, 16384, 0) == 24,
              "the embedding's parts: a quarter of the residual's at 16384 tokens, 13 of 24 at 2048 (3 blocks per SM "
              "of 132), all of them where the tiles are few, all without an SM count");
// Residual streams where the class's partial grid is coarse: in the split counts of one
// sub-part (up to 128 tokens on 132 SMs) the grid has at most one block per SM, and where
// that leaves half the SMs idle (hidden 4096 up to 64 tokens: 64 blocks) or gives each block
// more than kCudaCoarseColumns of K (7168 from 65 to 128 tokens: 448), the pair runs twice
// the parts: 2-10% off at 4096, 4-21% at 7168 from 68 tokens (+2% at 65 and 66) on an H100;
// the study found it level or slower in the other cases (docs/BENCHMARKS.md, "Twice the parts
// where the grid is coarse"). The kernels take up to cuda_max_parts(s); the workspace holds
// that many.
inline constexpr int kCudaCoarseColumns = 256;
HCWARM_HOST_DEVICE constexpr int cuda_max_parts(int s) { return cuda_subsplits(s) == 1 ? 2 * s : cuda_num_parts(s); }
HCWARM_HOST_DEVICE constexpr bool cuda_coarse_grid(int s, int hc, int hidden, long long num_tokens, int num_sms) {
  const long long tiles = (num_tokens + kTokensPerTile - 1) / kTokensPerTile;
  return s >= 1 && cuda_subsplits(s) == 1 && tiles >= 1 &&
         ((num_sms > 0 && 2LL * s * tiles <= num_sms) || (long long)hc * hidden > (long long)kCudaCoarseColumns * s);
}
HCWARM_HOST_DEVICE constexpr int cuda_residual_parts(int s, int hc, int hidden, long long num_tokens, int num_sms) {
  return cuda_coarse_grid(s, hc, hidden, num_tokens, num_sms) ? cuda_max_parts(s) : cuda_num_parts(s);
}
static_assert(cuda_residual_parts(64, 4, 4096, 1, 132) == 128 && cuda_residual_parts(64, 4, 4096, 64, 132) == 128 &&
                  cuda_residual_parts(64, 4, 4096, 65, 132) == 64 && cuda_residual_parts(64, 4, 4096, 128, 132) == 64 &&
                  cuda_residual_parts(112, 4, 7168, 1, 132) == 112 && cuda_residual_parts(112, 4, 7168, 64, 132) == 112 &&
                  cuda_residual_parts(66, 4, 7168, 65, 132) == 132 && cuda_residual_parts(66, 4, 7168, 128, 132) == 132 &&
                  cuda_residual_parts(44, 4, 7168, 129, 132) == 132 && cuda_residual_parts(64, 4, 4096, 0, 132) == 64,
              "twice the parts at hidden 4096 up to 64 tokens and at 7168 from 65 to 128 on 132 SMs, else the class's");
// Dynamic shared memory of the mma_smem partial kernel: two stages of its
// warps' residual rows (16 rows x 128 k x bf16 per warp), 64 KB for 8 warps.
HCWARM_HOST_DEVICE constexpr int cuda_partial_smem_stages(int warps, int stages) { return stages * warps * 16 * 128 * 2; }
HCWARM_HOST_DEVICE constexpr int cuda_partial_smem(int warps) { return cuda_partial_smem_stages(warps, 2); }
// With input POST it also stages the previous sublayer's output beside the
// residual (16 rows x 32 features x bf16 per warp and stage): 80 KB for 8 warps.
HCWARM_HOST_DEVICE constexpr int cuda_partial_post_x_stages(int warps, int stages) { return stages * warps * 16 * 32 * 2; }
HCWARM_HOST_DEVICE constexpr int cuda_partial_smem_post(int warps) {
  return cuda_partial_smem(warps) + cuda_partial_post_x_stages(warps, 2);
}
// The specialized finish kernel of the large-T buckets (num_splits <= 4) reads
// the partials first and streams the residual after the scalar part, in fewer
// registers (64): 8 blocks of 128 threads per SM instead of 3.
HCWARM_HOST_DEVICE constexpr bool cuda_finish_streams(int s) { return s >= 1 && s <= 4; }
// The generic fatbin's finish kernels have no split class compiled in (class 0:
// any split count, holding the row, 3 blocks per SM), except one streaming form
// for every split count of the streaming classes (num_splits <= 4), which runs
// 8 blocks per SM: with 3 the large-T buckets wait on one token's scalar chain
// per block (the first layer's embedding at 4096: 1.34-1.44x the specialized pair).
inline constexpr int kCudaAnyStreamingClass = -1;
HCWARM_HOST_DEVICE constexpr bool cuda_class_streams(int c) { return c == kCudaAnyStreamingClass || cuda_finish_streams(c); }
// The split class of a split count: the split counts whose specialized CUDA
// kernels are the same code. The kernels read the split count itself from the
// params; what it decides at compile time is only the partial kernel's warps,
// whether the finish streams the residual, and how many partials the finish
// loads in one unrolled batch. A class is named by its smallest split count:
//   1: the one-pass bucket (or 8 warps and the streaming finish without it)
//   2: 8 warps, streaming finish;  3: num_splits 3-4, 4 warps, streaming finish
//   5: num_splits 5-21, 4 warps, the finish holding the residual in registers
//  22: num_splits >= 22 (at most a few hundred tokens), the same with more partials.
// So a model's 20-odd split buckets need 5 CUDA specializations per input kind.
HCWARM_HOST_DEVICE constexpr int cuda_split_class(int s) { return s <= 1 ? 1 : s == 2 ? 2 : s <= 4 ? 3 : s <= 21 ? 5 : 22; }
// Up to this many tokens (two partial tiles) the finish of the classes that
// hold the residual (5-21, 22+) runs two blocks per token, one for y and one
// for the Sinkhorn (FinishRole in cuda/mhc_pre.cuh): 2 T blocks still fit
// one wave of 3 per SM on an H100/H200 (docs/BENCHMARKS.md, "The decode finish
// in two blocks per token"). Residual streams at hidden 7168 and above, where
// each block's y is longer, up to kCudaFinishSplitTokensWide: 2 T blocks of 192
// tokens are 384 of the 396 an H100 or H200 holds at once, and they take 7-8%
// off the pair from 129 to 192 tokens on an H100 (docs/BENCHMARKS.md, "The deep
// partial at hidden 7168").
inline constexpr int kCudaFinishSplitTokens = 128;
// Partials per token that the finish of a class loads in one unrolled batch
// (any further ones in a loop), one register each: 24 (every count of
// num_splits <= 4); 64 for 5-21 (3 sub-parts: at most 63), which keeps the
// hidden-4096 finish within 128 registers, 4 blocks per SM where a mid-T
// bucket has more tokens than 3 blocks per SM hold; 160 for >= 22 (166 tokens
// or fewer on 132 SMs: at most one wave, 168 registers at hidden 7168, no spills).
HCWARM_HOST_DEVICE constexpr int cuda_finish_batch_parts(int c) { return c < 5 ? 24 : c < 22 ? 64 : 160; }
// The CUDA one-pass kernel (num_splits == 1, sm_90; mhc_pre_one_pass in
// cuda/mhc_pre_one_pass.cuh): ONE_PASS_BLOCKS persistent blocks, one per SM (a
// cooperative launch), take the tokens in chunks of ONE_PASS_TOKENS. Block b
// streams the residual of half b / ONE_PASS_PARTS of a chunk over K-part
// b % ONE_PASS_PARTS (4 * hidden / 64 columns) by TMA and writes a record per
// (token, part); then re-reads token chunk * 128 + b's whole row from L2 and
// writes its y (pre from the token's records by the block's comb warps).
// hidden must be a multiple of 1024 and at most ONE_PASS_MAX_HIDDEN.
inline constexpr int kOnePassBlocks = 128;
inline constexpr int kOnePassParts = 64;
inline constexpr int kOnePassTokens = 128;
inline constexpr int kOnePassBox = 64;  // a TMA box: 64 tokens x 64 columns (128-byte rows, 128-byte swizzle)
// TMA boxes in flight per block: more in flight only lengthens every round trip.
inline constexpr int kOnePassStages = 6;
// Chunks a block's TMA may run ahead of its own y: how long the rows stay in
// L2 before their re-read. Fewer starve the GPU; more no longer fit the rows
// of all blocks in the L2. The launcher passes one_pass_window(hidden, the
// device's L2 bytes): at most kOnePassWindow, and no more chunks than fit 60%
// of the L2 with their rows (the rest holds the record ring, y and fn). On an
// H100 (50 MiB) at hidden 7168, 5 chunks (36.7 MB) left 44% of the re-reads
// to memory, and 4 took 1.5-10% less time (docs/BENCHMARKS.md, "What bounds hc_pre").
inline constexpr int kOnePassWindow = 5;
HCWARM_HOST_DEVICE constexpr int one_pass_window(int hidden, long long l2_bytes) {
  const long long chunk_rows = (long long)kOnePassTokens * 4 * (hidden > 0 ? hidden : 1) * 2;  // hc 4, bf16
  const long long fit = l2_bytes / 5 * 3 / chunk_rows;
  return l2_bytes <= 0 ? kOnePassWindow : fit < 1 ? 1 : fit > kOnePassWindow ? kOnePassWindow : (int)fit;
}
static_assert(one_pass_window(7168, 50LL << 20) == 4 && one_pass_window(7168, 60LL << 20) == 5 &&
                  one_pass_window(4096, 50LL << 20) == 5 && one_pass_window(7168, 0) == kOnePassWindow,
              "H100 (50 MiB L2): 4 chunks at hidden 7168, 5 at 4096; H200 (60 MiB): 5; unknown L2: 5");
// Chunks a block's TMA may run ahead of its own comb warps; the record ring
// bounds it (WINDOW + COMB_WINDOW < RING).
inline constexpr int kOnePassCombWindow = 5;
inline constexpr int kOnePassRing = 16;
// Comb warps: pre (first, for the y warps), post and the Sinkhorn of every
// COMB_WARPS-th chunk each; two cannot keep up with the y warps.
inline constexpr int kOnePassCombWarps = 3;
inline constexpr int kOnePassPreRing = 8;  // pre slots, comb warps -> y warps (at least WINDOW)
inline constexpr int kOnePassRecord = 32;  // floats per (token, part): 24 mix sums, [24] the sum of squares, zeros
inline constexpr int kOnePassMaxHidden = 7168;
inline constexpr int kOnePassHiddenStep = 1024;
// The block: the TMA warp, 4 mma warps, hidden / 1024 y warps, the comb warps, the signal warp.
HCWARM_HOST_DEVICE constexpr int one_pass_threads(int hidden) { return (6 + hidden / kOnePassHiddenStep + kOnePassCombWarps) * 32; }
// Dynamic shared memory: alignment slack, the TMA stages, fn's mma fragments
// of the part (6 * hidden bytes), the norm weight (2 * hidden), and 12 KB of
// barriers and scratch.
HCWARM_HOST_DEVICE constexpr int one_pass_smem(int hidden) {
  return 1024 + kOnePassStages * kOnePassBox * kOnePassBox * 2 + 8 * hidden + 12 * 1024;
}
// Workspace: a counter per (chunk, half) (zero at launch), then the ring of records.
HCWARM_HOST_DEVICE constexpr long long one_pass_counter_bytes(long long tokens) {
  return ((tokens + kOnePassTokens - 1) / kOnePassTokens * 8 + 255) / 256 * 256;
}
inline constexpr long long kOnePassRecordBytes = (long long)kOnePassRing * kOnePassTokens * kOnePassParts * kOnePassRecord * 4;
HCWARM_HOST_DEVICE constexpr long long one_pass_workspace_bytes(long long tokens) {
  return one_pass_counter_bytes(tokens) + kOnePassRecordBytes;
}

// What `residual` points at (the params' `input`): the (T, hc, D) streams, or
// the first layer's (T, D) embedding standing for hc identical streams
// (docs/MATH.md, section 6), read in place of the copies it stands for, or
// (POST, the fused sublayer boundary) the previous residual, which the kernels
// first update with the previous sublayer's output `post_x` through
// `prev_post` / `prev_comb` (the post step), storing the bf16 result in
// `residual_out`; the pre step then runs on those stored values.
// Kernels take it as a template parameter; kInputRuntime (the
// generic kernels) reads it from the params.
inline constexpr int kInputResidual = 0;
inline constexpr int kInputEmbed = 1;
inline constexpr int kInputPost = 2;
inline constexpr int kInputRuntime = -1;

// The finish in two blocks per token (kCudaFinishSplitTokens above), by width, input and kernel.
inline constexpr int kCudaFinishSplitTokensWide = 192;
inline constexpr int kCudaFinishSplitWideHidden = 7168;
// The generic fatbin's finish (its width a run-time value) takes 160 registers where the
// specialized class-22 finish at hidden 4096 takes 127, so fewer of its blocks run beside the
// partial's: below hidden 7168 its 2 T blocks of a residual stream win up to 97 tokens (194
// blocks on 132 SMs), and one block a token is faster from 100 to 128 (H100, graph: 10.9-11.4 us
// against 12.0-13.1; docs/BENCHMARKS.md, "The generic finish in one block a token from 98 tokens").
inline constexpr int kCudaGenericFinishSplitTokens = 97;
// The first layer's streaming finish (the embedding: one row for the hc streams) keeps
// kCudaEmbedStreamRows row vectors in flight (at most 56 registers with them, within the
// streaming form's 64, sm_90a) in class 3 and, from hidden 7168, in class 1, where it also
// runs a y block and a comb block per token at any token count, interleaved so that each wave
// holds both. On an H100 (graph, medians of 4 rounds against the kernels without it): 1.9% off
// the pair at 2048 tokens at hidden 4096, 5.3-6.3% at hidden 7168; at hidden 4096 in class 1 both
// were 1-7% slower (docs/BENCHMARKS.md, "The first layer's pre from the embedding").
inline constexpr int kCudaEmbedStreamRows = 4;
HCWARM_HOST_DEVICE constexpr bool cuda_embed_split_streaming(int c, int hidden) {
  return c == 1 && hidden >= kCudaFinishSplitWideHidden;
}
// Row vectors in flight per stream in the streaming finish of class c (kCudaAnyStreamingClass:
// the generic fatbin's, one) at `hidden` for `input`.
HCWARM_HOST_DEVICE constexpr int cuda_finish_stream_rows(int c, int hidden, int input) {
  return input == kInputEmbed && (c == 3 || cuda_embed_split_streaming(c, hidden)) ? kCudaEmbedStreamRows : 1;
}
static_assert(cuda_finish_stream_rows(3, 4096, kInputEmbed) == 4 && cuda_finish_stream_rows(1, 7168, kInputEmbed) == 4 &&
                  cuda_finish_stream_rows(1, 4096, kInputEmbed) == 1 && cuda_finish_stream_rows(2, 7168, kInputEmbed) == 1 &&
                  cuda_finish_stream_rows(3, 7168, kInputResidual) == 1 &&
                  cuda_finish_stream_rows(kCudaAnyStreamingClass, 0, kInputRuntime) == 1,
              "four rows in flight for the embedding in class 3, and in class 1 from hidden 7168; one elsewhere");
HCWARM_HOST_DEVICE constexpr bool cuda_split_finish(int s, int hidden, int input, long long num_tokens, bool generic) {
  if (s >= 1 && input == kInputEmbed && !generic && cuda_embed_split_streaming(cuda_split_class(s), hidden)) return true;
  const bool residual = input == kInputResidual;
  const long long most = hidden >= kCudaFinishSplitWideHidden && residual ? kCudaFinishSplitTokensWide
                         : generic && residual                         ? kCudaGenericFinishSplitTokens
                                                                       : kCudaFinishSplitTokens;
  return s >= 1 && !cuda_finish_streams(cuda_split_class(s)) && num_tokens <= most;
}

// The one-wave pair: the split pair in the buckets where one wave of it ends
// before the one-pass kernel takes over, at hidden 4096 (classes 5 and 22 from
// kCudaOneWaveMinTokens to kCudaOneWaveMaxTokens tokens), runs two thirds of the
// class's parts with its partial kCudaDeepPartialStages residual chunks deep (2 blocks
// of 88 KB per SM, and those parts are one wave of them on 132 SMs), then the
// streaming finish (8 blocks per SM) in a y block and a comb block per token; the
// finish's blocks start as programmatic dependents beside the partial's. 1.5-16% off
// the pair on an H100 from 129 to 512 tokens (the 44 and 33 splits of 129-256 tokens make
// 264 blocks of 3 and 4 tiles too; the study at 256-512: 8-16% on an H200); at 128 tokens
// and below two thirds of the parts are not a wave. At hidden 7168 the class's own shape
// stayed ahead (docs/BENCHMARKS.md, "The one-wave pair at hidden 4096"). Any part count
// from 1 to cuda_max_parts(s) is valid for the kernels; these are the plan's choices.
inline constexpr int kCudaOneWaveHidden = 4096;
inline constexpr long long kCudaOneWaveMinTokens = 129;
inline constexpr long long kCudaOneWaveMaxTokens = 512;
inline constexpr int kCudaDeepPartialStages = 4;
// Whether the specialized kernels of split class c at `hidden` for `input` (kInput*) carry the
// one-wave pair: residual streams only (the generic fatbin carries it for every class).
HCWARM_HOST_DEVICE constexpr bool cuda_one_wave_kernels(int c, int hidden, int input) {
  return input == kInputResidual && hidden == kCudaOneWaveHidden && (c == 5 || c == 22);
}
// Whether a residual call of num_tokens at split count s runs it (with kernels that carry it).
HCWARM_HOST_DEVICE constexpr bool cuda_one_wave(int s, int hidden, long long num_tokens) {
  return s >= 1 && cuda_one_wave_kernels(cuda_split_class(s), hidden, kInputResidual) && num_tokens >= kCudaOneWaveMinTokens &&
         num_tokens <= kCudaOneWaveMaxTokens;
}
HCWARM_HOST_DEVICE constexpr int cuda_one_wave_parts(int s) { return (2 * cuda_num_parts(s) + 2) / 3; }
static_assert(cuda_one_wave_parts(16) == 32 && cuda_one_wave_parts(18) == 36 && cuda_one_wave_parts(22) == 44 &&
                  cuda_one_wave_parts(33) == 66 && cuda_one_wave_parts(44) == 88,
              "two thirds of the parts at 512, 448, 384, 256 and 192 tokens on 132 SMs (48, 54, 66, 99 and 132 parts)");
static_assert(cuda_one_wave(16, 4096, 512) && cuda_one_wave(33, 4096, 256) && cuda_one_wave(44, 4096, 129) &&
                  !cuda_one_wave(64, 4096, 128) && !cuda_one_wave(14, 4096, 513) && !cuda_one_wave(22, 7168, 384) &&
                  !cuda_one_wave(4, 4096, 300),
              "hidden 4096 from 129 to 512 tokens in classes 5 and 22 only");
// The deep partial: the one-wave pair's partial (kCudaDeepPartialStages residual chunks in
// flight, 2 blocks of 88 KB per SM) with the class's own parts and finish, at hidden 7168 in
// class 22 up to kCudaDeepPartialMaxTokens. There a block walks 2 (up to 64 tokens, 112
// parts) or 3-4 chunks of K (65-128 tokens, twice the parts: 264 blocks, one wave of them),
// which the class's 2 stages leave waiting on memory: on an H100 it takes 2-4% off the pair up
// to 64 tokens and 14-19% from 65 to 128; in a study from 160 to 384 tokens (396 blocks) it was
// 12-17% slower (docs/BENCHMARKS.md, "The deep partial at hidden 7168").
inline constexpr int kCudaDeepPartialHidden = 7168;
inline constexpr long long kCudaDeepPartialMaxTokens = 128;
// Whether the specialized kernels of class c at `hidden` for `input` carry the deep partial
// (those of the one-wave pair, and hidden 7168's class 22 on residual streams).
HCWARM_HOST_DEVICE constexpr bool cuda_deep_partial_kernels(int c, int hidden, int input) {
  return cuda_one_wave_kernels(c, hidden, input) ||
         (input == kInputResidual && hidden == kCudaDeepPartialHidden && c == 22);
}
// Whether a residual call of num_tokens at split count s runs the deep partial with the
// class's parts and finish (the one-wave pair's calls run it too, on their own parts).
HCWARM_HOST_DEVICE constexpr bool cuda_deep_partial(int s, int hidden, long long num_tokens) {
  return s >= 1 && cuda_split_class(s) == 22 && hidden == kCudaDeepPartialHidden && num_tokens >= 1 &&
         num_tokens <= kCudaDeepPartialMaxTokens;
}
static_assert(cuda_deep_partial(112, 7168, 1) && cuda_deep_partial(66, 7168, 128) && !cuda_deep_partial(44, 7168, 129) &&
                  !cuda_deep_partial(64, 4096, 64) && !cuda_deep_partial(16, 4096, 512) &&
                  cuda_deep_partial_kernels(22, 7168, kInputResidual) && !cuda_deep_partial_kernels(5, 7168, kInputResidual) &&
                  !cuda_deep_partial_kernels(22, 7168, kInputEmbed),
              "hidden 7168 up to 128 tokens in class 22; the kernels also where the one-wave pair runs");
static_assert(cuda_split_finish(44, 7168, kInputResidual, 192, false) && !cuda_split_finish(44, 7168, kInputResidual, 193, false) &&
                  !cuda_split_finish(44, 7168, kInputEmbed, 129, false) && cuda_split_finish(44, 4096, kInputResidual, 128, false) &&
                  !cuda_split_finish(33, 4096, kInputResidual, 129, false) && !cuda_split_finish(4, 7168, kInputResidual, 1, false),
              "two finish blocks a token up to 128 tokens, 192 for residual streams from hidden 7168; never streaming");
static_assert(cuda_split_finish(1, 7168, kInputEmbed, 16384, false) && !cuda_split_finish(1, 7168, kInputEmbed, 16384, true) &&
                  !cuda_split_finish(1, 4096, kInputEmbed, 16384, false) && !cuda_split_finish(1, 7168, kInputResidual, 16384, false) &&
                  !cuda_split_finish(4, 7168, kInputEmbed, 2048, false),
              "the embedding's streaming finish in two blocks a token in class 1 from hidden 7168, specialized kernels only");
static_assert(cuda_split_finish(64, 4096, kInputResidual, 97, true) && !cuda_split_finish(64, 4096, kInputResidual, 98, true) &&
                  cuda_split_finish(64, 4096, kInputEmbed, 128, true) && cuda_split_finish(44, 7168, kInputResidual, 192, true),
              "the generic finish of a residual stream below hidden 7168 in two blocks a token up to 97 tokens only");

// Error codes returned by the host entry points (and by the library's launchers).
inline constexpr int kOk = 0;
inline constexpr int kBadShape = 1;     // hc/hidden/num_splits differ from the compiled ones
inline constexpr int kBadArgument = 2;  // a null pointer or a negative count

}  // namespace hcwarm_mhc

extern "C" {
struct hcwarm_mhc_pre_params {
  long long num_tokens;
  const unsigned short* residual;     // (T, hc, D) bf16 bits; (T, D) when input is kInputEmbed
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
  int input;                          // kInputResidual, kInputEmbed or kInputPost
  int one_pass_window;                // one-pass kernel only: one_pass_window(hidden, L2 bytes); 0: kOnePassWindow
  // Input POST only (null otherwise). residual_out may alias residual: every
  // element is read and then written by the same thread.
  const unsigned short* post_x;       // (T, D) bf16 bits: the previous sublayer's output
  const float* prev_post;             // (T, hc): post of the previous pre step
  const float* prev_comb;             // (T, hc, hc): comb of the previous pre step
  unsigned short* residual_out;       // (T, hc, D) bf16 bits: the new residual
  // Input EMBED only: fn folded over the streams, (mix, D), written by the fold
  // kernel the partial kernel depends on; null: the partial folds each chunk itself.
  float* fn_folded;
  // Nonzero: the split pair's partial, a programmatic dependent of the kernel before the
  // call, loads its first fn chunk before griddepcontrol.wait (HCWARM_MHC_EARLY_FN=1: the
  // caller promises that kernel does not write fn); 0: nothing before the wait.
  int fn_early;
};
// A TMA tensor map (CUtensorMap: 128 opaque bytes, 64-byte aligned): the
// one-pass kernel's view of the residual as (T rows, hc * hidden columns).
struct alignas(64) hcwarm_tensor_map {
  unsigned long long opaque[16];
};
}
