// The CUDA mHC head against the double-precision reference, its alignment
// check, and CUDA-graph capture: a captured call replays as the eager one, and
// a capture that would need the unloaded kernel is refused with NotWarmed.
// Label `gpu`; every test skips cleanly without a CUDA device.
#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <optional>
#include <utility>

#include "../backends/head_check.hpp"
#include "cuda_fixture.hpp"
#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/hc_head_cuda.hpp"
#include "core/env_config.hpp"
#include "jit/jit_runtime.hpp"

namespace hcwarm::test {
namespace {

using HcHeadCuda = CudaTest;

struct HeadBuffers {
  DeviceBuffer residual, fn, scale, base, y;
};

HeadBuffers upload(Device& dev, const HcHeadInputs& in) {
  auto up = [&](const void* src, size_t bytes) {
    DeviceBuffer b(dev, std::max<size_t>(bytes, 16));
    dev.copy_from_host(b.get(), src, bytes);
    return b;
  };
  HeadBuffers b{up(in.residual.data(), in.residual.numel() * sizeof(bf16)), up(in.fn.data(), in.fn.numel() * 4),
                up(in.scale.data(), 4), up(in.base.data(), in.base.numel() * 4),
                DeviceBuffer(dev, static_cast<size_t>(in.residual.dim(0) * in.residual.dim(2)) * sizeof(bf16))};
  return b;
}

// A non-blocking stream of the test's own (null when the driver refuses one).
cuda::CUstream new_stream(cuda::CudaDevice& dev) {
  const cuda::ScopedContext scoped(dev);
  cuda::CUstream stream = nullptr;
  return dev.driver().cuStreamCreate(&stream, cuda::CU_STREAM_NON_BLOCKING) == cuda::CUDA_SUCCESS ? stream : nullptr;
}

mhc::HcHeadArgs args_of(const HeadBuffers& b, int64_t T) {
  return {T, b.residual.as<bf16>(), b.fn.as<float>(), b.scale.as<float>(), b.base.as<float>(), b.y.as<bf16>()};
}

TEST_F(HcHeadCuda, MatchesTheReference) {
  // On 132 SMs T <= 64 runs the narrow kernel (16 clusters of 8 blocks), T
  // >= 65 the wide one (2 or 4 tokens per thread: 65, 130, 999 and 4100 end in a
  // partial tile); hc 8, hidden 1000 has a slice that does not divide the
  // hidden size.
  for (const auto& [hc, hidden] : {std::pair{4, 4096}, std::pair{4, 7168}, std::pair{8, 1000}}) {
    mhc::HcHeadOp op({hc, hidden}, {}, *device_, jit_, device_->arch(), nullptr);
    for (const int64_t T : std::initializer_list<int64_t>{1, 3, 5, 64, 65, 130, 999, 4100}) {
      const auto in = random_hc_head_inputs(T, hc, hidden, 90 + T);
      const auto y = mhc::run_hc_head_host(op, *device_, in.residual, in.fn, in.scale, in.base);
      const auto c = compare_head(y, in);
      expect_head_close(c, "hidden " + std::to_string(hidden) + " T " + std::to_string(T));
      EXPECT_EQ(c.values, T * hidden);
    }
  }
}

// The one-pass kernel in its head form, forced at every T (the dispatch takes
// it from cuda::head_one_pass_min_tokens on: 999 and 4100 tokens above), and
// the cluster kernel forced at large T (HCWARM_MHC_ONE_PASS=0).
// T = 1 and 37 leave most of a 128-token chunk empty, 300 ends in a partial
// chunk, 2048 fills 16.
TEST_F(HcHeadCuda, OnePassMatchesTheReference) {
  for (const int hidden : {4096, 7168}) {
    mhc::HcHeadOp op({4, hidden}, {}, *device_, jit_, device_->arch(), nullptr);
    op.set_cuda_one_pass_min_tokens(1);
    for (const int64_t T : std::initializer_list<int64_t>{1, 37, 300, 2048}) {
      EXPECT_GT(op.workspace_bytes(T), 0u) << "T " << T << ": the forced op would not run the one-pass kernel";
      const auto in = random_hc_head_inputs(T, 4, hidden, 190 + T);
      const auto y = mhc::run_hc_head_host(op, *device_, in.residual, in.fn, in.scale, in.base);
      const auto c = compare_head(y, in);
      expect_head_close(c, "one-pass hidden " + std::to_string(hidden) + " T " + std::to_string(T));
      EXPECT_EQ(c.values, T * hidden);
    }
  }
  for (const int hidden : {4096, 7168}) {
    mhc::HcHeadOp op({4, hidden}, {}, *device_, jit_, device_->arch(), nullptr);
    op.set_cuda_one_pass(false);
    const int64_t T = 2053;
    EXPECT_EQ(op.workspace_bytes(T), 0u);
    const auto in = random_hc_head_inputs(T, 4, hidden, 290);
    expect_head_close(compare_head(mhc::run_hc_head_host(op, *device_, in.residual, in.fn, in.scale, in.base), in),
                      "cluster hidden " + std::to_string(hidden));
  }
  mhc::HcHeadOp dispatch({4, 7168}, {}, *device_, jit_, device_->arch(), nullptr);
  EXPECT_EQ(dispatch.workspace_bytes(cuda::head_one_pass_min_tokens(7168) - 1), 0u);
  EXPECT_GT(dispatch.workspace_bytes(cuda::head_one_pass_min_tokens(7168)), 0u);
  dispatch.set_cuda_one_pass(false);  // HCWARM_MHC_ONE_PASS=0
  EXPECT_EQ(dispatch.workspace_bytes(1 << 14), 0u);
}

TEST_F(HcHeadCuda, AShortWorkspaceIsRefusedByName) {
  mhc::HcHeadOp op({4, 4096}, {}, *device_, jit_, device_->arch(), nullptr);
  op.set_cuda_one_pass_min_tokens(1);
  const int64_t T = 40;
  const auto in = random_hc_head_inputs(T, 4, 4096, 8);
  HeadBuffers b = upload(*device_, in);
  const size_t need = op.workspace_bytes(T);
  ASSERT_GT(need, 0u);
  DeviceBuffer ws(*device_, need);
  try {
    op.run(args_of(b, T), {std::nullopt, ws.get(), need - 256});
    FAIL() << "a short workspace ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(e.message().find("workspace"), std::string::npos) << e.message();
  }
  try {
    op.run(args_of(b, T), {std::nullopt, static_cast<char*>(ws.get()) + 8, need - 16});
    FAIL() << "a misaligned workspace ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(e.message().find("workspace"), std::string::npos) << e.message();
  }
  // The caller's workspace of the right size: the call runs and matches.
  op.run(args_of(b, T), {std::nullopt, ws.get(), need});
  device_->synchronize();
  HostTensor<bf16> y({T, 4096});
  device_->copy_to_host(y.data(), b.y.get(), y.numel() * sizeof(bf16));
  expect_head_close(compare_head(y, in), "caller's workspace");
}

TEST_F(HcHeadCuda, MisalignedPointersAreRefused) {
  mhc::HcHeadOp op({4, 4096}, {}, *device_, jit_, device_->arch(), nullptr);
  const auto in = random_hc_head_inputs(2, 4, 4096, 5);
  HeadBuffers b = upload(*device_, in);
  auto a = args_of(b, 2);
  a.residual = reinterpret_cast<const bf16*>(reinterpret_cast<const char*>(a.residual) + 2);
  try {
    op.run(a);
    FAIL() << "a misaligned residual ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(e.message().find("residual"), std::string::npos) << e.message();
  }
}

TEST_F(HcHeadCuda, CapturedCallReplaysAsEagerAndAColdCaptureIsRefused) {
  auto& dev = *device_;
  const auto& d = dev.driver();
  const cuda::CUstream stream = new_stream(dev);
  ASSERT_NE(stream, nullptr);
  const int64_t T = 37;
  const auto in = random_hc_head_inputs(T, 4, 4096, 21);
  HeadBuffers b = upload(dev, in);

  // Not loaded yet: inside capture the call refuses, and the capture stays valid.
  mhc::HcHeadOp cold({4, 4096}, {}, dev, jit_, dev.arch(), nullptr);
  {
    const cuda::ScopedContext scoped(dev);
    ASSERT_EQ(d.cuStreamBeginCapture(stream, cuda::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), cuda::CUDA_SUCCESS);
    try {
      cold.run(args_of(b, T), {stream, nullptr, 0});
      ADD_FAILURE() << "an unloaded head kernel ran inside capture";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::NotWarmed) << e.what();
      EXPECT_NE(e.message().find("mhc_head"), std::string::npos) << e.message();
    }
    cuda::CUgraph graph = nullptr;
    EXPECT_EQ(d.cuStreamEndCapture(stream, &graph), cuda::CUDA_SUCCESS) << "the refusal broke the capture";
    if (graph != nullptr) d.cuGraphDestroy(graph);
  }

