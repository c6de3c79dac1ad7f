#include <gtest/gtest.h>

#include <cmath>

#include "common/test_util.hpp"
#include "mhc/reference.hpp"

namespace hcwarm::mhc {
namespace {

using test::random_hc_pre_inputs;

TEST(Reference, ZeroTokensGiveEmptyOutputs) {
  auto in = random_hc_pre_inputs(0, 4, 64, 1);
  const auto r = hc_pre_reference(in.residual, in.fn, in.scale, in.base, &in.norm_weight, {});
  EXPECT_EQ(r.y.shape(), Shape({0, 64}));
  EXPECT_EQ(r.post.shape(), Shape({0, 4}));
  EXPECT_EQ(r.comb.shape(), Shape({0, 4, 4}));
  EXPECT_TRUE(r.norm_fused);
}

TEST(Reference, ShapeMismatchesAreErrorsNamingTheTensor) {
  auto in = random_hc_pre_inputs(3, 4, 64, 2);
  auto expect_error = [&](auto&& call, const std::string& needle) {
    try {
      call();
      FAIL() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(e.message().find(needle), std::string::npos) << e.message();
    }
  };
  HostTensor<float> bad_fn({24, 255});
  expect_error([&] { hc_pre_reference(in.residual, bad_fn, in.scale, in.base, nullptr, {}); }, "fn must have shape");
  HostTensor<float> bad_scale({2});
  expect_error([&] { hc_pre_reference(in.residual, in.fn, bad_scale, in.base, nullptr, {}); }, "scale");
  HostTensor<float> bad_base({23});
  expect_error([&] { hc_pre_reference(in.residual, in.fn, in.scale, bad_base, nullptr, {}); }, "base");
  HostTensor<bf16> bad_norm({63});
  expect_error([&] { hc_pre_reference(in.residual, in.fn, in.scale, in.base, &bad_norm, {}); }, "norm_weight");
  HostTensor<bf16> flat({3, 256});
  expect_error([&] { hc_pre_reference(flat, in.fn, in.scale, in.base, nullptr, {}); }, "residual");
}

TEST(Reference, SinkhornIsNearlyDoublyStochastic) {
  double c[16];
  for (int i = 0; i < 16; ++i) c[i] = std::sin(1.7 * i) * 3.0;
  sinkhorn_reference(c, 4, 20, 1e-6);
  for (int i = 0; i < 4; ++i) {
    double row = 0, col = 0;
    for (int j = 0; j < 4; ++j) {
      row += c[i * 4 + j];
      col += c[j * 4 + i];
      EXPECT_GT(c[i * 4 + j], 0.0);
    }
    EXPECT_NEAR(row, 1.0, 1e-3);
    EXPECT_NEAR(col, 1.0, 1e-5);  // the last step normalises columns
  }
}

// hc = 1, D = 2 by hand: every quantity follows from the formulas directly.
TEST(Reference, TinyCaseByHand) {
  HostTensor<bf16> residual({1, 1, 2}, {bf16::from_float(1.0f), bf16::from_float(-3.0f)});
  HostTensor<float> fn({3, 2}, {0.5f, 0.25f, -1.0f, 0.0f, 2.0f, 1.0f});
  HostTensor<float> scale({3}, {1.0f, 0.5f, 2.0f});
  HostTensor<float> base({3}, {0.1f, -0.2f, 0.3f});
  MhcConstants k;
  const auto r = hc_pre_reference(residual, fn, scale, base, nullptr, k);
  const double rr = 1.0 / std::sqrt((1.0 + 9.0) / 2.0 + 1e-6);
  const double m0 = (0.5 - 0.75) * rr, m1 = -1.0 * rr;
  const double pre = 1.0 / (1.0 + std::exp(-(m0 * 1.0 + 0.1f))) + 1e-6;
  const double post = 2.0 / (1.0 + std::exp(-(m1 * 0.5 + (-0.2f))));
  EXPECT_NEAR(r.post[0], post, 1e-6);
  // With hc = 1 Sinkhorn gives (1 + eps) / (1 + eps + eps) after the first step, then ~1.
  EXPECT_NEAR(r.comb[0], 1.0, 1e-5);
  EXPECT_EQ(r.y[0], bf16::from_float(static_cast<float>(pre * 1.0)));
  EXPECT_EQ(r.y[1], bf16::from_float(static_cast<float>(pre * -3.0)));
}

TEST(Reference, FusedNormGivesUnitRmsTimesWeight) {
  auto in = random_hc_pre_inputs(4, 4, 256, 3);
  for (auto& w : in.norm_weight.vec()) w = bf16::from_float(1.0f);
  const auto r = hc_pre_reference(in.residual, in.fn, in.scale, in.base, &in.norm_weight, {});
  for (int64_t t = 0; t < 4; ++t) {
    double ss = 0;
    for (int64_t j = 0; j < 256; ++j) ss += std::pow(r.y[t * 256 + j].to_float(), 2);
    EXPECT_NEAR(std::sqrt(ss / 256), 1.0, 1e-2);
  }
}

TEST(Reference, PostStepMixesStreamsTransposed) {
  HostTensor<bf16> residual({1, 2, 1}, {bf16::from_float(1.0f), bf16::from_float(10.0f)});
  HostTensor<bf16> out({1, 1}, {bf16::from_float(2.0f)});
  HostTensor<float> post({1, 2}, {0.5f, 1.0f});
  // comb[i][j]: input stream i feeds output stream j.
  HostTensor<float> comb({1, 2, 2}, {0.25f, 0.75f, 0.5f, 0.5f});
  const auto nr = hc_post_reference(out, residual, post, comb);
  EXPECT_FLOAT_EQ(nr[0].to_float(), 0.5f * 2 + 0.25f * 1 + 0.5f * 10);
  EXPECT_FLOAT_EQ(nr[1].to_float(), 1.0f * 2 + 0.75f * 1 + 0.5f * 10);
  HostTensor<float> bad_post({1, 3});
  EXPECT_THROW(hc_post_reference(out, residual, bad_post, comb), Error);
}

}  // namespace
}  // namespace hcwarm::mhc
