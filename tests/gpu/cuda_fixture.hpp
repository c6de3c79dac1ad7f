#pragma once
// Shared by the CUDA tests of tests/gpu: one CUDA device and one in-memory JIT
// runtime per test binary (made on first use and kept to the end: the driver
// outlives every test), the numerics report line, and the fused sublayer
// boundary (hc_pre with input Post, "hc_post_pre"): its inputs, a runner on
// device buffers and its checks against the float64 reference.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../backends/mhc_check.hpp"
#include "backends/cuda/cuda_device.hpp"
#include "core/env_config.hpp"
#include "jit/jit_runtime.hpp"
#include "mhc/hc_post_op.hpp"

namespace hcwarm::test {

struct CudaEnv {
  cuda::CudaDevice* device = nullptr;  // null on a machine without a CUDA device
  jit::JitRuntime* jit = nullptr;      // not tiered: specialized kernels from each bucket's first call on
};
inline CudaEnv& cuda_env() {
  static CudaEnv* env = [] {
    auto* e = new CudaEnv;
    const auto cfg = EnvConfig::from_environment();
    if (!cuda::cuda_device_present(cfg.cuda_library)) return e;
    e->device = new cuda::CudaDevice(0, cfg);  // HCWARM_CUDA_PORTABLE=1: the portable forms
    jit::JitOptions o;
    o.cache_dir = std::nullopt;
    o.nvrtc_library = cfg.nvrtc_library;
    o.tiered = false;
    e->jit = new jit::JitRuntime(o);
    e->jit->set_module_loader(jit::TargetKind::Cuda, std::make_shared<cuda::CudaModuleLoader>(*e->device));
    std::printf("[gpu] %s, %d SMs, %s, %s kernel forms\n", e->device->name().c_str(), e->device->num_sms(),
                e->device->arch().c_str(), e->device->portable() ? "portable" : "native");
    return e;
  }();
  return *env;
}

// Under the portable forms (HCWARM_CUDA_PORTABLE=1, or a GPU below sm_90) there is no
// one-pass kernel: a test of that kernel skips, saying so.
#define HCWARM_SKIP_IF_PORTABLE(device)                                                         \
  do {                                                                                          \
    if ((device).portable()) GTEST_SKIP() << "the portable kernel forms have no one-pass kernel"; \
  } while (0)

// A test that needs the device: skips without one.
class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    device_ = cuda_env().device;
    jit_ = cuda_env().jit;
    if (device_ == nullptr) GTEST_SKIP() << "no CUDA device";
  }
  cuda::CudaDevice* device_ = nullptr;
  jit::JitRuntime* jit_ = nullptr;
};

inline void report(const std::string& what, const Comparison& c) {
  std::printf(
      "[numerics] %-36s y: max %lld ulp, %.4f%% bit-exact of %lld, %lld >1ulp, %lld cancel; post %.2e comb %.2e\n",
      what.c_str(), static_cast<long long>(c.max_ulp), 100.0 * c.exact_share(), static_cast<long long>(c.y_values),
      static_cast<long long>(c.over_one_ulp), static_cast<long long>(c.cancellation), c.post_max_rel, c.comb_max_rel);
  std::fflush(stdout);
}

// ---------------------------------------------------------------------------
// The fused boundary: the post step of sublayer n (x, the previous residual,
// prev_post, prev_comb) and the pre step of sublayer n + 1 (fn, scale, base,
// norm weight) on the bf16 new residual.
struct PostPreCase {
  HcPreInputs pre;              // pre.residual: the previous residual (T, 4, D); the rest: the next sublayer's
  HostTensor<bf16> x;           // (T, D): sublayer n's output
  HostTensor<float> prev_post;  // (T, 4): gates in (0, 2), as post_mult * sigmoid gives them
  HostTensor<float> prev_comb;  // (T, 4, 4): positive, rows summing to about 1, as Sinkhorn gives them
};
inline PostPreCase make_post_pre_case(int64_t T, int hidden, uint64_t seed) {
  constexpr int kHc = 4;
  PostPreCase c{random_hc_pre_inputs(T, kHc, hidden, seed, 1.0f), HostTensor<bf16>({T, hidden}),
                HostTensor<float>({T, kHc}), HostTensor<float>({T, kHc, kHc})};
  std::mt19937_64 rng(seed * 7919 + 13);
  std::normal_distribution<float> n01(0.0f, 1.0f);
  std::uniform_real_distribution<float> gate(0.05f, 1.95f), mix(0.01f, 0.49f);
  for (auto& v : c.x.vec()) v = bf16::from_float(n01(rng));
  for (auto& v : c.prev_post.vec()) v = gate(rng);
  for (auto& v : c.prev_comb.vec()) v = mix(rng);
  return c;
}

