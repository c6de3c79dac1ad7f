#pragma once
// The mHC head on the CPU (docs/MATH.md, section 6): the final collapse of the
// hc streams into one, with no Sinkhorn and no post gates. Compiled into the
// library (HIDDEN = 0: the width is read from the params); the library calls
// it on ranges of tokens, each range on one thread.
//
// Precision: the hc dot products and the sum of squares accumulate in f32 over
// 16 independent lanes (so the compiler vectorizes them), the lanes are added
// in double; r, the sigmoids and y = sum_i pre_i * x_i in double, rounded to f32
// then bf16 (as the reference).
#include <cmath>
#include <cstdint>
#include <cstring>

#include "common/mhc_head_params.hpp"
#include "cpu/mhc_pre.hpp"

namespace hcwarm_kernels::cpu {

// Tokens [t_begin, t_end). Returns hcwarm_mhc::kOk, or hcwarm_mhc::kBadShape /
// hcwarm_mhc::kBadArgument (nothing written) when the params do not fit.
template <int HC, int HIDDEN>
int mhc_head(const hcwarm_mhc_head_params* p, int64_t t_begin, int64_t t_end) {
  static_assert(HC >= 1 && HC <= 8, "mhc_head: HC (hc_mult) must be in [1, 8]");
  static_assert(HIDDEN >= 0 && HIDDEN % kLanes == 0, "mhc_head: HIDDEN must be a multiple of 16 (or 0: run time)");
  if (p == nullptr || p->num_tokens < 0) return hcwarm_mhc::kBadArgument;
  if (p->residual == nullptr || p->fn == nullptr || p->scale == nullptr || p->base == nullptr || p->y == nullptr) {
    return hcwarm_mhc::kBadArgument;
  }
  if (p->hc_mult != HC || p->hidden <= 0 || p->hidden % kLanes != 0) return hcwarm_mhc::kBadShape;
  if (HIDDEN != 0 && p->hidden != HIDDEN) return hcwarm_mhc::kBadShape;
  const int64_t D = HIDDEN != 0 ? HIDDEN : p->hidden;
  const int64_t K = HC * D;
  if (t_end > p->num_tokens) t_end = p->num_tokens;

  alignas(64) float xs[kKBlock];
  for (int64_t t = t_begin; t < t_end; ++t) {
    const uint16_t* x = p->residual + t * K;
    alignas(64) float acc[HC][kLanes] = {};
    alignas(64) float ss[kLanes] = {};
    for (int64_t kb = 0; kb < K; kb += kKBlock) {
      const int n = static_cast<int>(K - kb < kKBlock ? K - kb : kKBlock);  // a multiple of kLanes
      for (int k = 0; k < n; ++k) xs[k] = bf16_bits_to_float(x[kb + k]);
      for (int k = 0; k < n; k += kLanes) {
        for (int l = 0; l < kLanes; ++l) ss[l] += xs[k + l] * xs[k + l];
      }
      for (int i = 0; i < HC; ++i) {
        const float* f = p->fn + i * K + kb;
        float a[kLanes];
        for (int l = 0; l < kLanes; ++l) a[l] = acc[i][l];
        for (int k = 0; k < n; k += kLanes) {
          for (int l = 0; l < kLanes; ++l) a[l] += f[k + l] * xs[k + l];
        }
        for (int l = 0; l < kLanes; ++l) acc[i][l] = a[l];
      }
    }
    double sumsq = 0;
    for (int l = 0; l < kLanes; ++l) sumsq += ss[l];
    const double r = 1.0 / std::sqrt(sumsq / static_cast<double>(K) + p->rms_eps);
    double pre[HC];
    for (int i = 0; i < HC; ++i) {
      double m = 0;
      for (int l = 0; l < kLanes; ++l) m += acc[i][l];
      pre[i] = 1.0 / (1.0 + std::exp(-(m * r * p->scale[0] + p->base[i]))) + p->hc_eps;
    }
    uint16_t* y = p->y + t * D;
    for (int64_t j = 0; j < D; ++j) {
      double v = 0;
      for (int i = 0; i < HC; ++i) v += pre[i] * static_cast<double>(bf16_bits_to_float(x[i * D + j]));
      y[j] = float_to_bf16_bits(static_cast<float>(v));
    }
  }
  return hcwarm_mhc::kOk;
}

}  // namespace hcwarm_kernels::cpu
