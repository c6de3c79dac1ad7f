#pragma once
// mHC post step on CUDA (docs/MATH.md, section 3):
//   new_residual[t, j, :] = post[t, j] * out[t, :] + sum_i comb[t, i, j] * residual[t, i, :]
// One thread owns 8 consecutive features of one token for all hc streams, so it
// reads every input stream before writing any output: residual_out may alias
// residual_in. Compiled by NVRTC: no includes beyond cuda/bf16.cuh.
#include "cuda/bf16.cuh"

namespace hcwarm_post {

using hcwarm_bf16::bf16_hi;
using hcwarm_bf16::bf16_lo;
using hcwarm_bf16::pack_bf16x2;
__device__ __forceinline__ void unpack8(const uint4& v, float (&f)[8]) {
  const unsigned int w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = bf16_lo(w[i]);
    f[2 * i + 1] = bf16_hi(w[i]);
  }
}

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

  float o[8];
  unpack8(*reinterpret_cast<const uint4*>(out + t * hidden + c * 8), o);
  float acc[HC][8];
#pragma unroll
  for (int j = 0; j < HC; ++j) {
    const float p = post[t * HC + j];
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[j][e] = p * o[e];
  }
#pragma unroll
  for (int i = 0; i < HC; ++i) {
    float r[8];
    unpack8(*reinterpret_cast<const uint4*>(residual_in + (t * HC + i) * hidden + c * 8), r);
#pragma unroll
    for (int j = 0; j < HC; ++j) {
      const float w = comb[(t * HC + i) * HC + j];
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[j][e] += w * r[e];
    }
  }
#pragma unroll
  for (int j = 0; j < HC; ++j) {
    uint4 v;
    v.x = pack_bf16x2(acc[j][0], acc[j][1]);
    v.y = pack_bf16x2(acc[j][2], acc[j][3]);
    v.z = pack_bf16x2(acc[j][4], acc[j][5]);
    v.w = pack_bf16x2(acc[j][6], acc[j][7]);
    *reinterpret_cast<uint4*>(residual_out + (t * HC + j) * hidden + c * 8) = v;
  }
}

template <int HC, int HIDDEN>
__device__ __forceinline__ void mhc_post(long long num_tokens, const unsigned short* __restrict__ out,
                                         const unsigned short* residual_in, const float* __restrict__ post,
                                         const float* __restrict__ comb, unsigned short* residual_out) {
  static_assert(HIDDEN % 8 == 0, "mhc_post: hidden size must be a multiple of 8 (16-byte vectors)");
  mhc_post_dyn<HC>(num_tokens, HIDDEN, out, residual_in, post, comb, residual_out);
}

}  // namespace hcwarm_post