// The case on the device, with poisoned outputs; out == the previous residual's buffer when in place.
struct PostPreBuffers {
  int64_t T = 0;
  int64_t D = 0;
  bool in_place = false;
  DeviceBuffer residual, x, prev_post, prev_comb, fn, scale, base, norm_weight, y, post, comb, out;
};
inline PostPreBuffers upload_post_pre(Device& dev, const PostPreCase& c, bool in_place) {
  PostPreBuffers b;
  b.T = c.x.dim(0);
  b.D = c.x.dim(1);
  b.in_place = in_place;
  b.residual = upload(dev, c.pre.residual.data(), c.pre.residual.numel() * sizeof(bf16));
  b.x = upload(dev, c.x.data(), c.x.numel() * sizeof(bf16));
  b.prev_post = upload(dev, c.prev_post.data(), c.prev_post.numel() * sizeof(float));
  b.prev_comb = upload(dev, c.prev_comb.data(), c.prev_comb.numel() * sizeof(float));
  b.fn = upload(dev, c.pre.fn.data(), c.pre.fn.numel() * sizeof(float));
  b.scale = upload(dev, c.pre.scale.data(), c.pre.scale.numel() * sizeof(float));
  b.base = upload(dev, c.pre.base.data(), c.pre.base.numel() * sizeof(float));
  b.norm_weight = upload(dev, c.pre.norm_weight.data(), c.pre.norm_weight.numel() * sizeof(bf16));
  b.y = poisoned(dev, b.T * b.D * sizeof(bf16));
  b.post = poisoned(dev, b.T * 4 * sizeof(float));
  b.comb = poisoned(dev, b.T * 16 * sizeof(float));
  if (!in_place) b.out = poisoned(dev, c.pre.residual.numel() * sizeof(bf16));
  return b;
}
inline mhc::HcPreArgs post_pre_args(PostPreBuffers& b, bool norm) {
  mhc::HcPreArgs a;
  a.num_tokens = b.T;
  a.input = mhc::HcPreInput::Post;
  a.residual = b.residual.as<bf16>();
  a.x = b.x.as<bf16>();
  a.prev_post = b.prev_post.as<float>();
  a.prev_comb = b.prev_comb.as<float>();
  a.new_residual = b.in_place ? b.residual.as<bf16>() : b.out.as<bf16>();
  a.fn = b.fn.as<float>();
  a.scale = b.scale.as<float>();
  a.base = b.base.as<float>();
  a.norm_weight = norm ? b.norm_weight.as<bf16>() : nullptr;
  a.y = b.y.as<bf16>();
  a.post = b.post.as<float>();
  a.comb = b.comb.as<float>();
  return a;
}

struct PostPreResult {
  HostTensor<bf16> new_residual;  // (T, 4, D)
  mhc::HcPreResult pre;           // y, post, comb of the next sublayer
};
inline PostPreResult download_post_pre(Device& dev, const PostPreBuffers& b, bool norm) {
  PostPreResult r{HostTensor<bf16>({b.T, 4, b.D}),
                  {HostTensor<bf16>({b.T, b.D}), HostTensor<float>({b.T, 4}), HostTensor<float>({b.T, 4, 4}), norm}};
  dev.copy_to_host(r.new_residual.data(), (b.in_place ? b.residual : b.out).get(),
                   r.new_residual.numel() * sizeof(bf16));
  dev.copy_to_host(r.pre.y.data(), b.y.get(), r.pre.y.numel() * sizeof(bf16));
  dev.copy_to_host(r.pre.post.data(), b.post.get(), r.pre.post.numel() * sizeof(float));
  dev.copy_to_host(r.pre.comb.data(), b.comb.get(), r.pre.comb.numel() * sizeof(float));
  return r;
}

// splits == 0: the op's own split policy.
inline PostPreResult run_post_pre(mhc::HcPreOp& op, Device& dev, const PostPreCase& c, bool norm, int splits = 0,
                                  bool in_place = false) {
  PostPreBuffers b = upload_post_pre(dev, c, in_place);
  const mhc::HcPreArgs a = post_pre_args(b, norm);
  if (splits > 0) {
    op.run_with_splits(a, splits);
  } else {
    op.run(a);
  }
  dev.synchronize();
  return download_post_pre(dev, b, norm);
}

