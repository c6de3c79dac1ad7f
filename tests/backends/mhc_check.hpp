#pragma once
// Shared by tests/backends (CPU) and tests/gpu (CUDA): run an HcPreOp on a
// device from host inputs, and compare against the double-precision reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "common/test_util.hpp"
#include "core/device.hpp"
#include "core/thread_pool.hpp"
#include "mhc/hc_pre_op.hpp"
#include "mhc/reference.hpp"
#include "mhc/split_policy.hpp"

namespace hcwarm::test {

// Every split count that occurs for DeepSeek V4 Flash / Pro with 132 and 148 SMs
// (M = 16384 covers every bucket: num_splits = 1 from T = 8449 on).
inline std::set<int> dsv4_split_counts(int hidden) {
  std::set<int> out;
  for (int sms : {132, 148}) {
    for (const auto& b : mhc::split_buckets(16384, int64_t{4} * hidden, sms)) out.insert(b.num_splits);
  }
  return out;
}

// `bytes` of `src` in a new buffer on `device` (at least 16 bytes: a
// zero-token case still gets an aligned pointer).
inline DeviceBuffer upload(Device& device, const void* src, size_t bytes) {
  DeviceBuffer b(device, std::max<size_t>(bytes, 16));
  device.copy_from_host(b.get(), src, bytes);
  return b;
}
// `bytes` of 0xFF: an output a kernel fails to write reads back as NaN.
inline DeviceBuffer poisoned(Device& device, size_t bytes) {
  const std::vector<unsigned char> poison(std::max<size_t>(bytes, 16), 0xff);
  return upload(device, poison.data(), poison.size());
}

// hc_pre's weights (fn, scale, base, norm weight) and its poisoned outputs on
// `device`, with the args that point at them; the caller adds the input
// (residual streams, embedding or the post step's) and runs the op.
struct StagedHcPre {
  DeviceBuffer fn, scale, base, norm_weight, y, post, comb;
  mhc::HcPreArgs args;
  int64_t tokens = 0, hidden = 0;
  int hc = 0;

