#pragma once
// Shared by tests/backends (CPU) and tests/gpu (CUDA): inputs of the mHC head
// and its comparison against the double-precision reference (docs/MATH.md,
// section 5 gives the tolerances, the same as hc_pre's y without the norm).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/test_util.hpp"
#include "core/device.hpp"
#include "mhc/hc_head_op.hpp"
#include "mhc/reference.hpp"
#include "mhc_check.hpp"

namespace hcwarm::test {

struct HcHeadInputs {
  HostTensor<bf16> residual;  // (T, hc, D)
  HostTensor<float> fn;       // (hc, hc*D)
  HostTensor<float> scale;    // (1,)
  HostTensor<float> base;     // (hc,)
};

// The residual of random_hc_pre_inputs; fn ~ 1e-2 N(0, 1), so that the mix
// terms (about 1e-2 sqrt(K)) move the gates well away from sigmoid(base).
inline HcHeadInputs random_hc_head_inputs(int64_t tokens, int hc, int hidden, uint64_t seed) {
  HcPreInputs pre = random_hc_pre_inputs(tokens, hc, hidden, seed);
  const int64_t k = int64_t{hc} * hidden;
  HcHeadInputs in{std::move(pre.residual), HostTensor<float>({hc, k}), HostTensor<float>({1}), HostTensor<float>({hc})};
  for (int64_t i = 0; i < hc * k; ++i) in.fn[i] = 10.0f * pre.fn[i];
  in.scale[0] = 0.5f + pre.scale[0];
  for (int i = 0; i < hc; ++i) in.base[i] = pre.base[i];
  return in;
}

struct HeadComparison {
  int64_t values = 0, exact = 0, max_ulp = 0, cancellation = 0, non_finite = 0;
};

// y within 1 bf16 ulp of the reference; where the stream sum cancels, an error
// up to kCancellationRel * sum_i |x_i| passes and is counted.
inline HeadComparison compare_head(const HostTensor<bf16>& got, const HcHeadInputs& in) {
  const HostTensor<bf16> ref = mhc::hc_head_reference(in.residual, in.fn, in.scale, in.base, mhc::MhcConstants{});
  const int64_t T = in.residual.dim(0), hc = in.residual.dim(1), D = in.residual.dim(2);
  HeadComparison c;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t j = 0; j < D; ++j) {
      const int64_t i = t * D + j;
      if (!std::isfinite(got[i].to_float())) {
        ++c.non_finite;
        continue;
      }
      ++c.values;
      const int64_t d = bf16_ulp_distance(got[i], ref[i]);
      c.exact += d == 0;
      if (d <= 1) {
        c.max_ulp = std::max(c.max_ulp, d);
        continue;
      }
      double terms = 0;
      for (int64_t s = 0; s < hc; ++s) terms += std::fabs(in.residual[(t * hc + s) * D + j].to_float());
      if (std::fabs(static_cast<double>(got[i].to_float()) - ref[i].to_float()) <= kCancellationRel * terms + 1e-30) {
        ++c.cancellation;
      } else {
        c.max_ulp = std::max(c.max_ulp, d);
      }
    }
  }
  return c;
}

inline void expect_head_close(const HeadComparison& c, const std::string& what) {
  EXPECT_EQ(c.non_finite, 0) << what << ": unwritten or non-finite outputs";
  EXPECT_LE(c.max_ulp, 1) << what;
}

}  // namespace hcwarm::test
