// The mHC head: the CPU op against the double-precision reference, its
// argument checks, and the CUDA kernel's source under NVRTC (no GPU needed).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <tuple>
#include <utility>

#include "common/jit_fixtures.hpp"
#include "backends/cuda/hc_head_cuda.hpp"
#include "core/embedded_kernels.hpp"
#include "core/thread_pool.hpp"
#include "head_check.hpp"
#include "jit/compiler.hpp"
#include "jit/cubin_set.hpp"
#include "jit/jit_runtime.hpp"
#include "mhc/hc_head_op.hpp"

namespace hcwarm::test {
namespace {

void expect_invalid(const std::function<void()>& call, const std::string& needle) {
  try {
    call();
    FAIL() << "no error for " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.message();
    EXPECT_NE(e.message().find(needle), std::string::npos) << e.message();
  }
}

TEST(HcHeadReference, EqualsTheFormulaOnAHandCase) {
  // One token, hc 2, D 16: fn = 0 leaves pre[i] = sigmoid(base[i]) + eps.
  HcHeadInputs in{HostTensor<bf16>({1, 2, 16}), HostTensor<float>({2, 32}), HostTensor<float>({1}),
                  HostTensor<float>({2})};
  for (int j = 0; j < 16; ++j) {
    in.residual[j] = bf16::from_float(1.0f + j);
    in.residual[16 + j] = bf16::from_float(-0.5f * j);
  }
  in.scale[0] = 3.0f;
  in.base[0] = 0.0f;
  in.base[1] = 2.0f;
  const auto y = mhc::hc_head_reference(in.residual, in.fn, in.scale, in.base, {});
  const double p0 = 0.5 + 1e-6, p1 = 1.0 / (1.0 + std::exp(-2.0)) + 1e-6;
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j].bits, bf16::from_float(static_cast<float>(p0 * (1.0 + j) + p1 * (-0.5 * j))).bits) << j;
  }
  // A mix term moves the gate: fn row 0 = 1 on stream 0's first column.
  in.fn[0] = 1.0f;
  const auto y2 = mhc::hc_head_reference(in.residual, in.fn, in.scale, in.base, {});
  double ss = 0;
  for (int i = 0; i < 32; ++i) ss += std::pow(in.residual[i].to_float(), 2);
  const double r = 1.0 / std::sqrt(ss / 32 + 1e-6);
  const double q0 = 1.0 / (1.0 + std::exp(-(1.0 * r * 3.0))) + 1e-6;
  EXPECT_EQ(y2[1].bits, bf16::from_float(static_cast<float>(q0 * 2.0 + p1 * -0.5)).bits);
}

TEST(HcHeadReference, ShapeMismatchesNameTheTensor) {
  auto in = random_hc_head_inputs(2, 4, 64, 3);
  HostTensor<float> bad_fn({24, 256});
  expect_invalid([&] { mhc::hc_head_reference(in.residual, bad_fn, in.scale, in.base, {}); }, "fn must have shape");
  HostTensor<float> bad_scale({3});
  expect_invalid([&] { mhc::hc_head_reference(in.residual, in.fn, bad_scale, in.base, {}); }, "scale");
  HostTensor<float> bad_base({5});
  expect_invalid([&] { mhc::hc_head_reference(in.residual, in.fn, in.scale, bad_base, {}); }, "base");
  HostTensor<bf16> flat({2, 256});
  expect_invalid([&] { mhc::hc_head_reference(flat, in.fn, in.scale, in.base, {}); }, "residual");
}

TEST(HcHeadCpu, MatchesTheReference) {
  CpuDevice dev;
  auto pool = std::make_shared<ThreadPool>(2);
  for (const int hidden : {64, 1024, 4096}) {
    for (const int64_t T : {int64_t{1}, int64_t{3}, int64_t{17}}) {
      mhc::HcHeadOp op({4, hidden}, {}, dev, nullptr, "", pool);
      const auto in = random_hc_head_inputs(T, 4, hidden, 40 + T + hidden);
      const auto y = mhc::run_hc_head_host(op, dev, in.residual, in.fn, in.scale, in.base);
      const auto c = compare_head(y, in);
      expect_head_close(c, "hidden " + std::to_string(hidden) + " T " + std::to_string(T));
      EXPECT_EQ(c.values, T * hidden);
    }
  }
  // Other hc_mult values run too (hc 1 and 2), on the caller's thread (no pool).
  for (const int hc : {1, 2}) {
    mhc::HcHeadOp op({hc, 128}, {}, dev, nullptr, "", nullptr);
    const auto in = random_hc_head_inputs(5, hc, 128, 7 + hc);
    expect_head_close(compare_head(mhc::run_hc_head_host(op, dev, in.residual, in.fn, in.scale, in.base), in),
                      "hc " + std::to_string(hc));
  }
}

