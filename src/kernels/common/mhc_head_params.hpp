#pragma once
// The argument block of the mHC head kernels (docs/MATH.md, section 6), shared
// by the CPU kernel compiled into the library, the CUDA kernel (NVRTC) and the
// library that fills it. Plain C types only: NVRTC compiles it with no headers.
//
// Per token t, with x = residual[t] read as K = hc * hidden values:
//   r      = 1 / sqrt(sum(x * x) / K + rms_eps)
//   pre[i] = sigmoid(r * dot(fn[i, :], x) * scale[0] + base[i]) + hc_eps
//   y[t]   = bf16(sum_i pre[i] * x_i)

#define HCWARM_MHC_HEAD_ABI 2

// The CUDA kernels' shapes (kernels/cuda/mhc_head.cuh), shared with their
// launcher. The decode kernel (mhc_head_cluster): a cluster of blocks takes a
// tile of TOKENS tokens, each block one slice of the hidden positions (every stream's columns of that slice), so the tile's
// dot products spread over the cluster's SMs and each block keeps its slice of
// the rows in registers for the weighted sum. Thread (u, vl) owns token u of the
// tile and 16-byte vector vl of the slice.
#define HCWARM_MHC_HEAD_MAX_CLUSTER 8  // the portable cluster size limit
// Tokens per tile: the tile's lanes of one vector share each fn load; a power
// of two <= 32 (lanes).
#define HCWARM_MHC_HEAD_TOKENS 4
#define HCWARM_MHC_HEAD_CLUSTER(hidden) ((hidden) / 8 < HCWARM_MHC_HEAD_MAX_CLUSTER ? (hidden) / 8 : HCWARM_MHC_HEAD_MAX_CLUSTER)
#define HCWARM_MHC_HEAD_SLICE_VECTORS(hidden) \
  (((hidden) / 8 + HCWARM_MHC_HEAD_CLUSTER(hidden) - 1) / HCWARM_MHC_HEAD_CLUSTER(hidden))
#define HCWARM_MHC_HEAD_THREADS(hidden) \
  ((HCWARM_MHC_HEAD_TOKENS * HCWARM_MHC_HEAD_SLICE_VECTORS(hidden) + 31) / 32 * 32)
// The decode kernel runs while its grid is at most this many blocks per SM;
// beyond, the rows kernel, which reads fn once per 4 rows instead of once per
// 4-token tile slice, is faster (measured crossover on the H200 between 512
// and 1024 tokens for hidden 4096 and 7168, docs/BENCHMARKS.md section 10).
#define HCWARM_MHC_HEAD_CLUSTER_BLOCKS_PER_SM 8
// The prefill kernel (mhc_head_rows): blocks of 4 whole rows; fn is read from
// L2 once per block (8 rows per block measured slower: 112 registers, fewer blocks).
#define HCWARM_MHC_HEAD_ROWS_THREADS 256
#define HCWARM_MHC_HEAD_ROWS_TOKENS 4

extern "C" {
struct hcwarm_mhc_head_params {
  long long num_tokens;
  const unsigned short* residual;  // (T, hc, D) bf16 bits
  const float* fn;                 // (hc, hc*D)
  const float* scale;              // (1,)
  const float* base;               // (hc,)
  unsigned short* y;               // (T, D) bf16 bits
  int hc_mult;
  int hidden;
  float hc_eps;
  float rms_eps;
};
}
