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
// on CUDA: each split of the policy is cut in max(1, 24 / num_splits) sub-parts
// (about 20-24 K-parts for small split counts), so that a launch has many blocks
// per multiprocessor and little wave quantization, for about 3 KB of partials per token.

#define HCWARM_MHC_PRE_ABI 2
#define HCWARM_MHC_PARTIAL_STRIDE 32
#define HCWARM_MHC_TOKENS_PER_TILE 64
#define HCWARM_MHC_CUDA_SUBSPLITS(s) ((s) >= 24 ? 1 : 24 / (s))
#define HCWARM_MHC_CUDA_THREADS 128
// The CUDA one-pass kernel (num_splits == 1): K-parts of 512 per tile, and the
// number of tiles between a tile's partial blocks and its finish blocks.
#define HCWARM_MHC_FUSED_PARTS(k) ((int)(((k) + 511) / 512))
#define HCWARM_MHC_FUSED_LAG 2

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
  unsigned int* counters;             // CUDA one-pass kernel only: (1 + tiles) zeroed words
};
}
