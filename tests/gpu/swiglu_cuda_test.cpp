// The CUDA SwiGLU sublayer (split-K gate/up, activation, down) against the CPU
// one on the same weights and inputs. Skips without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backends/cuda/cuda_device.hpp"
#include "model/standin/swiglu_cuda.hpp"
#include "core/env_config.hpp"
#include "jit/jit_runtime.hpp"
#include "model/standin/swiglu_mlp.hpp"

namespace hcwarm {
namespace {

TEST(SwigluCuda, MatchesTheCpuSublayer) {
  const EnvConfig env = EnvConfig::from_environment();
  if (!cuda::cuda_device_present(env.cuda_library)) GTEST_SKIP() << "no CUDA device";
  cuda::CudaDevice device(0, env.cuda_library);
  jit::JitOptions o = jit::JitOptions::from_env(env);
  o.cache_dir.reset();
  jit::JitRuntime jit(o);
  jit.set_module_loader(jit::TargetKind::Cuda, std::make_shared<cuda::CudaModuleLoader>(device));

  for (const auto [hidden, width, tokens] : {std::tuple{7168, 64, 1}, std::tuple{7168, 64, 77}, std::tuple{4096, 16, 300},
                                              std::tuple{256, 8, 1000}}) {
    auto weights = std::make_shared<const model::SwigluWeights>(model::SwigluWeights::random(hidden, width, 5));
    cuda::CudaSwigluBackend gpu(weights, device, jit, 1024);
    auto cpu = model::SwigluMlp::cpu(*weights, 0);
    CpuDevice host;
    std::mt19937_64 rng(tokens);
    std::normal_distribution<float> n01(0.0f, 1.0f);
    std::vector<bf16> x(static_cast<size_t>(tokens) * hidden);
    for (auto& v : x) v = bf16::from_float(n01(rng));
    std::vector<bf16> want(x.size()), got(x.size(), bf16::from_bits(0x7fc0));
    cpu->forward(x.data(), want.data(), tokens, host);

    DeviceBuffer dx(device, x.size() * sizeof(bf16)), dout(device, x.size() * sizeof(bf16));
    device.copy_from_host(dx.get(), x.data(), dx.bytes());
    device.fill_bytes(dout.get(), 0xff, dout.bytes());
    gpu.forward(dx.as<bf16>(), dout.as<bf16>(), tokens, device);
    device.synchronize();
    device.copy_to_host(got.data(), dout.get(), dout.bytes());

    // Both accumulate in f32 in different orders and round the activation to
    // bf16: compare against the output's scale, one bf16 step plus slack.
    double ref_norm = 0, err_max = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_FALSE(std::isnan(got[i].to_float())) << "unwritten output " << i;
      ref_norm = std::max(ref_norm, std::abs(static_cast<double>(want[i].to_float())));
      err_max = std::max(err_max, std::abs(static_cast<double>(got[i].to_float()) - want[i].to_float()));
    }
    EXPECT_LT(err_max, 2e-2 * ref_norm) << "hidden " << hidden << " width " << width << " T " << tokens;
    std::printf("[gpu] swiglu hidden=%d width=%d T=%d: max |cuda - cpu| %.3g of max |y| %.3g\n", hidden, width, tokens,
                err_max, ref_norm);
  }
}

// Planning reads the GPU's SM count and memory without a context.
TEST(CudaDeviceQuery, MatchesTheDevice) {
  const EnvConfig env = EnvConfig::from_environment();
  if (!cuda::cuda_device_present(env.cuda_library)) GTEST_SKIP() << "no CUDA device";
  cuda::CudaDevice device(0, env.cuda_library);
  const auto info = cuda::query_device(0, env.cuda_library);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->num_sms, device.num_sms());
  EXPECT_GT(info->total_memory_gb, 1.0);
  // The L2 size the one-pass kernel's window is sized from (hcwarm_mhc::one_pass_window).
  const cuda::CudaDriver& d = device.driver();
  cuda::CUdevice dev = 0;
  int l2 = 0;
  ASSERT_EQ(d.cuDeviceGet(&dev, 0), cuda::CUDA_SUCCESS);
  ASSERT_EQ(d.cuDeviceGetAttribute(&l2, cuda::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev), cuda::CUDA_SUCCESS);
  EXPECT_EQ(device.l2_bytes(), l2);
  EXPECT_GT(device.l2_bytes(), 1LL << 20);
}

}  // namespace
}  // namespace hcwarm