  mhc::HcPreResult read_back(Device& device) const {
    mhc::HcPreResult r{HostTensor<bf16>({tokens, hidden}), HostTensor<float>({tokens, hc}),
                       HostTensor<float>({tokens, hc, hc}), args.norm_weight != nullptr};
    device.copy_to_host(r.y.data(), y.get(), r.y.numel() * sizeof(bf16));
    device.copy_to_host(r.post.data(), post.get(), r.post.numel() * sizeof(float));
    device.copy_to_host(r.comb.data(), comb.get(), r.comb.numel() * sizeof(float));
    return r;
  }
};
inline StagedHcPre stage_hc_pre(Device& device, const HcPreInputs& in, int64_t T, bool norm) {
  const int hc = static_cast<int>(in.residual.dim(1));
  const int64_t D = in.residual.dim(2);
  StagedHcPre s{upload(device, in.fn.data(), in.fn.numel() * sizeof(float)),
                upload(device, in.scale.data(), in.scale.numel() * sizeof(float)),
                upload(device, in.base.data(), in.base.numel() * sizeof(float)),
                upload(device, in.norm_weight.data(), in.norm_weight.numel() * sizeof(bf16)),
                poisoned(device, static_cast<size_t>(T * D) * sizeof(bf16)),
                poisoned(device, static_cast<size_t>(T * hc) * sizeof(float)),
                poisoned(device, static_cast<size_t>(T * hc * hc) * sizeof(float)),
                {},
                T,
                D,
                hc};
  mhc::HcPreArgs& a = s.args;
  a.num_tokens = T;
  a.fn = s.fn.as<float>();
  a.scale = s.scale.as<float>();
  a.base = s.base.as<float>();
  a.norm_weight = norm ? s.norm_weight.as<bf16>() : nullptr;
  a.y = s.y.as<bf16>();
  a.post = s.post.as<float>();
  a.comb = s.comb.as<float>();
  return s;
}

// Runs op on `device` (inputs copied there, outputs poisoned with 0xFF first and copied back).
// splits == 0: the op's own split policy.
inline mhc::HcPreResult run_op(mhc::HcPreOp& op, Device& device, const HcPreInputs& in, bool norm, int splits = 0) {
  const int64_t T = in.residual.dim(0);
  StagedHcPre s = stage_hc_pre(device, in, T, norm);
  const DeviceBuffer res = upload(device, in.residual.data(), in.residual.numel() * sizeof(bf16));
  s.args.residual = res.as<bf16>();
  if (splits > 0) {
    op.run_with_splits(s.args, splits);
  } else {
    op.run(s.args);
  }
  device.synchronize();
  return s.read_back(device);
}

struct Comparison {
  int64_t max_ulp = 0;       // over the elements that are not cancellation cases
  int64_t y_values = 0;
  int64_t y_exact = 0;
  int64_t cancellation = 0;  // > 1 ulp but within the cancellation allowance (see below)
  int64_t over_one_ulp = 0;  // > 1 ulp otherwise (allowed, rarely, with the fused norm only)
  bool norm = false;
  int64_t non_finite = 0;    // unwritten (poison) or NaN/inf anywhere
  double post_max_rel = 0;
  double comb_max_rel = 0;
  double exact_share() const { return y_values ? static_cast<double>(y_exact) / y_values : 1.0; }
  void merge(const Comparison& o) {
    max_ulp = std::max(max_ulp, o.max_ulp);
    y_values += o.y_values;
    y_exact += o.y_exact;
    cancellation += o.cancellation;
    over_one_ulp += o.over_one_ulp;
    norm = norm || o.norm;
    non_finite += o.non_finite;
    post_max_rel = std::max(post_max_rel, o.post_max_rel);
    comb_max_rel = std::max(comb_max_rel, o.comb_max_rel);
  }
};

// The float64 reference (mhc::hc_pre_reference). Each token's outputs depend
// on its own row alone, so a large T is computed in token slices on the host's
// cores: the same values, and the GPU suite's checks no longer wait on one core.
inline mhc::HcPreResult reference_of(const HcPreInputs& in, bool norm) {
  const HostTensor<bf16>* weight = norm ? &in.norm_weight : nullptr;
  mhc::check_hc_pre_shapes(in.residual, in.fn, in.scale, in.base, weight);  // the named error, before any slicing
  const int64_t T = in.residual.dim(0), hc = in.residual.dim(1), D = in.residual.dim(2);
  const int threads = static_cast<int>(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, 16));
  const int64_t slice = std::max<int64_t>(64, (T + threads - 1) / threads);
  if (T <= slice) return mhc::hc_pre_reference(in.residual, in.fn, in.scale, in.base, weight, mhc::MhcConstants{});
  mhc::HcPreResult out{HostTensor<bf16>({T, D}), HostTensor<float>({T, hc}), HostTensor<float>({T, hc, hc}), norm};
  ThreadPool pool(threads);
  pool.parallel_for(T, slice, [&](int64_t t0, int64_t t1) {
    const int64_t n = t1 - t0;
    HostTensor<bf16> rows({n, hc, D});
    std::copy_n(in.residual.data() + t0 * hc * D, n * hc * D, rows.data());
    const mhc::HcPreResult r = mhc::hc_pre_reference(rows, in.fn, in.scale, in.base, weight, mhc::MhcConstants{});
    std::copy_n(r.y.data(), n * D, out.y.data() + t0 * D);
    std::copy_n(r.post.data(), n * hc, out.post.data() + t0 * hc);
    std::copy_n(r.comb.data(), n * hc * hc, out.comb.data() + t0 * hc * hc);
  });
  return out;
}

// y is compared in bf16 ulps. Where the stream sum cancels (|y| far below its
// terms sum_i |pre_i x_i|), no f32 kernel can be within 1 ulp of a float64
// reference; such an element passes when its error is within
// kCancellationRel * sum_i |x_i| (times rn * |w| with the norm; pre_i <= 1),
// i.e. a few f32 roundings of the terms, and is counted in `cancellation`.
inline constexpr double kCancellationRel = 1.0 / (1 << 21);

