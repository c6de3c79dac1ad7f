// The CUDA mHC head against the double-precision reference, its alignment
// check, and CUDA-graph capture: a captured call replays as the eager one, and
// a capture that would need the unloaded kernel is refused with NotWarmed.
// Label `gpu`; every test skips cleanly without a CUDA device.
#include <gtest/gtest.h>

#include <initializer_list>
#include <optional>
#include <utility>

#include "../backends/head_check.hpp"
#include "cuda_fixture.hpp"
#include "graph_capture.hpp"
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

// y of `call` run eagerly on `stream`, then (y zeroed) of the same call
// captured and replayed `replays` times.
template <class Call>
std::pair<HostTensor<bf16>, HostTensor<bf16>> eager_and_replayed_y(cuda::CudaDevice& dev, cuda::CUstream stream,
                                                                   HeadBuffers& b, int64_t T, int D, int replays,
                                                                   Call&& call) {
  std::pair<HostTensor<bf16>, HostTensor<bf16>> y{HostTensor<bf16>({T, D}), HostTensor<bf16>({T, D})};
  call();
  {
    const cuda::ScopedContext scoped(dev);
    EXPECT_EQ(dev.driver().cuStreamSynchronize(stream), cuda::CUDA_SUCCESS);
  }
  dev.copy_to_host(y.first.data(), b.y.get(), y.first.numel() * sizeof(bf16));
  dev.fill_zero(b.y.get(), b.y.bytes());
  dev.synchronize();
  EXPECT_TRUE(capture_and_replay(dev, stream, call, replays));
  dev.copy_to_host(y.second.data(), b.y.get(), y.second.numel() * sizeof(bf16));
  return y;
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
  HCWARM_SKIP_IF_PORTABLE(*device_);
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
  HCWARM_SKIP_IF_PORTABLE(*device_);
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
  const TestStream stream(dev);
  ASSERT_NE(stream.get(), nullptr);
  const int64_t T = 37;
  const auto in = random_hc_head_inputs(T, 4, 4096, 21);
  HeadBuffers b = upload(dev, in);

  // Not loaded yet: inside capture the call refuses, and the capture stays valid.
  mhc::HcHeadOp cold({4, 4096}, {}, dev, jit_, dev.arch(), nullptr);
  expect_refused_in_capture(dev, stream.get(), [&] { cold.run(args_of(b, T), {stream.get(), nullptr, 0}); }, "mhc_head");

  cold.load();
  const auto [eager, replayed] = eager_and_replayed_y(dev, stream.get(), b, T, 4096, 1,
                                                      [&] { cold.run(args_of(b, T), {stream.get(), nullptr, 0}); });
  EXPECT_TRUE(same_bits(eager, replayed));
  expect_head_close(compare_head(replayed, in), "replayed");
}

// The one-pass head inside a graph: the op's own workspace cannot grow during
// capture (NotWarmed, the capture stays valid); reserved first, the captured
// call (the counters' memset and the cooperative launch) replays as eager,
// three times in a row (the counters reset per replay).
TEST_F(HcHeadCuda, OnePassCaptureNeedsAReservedWorkspaceAndReplaysAsEager) {
  HCWARM_SKIP_IF_PORTABLE(*device_);
  auto& dev = *device_;
  const TestStream stream(dev);
  ASSERT_NE(stream.get(), nullptr);
  const int64_t T = 300;
  const int D = 7168;
  const auto in = random_hc_head_inputs(T, 4, D, 31);
  HeadBuffers b = upload(dev, in);
  mhc::HcHeadOp op({4, D}, {}, dev, jit_, dev.arch(), nullptr);
  op.set_cuda_one_pass_min_tokens(1);
  op.load();
  const auto call = [&] { op.run(args_of(b, T), {stream.get(), nullptr, 0}); };
  expect_refused_in_capture(dev, stream.get(), call, "reserve_workspace");

  op.reserve_workspace(T);
  const auto [eager, replayed] = eager_and_replayed_y(dev, stream.get(), b, T, D, 3, call);
  EXPECT_TRUE(same_bits(eager, replayed));
}

}  // namespace
}  // namespace hcwarm::test
