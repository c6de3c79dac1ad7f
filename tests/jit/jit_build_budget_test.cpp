// The compile-thread budget: build() never runs more compiles at once than
// `jobs`, takes its threads from a budget a caller may share, and the parts of
// a multi-part NVRTC compile split only into threads that budget has left.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "jit/cubin_set.hpp"
#include "jit/report.hpp"
#include "jit_test_util.hpp"

namespace hcwarm::jit {
namespace {

using namespace test;

// Counts compiles in flight through the test hook; each compile-begin lingers
// a little so that compiles a build wrongly ran together would overlap.
struct InFlight {
  std::atomic<int> now{0}, most{0}, total{0};
  std::function<void(std::string_view)> hook() {
    return [this](std::string_view stage) {
      if (stage == "compile-begin") {
        const int n = ++now;
        int m = most.load();
        while (n > m && !most.compare_exchange_weak(m, n)) {
        }
        ++total;
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
      } else if (stage == "compile-end") {
        --now;
      }
    };
  }
};

TEST(JitBuildBudget, NeverRunsMoreCompilesThanJobs) {
  for (int jobs : {1, 2}) {
    InFlight f;
    auto o = options(std::nullopt);
    o.jobs = jobs;
    o.test_hook = f.hook();
    JitRuntime rt(o);
    std::vector<KernelSpec> specs;
    for (int v = 1; v <= 5; ++v) specs.push_back(host_spec(10 * jobs + v));
    const auto r = rt.build(specs);
    EXPECT_EQ(r.compiled, 5);
    EXPECT_EQ(f.total.load(), 5);
    EXPECT_LE(f.most.load(), jobs) << "jobs " << jobs;
    EXPECT_GE(f.most.load(), 1);
  }
}

TEST(JitBuildBudget, BuildTakesItsThreadsFromASharedBudget) {
  auto budget = std::make_shared<ThreadBudget>(2);
  InFlight f;
  auto o = options(std::nullopt);
  o.jobs = 8;  // more than the budget: the budget bounds the threads
  o.compile_budget = budget;
  o.test_hook = f.hook();
  JitRuntime rt(o);
  std::vector<KernelSpec> specs;
  for (int v = 1; v <= 4; ++v) specs.push_back(host_spec(v));
  EXPECT_EQ(rt.build(specs).compiled, 4);
  EXPECT_LE(f.most.load(), 2);
  EXPECT_LE(budget->peak(), 2);
  EXPECT_EQ(budget->in_use(), 0);  // every slot given back

  auto zero = options(std::nullopt);
  zero.compile_budget = std::make_shared<ThreadBudget>(0);
  EXPECT_THROW(JitRuntime{zero}, Error);
}

// A CUDA source of `parts` parts, kernel_<i> in part i.
KernelSpec parts_spec(int value, int parts) {
  KernelSpec s;
  s.family = "parts";
  s.params = {{"value", std::to_string(value)}, {"parts", std::to_string(parts)}};
  s.parts = parts;
  for (int i = 0; i < parts; ++i) {
    s.source += "#if !defined(HCWARM_PART) || HCWARM_PART == " + std::to_string(i) + "\n" +
                "extern \"C\" __global__ void kernel_" + std::to_string(i) + "(int* p) { *p = " +
                std::to_string(value + i) + "; }\n#endif\n";
  }
  s.target = TargetKind::Cuda;
  s.arch = "sm_90a";
  return s;
}

size_t images_of(const std::vector<std::byte>& artifact) {
  const auto set = unpack_cubin_set(artifact);
  return set ? set->size() : 1;
}

TEST(JitBuildBudget, NvrtcPartsSplitOnlyIntoFreeSlots) {
  if (!nvrtc_available()) GTEST_SKIP() << "NVRTC not installed";
  auto budget = std::make_shared<ThreadBudget>(4);
  const NvrtcCompiler nvrtc("sm_90a", {}, {}, {}, {}, budget);
  const KernelSpec s = parts_spec(1, 4);
  {
    hcwarm::test::TempDir work("hcwarm-parts");
    EXPECT_EQ(images_of(nvrtc.compile(s.kernel_source(), {}, work.path()).binary), 4u);  // three slots free: split
    EXPECT_EQ(budget->peak(), 3);
    EXPECT_EQ(budget->in_use(), 0);
  }
  {
    auto held = budget->try_acquire(2);  // two left: not one per extra part
    hcwarm::test::TempDir work("hcwarm-parts");
    EXPECT_EQ(images_of(nvrtc.compile(s.kernel_source(), {}, work.path()).binary), 1u);  // one program
    EXPECT_EQ(budget->in_use(), 2);
  }
}

TEST(JitBuildBudget, FourKeysOfFourPartsStayWithinABudgetOfFour) {
  if (!nvrtc_available()) GTEST_SKIP() << "NVRTC not installed";
  hcwarm::test::TempDir dir("hcwarm-parts-build");
  auto budget = std::make_shared<ThreadBudget>(4);
  auto o = options(dir.path());
  o.jobs = 4;
  o.compile_budget = budget;
  JitRuntime rt(o);
  std::vector<KernelSpec> specs;
  for (int v = 0; v < 4; ++v) specs.push_back(parts_spec(10 * v, 4));
  const auto r = rt.build(specs, BuildMode::CompileOnly);
  EXPECT_EQ(r.compiled, 4) << format_build_report(r);
  EXPECT_LE(budget->peak(), 4);  // four keys and their parts together, never 16
  EXPECT_EQ(budget->in_use(), 0);
}

}  // namespace
}  // namespace hcwarm::jit
