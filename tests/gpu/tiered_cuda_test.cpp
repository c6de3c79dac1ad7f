// Tiered execution on CUDA (label `gpu`; skips without a device): hc_pre and
// hc_post serve a bucket's first call with the generic kernels of the embedded
// nvcc fatbins while NVRTC compiles in the background, then swap in the JIT
// kernels; a capture of a bucket that is not loaded captures the generic kernels.
#include <gtest/gtest.h>

#include <cstdio>

#include "../backends/mhc_check.hpp"
#include "graph_capture.hpp"
#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/hc_post_cuda.hpp"
#include "backends/cuda/mhc_pre_cuda.hpp"
#include "core/env_config.hpp"
#include "jit/jit_runtime.hpp"
#include "mhc/hc_post_op.hpp"

namespace hcwarm::test {
namespace {

struct Gpu {
  std::unique_ptr<cuda::CudaDevice> device;
  std::unique_ptr<jit::JitRuntime> jit;
};

// Null device when there is none (the test skips).
Gpu make_gpu() {
  Gpu g;
  const auto env = EnvConfig::from_environment();
  if (!cuda::cuda_device_present(env.cuda_library)) return g;
  g.device = std::make_unique<cuda::CudaDevice>(0, env);
  jit::JitOptions o;
  o.cache_dir = std::nullopt;
  o.nvrtc_library = env.nvrtc_library;
  g.jit = std::make_unique<jit::JitRuntime>(o);
  g.jit->set_module_loader(jit::TargetKind::Cuda, std::make_shared<cuda::CudaModuleLoader>(*g.device));
  return g;
}

TEST(TieredCuda, HcPreGenericFirstThenSpecializedBothMatchTheReference) {
  Gpu g = make_gpu();
  if (!g.device) GTEST_SKIP() << "no CUDA device";
  if (cuda::mhc_pre_generic_fatbin().empty()) GTEST_SKIP() << "built without nvcc: no generic kernels";
  mhc::HcPreOp op(mhc::Backend::Cuda, mhc::MhcDims{4, 4096}, {}, 132, g.jit.get(), *g.device);
  ASSERT_TRUE(op.tiered());
  ASSERT_EQ(op.num_splits(448), 18);  // above cuda::one_pass_max_splits(4096) = 14: the split-K pair
  // Three specializations (64, 18 and 1 splits on 132 SMs: "22+", "5-21" and the
  // one-pass kernel, which also serves 4000 tokens), each a miss once.
  for (const int64_t T : {int64_t{1}, int64_t{448}, int64_t{4000}, int64_t{9001}}) {
    const auto in = random_hc_pre_inputs(T, 4, 4096, 17 * T, 1.0f);
    const auto generic = run_op(op, *g.device, in, true);
    expect_close(check_against_reference(generic, in, true), fmt::format("generic T={}", T));
    g.jit->drain_background();
    const auto specialized = run_op(op, *g.device, in, true);
    EXPECT_TRUE(op.specialized_loaded(T, true)) << "T=" << T;
    expect_close(check_against_reference(specialized, in, true), fmt::format("specialized T={}", T));
  }
  const jit::CompileStats s = g.jit->stats();
  EXPECT_EQ(s.waited_for_compile, 0);
  // The portable forms have no one-pass kernel: 4000 and 9001 tokens take split classes of their own.
  const int specializations = g.device->portable() ? 4 : 3;
  EXPECT_EQ(s.served_by_generic, specializations);
  EXPECT_EQ(s.background_compiled, specializations);
}

TEST(TieredCuda, HcPostGenericAgreesWithTheJitKernel) {
  Gpu g = make_gpu();
  if (!g.device) GTEST_SKIP() << "no CUDA device";
  if (cuda::mhc_post_generic_fatbin().empty()) GTEST_SKIP() << "built without nvcc: no generic kernel";
  const mhc::MhcDims d{4, 4096};
  mhc::HcPostOp op(d, *g.device, g.jit.get(), g.device->arch(), nullptr);
  ASSERT_TRUE(op.tiered());
  const int64_t T = 37;
  const auto in = random_hc_pre_inputs(T, 4, 4096, 5, 1.0f);
  std::vector<bf16> out(static_cast<size_t>(T * d.hidden));
  for (size_t i = 0; i < out.size(); ++i) out[i] = in.residual[static_cast<int64_t>(i)];
  std::vector<float> post(static_cast<size_t>(T * 4)), comb(static_cast<size_t>(T * 16));
  for (size_t i = 0; i < post.size(); ++i) post[i] = 0.25f + 0.01f * static_cast<float>(i % 7);
  for (size_t i = 0; i < comb.size(); ++i) comb[i] = 0.1f * static_cast<float>(i % 5);
  auto upload = [&](const void* src, size_t bytes) {
    DeviceBuffer b(*g.device, bytes);
    g.device->copy_from_host(b.get(), src, bytes);
    return b;
  };
  const size_t rbytes = static_cast<size_t>(in.residual.numel()) * sizeof(bf16);
  DeviceBuffer o = upload(out.data(), out.size() * sizeof(bf16));
  DeviceBuffer r = upload(in.residual.data(), rbytes);
  DeviceBuffer p = upload(post.data(), post.size() * sizeof(float));
  DeviceBuffer c = upload(comb.data(), comb.size() * sizeof(float));
  auto run = [&] {
    DeviceBuffer res_out(*g.device, rbytes);
    op.run(T, o.as<bf16>(), r.as<bf16>(), p.as<float>(), c.as<float>(), res_out.as<bf16>());
    g.device->synchronize();
    std::vector<bf16> h(static_cast<size_t>(in.residual.numel()));
    g.device->copy_to_host(h.data(), res_out.get(), rbytes);
    return h;
  };
  const auto generic = run();
  EXPECT_FALSE(op.specialized_loaded());
  g.jit->drain_background();
  const auto jitted = run();
  EXPECT_TRUE(op.specialized_loaded());
  int64_t worst = 0, equal = 0;
  for (size_t i = 0; i < generic.size(); ++i) {
    worst = std::max(worst, bf16_ulp_distance(generic[i], jitted[i]));
    equal += generic[i] == jitted[i];
  }
  EXPECT_LE(worst, 1);
  std::printf("[tiered] hc_post generic vs JIT: %lld of %zu bit-equal\n", static_cast<long long>(equal),
              generic.size());
  EXPECT_EQ(g.jit->stats().served_by_generic, 1);
}

TEST(TieredCuda, CaptureOfAnUnloadedBucketCapturesTheGenericKernels) {
  Gpu g = make_gpu();
  if (!g.device) GTEST_SKIP() << "no CUDA device";
  if (cuda::mhc_pre_generic_fatbin().empty()) GTEST_SKIP() << "built without nvcc: no generic kernels";
  mhc::HcPreOp op(mhc::Backend::Cuda, mhc::MhcDims{4, 4096}, {}, 132, g.jit.get(), *g.device);
  op.load(op.num_splits(1), true);  // warmup of one bucket: also loads the generic kernels
  op.reserve_workspace(2048);
  const int64_t T = 2000;  // 4 splits: another split class ("3-4"; T = 1 is "22+"), never loaded
  ASSERT_FALSE(op.specialized_loaded(T, true));
  ASSERT_TRUE(op.loaded(T, true));
  const auto in = random_hc_pre_inputs(T, 4, 4096, 3, 1.0f);
  auto& dev = *g.device;
  StagedHcPre s = stage_hc_pre(dev, in, T, true);  // y, post and comb poisoned
  const DeviceBuffer res = upload(dev, in.residual.data(), in.residual.numel() * sizeof(bf16));
  s.args.residual = res.as<bf16>();
  const TestStream stream(dev);
  ASSERT_NE(stream.get(), nullptr);
  ASSERT_TRUE(capture_and_replay(dev, stream.get(), [&] { op.run(s.args, {stream.get()}); })) << "the generic call";
  expect_close(check_against_reference(s.read_back(dev), in, true), fmt::format("captured generic T={}", T));
  EXPECT_EQ(g.jit->stats().served_by_generic, 1);
  EXPECT_EQ(g.jit->stats().compiled, 1);  // only the warmed bucket: nothing was scheduled inside capture
}

}  // namespace
}  // namespace hcwarm::test