TEST(HcHeadCpu, ZeroTokensWriteNothing) {
  CpuDevice dev;
  mhc::HcHeadOp op({4, 64}, {}, dev, nullptr, "", nullptr);
  bf16 sentinel = bf16::from_float(7.0f);
  op.run({0, nullptr, nullptr, nullptr, nullptr, &sentinel});
  EXPECT_EQ(sentinel.bits, bf16::from_float(7.0f).bits);
  EXPECT_TRUE(op.loaded());
  EXPECT_TRUE(op.planned_specs().empty()) << "the CPU head runs in the library: no JIT keys";
}

TEST(HcHeadCpu, BadInputIsRefusedBeforeAnythingIsWritten) {
  CpuDevice dev;
  mhc::HcHeadOp op({4, 64}, {}, dev, nullptr, "", nullptr);
  const auto in = random_hc_head_inputs(2, 4, 64, 11);
  std::vector<bf16> y(2 * 64, bf16::from_float(5.0f));
  mhc::HcHeadArgs a{2, in.residual.data(), in.fn.data(), in.scale.data(), in.base.data(), y.data()};
  for (auto field : {&mhc::HcHeadArgs::fn, &mhc::HcHeadArgs::scale, &mhc::HcHeadArgs::base}) {
    mhc::HcHeadArgs b = a;
    b.*field = nullptr;
    expect_invalid([&] { op.run(b); }, "null");
  }
  mhc::HcHeadArgs b = a;
  b.residual = nullptr;
  expect_invalid([&] { op.run(b); }, "null");
  b = a;
  b.y = nullptr;
  expect_invalid([&] { op.run(b); }, "null");
  b = a;
  b.num_tokens = -1;
  expect_invalid([&] { op.run(b); }, "num_tokens");
  for (const auto& v : y) EXPECT_EQ(v.bits, bf16::from_float(5.0f).bits);
  // Shapes through the host helper: the op's dims must match.
  const auto wide = random_hc_head_inputs(2, 4, 128, 12);
  expect_invalid([&] { mhc::run_hc_head_host(op, dev, wide.residual, wide.fn, wide.scale, wide.base); },
                 "does not match");
  expect_invalid([&] { mhc::run_hc_head_host(op, dev, in.residual, wide.fn, in.scale, in.base); }, "fn");
  // Dims the kernels cannot take.
  expect_invalid([&] { mhc::HcHeadOp({4, 40}, {}, dev, nullptr, "", nullptr); }, "hidden % 16");
  expect_invalid([&] { mhc::HcHeadOp({9, 64}, {}, dev, nullptr, "", nullptr); }, "bad dims");
}

TEST(HcHeadCuda, SpecIsOneKeyPerShape) {
  const auto a = mhc::HcHeadOp::cuda_spec({4, 7168}, "sm_90a", false);
  EXPECT_EQ(a.family, "mhc_head");
  EXPECT_EQ(a.param("hidden"), "7168");
  EXPECT_EQ(a.param("hc"), "4");
  ASSERT_FALSE(a.entries.empty());
  EXPECT_NE(a.entries[0].expression.find("mhc_head_cluster_kernel<4, 7168"), std::string::npos) << a.entries[0].expression;
  jit::JitOptions o;
  o.cache_dir = std::nullopt;
  jit::JitRuntime rt(o);
  EXPECT_NE(rt.key(a), rt.key(mhc::HcHeadOp::cuda_spec({4, 4096}, "sm_90a", false)));
  EXPECT_NE(rt.key(a), rt.key(mhc::HcHeadOp::cuda_spec({4, 7168}, "sm_100a", false)));
  // The portable forms: their own key and name, the cluster-free kernel alone (no one-pass part).
  const auto portable = mhc::HcHeadOp::cuda_spec({4, 7168}, "sm_90a", true);
  EXPECT_NE(rt.key(a), rt.key(portable));
  EXPECT_EQ(portable.param("portable"), "1");
  EXPECT_EQ(a.param("portable"), "");
  ASSERT_EQ(portable.entries.size(), 2u);
  for (const auto& e : portable.entries) {
    EXPECT_NE(e.expression.find("mhc_head_portable_kernel<4, 7168"), std::string::npos) << e.expression;
  }
  EXPECT_EQ(portable.kernel_source().text.find("mhc_pre_one_pass"), std::string::npos);
}

