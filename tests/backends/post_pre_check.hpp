#pragma once
// Shared by tests/backends (CPU) and tests/gpu (CUDA): the fused sublayer
// boundary (hc_pre input Post) from host inputs, on a device, against the
// float64 reference hc_post_pre_reference.
#include <gtest/gtest.h>

#include <random>

#include "mhc_check.hpp"

namespace hcwarm::test {

// The previous sublayer's output and its pre step's post / comb, with the
// previous residual and the next sublayer's parameters in `pre`.
struct PostPreCase {
  HostTensor<bf16> x;           // (T, D)
  HostTensor<float> prev_post;  // (T, hc), in (0, 2) as post_mult * sigmoid gives
  HostTensor<float> prev_comb;  // (T, hc, hc), in (0, 0.5): near a doubly stochastic matrix's entries
  HcPreInputs pre;              // residual: the previous residual (T, hc, D); fn, scale, base, norm: the next sublayer's
};

inline PostPreCase make_post_pre_case(int64_t T, int hidden, uint64_t seed, int hc = 4) {
  PostPreCase c{HostTensor<bf16>({T, hidden}), HostTensor<float>({T, hc}), HostTensor<float>({T, hc, hc}),
                random_hc_pre_inputs(T, hc, hidden, seed)};
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  std::normal_distribution<float> n01(0.0f, 1.0f);
  std::uniform_real_distribution<float> post(0.0f, 2.0f), comb(0.0f, 0.5f);
  for (auto& v : c.x.vec()) v = bf16::from_float(n01(rng));
  for (auto& v : c.prev_post.vec()) v = post(rng);
  for (auto& v : c.prev_comb.vec()) v = comb(rng);
  return c;
}

inline mhc::HcPostPreResult post_pre_reference(const PostPreCase& c, bool norm) {
  return mhc::hc_post_pre_reference(c.x, c.pre.residual, c.prev_post, c.prev_comb, c.pre.fn, c.pre.scale, c.pre.base,
                                    norm ? &c.pre.norm_weight : nullptr, mhc::MhcConstants{});
}

// The inputs of the unfused pre step: the case's parameters on `new_residual`.
inline HcPreInputs next_inputs(const PostPreCase& c, const HostTensor<bf16>& new_residual) {
  HcPreInputs in = c.pre;
  in.residual = new_residual;
  return in;
}

// Runs the boundary on `device` (outputs poisoned with 0xFF first). in_place:
// the new residual is written over the previous residual's buffer.
// splits == 0: the op's own split policy.
inline mhc::HcPostPreResult run_post_pre(mhc::HcPreOp& op, Device& device, const PostPreCase& c, bool norm,
                                         bool in_place = false, int splits = 0) {
  const int64_t T = c.x.dim(0), D = c.x.dim(1);
  const int64_t hc = c.prev_post.dim(1);
  const size_t res_bytes = static_cast<size_t>(T * hc * D) * sizeof(bf16);
  StagedHcPre s = stage_hc_pre(device, c.pre, T, norm);
  const DeviceBuffer x = upload(device, c.x.data(), c.x.numel() * sizeof(bf16));
  const DeviceBuffer res = upload(device, c.pre.residual.data(), res_bytes);
  const DeviceBuffer pp = upload(device, c.prev_post.data(), c.prev_post.numel() * sizeof(float));
  const DeviceBuffer pc = upload(device, c.prev_comb.data(), c.prev_comb.numel() * sizeof(float));
  DeviceBuffer out;
  if (!in_place) out = poisoned(device, res_bytes);
  mhc::HcPreArgs& a = s.args;
  a.input = mhc::HcPreInput::Post;
  a.x = x.as<bf16>();
  a.residual = res.as<bf16>();
  a.prev_post = pp.as<float>();
  a.prev_comb = pc.as<float>();
  a.new_residual = in_place ? res.as<bf16>() : out.as<bf16>();
  if (splits > 0) {
    op.run_with_splits(a, splits);
  } else {
    op.run(a);
  }
  device.synchronize();
  mhc::HcPostPreResult r{HostTensor<bf16>({T, hc, D}), s.read_back(device)};
  device.copy_to_host(r.new_residual.data(), a.new_residual, res_bytes);
  return r;
}

// The largest bf16 ulp distance between two new residuals (unwritten poison is NaN: counted as huge).
inline int64_t max_residual_ulp(const HostTensor<bf16>& got, const HostTensor<bf16>& want) {
  int64_t worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const int64_t d = std::isfinite(got[i].to_float()) ? bf16_ulp_distance(got[i], want[i]) : int64_t{1} << 20;
    worst = std::max(worst, d);
  }
  return worst;
}

// The boundary against the reference: the new residual within max_residual_ulps
// of the reference's (0 on the CPU: the same double sum), then y / post / comb
// with the tolerances of hc_pre (mhc_check.hpp) on the reference's new residual.
inline void expect_post_pre_close(const mhc::HcPostPreResult& got, const mhc::HcPostPreResult& ref,
                                  const PostPreCase& c, int64_t max_residual_ulps, const std::string& what) {
  EXPECT_LE(max_residual_ulp(got.new_residual, ref.new_residual), max_residual_ulps) << what << ": new_residual";
  expect_close(compare(got.pre, ref.pre, next_inputs(c, ref.new_residual)), what);
}

}  // namespace hcwarm::test
