#pragma once
// The post step of one token on 8 consecutive features of every stream
// (docs/MATH.md, section 3), shared by hc_post (cuda/mhc_post.cuh) and the
// fused sublayer boundary of hc_pre (input POST, cuda/mhc_pre.cuh), so that
// both store bit-equal new residuals:
//   out_j = bf16(post[j] * x + sum_i comb[i * HC + j] * r_i)
// in f32: one multiply, then one fmaf per input stream, i ascending.
// Compiled by NVRTC: no includes beyond cuda/bf16.cuh.
#include "cuda/bf16.cuh"

namespace hcwarm_post {

// V: a 16-byte vector of four 32-bit words (uint4, or the kernels' U4).
template <class V>
__device__ __forceinline__ void unpack8(const V& v, float (&f)[8]) {
  const unsigned int w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = hcwarm_bf16::bf16_lo(w[i]);
    f[2 * i + 1] = hcwarm_bf16::bf16_hi(w[i]);
  }
}

// post: the token's HC gates, comb its HC x HC matrix (row-major, input stream
// i feeds output stream j through comb[i * HC + j]); any memory space.
template <int HC, class V>
__device__ __forceinline__ void post_mix8(const V& x, const V (&r)[HC], const float* post, const float* comb,
                                          V (&out)[HC]) {
  static_assert(HC >= 1 && HC <= 8, "post_mix8: hc_mult must be in [1, 8]");
  float o[8];
  unpack8(x, o);
  float acc[HC][8];
#pragma unroll
  for (int j = 0; j < HC; ++j) {
    const float p = post[j];
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[j][e] = p * o[e];
  }
#pragma unroll
  for (int i = 0; i < HC; ++i) {
    float f[8];
    unpack8(r[i], f);
#pragma unroll
    for (int j = 0; j < HC; ++j) {
      const float w = comb[i * HC + j];
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[j][e] = fmaf(w, f[e], acc[j][e]);
    }
  }
#pragma unroll
  for (int j = 0; j < HC; ++j) {
    out[j].x = hcwarm_bf16::pack_bf16x2(acc[j][0], acc[j][1]);
    out[j].y = hcwarm_bf16::pack_bf16x2(acc[j][2], acc[j][3]);
    out[j].z = hcwarm_bf16::pack_bf16x2(acc[j][4], acc[j][5]);
    out[j].w = hcwarm_bf16::pack_bf16x2(acc[j][6], acc[j][7]);
  }
}

}  // namespace hcwarm_post
