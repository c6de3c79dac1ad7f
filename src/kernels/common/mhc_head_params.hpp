#pragma once
// The argument block of the mHC head kernels (docs/MATH.md, section 6), shared
// by the CPU kernel compiled into the library, the CUDA kernel (NVRTC) and the
// library that fills it. Plain C types only: NVRTC compiles it with no headers.
//
// Per token t, with x = residual[t] read as K = hc * hidden values:
//   r      = 1 / sqrt(sum(x * x) / K + rms_eps)
//   pre[i] = sigmoid(r * dot(fn[i, :], x) * scale[0] + base[i]) + hc_eps
//   y[t]   = bf16(sum_i pre[i] * x_i)

#define HCWARM_MHC_HEAD_ABI 1

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
