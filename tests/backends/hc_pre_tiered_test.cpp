// Tiered hc_pre on the CPU with real host compiles: a bucket's first call runs
// the generic kernels at once, the specialization lands from the background
// worker, and both agree with the float64 reference within the documented
// tolerances; tiering off compiles in the call; a failed specialization leaves
// the bucket on the generic kernels.
#include <gtest/gtest.h>

#include <cstdio>

#include "common/jit_fixtures.hpp"
#include "jit/jit_runtime.hpp"
#include "mhc_check.hpp"

namespace hcwarm::test {
namespace {

using mhc::Backend;
using mhc::HcPreOp;

int64_t bit_equal_y(const mhc::HcPreResult& a, const mhc::HcPreResult& b) {
  int64_t n = 0;
  for (int64_t i = 0; i < a.y.numel(); ++i) n += a.y[i].bits == b.y[i].bits;
  return n;
}

TEST(HcPreTiered, GenericFirstThenTheSpecializationBothMatchTheReference) {
  CpuDevice dev;
  jit::JitRuntime rt(memory_only_jit());
  rt.mark_ready();
  HcPreOp op(Backend::Cpu, mhc::MhcDims{4, 4096}, {}, 132, &rt, dev);
  ASSERT_TRUE(op.tiered());
  struct Case {
    int64_t T;
    bool norm;
  };
  int64_t generic_calls = 0, equal = 0, values = 0;
  for (const Case& k : {Case{1, true}, Case{130, false}, Case{600, true}}) {
    const auto in = random_hc_pre_inputs(k.T, 4, 4096, 31 * k.T + k.norm, 1.0f);
    EXPECT_FALSE(op.specialized_loaded(k.T, k.norm));
    const auto generic = run_op(op, dev, in, k.norm);  // returns without waiting for the compile
    EXPECT_EQ(rt.stats().served_by_generic, ++generic_calls);
    expect_close(check_against_reference(generic, in, k.norm), fmt::format("generic T={}", k.T));
    rt.drain_background();
    const auto specialized = run_op(op, dev, in, k.norm);  // the first call after it landed
    EXPECT_TRUE(op.specialized_loaded(k.T, k.norm)) << "T=" << k.T;
    EXPECT_EQ(rt.stats().served_by_generic, generic_calls) << "T=" << k.T;
    expect_close(check_against_reference(specialized, in, k.norm), fmt::format("specialized T={}", k.T));
    equal += bit_equal_y(generic, specialized);
    values += generic.y.numel();
  }
  const jit::CompileStats s = rt.stats();
  EXPECT_EQ(s.waited_for_compile, 0);
  EXPECT_EQ(s.background_compiled, 3);
  EXPECT_EQ(s.compiles_after_ready, 0);  // none in a call's path
  EXPECT_EQ(s.background_compiles_after_ready, 3);
  std::printf("[tiered] generic vs specialized y bit-equal: %lld of %lld\n", static_cast<long long>(equal),
              static_cast<long long>(values));
}

TEST(HcPreTiered, OffCompilesInTheCall) {
  CpuDevice dev;
  jit::JitRuntime rt(memory_only_jit());
  HcPreOp op(Backend::Cpu, mhc::MhcDims{4, 4096}, {}, 132, &rt, dev);
  op.set_tiered(false);
  EXPECT_FALSE(op.tiered());
  const auto in = random_hc_pre_inputs(3, 4, 4096, 3, 1.0f);
  expect_close(check_against_reference(run_op(op, dev, in, true), in, true), "untiered");
  EXPECT_TRUE(op.specialized_loaded(3, true));
  const jit::CompileStats s = rt.stats();
  EXPECT_EQ(s.waited_for_compile, 1);
  EXPECT_GT(s.compile_wait_s, 0.0);
  EXPECT_EQ(s.served_by_generic, 0);
  EXPECT_EQ(s.background_compiled, 0);
}

// A provider whose every specialization fails in the background.
class FailingProvider final : public jit::ModuleProvider {
 public:
  std::shared_ptr<const jit::LoadedModule> get(const jit::KernelSpec&) override {
    HCWARM_THROW(ErrorKind::Compile, "no compiler in this test");
  }
  bool tiered() const override { return true; }
  jit::TieredModule get_or_schedule(const jit::KernelSpec&) override {
    ++asked;
    auto p = std::make_shared<jit::PendingModule>();
    p->state = jit::PendingModule::Failed;
    return {nullptr, p};
  }
  void note_served_by_generic() override { ++generic; }
  int asked = 0;
  int generic = 0;
};

TEST(HcPreTiered, AFailedSpecializationLeavesTheBucketOnTheGenericKernels) {
  CpuDevice dev;
  auto owned = std::make_unique<FailingProvider>();
  FailingProvider* provider = owned.get();
  HcPreOp op(Backend::Cpu, mhc::MhcDims{4, 4096}, {}, 132, std::move(owned), dev);
  ASSERT_TRUE(op.tiered());
  const auto in = random_hc_pre_inputs(5, 4, 4096, 5, 1.0f);
  for (int i = 0; i < 3; ++i) {
    expect_close(check_against_reference(run_op(op, dev, in, true), in, true), fmt::format("call {}", i));
  }
  EXPECT_EQ(provider->asked, 1);    // asked once, never again
  EXPECT_EQ(provider->generic, 0);  // not "pending": nothing to count
  EXPECT_TRUE(op.loaded(5, true));
  EXPECT_FALSE(op.specialized_loaded(5, true));
}

}  // namespace
}  // namespace hcwarm::test
