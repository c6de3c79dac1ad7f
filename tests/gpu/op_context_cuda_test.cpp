// runtime::OpContext on CUDA: calls on the caller's stream and workspace,
// captured into a CUDA graph whose replay equals the eager result, and a
// capture that would need an unloaded kernel refused with NotWarmed. Label `gpu`.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "graph_capture.hpp"
#include "backends/cuda/cuda_device.hpp"
#include "core/env_config.hpp"
#include "runtime/op_context.hpp"

namespace hcwarm::test {
namespace {

struct Buffers {
  DeviceBuffer residual, fn, scale, base, w, y, post, comb, ws;
};

Buffers make_buffers(Device& dev, mhc::MhcDims d, int64_t T, size_t ws_bytes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n01(0.f, 1.f);
  auto upload_bf16 = [&](size_t n, float s) {
    std::vector<bf16> h(n);
    for (auto& v : h) v = bf16::from_float(1.0f + s * n01(rng));
    DeviceBuffer b(dev, n * sizeof(bf16));
    dev.copy_from_host(b.get(), h.data(), n * sizeof(bf16));
    return b;
  };
  auto upload_f32 = [&](size_t n, float s, float off) {
    std::vector<float> h(n);
    for (auto& v : h) v = off + s * n01(rng);
    DeviceBuffer b(dev, n * sizeof(float));
    dev.copy_from_host(b.get(), h.data(), n * sizeof(float));
    return b;
  };
  Buffers b;
  b.residual = upload_bf16(static_cast<size_t>(T * d.k()), 1.0f);
  b.fn = upload_f32(static_cast<size_t>(d.mix() * d.k()), 0.05f, 0.f);
  b.scale = upload_f32(3, 0.1f, 0.5f);
  b.base = upload_f32(static_cast<size_t>(d.mix()), 0.2f, 0.f);
  b.w = upload_bf16(static_cast<size_t>(d.hidden), 0.1f);
  b.y = DeviceBuffer(dev, static_cast<size_t>(T * d.hidden) * sizeof(bf16));
  b.post = DeviceBuffer(dev, static_cast<size_t>(T * d.hc_mult) * sizeof(float));
  b.comb = DeviceBuffer(dev, static_cast<size_t>(T * d.hc_mult * d.hc_mult) * sizeof(float));
  b.ws = DeviceBuffer(dev, std::max<size_t>(ws_bytes, 256));
  return b;
}

mhc::HcPreArgs args_of(const Buffers& b, int64_t T) {
  return {T, b.residual.as<bf16>(), b.fn.as<float>(), b.scale.as<float>(), b.base.as<float>(), b.w.as<bf16>(),
          b.y.as<bf16>(), b.post.as<float>(), b.comb.as<float>()};
}

std::vector<bf16> download_y(Device& dev, const Buffers& b, int64_t n) {
  std::vector<bf16> h(static_cast<size_t>(n));
  dev.copy_to_host(h.data(), b.y.get(), h.size() * sizeof(bf16));
  return h;
}

TEST(OpContextCuda, CapturedCallsOnTheCallersStreamReplayAsEager) {
  const auto env = EnvConfig::from_environment();
  if (!cuda::cuda_device_present(env.cuda_library)) GTEST_SKIP() << "no CUDA device";
  runtime::OpContextOptions o;
  o.backend = mhc::Backend::Cuda;
  o.env = env;
  o.jit.nvrtc_library = env.nvrtc_library;
  runtime::OpContext ctx(o);
  runtime::PrewarmRequest req;
  req.model = *model::preset("dsv4-flash");
  req.server.chunked_prefill_size = 512;
  const auto report = ctx.prewarm(req);
  ASSERT_FALSE(report.token_counts.empty());

  auto& dev = static_cast<cuda::CudaDevice&>(ctx.device());
  const auto& d = dev.driver();
  const TestStream owned_stream(dev);
  const cuda::CUstream stream = owned_stream.get();
  ASSERT_NE(stream, nullptr);
  const mhc::MhcDims dims = req.model.mhc_dims();
  auto& op = ctx.hc_pre(dims, req.model.mhc_constants());
  for (const int64_t T : {int64_t{1}, int64_t{8}, int64_t{300}}) {
    const size_t ws = op.workspace_bytes(T);
    Buffers b = make_buffers(dev, dims, T, ws, 100 + T);
    const mhc::LaunchContext launch{stream, b.ws.get(), b.ws.bytes()};
    op.run(args_of(b, T), launch);  // eager, on the caller's stream
    ASSERT_EQ(d.cuStreamSynchronize(stream), cuda::CUDA_SUCCESS);
    const auto eager = download_y(dev, b, T * dims.hidden);
    dev.fill_zero(b.y.get(), b.y.bytes());
    dev.synchronize();

    ASSERT_TRUE(capture_and_replay(dev, stream, [&] { op.run(args_of(b, T), launch); })) << "T=" << T;
    const auto replayed = download_y(dev, b, T * dims.hidden);
    EXPECT_EQ(std::memcmp(eager.data(), replayed.data(), eager.size() * sizeof(bf16)), 0) << "T=" << T;
  }
  EXPECT_EQ(ctx.compiles_after_ready(), 0);

  // hidden 2048 was never warmed: inside capture the call must refuse, and the capture stays valid.
  const mhc::MhcDims cold{4, 2048};
  auto& cold_op = ctx.hc_pre(cold, req.model.mhc_constants());
  Buffers b = make_buffers(dev, cold, 4, cold_op.workspace_bytes(4), 7);
  expect_refused_in_capture(
      dev, stream, [&] { cold_op.run(args_of(b, 4), {stream, b.ws.get(), b.ws.bytes()}); }, "num_splits=");
  EXPECT_EQ(ctx.compiles_after_ready(), 0);
}

}  // namespace
}  // namespace hcwarm::test
