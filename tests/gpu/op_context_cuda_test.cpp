// runtime::OpContext on CUDA: calls on the caller's stream and workspace,
// captured into a CUDA graph whose replay equals the eager result, and a
// capture that would need an unloaded kernel refused with NotWarmed. Label `gpu`.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

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
  cuda::CUstream stream = nullptr;
  {
    const cuda::ScopedContext scoped(dev);
    ASSERT_EQ(d.cuStreamCreate(&stream, cuda::CU_STREAM_NON_BLOCKING), cuda::CUDA_SUCCESS);
  }
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

    const cuda::ScopedContext scoped(dev);
    ASSERT_EQ(d.cuStreamBeginCapture(stream, cuda::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), cuda::CUDA_SUCCESS);
    op.run(args_of(b, T), launch);
    cuda::CUgraph graph = nullptr;
    ASSERT_EQ(d.cuStreamEndCapture(stream, &graph), cuda::CUDA_SUCCESS);
    cuda::CUgraphExec exec = nullptr;
    ASSERT_EQ(d.cuGraphInstantiate(&exec, graph, 0), cuda::CUDA_SUCCESS);
    ASSERT_EQ(d.cuGraphLaunch(exec, stream), cuda::CUDA_SUCCESS);
    ASSERT_EQ(d.cuStreamSynchronize(stream), cuda::CUDA_SUCCESS);
    d.cuGraphExecDestroy(exec);
    d.cuGraphDestroy(graph);
    const auto replayed = download_y(dev, b, T * dims.hidden);
    EXPECT_EQ(std::memcmp(eager.data(), replayed.data(), eager.size() * sizeof(bf16)), 0) << "T=" << T;
  }
  EXPECT_EQ(ctx.compiles_after_ready(), 0);

  // hidden 2048 was never warmed: inside capture the call must refuse, and the capture stays valid.
  const mhc::MhcDims cold{4, 2048};
  auto& cold_op = ctx.hc_pre(cold, req.model.mhc_constants());
  Buffers b = make_buffers(dev, cold, 4, cold_op.workspace_bytes(4), 7);
  const cuda::ScopedContext scoped(dev);
  ASSERT_EQ(d.cuStreamBeginCapture(stream, cuda::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), cuda::CUDA_SUCCESS);
  try {
    cold_op.run(args_of(b, 4), {stream, b.ws.get(), b.ws.bytes()});
    ADD_FAILURE() << "an unwarmed bucket ran inside capture";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NotWarmed) << e.what();
    EXPECT_NE(e.message().find("num_splits="), std::string::npos) << e.message();
  }
  cuda::CUgraph graph = nullptr;
  EXPECT_EQ(d.cuStreamEndCapture(stream, &graph), cuda::CUDA_SUCCESS) << "the refusal broke the capture";
  if (graph != nullptr) d.cuGraphDestroy(graph);
  EXPECT_EQ(ctx.compiles_after_ready(), 0);
  d.cuStreamDestroy(stream);
}

}  // namespace
}  // namespace hcwarm::test
