#pragma once
// The argument block of the mHC head kernels (docs/MATH.md, section 6), shared
// by the CPU kernel compiled into the library, the CUDA kernel (NVRTC) and the
// library that fills it. Plain C types only: NVRTC compiles it with no headers.
//
// Per token t, with x = residual[t] read as K = hc * hidden values:
//   r      = 1 / sqrt(sum(x * x) / K + rms_eps)
//   pre[i] = sigmoid(r * dot(fn[i, :], x) * scale[0] + base[i]) + hc_eps
//   y[t]   = bf16(sum_i pre[i] * x_i)

#include "common/mhc_params.hpp"

namespace hcwarm_mhc {

inline constexpr int kHeadAbi = 3;

// The CUDA kernel's shapes (kernels/cuda/mhc_head.cuh), shared with its
// launcher. mhc_head_cluster: a cluster of blocks takes a tile of tokens, each
// block one slice of the hidden positions (every stream's columns of that
// slice), so the tile's dot products spread over the cluster's SMs and each
// block keeps its slice of the rows in registers for the weighted sum. Thread
// (u, vl) owns token lane u of the tile and 16-byte vector vl of the slice.
inline constexpr int kHeadMaxCluster = 8;  // the portable cluster size limit
// Tokens per tile: the tile's lanes of one vector share each fn load; a power
// of two <= 32 (lanes).
inline constexpr int kHeadTokens = 4;
HCWARM_HOST_DEVICE constexpr int head_cluster(int hidden) { return hidden / 8 < kHeadMaxCluster ? hidden / 8 : kHeadMaxCluster; }
HCWARM_HOST_DEVICE constexpr int head_slice_vectors(int hidden) {
  return (hidden / 8 + head_cluster(hidden) - 1) / head_cluster(hidden);
}
HCWARM_HOST_DEVICE constexpr int head_threads(int hidden) { return (kHeadTokens * head_slice_vectors(hidden) + 31) / 32 * 32; }
// Blocks per SM the kernel is compiled for (__launch_bounds__): two, so one
// block's loads overlap another's reductions and cluster barriers; one for
// blocks over 512 threads, which two would leave 32 registers a thread.
HCWARM_HOST_DEVICE constexpr int head_blocks_per_sm(int hidden) { return head_threads(hidden) <= 512 ? 2 : 1; }
// Tokens per thread of the wide instantiation: 4, 2 or 1, the most that keep
// one block's rows (tokens per thread x threads x hc 16-byte vectors) within a
// quarter of the 256 KiB register file, so two blocks fit on an SM with the
// rest of their registers (hidden 7168: 2, hidden 4096: 4, for hc 4).
inline constexpr int kHeadRowRegisterBytes = 64 * 1024;
HCWARM_HOST_DEVICE constexpr bool head_fits_tpt(int n, int hc, int hidden) {
  return n * head_threads(hidden) * hc * 16 <= kHeadRowRegisterBytes;
}
HCWARM_HOST_DEVICE constexpr int head_wide_tpt(int hc, int hidden) {
  return head_fits_tpt(4, hc, hidden) ? 4 : head_fits_tpt(2, hc, hidden) ? 2 : 1;
}

}  // namespace hcwarm_mhc

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
  // Scratch of the CUDA one-pass head (large T): workspace_bytes of the op, 16-byte aligned; else unused.
  void* workspace;
  unsigned long long workspace_bytes;
};
}
