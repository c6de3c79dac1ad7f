#pragma once
// The post step at one hidden position on the CPU (docs/MATH.md, section 3),
// shared by hc_post (compiled into the library) and the fused sublayer boundary
// (mhc_pre.hpp with input POST, host JIT), so that both store the same bf16
// new residual. Standard library only.
//
// The sum runs in double: a product of two floats is exact there, so the result
// does not depend on whether the compiler contracts it into an FMA (the host JIT
// builds with -march=<host>, the library for the baseline ISA). It equals the
// float64 reference's sum, rounded the same way (to f32, then bf16).

namespace hcwarm_kernels::cpu {

// new_residual[t, j, d] before rounding: post[j] * x + sum_i comb[i * hc + j] * r[i],
// with post / comb the token's (hc,) and (hc, hc) rows, x = out[t, d], r[i] = residual[t, i, d].
inline float post_value(int hc, int j, const float* post, const float* comb, float x, const float* r) {
  double acc = static_cast<double>(post[j]) * x;
  for (int i = 0; i < hc; ++i) acc += static_cast<double>(comb[i * hc + j]) * r[i];
  return static_cast<float>(acc);
}

}  // namespace hcwarm_kernels::cpu