inline Comparison compare(const mhc::HcPreResult& got, const mhc::HcPreResult& ref, const HcPreInputs& in) {
  Comparison c;
  c.norm = ref.norm_fused;
  const int64_t T = in.residual.dim(0);
  const int64_t hc = in.residual.dim(1);
  const int64_t D = in.residual.dim(2);
  std::vector<double> rn(T, 1.0);
  if (ref.norm_fused) {
    const auto plain = reference_of(in, false);
    for (int64_t t = 0; t < T; ++t) {
      double ss = 0;
      for (int64_t j = 0; j < D; ++j) ss += std::pow(plain.y[t * D + j].to_float(), 2);
      rn[t] = 1.0 / std::sqrt(ss / D + 1e-6);
    }
  }
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t j = 0; j < D; ++j) {
      const int64_t i = t * D + j;
      const float g = got.y[i].to_float();
      if (!std::isfinite(g)) {
        ++c.non_finite;
        continue;
      }
      ++c.y_values;
      const int64_t d = bf16_ulp_distance(got.y[i], ref.y[i]);
      c.y_exact += d == 0;
      if (d <= 1) {
        c.max_ulp = std::max(c.max_ulp, d);
        continue;
      }
      double terms = 0;
      for (int64_t s = 0; s < hc; ++s) terms += std::fabs(in.residual[(t * hc + s) * D + j].to_float());
      if (ref.norm_fused) terms *= rn[t] * std::fabs(in.norm_weight[j].to_float());
      if (std::fabs(static_cast<double>(g) - ref.y[i].to_float()) <= kCancellationRel * terms + 1e-30) {
        ++c.cancellation;
      } else {
        c.max_ulp = std::max(c.max_ulp, d);
        ++c.over_one_ulp;
        if (std::getenv("HCWARM_TEST_VERBOSE") != nullptr) {
          std::fprintf(stderr, "y[%lld,%lld]: got %.9g ref %.9g (%lld ulp), terms %.6g\n", (long long)t, (long long)j,
                       g, ref.y[i].to_float(), (long long)d, terms);
        }
      }
    }
  }
  auto rel = [&](const HostTensor<float>& g, const HostTensor<float>& r, double* out) {
    for (int64_t i = 0; i < r.numel(); ++i) {
      if (!std::isfinite(g[i])) {
        ++c.non_finite;
        continue;
      }
      const double e =
          std::fabs(static_cast<double>(g[i]) - r[i]) / std::max(std::fabs(static_cast<double>(r[i])), 1e-30);
      *out = std::max(*out, e);
    }
  };
  rel(got.post, ref.post, &c.post_max_rel);
  rel(got.comb, ref.comb, &c.comb_max_rel);
  return c;
}

// Documented tolerances (docs/MATH.md, section 5): y within 1 bf16 ulp
// (cancellation cases aside, counted), post and comb relative errors below these.
// With the fused norm the reference rounds y to bf16 before scaling it: where
// the kernel's y sits on the other side of a rounding boundary (a legitimate
// 1-ulp difference there), the scaled output may differ by 2 ulps. Those are
// allowed for at most kNormTwoUlpShare of the elements, rounded up (one such
// element in a single token's 7168 values is a chance event, not a bug).
inline constexpr double kPostRelTol = 2e-5;
inline constexpr double kCombRelTol = 5e-5;
inline constexpr double kNormTwoUlpShare = 1e-4;

inline void expect_close(const Comparison& c, const std::string& what) {
  EXPECT_EQ(c.non_finite, 0) << what << ": unwritten or non-finite outputs";
  if (c.norm) {
    EXPECT_LE(c.max_ulp, 2) << what;
    EXPECT_LE(static_cast<double>(c.over_one_ulp), std::ceil(kNormTwoUlpShare * static_cast<double>(c.y_values)))
        << what;
  } else {
    EXPECT_LE(c.max_ulp, 1) << what;
  }
  EXPECT_LE(c.post_max_rel, kPostRelTol) << what;
  EXPECT_LE(c.comb_max_rel, kCombRelTol) << what;
}

inline Comparison check_against_reference(const mhc::HcPreResult& got, const HcPreInputs& in, bool norm) {
  return compare(got, reference_of(in, norm), in);
}

}  // namespace hcwarm::test
