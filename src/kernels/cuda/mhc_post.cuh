#pragma once
// mHC post step on CUDA (docs/MATH.md, section 3):
//   new_residual[t, j, :] = post[t, j] * out[t, :] + sum_i comb[t, i, j] * residual[t, i, :]
// One thread owns 8 consecutive features of one token for all hc streams, so it
// reads every input stream before writing any output: residual_out may alias
// residual_in. The arithmetic is post_mix8 (cuda/mhc_post_mix.cuh), which the
// fused boundary of hc_pre shares. Compiled by NVRTC: no includes beyond cuda/.
#include "cuda/mhc_post_mix.cuh"

namespace hcwarm_post {

// hidden: a multiple of 8; a compile-time constant where mhc_post<HC, HIDDEN>
// inlines it (the JIT kernels), a run-time value in the generic kernel.
template <int HC>
__device__ __forceinline__ void mhc_post_dyn(long long num_tokens, int hidden, const unsigned short* __restrict__ out,
                                             const unsigned short* residual_in, const float* __restrict__ post,
                                             const float* __restrict__ comb, unsigned short* residual_out) {
  static_assert(HC >= 1 && HC <= 8, "mhc_post: hc_mult must be in [1, 8]");
  const int chunks = hidden / 8;
  const long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= num_tokens * chunks) return;
  const long long t = idx / chunks;
  const int c = static_cast<int>(idx % chunks);

  const uint4 o = *reinterpret_cast<const uint4*>(out + t * hidden + c * 8);
  uint4 r[HC];
#pragma unroll
  for (int i = 0; i < HC; ++i) r[i] = *reinterpret_cast<const uint4*>(residual_in + (t * HC + i) * hidden + c * 8);
  uint4 v[HC];
  post_mix8<HC>(o, r, post + t * HC, comb + t * HC * HC, v);
#pragma unroll
  for (int j = 0; j < HC; ++j) *reinterpret_cast<uint4*>(residual_out + (t * HC + j) * hidden + c * 8) = v[j];
}

template <int HC, int HIDDEN>
__device__ __forceinline__ void mhc_post(long long num_tokens, const unsigned short* __restrict__ out,
                                         const unsigned short* residual_in, const float* __restrict__ post,
                                         const float* __restrict__ comb, unsigned short* residual_out) {
  static_assert(HIDDEN % 8 == 0, "mhc_post: hidden size must be a multiple of 8 (16-byte vectors)");
  mhc_post_dyn<HC>(num_tokens, HIDDEN, out, residual_in, post, comb, residual_out);
}

// The entry points instantiated by name (jit/kernel_entry.hpp), THREADS a block:
// the JIT kernel of one hidden size, and the generic one (hidden at run time).
template <int HC, int HIDDEN, int THREADS>
__global__ void __launch_bounds__(THREADS)
    mhc_post_kernel(long long t, const unsigned short* out, const unsigned short* r_in, const float* post,
                    const float* comb, unsigned short* r_out) {
  mhc_post<HC, HIDDEN>(t, out, r_in, post, comb, r_out);
}

template <int HC, int THREADS>
__global__ void __launch_bounds__(THREADS)
    mhc_post_dyn_kernel(long long t, int hidden, const unsigned short* out, const unsigned short* r_in,
                        const float* post, const float* comb, unsigned short* r_out) {
  mhc_post_dyn<HC>(t, hidden, out, r_in, post, comb, r_out);
}

}  // namespace hcwarm_post