  // Loaded: eager on the caller's stream, then captured and replayed.
  cold.load();
  cold.run(args_of(b, T), {stream, nullptr, 0});
  ASSERT_EQ(d.cuStreamSynchronize(stream), cuda::CUDA_SUCCESS);
  std::vector<bf16> eager(static_cast<size_t>(T * 4096)), replayed(eager.size());
  dev.copy_to_host(eager.data(), b.y.get(), eager.size() * sizeof(bf16));
  dev.fill_zero(b.y.get(), b.y.bytes());
  dev.synchronize();
  const cuda::ScopedContext scoped(dev);
  ASSERT_EQ(d.cuStreamBeginCapture(stream, cuda::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), cuda::CUDA_SUCCESS);
  cold.run(args_of(b, T), {stream, nullptr, 0});
  cuda::CUgraph graph = nullptr;
  ASSERT_EQ(d.cuStreamEndCapture(stream, &graph), cuda::CUDA_SUCCESS);
  cuda::CUgraphExec exec = nullptr;
  ASSERT_EQ(d.cuGraphInstantiate(&exec, graph, 0), cuda::CUDA_SUCCESS);
  ASSERT_EQ(d.cuGraphLaunch(exec, stream), cuda::CUDA_SUCCESS);
  ASSERT_EQ(d.cuStreamSynchronize(stream), cuda::CUDA_SUCCESS);
  d.cuGraphExecDestroy(exec);
  d.cuGraphDestroy(graph);
  dev.copy_to_host(replayed.data(), b.y.get(), replayed.size() * sizeof(bf16));
  EXPECT_EQ(std::memcmp(eager.data(), replayed.data(), eager.size() * sizeof(bf16)), 0);
  expect_head_close(compare_head([&] {
                      HostTensor<bf16> y({T, 4096});
                      std::copy(replayed.begin(), replayed.end(), y.data());
                      return y;
                    }(),
                                 in),
                    "replayed");
  d.cuStreamDestroy(stream);
}

// The one-pass head inside a graph: the op's own workspace cannot grow during
// capture (NotWarmed, the capture stays valid); reserved first, the captured
// call (the counters' memset and the cooperative launch) replays as eager.
TEST_F(HcHeadCuda, OnePassCaptureNeedsAReservedWorkspaceAndReplaysAsEager) {
  auto& dev = *device_;
  const auto& d = dev.driver();
  const cuda::CUstream stream = new_stream(dev);
  ASSERT_NE(stream, nullptr);
  const int64_t T = 300;
  const int D = 7168;
  const auto in = random_hc_head_inputs(T, 4, D, 31);
  HeadBuffers b = upload(dev, in);
  mhc::HcHeadOp op({4, D}, {}, dev, jit_, dev.arch(), nullptr);
  op.set_cuda_one_pass_min_tokens(1);
  op.load();
  auto capture = [&](bool expect_refusal) {
    const cuda::ScopedContext scoped(dev);
    EXPECT_EQ(d.cuStreamBeginCapture(stream, cuda::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), cuda::CUDA_SUCCESS);
    bool refused = false;
    try {
      op.run(args_of(b, T), {stream, nullptr, 0});
    } catch (const Error& e) {
      refused = true;
      EXPECT_EQ(e.kind(), ErrorKind::NotWarmed) << e.what();
      EXPECT_NE(e.message().find("reserve_workspace"), std::string::npos) << e.message();
    }
    EXPECT_EQ(refused, expect_refusal);
    cuda::CUgraph graph = nullptr;
    EXPECT_EQ(d.cuStreamEndCapture(stream, &graph), cuda::CUDA_SUCCESS) << "the refusal broke the capture";
    return graph;
  };
  if (cuda::CUgraph g = capture(true)) d.cuGraphDestroy(g);

  op.reserve_workspace(T);
  op.run(args_of(b, T), {stream, nullptr, 0});
  ASSERT_EQ(d.cuStreamSynchronize(stream), cuda::CUDA_SUCCESS);
  std::vector<bf16> eager(static_cast<size_t>(T * D)), replayed(eager.size());
  dev.copy_to_host(eager.data(), b.y.get(), eager.size() * sizeof(bf16));
  dev.fill_zero(b.y.get(), b.y.bytes());
  dev.synchronize();
  cuda::CUgraph graph = capture(false);
  ASSERT_NE(graph, nullptr);
  const cuda::ScopedContext scoped(dev);
  cuda::CUgraphExec exec = nullptr;
  ASSERT_EQ(d.cuGraphInstantiate(&exec, graph, 0), cuda::CUDA_SUCCESS);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(d.cuGraphLaunch(exec, stream), cuda::CUDA_SUCCESS);  // the counters reset per replay
  ASSERT_EQ(d.cuStreamSynchronize(stream), cuda::CUDA_SUCCESS);
  d.cuGraphExecDestroy(exec);
  d.cuGraphDestroy(graph);
  dev.copy_to_host(replayed.data(), b.y.get(), replayed.size() * sizeof(bf16));
  EXPECT_EQ(std::memcmp(eager.data(), replayed.data(), eager.size() * sizeof(bf16)), 0);
  d.cuStreamDestroy(stream);
}

}  // namespace
}  // namespace hcwarm::test
