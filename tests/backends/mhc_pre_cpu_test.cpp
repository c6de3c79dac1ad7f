// CPU backend of mHC pre against the double-precision reference.
#include <gtest/gtest.h>

#include <algorithm>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <set>
#include <thread>

#include "common/jit_fixtures.hpp"
#include "core/thread_pool.hpp"
#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/mhc_pre_cuda.hpp"
#include "core/embedded_kernels.hpp"
#include "jit/compiler.hpp"
#include "jit/cubin_set.hpp"
#include "jit/jit_runtime.hpp"
#include "backends/cuda/mhc_pre_cuda.hpp"
#include "mhc/split_policy.hpp"
#include "mhc_check.hpp"

namespace hcwarm::test {
namespace {

using mhc::Backend;
using mhc::HcPreOp;
using mhc::Variant;
using mhc::HcPreInput;

mhc::MhcDims dims_of(int hidden) { return mhc::MhcDims{4, hidden}; }

void report(const std::string& what, const Comparison& c) {
  std::printf(
      "[numerics] %-36s y: max %lld ulp, %.4f%% bit-exact of %lld, %lld >1ulp, %lld cancel; post %.2e comb %.2e\n",
      what.c_str(), static_cast<long long>(c.max_ulp), 100.0 * c.exact_share(), static_cast<long long>(c.y_values),
      static_cast<long long>(c.over_one_ulp), static_cast<long long>(c.cancellation), c.post_max_rel, c.comb_max_rel);
}

TEST(ThreadPool, CoversEveryIndexOnceAndRethrows) {
  ThreadPool pool(3);
  for (int round = 0; round < 20; ++round) {
    std::vector<std::atomic<int>> hits(1000);
    pool.parallel_for(1000, 7, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[i]++;
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
  EXPECT_THROW(pool.parallel_for(100, 1, [](int64_t b, int64_t) {
    if (b == 50) throw std::runtime_error("boom");
  }),
               std::runtime_error);
  int calls = 0;
  pool.parallel_for(0, 1, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

// The tests' reference in token slices on several threads is the library's
// reference bit for bit, with and without the norm (and a T no slice divides).
TEST(MhcReference, SlicedEqualsTheWholeReference) {
  const HcPreInputs in = random_hc_pre_inputs(1001, 4, 256, 17);
  for (const bool norm : {false, true}) {
    const mhc::HcPreResult sliced = reference_of(in, norm);
    const mhc::HcPreResult whole =
        mhc::hc_pre_reference(in.residual, in.fn, in.scale, in.base, norm ? &in.norm_weight : nullptr, {});
    EXPECT_EQ(sliced.norm_fused, whole.norm_fused);
    EXPECT_EQ(sliced.y.shape(), whole.y.shape());
    EXPECT_EQ(std::memcmp(sliced.y.data(), whole.y.data(), whole.y.numel() * sizeof(bf16)), 0) << norm;
    EXPECT_EQ(sliced.post.vec(), whole.post.vec()) << norm;
    EXPECT_EQ(sliced.comb.vec(), whole.comb.vec()) << norm;
  }
  HcPreInputs bad = in;
  bad.fn = HostTensor<float>({24, 3});
  EXPECT_THROW(reference_of(bad, false), Error);
}

// Every split count of dsv4-flash and dsv4-pro (132 and 148 SMs), generic kernels
// (the same templates as the JIT ones, split count at run time), few tokens.
TEST(MhcPreCpu, GenericEverySplitCountMatchesReference) {
  CpuDevice dev;
  for (int hidden : {4096, 7168}) {
    HcPreOp op(Backend::Cpu, dims_of(hidden), {}, 132, nullptr, dev, Variant::Generic);
    Comparison all;
    const auto splits = dsv4_split_counts(hidden);
    int i = 0;
    for (int s : splits) {
      const int64_t T = s >= 16 ? 2 : 3;
      const bool norm = (i++ % 2) == 0;
      const auto in = random_hc_pre_inputs(T, 4, hidden, 1000 + s, 1.0f);
      const auto c = check_against_reference(run_op(op, dev, in, norm, s), in, norm);
      expect_close(c, fmt::format("D={} splits={} T={} norm={}", hidden, s, T, norm));
      all.merge(c);
    }
    report(fmt::format("cpu generic D={} ({} split counts)", hidden, splits.size()), all);
  }
}

// The dispatch path (split count from the policy) at the token counts of the issue.
TEST(MhcPreCpu, GenericDispatchTokenCounts) {
  CpuDevice dev;
  const int hidden = 4096;
  HcPreOp op(Backend::Cpu, dims_of(hidden), {}, 132, nullptr, dev, Variant::Generic);
  Comparison all;
  for (int64_t T : {1, 2, 63, 64, 65, 127, 128, 129}) {
    for (bool norm : {false, true}) {
      const auto in = random_hc_pre_inputs(T, 4, hidden, 7 * T + norm, 1.0f);
      const auto c = check_against_reference(run_op(op, dev, in, norm), in, norm);
      expect_close(c, fmt::format("T={} norm={}", T, norm));
      all.merge(c);
    }
  }
  report("cpu generic D=4096 T in {1..129}", all);
}

TEST(MhcPreCpu, LargeMagnitudeResidual) {
  CpuDevice dev;
  Comparison all;
  for (int hidden : {4096, 7168}) {
    HcPreOp op(Backend::Cpu, dims_of(hidden), {}, 148, nullptr, dev, Variant::Generic);
    for (bool norm : {false, true}) {
      const auto in = random_hc_pre_inputs(5, 4, hidden, 99 + hidden + norm, 1000.0f);
      const auto c = check_against_reference(run_op(op, dev, in, norm), in, norm);
      expect_close(c, fmt::format("N(0,1000) D={} norm={}", hidden, norm));
      all.merge(c);
    }
  }
  report("cpu generic residual ~ N(0,1000)", all);
}

// One large case: T = 4097 (num_splits 2 with 132 SMs), dsv4-flash, fused norm.
TEST(MhcPreCpu, Generic4097Tokens) {
  CpuDevice dev;
  HcPreOp op(Backend::Cpu, dims_of(4096), {}, 132, nullptr, dev, Variant::Generic);
  ASSERT_EQ(op.num_splits(4097), 2);
  const auto in = random_hc_pre_inputs(4097, 4, 4096, 4097, 1.0f);
  const auto c = check_against_reference(run_op(op, dev, in, true), in, true);
  expect_close(c, "T=4097");
  report("cpu generic D=4096 T=4097 norm", c);
}

TEST(MhcPreCpu, ZeroTokensIsANoOp) {
  CpuDevice dev;
  HcPreOp op(Backend::Cpu, dims_of(4096), {}, 132, nullptr, dev, Variant::Generic);
  mhc::HcPreArgs a;  // all null: T == 0 must not touch anything
  EXPECT_NO_THROW(op.run(a));
}

TEST(MhcPreCpu, ReferenceBackendThroughTheOp) {
  CpuDevice dev;
  HcPreOp op(Backend::Reference, dims_of(4096), {}, 132, nullptr, dev);
  EXPECT_FALSE(op.uses_fast_path());
  EXPECT_TRUE(op.planned_specs(8192, true).empty());
  const auto in = random_hc_pre_inputs(3, 4, 4096, 5, 1.0f);
  const auto c = check_against_reference(run_op(op, dev, in, true), in, true);
  EXPECT_EQ(c.max_ulp, 0);
  EXPECT_EQ(c.post_max_rel, 0);
}

// The JIT path: generated source, host compiler, dlopen. A few buckets only (each is a compile).
TEST(MhcPreCpu, SpecializedJitMatchesReference) {
  CpuDevice dev;
  jit::JitRuntime rt(memory_only_jit());
  Comparison all;
  struct Case {
    int hidden;
    int64_t T;
    bool norm;
  };
  for (const Case& k : {Case{7168, 1, true}, Case{4096, 65, false}, Case{7168, 130, true}}) {
    HcPreOp op(Backend::Cpu, dims_of(k.hidden), {}, 132, &rt, dev);
    op.set_tiered(false);  // the specialized kernels on the first call, not the generic ones meanwhile
    ASSERT_TRUE(op.uses_fast_path());
    const auto t0 = std::chrono::steady_clock::now();
    const auto in = random_hc_pre_inputs(k.T, 4, k.hidden, 11 * k.T, 1.0f);
    const auto got = run_op(op, dev, in, k.norm);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("[jit] %s: first call (host compile + run) %.2f s\n",
                op.kernel_spec(op.num_splits(k.T), k.norm).describe().c_str(), s);
    const auto c = check_against_reference(got, in, k.norm);
    expect_close(c, fmt::format("jit D={} T={}", k.hidden, k.T));
    all.merge(c);
  }
  EXPECT_EQ(rt.stats().compiled, 3);
  report("cpu specialized (JIT) 3 buckets", all);
}

TEST(MhcPreOp, PlannedSpecsFollowTheBuckets) {
  CpuDevice dev;
  HcPreOp op(Backend::Cpu, dims_of(7168), {}, 132, [](const jit::KernelSpec&) {
    return std::shared_ptr<const jit::LoadedModule>();
  }, dev);
  const auto specs = op.planned_specs(16384, true);
  const auto reps = op.representatives(16384);
  ASSERT_EQ(specs.size(), 22u);
  ASSERT_EQ(reps.size(), 22u);
  EXPECT_EQ(reps.front(), 16384);
  EXPECT_EQ(reps.back(), 64);
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(specs[i].params[0].second, std::to_string(op.num_splits(reps[i])));
    EXPECT_EQ(specs[i].target, jit::TargetKind::Host);
    EXPECT_NE(specs[i].source.find("mhc_pre_finish<" + std::to_string(op.num_splits(reps[i])) +
                                   ", 4, 7168, true, hcwarm_mhc::kInputResidual>"),
              std::string::npos);
  }
  EXPECT_TRUE(op.planned_specs(0, true).empty());
  HcPreOp generic(Backend::Cpu, dims_of(7168), {}, 132, nullptr, dev, Variant::Generic);
  EXPECT_FALSE(generic.uses_fast_path());
  EXPECT_TRUE(generic.planned_specs(16384, true).empty());
}

TEST(MhcPreOp, BackendNamesAndDefault) {
  EXPECT_EQ(mhc::parse_backend("cuda"), Backend::Cuda);
  EXPECT_EQ(mhc::parse_backend("cpu"), Backend::Cpu);
  EXPECT_EQ(mhc::parse_backend("reference"), Backend::Reference);
  EXPECT_THROW(mhc::parse_backend("gpu"), Error);
  EXPECT_STREQ(mhc::to_string(Backend::Cuda), "cuda");
  // Without a driver (this machine, CI) the default is the CPU, and nothing crashes.
  if (!cuda::cuda_device_present()) {
    EXPECT_EQ(mhc::default_backend(), Backend::Cpu);
    EXPECT_EQ(mhc::default_backend("/nonexistent/libcuda.so.1"), Backend::Cpu);
    try {
      cuda::CudaDevice d;
      ADD_FAILURE() << "CudaDevice constructed without a driver";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Unavailable);
    }
  }
}

// The CUDA kernels compile under NVRTC with only the embedded headers (no GPU needed).
TEST(MhcPreCudaSource, CompilesUnderNvrtc) {
  std::string why;
  const auto nvrtc = nvrtc_or_null(&why);
  if (!nvrtc) GTEST_SKIP() << why;
  test::TempDir work;
  // Each kernel is a part of its own: a cubin set of one image per kernel
  // (or one cubin with all of them where the cores cannot take every part at
  // once, as a 3-part source on 2 cores). Returns the images holding `names`.
  // The names: the entries' symbols, which NvrtcCompiler checked against NVRTC's lowered names.
  auto compile = [&](const jit::KernelSource& source, std::vector<std::string> names) {
    EXPECT_EQ(source.entries.size(), names.size());
    for (size_t i = 0; i < names.size() && i < source.entries.size(); ++i) EXPECT_EQ(source.entries[i].symbol, names[i]);
    const auto out = nvrtc->compile(source, kernels::embedded_files(), work.path());
    const auto set = jit::unpack_cubin_set(out.binary);
    const auto images = set.value_or(std::vector<std::span<const std::byte>>{out.binary});
    size_t found = 0;
    for (const auto image : images) {
      const std::string bytes(reinterpret_cast<const char*>(image.data()), image.size());
      EXPECT_EQ(bytes.substr(0, 4), "\x7f" "ELF");
      for (const auto& n : names) found += bytes.find(n) != std::string::npos;
    }
    EXPECT_EQ(found, names.size()) << "every kernel in exactly one image";
    return images.size();
  };
  const size_t cores = std::thread::hardware_concurrency();
  const int split_class = cuda::cuda_split_class(16);
  for (bool fast_finish : {true, false}) {
    const cuda::MhcPreEntries e =
        cuda::mhc_pre_entries(split_class, 4, 7168, true, false, fast_finish, hcwarm_mhc::kInputResidual,
                              cuda::cuda_partial_warps(16), 0);
    EXPECT_EQ(compile(cuda::mhc_pre_cuda_source(16, 4, 7168, true, false, fast_finish), {e.partial.symbol, e.finish.symbol}),
              cores >= 2 ? 2u : 1u)
        << "fast_finish=" << fast_finish;
  }
  // With the one-pass kernel: three parts.
  const cuda::MhcPreEntries e = cuda::mhc_pre_entries(1, 4, 4096, true, true, true, hcwarm_mhc::kInputResidual,
                                                      cuda::cuda_partial_warps(1),
                                                      static_cast<int>(cuda::one_pass_threads(4096)));
  ASSERT_TRUE(e.one_pass.has_value());
  EXPECT_EQ(compile(cuda::mhc_pre_cuda_source(1, 4, 4096, true, /*one_pass=*/true,
                                             /*fast_finish=*/true),
                    {e.partial.symbol, e.finish.symbol, e.one_pass->symbol}),
            cores >= 3 ? 3u : 1u);
}

// The one-pass kernel is part of a num_splits 1 key only where it can run:
// sm_90 or newer (TMA; the targets it is built and measured for) and a hidden
// size that is a multiple of 1024 (whole 64-column boxes in each of its 64
// K-parts), at most 7168 (one y warp per 1024 columns: 7 make the block 15
// warps, which leaves at most 136 registers a thread; a y thread's part of
// the row alone takes 64).
TEST(MhcPreCudaSource, OnePassOnlyWhereItRuns) {
  mhc::CudaKernelOptions cuda;
  cuda.one_pass = true;
  auto has = [&](int splits, int64_t hidden, const char* arch) {
    cuda.arch = arch;
    const auto s = mhc::hc_pre_kernel_spec(mhc::Backend::Cuda, {4, static_cast<int>(hidden)}, splits, true, cuda);
    const bool in_source = std::any_of(s.entries.begin(), s.entries.end(), [](const jit::KernelEntry& e) {
      return e.expression.find("::mhc_pre_one_pass_kernel<") != std::string::npos;
    });
    EXPECT_EQ(in_source, s.param("one_pass") == "1") << splits << " " << hidden << " " << arch;
    return in_source;
  };
  EXPECT_TRUE(has(1, 7168, "sm_90a"));
  EXPECT_TRUE(has(1, 4096, "sm_100a"));
  EXPECT_FALSE(has(2, 7168, "sm_90a"));   // only the num_splits 1 bucket
  EXPECT_FALSE(has(1, 7168, "sm_80"));    // not an sm_90 target
  EXPECT_TRUE(has(1, 1024, "sm_90a"));    // one y warp
  EXPECT_FALSE(has(1, 4608, "sm_90a"));   // hidden not a multiple of 1024
  EXPECT_FALSE(has(1, 8192, "sm_90a"));   // more than 7 y warps
  cuda.one_pass = false;
  EXPECT_FALSE(has(1, 7168, "sm_90a"));
}

// CUDA kernels read the split count at run time: the buckets of a split class
// share one source and one key, different classes (and input kinds) do not, and
// the plan holds each class once, in bucket order. The CPU keeps a key per bucket.
TEST(MhcPreCudaSource, SplitClassesShareOneSpecialization) {
  EXPECT_EQ(cuda::cuda_split_class(1), 1);
  EXPECT_EQ(cuda::cuda_split_class(2), 2);
  EXPECT_EQ(cuda::cuda_split_class(3), 3);
  EXPECT_EQ(cuda::cuda_split_class(4), 3);
  for (int s = 5; s <= 21; ++s) EXPECT_EQ(cuda::cuda_split_class(s), 5) << s;
  for (int s = 22; s <= 200; ++s) EXPECT_EQ(cuda::cuda_split_class(s), 22) << s;
  EXPECT_THROW(cuda::cuda_split_class(0), Error);
  EXPECT_EQ(cuda::cuda_split_class_name(3), "3-4");
  EXPECT_EQ(cuda::cuda_split_class_name(5), "5-21");
  EXPECT_EQ(cuda::cuda_split_class_name(22), "22+");
  // Every split count the policy picks on 132 and 148 SMs fits its class's batch of
  // partials (the finish's loop beyond the batch is for other GPUs).
  for (const int sms : {132, 148}) {
    for (const int64_t k : {int64_t{4} * 4096, int64_t{4} * 7168}) {
      for (const auto& b : mhc::split_buckets(16384, k, sms)) {
        const int s = b.num_splits;
        EXPECT_LE(cuda::cuda_num_parts(s), hcwarm_mhc::cuda_finish_batch_parts(cuda::cuda_split_class(s)))
            << s << " splits, " << sms << " SMs";
      }
    }
  }
  EXPECT_THROW(cuda::cuda_split_class_name(4), Error);
  const mhc::MhcDims d{4, 7168};
  auto spec = [&](int s, HcPreInput in = HcPreInput::Residual) {
    return mhc::hc_pre_kernel_spec(mhc::Backend::Cuda, d, s, true, {}, in);
  };
  for (const auto& [a, b] : {std::pair{3, 4}, std::pair{5, 7}, std::pair{8, 21}, std::pair{22, 112}, std::pair{66, 160}}) {
    EXPECT_EQ(spec(a).source, spec(b).source) << a << " " << b;
    EXPECT_EQ(spec(a).entries, spec(b).entries) << a << " " << b;
    EXPECT_EQ(spec(a).describe(), spec(b).describe()) << a << " " << b;
  }
  for (const auto& [a, b] : {std::pair{1, 2}, std::pair{2, 3}, std::pair{4, 5}, std::pair{21, 22}}) {
    EXPECT_NE(spec(a).source, spec(b).source) << a << " " << b;
    EXPECT_NE(spec(a).entries, spec(b).entries) << a << " " << b;
  }
  EXPECT_NE(spec(16).source, spec(16, HcPreInput::Embed).source);
  EXPECT_NE(spec(16).entries, spec(16, HcPreInput::Embed).entries);
  EXPECT_EQ(spec(16).param("splits"), "5-21");
  EXPECT_EQ(spec(16).param("num_splits"), "");
  EXPECT_EQ(mhc::hc_pre_spec_num_splits(spec(16)), 5);
  EXPECT_EQ(mhc::hc_pre_spec_num_splits(spec(4)), 3);
  EXPECT_EQ(mhc::hc_pre_spec_num_splits(spec(112)), 22);
  jit::KernelSpec no_count;
  no_count.family = "mhc_pre";
  EXPECT_THROW(mhc::hc_pre_spec_num_splits(no_count), Error);
  no_count.params = {{"splits", "+"}};
  EXPECT_THROW(mhc::hc_pre_spec_num_splits(no_count), Error);
  // dsv4-pro, 132 SMs, 16384 tokens: 22 buckets; on CUDA the one-pass kernel
  // serves those of 1-21 splits, the "22+" class the rest; the CPU plans every bucket.
  auto classes_of = [](const std::vector<jit::KernelSpec>& plan) {
    std::vector<std::string> classes;
    for (const auto& s : plan) {
      classes.push_back(std::string(s.param("splits")) + (s.param("one_pass") == "1" ? " one-pass" : ""));
    }
    return classes;
  };
  const auto cuda_plan = mhc::hc_pre_planned_specs(mhc::Backend::Cuda, d, 132, 16384, true);
  EXPECT_EQ(classes_of(cuda_plan), (std::vector<std::string>{"1 one-pass", "22+"}));
  // dsv4-flash: one-pass up to 14 splits; the embedding input keeps every class.
  const mhc::MhcDims flash{4, 4096};
  EXPECT_EQ(classes_of(mhc::hc_pre_planned_specs(mhc::Backend::Cuda, flash, 132, 16384, true)),
            (std::vector<std::string>{"1 one-pass", "5-21", "22+"}));
  EXPECT_EQ(classes_of(mhc::hc_pre_planned_specs(mhc::Backend::Cuda, flash, 132, 16384, true, {}, HcPreInput::Embed)),
            (std::vector<std::string>{"1", "2", "3-4", "5-21", "22+"}));
  // The one-pass kernel off: the split policy's classes.
  mhc::CudaKernelOptions two_kernels;
  two_kernels.one_pass = false;
  EXPECT_EQ(classes_of(mhc::hc_pre_planned_specs(mhc::Backend::Cuda, d, 132, 16384, true, two_kernels)),
            (std::vector<std::string>{"1", "2", "3-4", "5-21", "22+"}));
  for (const int s : {1, 2, 8, 21}) EXPECT_EQ(mhc::hc_pre_kernel_splits(mhc::Backend::Cuda, d, s, {}), 1) << s;
  EXPECT_EQ(mhc::hc_pre_kernel_splits(mhc::Backend::Cuda, d, 22, {}), 22);
  EXPECT_EQ(mhc::hc_pre_kernel_splits(mhc::Backend::Cuda, flash, 14, {}), 1);
  EXPECT_EQ(mhc::hc_pre_kernel_splits(mhc::Backend::Cuda, flash, 16, {}), 16);
  EXPECT_EQ(mhc::hc_pre_kernel_splits(mhc::Backend::Cuda, d, 8, {}, HcPreInput::Embed), 8);
  EXPECT_EQ(mhc::hc_pre_kernel_splits(mhc::Backend::Cuda, d, 8, {}, HcPreInput::Post), 8);
  EXPECT_EQ(mhc::hc_pre_kernel_splits(mhc::Backend::Cuda, d, 8, two_kernels), 8);
  EXPECT_EQ(mhc::hc_pre_kernel_splits(mhc::Backend::Cpu, d, 8, {}), 8);
  const auto cpu_plan = mhc::hc_pre_planned_specs(mhc::Backend::Cpu, d, 132, 16384, true);
  EXPECT_EQ(cpu_plan.size(), mhc::split_buckets(16384, d.k(), 132).size());
  EXPECT_EQ(mhc::hc_pre_spec_num_splits(cpu_plan.front()), mhc::split_buckets(16384, d.k(), 132).front().num_splits);
}

// The one-pass kernel's launch bounds are the block the launcher gives it: the
// TMA warp, 4 mma warps, hidden / 1024 y warps, 3 comb warps and the signal warp (another block
// would make the kernel return without writing).
TEST(MhcPreCudaSource, OnePassBlockMatchesItsLaunchBounds) {
  mhc::CudaKernelOptions cuda;
  cuda.one_pass = true;
  for (const auto& [hidden, threads] : {std::pair{7168, 512}, std::pair{4096, 416}, std::pair{1024, 320}}) {
    EXPECT_EQ(cuda::one_pass_threads(hidden), static_cast<unsigned>(threads)) << hidden;
    const auto s = mhc::hc_pre_kernel_spec(mhc::Backend::Cuda, {4, hidden}, 1, true, cuda);
    // The one-pass entry's last template argument is its launch bounds' block.
    ASSERT_EQ(s.entries.size(), 3u) << hidden;
    const std::string& e = s.entries[2].expression;
    EXPECT_TRUE(e.starts_with(fmt::format("hcwarm_kernels::cuda::mhc_pre_one_pass_kernel<4, {}, ", hidden))) << e;
    EXPECT_TRUE(e.ends_with(fmt::format(", false, {}>", threads))) << e;  // not the head's form; the block
  }
}

// The generic fatbin built into the library (nvcc at build time; no GPU needed
// to read it) names every entry point bind_generic looks up: the partial and
// the finish per input kind (and the streaming finish for residual streams and the
// embedding), the finish and one-pass kernels with and without the norm in both
// reciprocal forms (the op's fast_finish picks one), and the one-wave pair's; all distinct.
TEST(MhcPreCudaSource, GenericFatbinHasEveryEntryPointPerInputAndReciprocalForm) {
  const auto image = cuda::mhc_pre_generic_fatbin();
  if (image.empty()) GTEST_SKIP() << "built without nvcc: no generic kernels";
  const std::string bytes(reinterpret_cast<const char*>(image.data()), image.size());
  std::set<std::string> names;
  auto expect_entry = [&](const jit::KernelEntry& entry) {
    const std::string& symbol = entry.symbol;
    EXPECT_NE(bytes.find(symbol + '\0'), std::string::npos) << symbol;
    EXPECT_TRUE(names.insert(symbol).second) << symbol << " named twice";
  };
  for (int input = 0; input < 3; ++input) {
    expect_entry(cuda::generic_partial_entry(input));
    for (const bool norm : {false, true}) {
      for (const bool fast : {false, true}) {
        expect_entry(cuda::generic_finish_entry(input, norm, fast));
        // The large-T buckets' streaming finish: residual streams and the embedding.
        if (input != hcwarm_mhc::kInputPost) expect_entry(cuda::generic_finish_entry(input, norm, fast, true));
      }
    }
  }
  for (const bool norm : {false, true}) {
    for (const bool fast : {false, true}) expect_entry(cuda::generic_one_pass_entry(norm, fast));
  }
  // The one-wave pair's (residual streams): the deeper partial and the streaming finish of any class.
  expect_entry(cuda::generic_deep_partial_entry());
  for (const bool norm : {false, true}) {
    for (const bool fast : {false, true}) expect_entry(cuda::generic_one_wave_finish_entry(norm, fast));
  }
  EXPECT_EQ(names.size(), 32u);
  // The fused boundary's input has no streaming finish: asked for, it is refused by name.
  EXPECT_THROW(cuda::generic_finish_entry(hcwarm_mhc::kInputPost, true, true, true), Error);
}

// The one-pass launch's workspace: a 4-byte counter per half of each chunk of
// 128 tokens (cleared before every launch, rounded to 256 bytes) in front of the record
// ring; and the 16-byte alignment every CUDA kernel needs.
TEST(MhcPreCudaSource, OnePassWorkspaceAndAlignment) {
  const size_t ring = size_t{16} * 128 * 64 * 32 * 4;  // 16 chunks x 128 tokens x 64 parts x 32 floats
  EXPECT_EQ(static_cast<size_t>(hcwarm_mhc::kOnePassRecordBytes), ring);
  EXPECT_EQ(cuda::one_pass_workspace_bytes(0), ring);
  EXPECT_EQ(cuda::one_pass_workspace_bytes(-5), ring);       // no tokens: no counters
  EXPECT_EQ(cuda::one_pass_workspace_bytes(1), 256 + ring);  // one chunk
  EXPECT_EQ(cuda::one_pass_workspace_bytes(4096), 256 + ring);      // 32 chunks, 64 counters, 256 bytes
  EXPECT_EQ(cuda::one_pass_workspace_bytes(4097), 512 + ring);      // 33 chunks
  EXPECT_EQ(cuda::one_pass_workspace_bytes(8192), 512 + ring);      // 64 chunks
  EXPECT_EQ(cuda::one_pass_workspace_bytes(16384 * 4), 4096 + ring);  // 512 chunks, 1024 counters
  // Every CUDA kernel moves 16 bytes at a time: hc_pre refuses (InvalidArgument,
  // naming it) a residual, fn, y or norm weight that is not 16-byte aligned.
  alignas(16) static unsigned char buf[64] = {};
  auto name = [](int residual, int fn, int y, int norm_weight) {
    const char* n = cuda::misaligned_argument(buf + residual, buf + fn, buf + y,
                                              norm_weight < 0 ? nullptr : buf + norm_weight);
    return std::string(n != nullptr ? n : "none");
  };
  EXPECT_EQ(name(0, 16, 32, -1), "none");  // no norm weight
  EXPECT_EQ(name(0, 16, 32, 48), "none");
  EXPECT_EQ(name(2, 16, 32, 48), "residual");  // bf16-aligned only
  EXPECT_EQ(name(8, 16, 32, 48), "residual");  // 8 bytes
  EXPECT_EQ(name(0, 20, 32, 48), "fn");
  EXPECT_EQ(name(0, 16, 40, 48), "y");
  EXPECT_EQ(name(0, 16, 32, 50), "norm_weight");
  EXPECT_EQ(name(4, 20, 32, 48), "residual");  // the first one named
}

// Through the JIT runtime, from the device-free spec builder that warmup and
// `cache build` use: a CUDA kernel built on a machine without a GPU.
TEST(MhcPreCudaSource, JitCompileOnlyWithoutGpu) {
  std::string why;
  if (!nvrtc_or_null(&why)) GTEST_SKIP() << why;
  jit::JitRuntime rt(memory_only_jit());
  mhc::CudaKernelOptions cuda;
  cuda.one_pass = true;
  const jit::KernelSpec s = mhc::hc_pre_kernel_spec(mhc::Backend::Cuda, {4, 7168}, 1, true, cuda);
  EXPECT_EQ(s.arch, "sm_90a");
  const auto rep = rt.build(std::span<const jit::KernelSpec>(&s, 1), jit::BuildMode::CompileOnly);
  EXPECT_EQ(rep.failed, 0) << (rep.errors.empty() ? "" : rep.errors.front());
  EXPECT_EQ(rep.compiled, 1);
}

}  // namespace
}  // namespace hcwarm::test

namespace hcwarm {
namespace {

TEST(CudaDeviceQuery, NothingWithoutADriver) {
  EXPECT_FALSE(cuda::query_device(0, "/nonexistent/libcuda.so.1").has_value());
  EXPECT_FALSE(cuda::query_device(-1).has_value());
}

}  // namespace
}  // namespace hcwarm