// The CUDA head compiles under NVRTC with only the embedded headers (no GPU
// needed), with the thread count and cluster size of its launch in the source;
// shapes it cannot take are refused by name before any compile, and the
// template's own static_assert names the rule for a hand-written instantiation.
TEST(MhcHeadCudaSource, CompilesUnderNvrtc) {
  std::string why;
  const auto nvrtc = nvrtc_or_null(&why);
  if (!nvrtc) GTEST_SKIP() << why;
  TempDir work;
  for (const auto& [hc, hidden] : {std::pair{4, 4096}, std::pair{4, 7168}, std::pair{4, 64}, std::pair{8, 2048}}) {
    const jit::KernelSource head = cuda::mhc_head_cuda_source(hc, hidden, false);
    const std::string& src = head.text;
    // The cluster kernel's instantiations carry the launch's cluster, threads and blocks per SM.
    ASSERT_GE(head.entries.size(), 2u) << src;
    const std::string bounds = fmt::format("{}, {}, {}>", hcwarm_mhc::head_cluster(hidden), hcwarm_mhc::head_threads(hidden),
                                           hcwarm_mhc::head_blocks_per_sm(hidden));
    EXPECT_EQ(head.entries[0].expression, fmt::format("hcwarm_head::mhc_head_cluster_kernel<{}, {}, 1, {}", hc, hidden, bounds));
    EXPECT_EQ(head.entries[1].expression, fmt::format("hcwarm_head::mhc_head_cluster_kernel<{}, {}, {}, {}", hc, hidden,
                                                      hcwarm_mhc::head_wide_tpt(hc, hidden), bounds));
    const cuda::HeadEntries e = cuda::mhc_head_entries(hc, hidden, false);
    EXPECT_EQ(head.entries[0], e.narrow);
    EXPECT_EQ(head.entries[1], e.wide);
    const auto out = nvrtc->compile(head, kernels::embedded_files(), work.path());
    // One cubin, or a set of one per part: every image an ELF, the symbols in one of them.
    const auto set = jit::unpack_cubin_set(out.binary);
    std::string bytes;
    for (const auto image : set ? *set : std::vector<std::span<const std::byte>>{out.binary}) {
      const std::string b(reinterpret_cast<const char*>(image.data()), image.size());
      EXPECT_EQ(b.substr(0, 4), "\x7f" "ELF");
      bytes += b;
    }
    for (const jit::KernelEntry* entry : {&e.narrow, &e.wide}) {
      EXPECT_NE(bytes.find(entry->symbol), std::string::npos) << entry->symbol;
    }
    // hc_pre's one-pass shapes also hold the one-pass head, as a second part compiled apart.
    const bool one_pass = hc == 4 && hidden % 1024 == 0;
    EXPECT_EQ(cuda::head_has_one_pass(hc, hidden), one_pass) << hidden;
    ASSERT_EQ(e.one_pass.has_value(), one_pass) << hidden;
    if (one_pass) {
      EXPECT_NE(bytes.find(e.one_pass->symbol), std::string::npos) << hidden;
      EXPECT_EQ(e.one_pass->part, 1);
      EXPECT_EQ(head.entries.back(), *e.one_pass);
    }
    EXPECT_EQ(head.parts, one_pass ? 2 : 1) << src;
  }
  try {
    // Instantiated by name as the module's kernels are (the symbol is never reached).
    const jit::KernelEntry bad = jit::kernel_entry(0, {"hcwarm_head"}, "mhc_head_cluster_kernel", {4, 100, 1, 1, 128, 1},
                                                   "22hcwarm_mhc_head_params");
    nvrtc->compile({"#include \"cuda/mhc_head.cuh\"\n", 1, {bad}}, kernels::embedded_files(), work.path());
    FAIL() << "hidden 100 compiled";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Compile);
    EXPECT_NE(e.log().find("multiple of 8"), std::string::npos) << e.log();
  }
}

TEST(MhcHeadCudaSource, ShapesTheKernelCannotTakeAreRefusedByName) {
  EXPECT_EQ(cuda::head_shape_unsupported(4, 7168), nullptr);
  EXPECT_EQ(cuda::head_shape_unsupported(4, 16384), nullptr);
  EXPECT_EQ(cuda::head_shape_unsupported(8, 8192), nullptr);
  for (const auto& [hc, hidden, words] :
       {std::tuple{4, 100, "multiple of 8"}, std::tuple{9, 4096, "[1, 8]"}, std::tuple{4, 16392, "1024 threads"}}) {
    const char* bad = cuda::head_shape_unsupported(hc, hidden);
    ASSERT_NE(bad, nullptr) << hc << " " << hidden;
    EXPECT_NE(std::string(bad).find(words), std::string::npos) << bad;
    try {
      (void)cuda::mhc_head_cuda_source(hc, hidden, false);
      FAIL() << "hc " << hc << " hidden " << hidden << " made a source";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(e.message().find(std::to_string(hidden)), std::string::npos) << e.message();
    }
  }
}

}  // namespace
}  // namespace hcwarm::test
