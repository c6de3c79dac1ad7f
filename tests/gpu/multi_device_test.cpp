// Device ordinals: an OpContext on cuda:1 allocates, loads and launches on GPU 1
// only, leaves the calling thread's current context alone, and captures on its
// own device. Label `gpu`; skipped without two CUDA devices.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "backends/cuda/cuda_device.hpp"
#include "core/env_config.hpp"
#include "runtime/op_context.hpp"

namespace hcwarm::test {
namespace {

int device_count(const EnvConfig& env) {
  if (!cuda::cuda_device_present(env.cuda_library)) return 0;
  cuda::CudaDevice probe(0, env.cuda_library);
  int n = 0;
  return probe.driver().cuDeviceGetCount(&n) == cuda::CUDA_SUCCESS ? n : 0;
}

// The ordinal of the device the calling thread's current context belongs to (-1: none).
int current_ordinal(const cuda::CudaDriver& d, const std::vector<const cuda::CudaDevice*>& devices) {
  cuda::CUcontext ctx = nullptr;
  if (d.cuCtxGetCurrent(&ctx) != cuda::CUDA_SUCCESS || ctx == nullptr) return -1;
  for (const auto* dev : devices) {
    if (dev->context() == ctx) return dev->ordinal();
  }
  return -2;
}

runtime::OpContextOptions options_for(const EnvConfig& env, int ordinal) {
  runtime::OpContextOptions o;
  o.backend = mhc::Backend::Cuda;
  o.device_ordinal = ordinal;
  o.env = env;
  o.jit = jit::JitOptions::from_env(env);
  return o;
}

TEST(MultiDevice, ContextOnTheSecondGpuStaysOnIt) {
  const auto env = EnvConfig::from_environment();
  if (device_count(env) < 2) GTEST_SKIP() << "fewer than two CUDA devices";
  runtime::OpContext ctx0(options_for(env, 0));
  runtime::OpContext ctx1(options_for(env, 1));
  auto& dev0 = static_cast<cuda::CudaDevice&>(ctx0.device());
  auto& dev1 = static_cast<cuda::CudaDevice&>(ctx1.device());
  ASSERT_EQ(dev1.ordinal(), 1);
  const auto& d = dev1.driver();
  const std::vector<const cuda::CudaDevice*> both{&dev0, &dev1};

  // The caller works on GPU 0; every hcwarm call on GPU 1 must give it back GPU 0.
  ASSERT_EQ(d.cuCtxSetCurrent(dev0.context()), cuda::CUDA_SUCCESS);
  runtime::PrewarmRequest req;
  req.model = *model::preset("dsv4-flash");
  req.server.chunked_prefill_size = 256;
  const auto report = ctx1.prewarm(req);
  EXPECT_GT(report.keys, 0);
  EXPECT_EQ(current_ordinal(d, both), 0) << "prewarm on cuda:1 left another context current";

  const mhc::MhcDims dims = req.model.mhc_dims();
  auto& op = ctx1.hc_pre(dims, req.model.mhc_constants());
  const int64_t T = 5;
  auto upload = [&](std::vector<unsigned char> host) {
    DeviceBuffer b(dev1, host.size());
    dev1.copy_from_host(b.get(), host.data(), host.size());
    return b;
  };
  std::vector<bf16> residual(static_cast<size_t>(T * dims.k()), bf16::from_float(0.5f));
  std::vector<float> fn(static_cast<size_t>(dims.mix() * dims.k()), 1e-3f), scale{0.5f, 0.5f, 0.5f},
      base(static_cast<size_t>(dims.mix()), 0.1f);
  auto bytes_of = [](const auto& v) {
    std::vector<unsigned char> out(v.size() * sizeof(v[0]));
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  };
  DeviceBuffer r = upload(bytes_of(residual)), f = upload(bytes_of(fn)), s = upload(bytes_of(scale)),
               b = upload(bytes_of(base));
  DeviceBuffer y(dev1, static_cast<size_t>(T * dims.hidden) * sizeof(bf16));
  DeviceBuffer post(dev1, static_cast<size_t>(T * dims.hc_mult) * sizeof(float));
  DeviceBuffer comb(dev1, static_cast<size_t>(T * dims.hc_mult * dims.hc_mult) * sizeof(float));
  ASSERT_EQ(d.cuCtxSetCurrent(dev0.context()), cuda::CUDA_SUCCESS);
  op.run({T, r.as<bf16>(), f.as<float>(), s.as<float>(), b.as<float>(), nullptr, y.as<bf16>(), post.as<float>(),
          comb.as<float>()});
  EXPECT_EQ(current_ordinal(d, both), 0) << "hc_pre on cuda:1 left another context current";
  dev1.synchronize();
  std::vector<float> p(static_cast<size_t>(T * dims.hc_mult));
  dev1.copy_to_host(p.data(), post.get(), p.size() * sizeof(float));
  for (float v : p) EXPECT_TRUE(v > 0.f && v < 2.5f) << v;  // sigmoid * post_mult, finite: the kernel ran on GPU 1

  // The allocation the op made lives on GPU 1: a device-to-device copy in GPU 1's context reads it.
  {
    const cuda::ScopedContext scoped(dev1);
    DeviceBuffer copy(dev1, post.bytes());
    ASSERT_EQ(d.cuMemcpyDtoDAsync(reinterpret_cast<cuda::CUdeviceptr>(copy.get()),
                                  reinterpret_cast<cuda::CUdeviceptr>(post.get()), post.bytes(), dev1.stream()),
              cuda::CUDA_SUCCESS);
    dev1.synchronize();
  }
  EXPECT_EQ(ctx1.compiles_after_ready(), 0);
  EXPECT_EQ(ctx0.compiles_after_ready(), 0);
  EXPECT_EQ(ctx0.jit().stats().compiled + ctx0.jit().stats().loaded_from_disk, 0)
      << "work for cuda:1 went through cuda:0's runtime";
}

}  // namespace
}  // namespace hcwarm::test