// The unfused post step on the device: CUDA hc_post (HcPostOp) on the same inputs.
inline HostTensor<bf16> run_cuda_hc_post(cuda::CudaDevice& dev, jit::JitRuntime* jit, const PostPreCase& c) {
  const int64_t T = c.x.dim(0), D = c.x.dim(1);
  mhc::HcPostOp op({4, static_cast<int>(D)}, dev, jit, dev.arch(), nullptr);
  DeviceBuffer x = upload(dev, c.x.data(), c.x.numel() * sizeof(bf16));
  DeviceBuffer r = upload(dev, c.pre.residual.data(), c.pre.residual.numel() * sizeof(bf16));
  DeviceBuffer pp = upload(dev, c.prev_post.data(), c.prev_post.numel() * sizeof(float));
  DeviceBuffer pc = upload(dev, c.prev_comb.data(), c.prev_comb.numel() * sizeof(float));
  DeviceBuffer out = poisoned(dev, c.pre.residual.numel() * sizeof(bf16));
  op.run(T, x.as<bf16>(), r.as<bf16>(), pp.as<float>(), pc.as<float>(), out.as<bf16>());
  dev.synchronize();
  HostTensor<bf16> got({T, 4, D});
  dev.copy_to_host(got.data(), out.get(), got.numel() * sizeof(bf16));
  return got;
}

// The new residual against the float64 post step rounded to bf16
// (mhc::hc_post_reference): within 1 bf16 ulp, or, where the five terms
// cancel, within kCancellationRel * (|post x| + sum_i |comb_ij r_i|) (counted).
struct ResidualComparison {
  int64_t values = 0, exact = 0, cancellation = 0, max_ulp = 0, non_finite = 0;
};
inline ResidualComparison compare_new_residual(const HostTensor<bf16>& got, const PostPreCase& c) {
  const HostTensor<bf16> ref = mhc::hc_post_reference(c.x, c.pre.residual, c.prev_post, c.prev_comb);
  const int64_t T = c.x.dim(0), D = c.x.dim(1);
  ResidualComparison r;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t j = 0; j < 4; ++j) {
      for (int64_t d = 0; d < D; ++d) {
        const int64_t i = (t * 4 + j) * D + d;
        if (!std::isfinite(got[i].to_float())) {
          ++r.non_finite;
          continue;
        }
        ++r.values;
        const int64_t u = bf16_ulp_distance(got[i], ref[i]);
        r.exact += u == 0;
        if (u <= 1) {
          r.max_ulp = std::max(r.max_ulp, u);
          continue;
        }
        double terms = std::fabs(double{c.prev_post[t * 4 + j]} * c.x[t * D + d].to_float());
        for (int64_t s = 0; s < 4; ++s) {
          terms += std::fabs(double{c.prev_comb[(t * 4 + s) * 4 + j]} * c.pre.residual[(t * 4 + s) * D + d].to_float());
        }
        if (std::fabs(double{got[i].to_float()} - ref[i].to_float()) <= kCancellationRel * terms + 1e-30) {
          ++r.cancellation;
        } else {
          r.max_ulp = std::max(r.max_ulp, u);
        }
      }
    }
  }
  return r;
}
inline void expect_close(const ResidualComparison& r, const std::string& what) {
  EXPECT_EQ(r.non_finite, 0) << what << ": unwritten or non-finite new residual";
  EXPECT_LE(r.max_ulp, 1) << what << ": new residual";
}

// The pre step against the float64 hc_pre reference on the bf16 new residual
// the kernel stored (the contract: the pre step runs on those values). Where
// that residual equals the rounded float64 post step (compare_new_residual:
// all but about one element in 10^4, each within 1 ulp), this is
// hc_post_pre_reference.
inline HcPreInputs pre_step_inputs(const HostTensor<bf16>& new_residual, const PostPreCase& c) {
  return {new_residual, c.pre.fn, c.pre.scale, c.pre.base, c.pre.norm_weight};
}
inline Comparison check_pre_step(const PostPreResult& got, const PostPreCase& c, bool norm) {
  return check_against_reference(got.pre, pre_step_inputs(got.new_residual, c), norm);
}

inline bool same_bits(const HostTensor<bf16>& a, const HostTensor<bf16>& b) {
  return a.numel() == b.numel() && std::memcmp(a.data(), b.data(), a.numel() * sizeof(bf16)) == 0;
}
// How many of y, post and comb's values differ in their bits (the same shapes).
inline int64_t differing_values(const mhc::HcPreResult& a, const mhc::HcPreResult& b) {
  int64_t n = 0;
  for (int64_t i = 0; i < a.y.numel(); ++i) n += a.y.data()[i].bits != b.y.data()[i].bits;
  for (int64_t i = 0; i < a.post.numel(); ++i) n += std::memcmp(&a.post.data()[i], &b.post.data()[i], 4) != 0;
  for (int64_t i = 0; i < a.comb.numel(); ++i) n += std::memcmp(&a.comb.data()[i], &b.comb.data()[i], 4) != 0;
  return n;
}
inline bool same_bits(const mhc::HcPreResult& a, const mhc::HcPreResult& b) {
  return a.y.numel() == b.y.numel() && a.post.numel() == b.post.numel() && a.comb.numel() == b.comb.numel() &&
         differing_values(a, b) == 0;
}

}  // namespace hcwarm::test
