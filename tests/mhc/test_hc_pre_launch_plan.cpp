// The hc_pre launch plan pins the one-pass decision: made by plan_hc_pre_launch
// alone, by the documented rule, and carried unchanged into the spec (key and
// source) that the CUDA backend compiles and binds.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/cpu/hc_pre_cpu_backend.hpp"
#include "backends/cuda/mhc_pre_cuda.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "kernels/common/mhc_params.hpp"
#include "mhc/hc_pre_kernel_spec.hpp"
#include "mhc/hc_pre_launch_plan.hpp"
#include "mhc/split_policy.hpp"

namespace hcwarm::mhc {
namespace {

HcPreLaunchPlan plan_for_tokens(Backend backend, MhcDims dims, int num_sms, int64_t tokens, bool norm,
                                const CudaKernelOptions& cuda, HcPreInput input = HcPreInput::Residual) {
  HcPreLaunchRequest r;
  r.backend = backend;
  r.dims = dims;
  r.cuda = cuda;
  r.input = input;
  r.fused_norm = norm;
  r.num_splits = num_splits(tokens, dims.k(), num_sms);
  r.splits_are = HcPreSplitsAre::Bucket;
  r.num_tokens = tokens;
  return plan_hc_pre_launch(r);
}

// The generic kernels' plan of the call `plan` made (its dims, bucket and tokens; residual input).
HcPreLaunchPlan generic_plan_of(const HcPreLaunchPlan& plan, const CudaKernelOptions& cuda) {
  HcPreLaunchRequest generic;
  generic.variant = Variant::Generic;
  generic.dims = plan.dims;
  generic.cuda = cuda;
  generic.num_splits = plan.bucket_splits;
  generic.num_tokens = plan.num_tokens;
  return plan_hc_pre_launch(generic);
}

// The rule as docs/BENCHMARKS.md ("The one-pass kernel for the larger buckets")
// and mhc_pre_cuda.hpp state it, spelled out with its constants.
bool documented_one_pass(Backend backend, MhcDims dims, int bucket_splits, const std::string& arch, bool option,
                         HcPreInput input, int num_sms = 0) {
  // Hopper and datacenter Blackwell (the block's shared memory), with 128 SMs for its co-resident blocks.
  const bool sm90_or_newer = arch.starts_with("sm_90") || arch.starts_with("sm_100") || arch.starts_with("sm_103");
  const bool enough_sms = num_sms == 0 || num_sms >= 128;
  const bool shape = dims.hc_mult == 4 && dims.hidden % 1024 == 0 && dims.hidden >= 1024 && dims.hidden <= 7168;
  const int max_splits = dims.hidden >= 7168 ? 21 : 14;
  return backend == Backend::Cuda && option && input == HcPreInput::Residual && sm90_or_newer && enough_sms &&
         shape && bucket_splits <= max_splits;
}

// What the CUDA backend would compile for the plan carries exactly its choice:
// the one_pass key param, the one-pass kernel among the entries with the plan's
// block as launch bounds (its last template argument), the partial kernel's
// block, the split class; the backend's lookup names the same entries.
bool has_one_pass_entry(const jit::KernelSpec& spec) {
  return std::any_of(spec.entries.begin(), spec.entries.end(), [](const jit::KernelEntry& e) {
    return e.expression.find("::mhc_pre_one_pass_kernel<") != std::string::npos;
  });
}

void expect_spec_carries_plan(const HcPreLaunchPlan& plan, const std::string& where) {
  const jit::KernelSpec spec = hc_pre_kernel_spec(plan);
  EXPECT_EQ(spec.param("one_pass") == "1", plan.one_pass()) << where;
  EXPECT_EQ(has_one_pass_entry(spec), plan.one_pass()) << where;
  // The embedding's specializations carry the fn fold as their third part; hidden 4096's
  // residual classes 5 and 22 the one-wave pair (the deep partial and the streaming finish) as
  // their third and fourth; hidden 7168's residual class 22 the deep partial as its third.
  const bool embed = plan.input == HcPreInput::Embed;
  const bool residual = plan.input == HcPreInput::Residual;
  const bool one_wave = plan.one_wave_kernels;
  const bool deep = plan.deep_partial_kernels;
  EXPECT_EQ(one_wave, residual && plan.dims.hidden == 4096 && (plan.split_class == 5 || plan.split_class == 22))
      << where;
  EXPECT_EQ(deep, one_wave || (residual && plan.dims.hidden == 7168 && plan.split_class == 22)) << where;
  const size_t parts = one_wave ? 4 : deep || plan.one_pass() || embed ? 3 : 2;
  EXPECT_EQ(spec.parts, static_cast<int>(parts)) << where;
  const cuda::MhcPreEntries e = cuda::mhc_pre_entries(plan);
  ASSERT_EQ(spec.entries.size(), parts) << where;
  EXPECT_EQ(spec.entries[0], e.partial) << where;
  EXPECT_EQ(spec.entries[1], e.finish) << where;
  EXPECT_EQ(e.one_pass.has_value(), plan.one_pass()) << where;
  EXPECT_EQ(e.fold.has_value(), embed) << where;
  if (embed) EXPECT_EQ(spec.entries[2], *e.fold) << where;
  EXPECT_EQ(e.deep_partial.has_value(), deep) << where;
  EXPECT_EQ(e.one_wave_finish.has_value(), one_wave) << where;
  if (deep) {
    EXPECT_EQ(spec.entries[2], *e.deep_partial) << where;
    EXPECT_EQ(spec.entries[2].part, 2) << where;
    // The partial 4 stages deep, with the class's block and its blocks per SM.
    EXPECT_TRUE(e.deep_partial->expression.ends_with(fmt::format(", {}, {}, 3>", hcwarm_mhc::kCudaDeepPartialStages,
                                                                 32 * plan.partial_warps)))
        << where << ": " << e.deep_partial->expression;
  }
  if (one_wave) {
    EXPECT_EQ(spec.entries[3], *e.one_wave_finish) << where;
    EXPECT_EQ(spec.entries[3].part, 3) << where;
    EXPECT_TRUE(e.one_wave_finish->expression.ends_with(", true, 8>")) << where << ": " << e.one_wave_finish->expression;
  }
  if (plan.one_pass()) {
    EXPECT_EQ(plan.kernel_splits, 1) << where;
    EXPECT_EQ(plan.one_pass_threads, cuda::one_pass_threads(plan.dims.hidden)) << where;
    EXPECT_EQ(spec.entries[2], *e.one_pass) << where;
    EXPECT_EQ(spec.entries[2].part, 2) << where;
    EXPECT_TRUE(spec.entries[2].expression.ends_with(fmt::format(", {}>", plan.one_pass_threads))) << where;
  } else {
    EXPECT_EQ(plan.one_pass_threads, 0u) << where;
  }
  EXPECT_EQ(e.partial.part, 0) << where;
  EXPECT_EQ(e.finish.part, 1) << where;
  EXPECT_TRUE(e.partial.expression.ends_with(
      fmt::format(", 2, {}, {}>", 32 * plan.partial_warps, plan.partial_warps == 8 ? 2 : 3)))
      << where << ": " << e.partial.expression;
  EXPECT_EQ(spec.param("splits"), cuda::cuda_split_class_name(plan.split_class)) << where;
  EXPECT_EQ(spec.arch, plan.arch) << where;
  // The free function warmup and `cache build` use names the same key and text.
  CudaKernelOptions cuda;
  cuda.arch = plan.arch;
  cuda.fast_finish = plan.fast_finish;
  cuda.num_sms = plan.num_sms;
  const jit::KernelSpec same =
      hc_pre_kernel_spec(Backend::Cuda, plan.dims, plan.kernel_splits, plan.fused_norm, cuda, plan.input);
  EXPECT_EQ(same.params, spec.params) << where;
  EXPECT_EQ(same.source, spec.source) << where;
  EXPECT_EQ(same.entries, spec.entries) << where;
}

struct Row {
  int64_t tokens;
  int hidden;
  int hc;
  bool norm;
  int sms;
  const char* arch;
  int bucket_splits;  // the split policy's count (docs/MATH.md, section 4)
  bool one_pass;
  int kernel_splits;
};

TEST(HcPreLaunchPlan, OnePassChoiceFollowsTheDocumentedRule) {
  // hidden 7168 on 132 SMs: one-pass up to 21 splits (from 385 tokens); 4096: up
  // to 14 (from 513); sm_90 or sm_100 targets with 128 SMs or more; hidden a multiple of
  // 1024 up to 7168; hc 4.
  const Row rows[] = {
      {448, 7168, 4, true, 132, "sm_90a", 18, true, 1},
      {448, 7168, 4, false, 132, "sm_90a", 18, true, 1},
      {384, 7168, 4, true, 132, "sm_90a", 22, false, 22},
      {1, 7168, 4, true, 132, "sm_90a", 112, false, 112},
      {4096, 7168, 4, true, 132, "sm_90a", 2, true, 1},
      {16384, 7168, 4, false, 132, "sm_90a", 1, true, 1},
      {512, 4096, 4, true, 132, "sm_90a", 16, false, 16},
      {513, 4096, 4, true, 132, "sm_90a", 14, true, 1},
      {640, 4096, 4, true, 148, "sm_100a", 14, true, 1},
      {576, 4096, 4, false, 148, "sm_100a", 16, false, 16},
      {4096, 7168, 4, true, 132, "sm_80", 2, false, 2},     // not an sm_90 target
      {16384, 7168, 4, true, 132, "sm_80", 1, false, 1},    // one split, still the pair
      {4096, 4096, 4, true, 188, "sm_120", 2, false, 2},    // 99 KB of shared memory per block
      {4096, 4096, 4, true, 148, "sm_103a", 2, true, 1},    // datacenter Blackwell
      {4096, 4608, 4, true, 132, "sm_90a", 2, false, 2},    // hidden not a multiple of 1024
      {16384, 8192, 4, true, 132, "sm_90a", 1, false, 1},   // more than 7 y warps
      {4096, 1024, 4, true, 132, "sm_90a", 2, true, 1},     // one y warp
      {4096, 4096, 2, true, 132, "sm_90a", 2, false, 2},    // hc 2
      {2048, 4096, 4, false, 78, "sm_90a", 2, false, 2},    // H20: fewer SMs than co-resident blocks
      {16384, 7168, 4, true, 114, "sm_90a", 1, false, 1},   // H100 PCIe
  };
  for (const Row& r : rows) {
    const std::string where = fmt::format("T={} hidden={} hc={} norm={} sms={} arch={}", r.tokens, r.hidden, r.hc,
                                          r.norm, r.sms, r.arch);
    const MhcDims dims{r.hc, r.hidden};
    CudaKernelOptions cuda;
    cuda.arch = r.arch;
    cuda.num_sms = r.sms;
    const HcPreLaunchPlan plan = plan_for_tokens(Backend::Cuda, dims, r.sms, r.tokens, r.norm, cuda);
    EXPECT_EQ(plan.bucket_splits, r.bucket_splits) << where;
    EXPECT_EQ(plan.one_pass(), r.one_pass) << where;
    EXPECT_EQ(plan.form, r.one_pass ? HcPreKernelForm::OnePass : HcPreKernelForm::SplitKPair) << where;
    EXPECT_EQ(plan.kernel_splits, r.kernel_splits) << where;
    EXPECT_EQ(plan.one_pass(),
              documented_one_pass(Backend::Cuda, dims, r.bucket_splits, r.arch, true, HcPreInput::Residual, r.sms))
        << where;
    EXPECT_EQ(hc_pre_kernel_splits(Backend::Cuda, dims, r.bucket_splits, cuda), r.kernel_splits) << where;
    expect_spec_carries_plan(plan, where);
    // The option off, another input kind or the CPU: the split pair on the bucket's count.
    CudaKernelOptions off = cuda;
    off.one_pass = false;
    EXPECT_FALSE(plan_for_tokens(Backend::Cuda, dims, r.sms, r.tokens, r.norm, off).one_pass()) << where;
    // The portable forms (HCWARM_CUDA_PORTABLE, or a target below sm_90): the pair on the bucket's count.
    CudaKernelOptions portable = cuda;
    portable.portable = true;
    const HcPreLaunchPlan p = plan_for_tokens(Backend::Cuda, dims, r.sms, r.tokens, r.norm, portable);
    EXPECT_FALSE(p.one_pass()) << where;
    EXPECT_EQ(p.kernel_splits, r.bucket_splits) << where;
    EXPECT_EQ(cuda_kernel_options(r.arch, true, false).portable, std::string_view(r.arch) == "sm_80") << where;
    EXPECT_TRUE(cuda_kernel_options(r.arch, true, true).portable) << where;
    for (const HcPreInput input : {HcPreInput::Embed, HcPreInput::Post}) {
      const HcPreLaunchPlan other = plan_for_tokens(Backend::Cuda, dims, r.sms, r.tokens, r.norm, cuda, input);
      EXPECT_FALSE(other.one_pass()) << where << " input " << to_string(input);
      EXPECT_EQ(other.kernel_splits, r.bucket_splits) << where;
      expect_spec_carries_plan(other, where + " input " + to_string(input));
    }
    const HcPreLaunchPlan cpu = plan_for_tokens(Backend::Cpu, dims, r.sms, r.tokens, r.norm, cuda);
    EXPECT_FALSE(cpu.one_pass()) << where;
    EXPECT_EQ(cpu.kernel_splits, r.bucket_splits) << where;
  }
}

// Over every bucket of many shapes, devices and options: the plan's choice is
// the documented rule's, the warmup plan lists exactly the plans' specs, and a
// kernel-count plan of the chosen count (run_with_splits, load, a key) agrees.
TEST(HcPreLaunchPlan, EveryBucketPlansByTheRuleAndItsSpecSaysSo) {
  int one_pass = 0, pair = 0;
  for (const int hidden : {1024, 4096, 4608, 7168, 8192}) {
    for (const int sms : {78, 132, 148}) {
      for (const char* arch : {"sm_80", "sm_90a", "sm_100a"}) {
        for (const bool option : {true, false}) {
          for (const HcPreInput input : {HcPreInput::Residual, HcPreInput::Embed, HcPreInput::Post}) {
            const MhcDims dims{4, hidden};
            CudaKernelOptions cuda;
            cuda.arch = arch;
            cuda.one_pass = option;
            const std::vector<jit::KernelSpec> planned =
                hc_pre_planned_specs(Backend::Cuda, dims, sms, 16384, true, cuda, input);
            for (const SplitBucket& b : split_buckets(16384, dims.k(), sms)) {
              const std::string where = fmt::format("hidden={} sms={} arch={} option={} input={} bucket={}", hidden,
                                                    sms, arch, option, to_string(input), b.num_splits);
              const HcPreLaunchPlan plan = plan_for_tokens(Backend::Cuda, dims, sms, b.max_tokens, true, cuda, input);
              ASSERT_EQ(plan.bucket_splits, b.num_splits) << where;
              ASSERT_EQ(plan.one_pass(), documented_one_pass(Backend::Cuda, dims, b.num_splits, arch, option, input))
                  << where;
              ASSERT_EQ(plan.kernel_splits, plan.one_pass() ? 1 : b.num_splits) << where;
              (plan.one_pass() ? one_pass : pair)++;
              const jit::KernelSpec spec = hc_pre_kernel_spec(plan);
              ASSERT_EQ(spec.param("one_pass") == "1", plan.one_pass()) << where;
              ASSERT_EQ(has_one_pass_entry(spec), plan.one_pass()) << where;
              // The same choice from the count the kernels run with.
              HcPreLaunchRequest again;
              again.backend = Backend::Cuda;
              again.dims = dims;
              again.cuda = cuda;
              again.input = input;
              again.fused_norm = true;
              again.num_splits = plan.kernel_splits;
              again.splits_are = HcPreSplitsAre::Kernel;
              const HcPreLaunchPlan kernel_plan = plan_hc_pre_launch(again);
              ASSERT_EQ(kernel_plan.form, plan.form) << where;
              ASSERT_EQ(kernel_plan.kernel_splits, plan.kernel_splits) << where;
              ASSERT_EQ(hc_pre_kernel_spec(kernel_plan).params, spec.params) << where;
              if (input != HcPreInput::Post) {  // the boundary plans only the token counts that fuse
                bool listed = false;
                for (const auto& s : planned) listed = listed || s.params == spec.params;
                ASSERT_TRUE(listed) << where << ": " << spec.describe();
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(one_pass, 100);
  EXPECT_GT(pair, 100);
}

// The workspace a plan sizes: the split pair's partials (on the CPU what its
// backend asks for), and with the one-pass kernel also its counters and ring.
TEST(HcPreLaunchPlan, WorkspaceCoversThePlannedKernels) {
  const MhcDims d{4, 7168};
  CudaKernelOptions cuda;
  for (const int64_t t : {1, 100, 448, 4096, 16384}) {
    const HcPreLaunchPlan plan = plan_for_tokens(Backend::Cuda, d, 132, t, true, cuda);
    // Without an SM count only the columns decide a coarse grid: twice the parts at T = 100 (66 splits).
    const int parts = hcwarm_mhc::cuda_residual_parts(plan.kernel_splits, d.hc_mult, static_cast<int>(d.hidden), t, 0);
    EXPECT_EQ(parts, t == 100 ? 2 * cuda::cuda_num_parts(plan.kernel_splits) : cuda::cuda_num_parts(plan.kernel_splits)) << t;
    const size_t pair = static_cast<size_t>(t) * parts * hcwarm_mhc::kPartialStride * sizeof(float);
    EXPECT_EQ(plan.split_parts, parts) << t;
    EXPECT_EQ(plan.workspace_bytes, plan.one_pass() ? std::max(pair, cuda::one_pass_workspace_bytes(t)) : pair) << t;
  }
  cpu::CpuHcPreBackend cpu_backend(4, std::make_shared<ThreadPool>(1));
  for (const int64_t t : {1, 64, 1000, 16384}) {
    const HcPreLaunchPlan plan = plan_for_tokens(Backend::Cpu, {4, 1024}, 16, t, false, cuda);
    EXPECT_EQ(plan.split_parts, plan.kernel_splits) << t;
    EXPECT_EQ(plan.workspace_bytes, cpu_backend.workspace_bytes(t, plan.kernel_splits)) << t;
  }
  HcPreLaunchRequest bucket_only;
  bucket_only.num_splits = 3;
  EXPECT_EQ(plan_hc_pre_launch(bucket_only).workspace_bytes, 0u);  // no tokens: a key's plan
  HcPreLaunchRequest bad;
  bad.num_splits = 0;
  EXPECT_THROW(plan_hc_pre_launch(bad), Error);
}

// The one-wave pair (hcwarm_mhc::cuda_one_wave, docs/BENCHMARKS.md "The one-wave pair at hidden
// 4096"): at hidden 4096 from 129 to 512 tokens, specialized residual calls run two thirds
// of the class's parts; every other call runs its class's pair. The key's kernels carry it
// whatever the call, the option or the form (the generic fatbin for every class); the workspace
// still holds all the parts (what kernels without the pair run).
TEST(HcPreLaunchPlan, OneWavePairAtHidden4096From129To512Tokens) {
  CudaKernelOptions on;
  on.num_sms = 132;
  for (const int hidden : {4096, 7168}) {
    const MhcDims d{4, hidden};
    for (const int64_t t : {1, 64, 128, 129, 192, 193, 255, 256, 300, 384, 448, 512, 513, 2048}) {
      const std::string where = "D " + std::to_string(hidden) + " T " + std::to_string(t);
      const HcPreLaunchPlan plan = plan_for_tokens(Backend::Cuda, d, 132, t, true, on);
      const bool want = hidden == 4096 && t >= 129 && t <= 512;
      EXPECT_EQ(plan.one_wave, want) << where;
      EXPECT_EQ(plan.one_wave_kernels, !plan.one_pass() && hidden == 4096 &&
                                           (plan.split_class == 5 || plan.split_class == 22))
          << where;
      const int full = cuda::cuda_num_parts(plan.kernel_splits);
      EXPECT_EQ(plan.split_parts, t <= 128 ? hcwarm_mhc::cuda_residual_parts(plan.kernel_splits, 4, hidden, t, 132) : full)
          << where;
      EXPECT_EQ(plan.one_wave_parts, want ? (2 * full + 2) / 3 : 0) << where;
      EXPECT_EQ(plan.workspace_bytes, plan.one_pass() ? plan.workspace_bytes
                                                      : static_cast<size_t>(t) * plan.split_parts * hcwarm_mhc::kPartialStride * 4)
          << where;
      // Off in the portable forms, on cc 12 (one 88 KB partial block per SM), with the option off,
      // for the embedding and the boundary; on on datacenter Blackwell.
      CudaKernelOptions portable = on, off = on, sm120 = on, sm100 = on;
      portable.portable = true;
      off.one_wave = false;
      sm120.arch = "sm_120";
      sm100.arch = "sm_100a";
      EXPECT_FALSE(plan_for_tokens(Backend::Cuda, d, 132, t, true, portable).one_wave) << where;
      EXPECT_FALSE(plan_for_tokens(Backend::Cuda, d, 132, t, true, sm120).one_wave) << where;
      EXPECT_EQ(plan_for_tokens(Backend::Cuda, d, 132, t, true, sm100).one_wave, want) << where;
      const HcPreLaunchPlan unset = plan_for_tokens(Backend::Cuda, d, 132, t, true, off);
      EXPECT_FALSE(unset.one_wave) << where;
      EXPECT_EQ(unset.one_wave_kernels, plan.one_wave_kernels) << where << ": the option changes no key";
      EXPECT_EQ(hc_pre_kernel_spec(unset).source, hc_pre_kernel_spec(plan).source) << where;
      for (const HcPreInput input : {HcPreInput::Embed, HcPreInput::Post}) {
        const HcPreLaunchPlan other = plan_for_tokens(Backend::Cuda, d, 132, t, true, on, input);
        EXPECT_FALSE(other.one_wave || other.one_wave_kernels) << where << " " << to_string(input);
      }
      EXPECT_EQ(generic_plan_of(plan, on).one_wave, want) << where << ": the generic fatbin has the pair too";
    }
  }
  // Every dsv4-flash bucket of 129-512 tokens on 132 SMs is in class 5 or 22: the rule's range is all one-wave.
  for (int64_t t = 129; t <= 512; ++t) {
    const HcPreLaunchPlan plan = plan_for_tokens(Backend::Cuda, {4, 4096}, 132, t, false, on);
    ASSERT_TRUE(plan.one_wave) << t;
    ASSERT_GE(plan.one_wave_parts, 1) << t;
    ASSERT_LT(plan.one_wave_parts, plan.split_parts) << t;
  }
}

// The deep partial (hcwarm_mhc::cuda_deep_partial, docs/BENCHMARKS.md "The deep partial at hidden
// 7168"): residual calls at hidden 7168 up to 128 tokens run it with the class's parts and finish,
// and the one-wave pair's calls run it too; every other call runs the class's partial. Hidden
// 7168's class 22 carries it whatever the call; it is off in the portable forms and on cc 12, on
// for the generic kernels, and the one-wave option does not touch it at 7168.
TEST(HcPreLaunchPlan, DeepPartialAtHidden7168UpTo128Tokens) {
  for (const int sms : {132, 148}) {
    CudaKernelOptions on;
    on.num_sms = sms;
    CudaKernelOptions portable = on, off = on, sm120 = on, sm100 = on;
    portable.portable = true;
    off.one_wave = false;
    sm120.arch = "sm_120";
    sm100.arch = "sm_100a";
    for (const int hidden : {4096, 7168}) {
      const MhcDims d{4, hidden};
      for (int64_t t = 1; t <= 600; t += t < 200 ? 1 : 29) {
        const std::string where = "sms " + std::to_string(sms) + " D " + std::to_string(hidden) + " T " + std::to_string(t);
        const HcPreLaunchPlan plan = plan_for_tokens(Backend::Cuda, d, sms, t, true, on);
        const bool class22 = !plan.one_pass() && plan.split_class == 22;
        EXPECT_EQ(plan.deep_partial_kernels, plan.one_wave_kernels || (hidden == 7168 && class22)) << where;
        const bool want = plan.one_wave || (hidden == 7168 && t <= 128);
        EXPECT_EQ(plan.deep_partial, want) << where;
        if (hidden == 7168 && t <= 128) {
          EXPECT_TRUE(class22) << where << ": every bucket up to 128 tokens is in class 22";
          EXPECT_EQ(plan.split_parts, hcwarm_mhc::cuda_residual_parts(plan.kernel_splits, 4, hidden, t, sms)) << where;
          EXPECT_EQ(plan.one_wave_parts, 0) << where;
        }
        EXPECT_FALSE(plan_for_tokens(Backend::Cuda, d, sms, t, true, portable).deep_partial) << where;
        EXPECT_FALSE(plan_for_tokens(Backend::Cuda, d, sms, t, true, sm120).deep_partial) << where;
        EXPECT_EQ(plan_for_tokens(Backend::Cuda, d, sms, t, true, sm100).deep_partial, want) << where;
        const HcPreLaunchPlan unset = plan_for_tokens(Backend::Cuda, d, sms, t, true, off);
        EXPECT_EQ(unset.deep_partial, hidden == 7168 && t <= 128) << where << ": the one-wave option";
        EXPECT_EQ(unset.deep_partial_kernels, plan.deep_partial_kernels) << where << ": the option changes no key";
        for (const HcPreInput input : {HcPreInput::Embed, HcPreInput::Post}) {
          const HcPreLaunchPlan other = plan_for_tokens(Backend::Cuda, d, sms, t, true, on, input);
          EXPECT_FALSE(other.deep_partial || other.deep_partial_kernels) << where << " " << to_string(input);
        }
        EXPECT_EQ(generic_plan_of(plan, on).deep_partial, want) << where << ": the generic fatbin has it too";
      }
    }
  }
}

// Residual streams where the class's partial grid is coarse (hcwarm_mhc::cuda_residual_parts,
// docs/BENCHMARKS.md "Twice the parts where the grid is coarse"): on 132 SMs twice the parts at
// hidden 4096 up to 64 tokens (64 blocks: half the SMs idle) and at 7168 from 65 to 128 (448
// columns a block); the class's parts everywhere else, for the embedding and the boundary, and
// the same choice for the generic kernels. Never more than the kernels take or the workspace holds.
TEST(HcPreLaunchPlan, TwiceThePartsWhereTheGridIsCoarse) {
  CudaKernelOptions on;
  on.num_sms = 132;
  for (const int hidden : {4096, 7168}) {
    const MhcDims d{4, hidden};
    for (int64_t t = 1; t <= 600; t += t < 160 ? 1 : 37) {
      const std::string where = "D " + std::to_string(hidden) + " T " + std::to_string(t);
      const HcPreLaunchPlan plan = plan_for_tokens(Backend::Cuda, d, 132, t, true, on);
      if (plan.one_pass()) continue;
      const int full = cuda::cuda_num_parts(plan.kernel_splits);
      const bool twice = hidden == 4096 ? t <= 64 : t >= 65 && t <= 128;
      ASSERT_EQ(plan.split_parts, twice ? 2 * full : full) << where;
      EXPECT_LE(plan.split_parts, hcwarm_mhc::cuda_max_parts(plan.kernel_splits)) << where;
      EXPECT_LE(plan.split_parts, hcwarm_mhc::cuda_finish_batch_parts(plan.split_class)) << where << ": one batch";
      EXPECT_EQ(plan.workspace_bytes, static_cast<size_t>(t) * plan.split_parts * hcwarm_mhc::kPartialStride * 4) << where;
      if (twice) {
        const int64_t blocks = int64_t{plan.split_parts} * ((t + 63) / 64);
        EXPECT_LE(blocks, 2 * 132) << where << ": at most two blocks per SM";
      }
      for (const HcPreInput input : {HcPreInput::Embed, HcPreInput::Post}) {
        const HcPreLaunchPlan other = plan_for_tokens(Backend::Cuda, d, 132, t, true, on, input);
        EXPECT_LE(other.split_parts, full) << where << " " << to_string(input);
      }
      EXPECT_EQ(generic_plan_of(plan, on).split_parts, plan.split_parts) << where << ": generic";
    }
  }
  // 148 SMs: the same two cases (64 splits at 4096 up to 64 tokens; 74 at 7168, 65-128 tokens), within one batch.
  CudaKernelOptions b200 = on;
  b200.num_sms = 148;
  EXPECT_EQ(plan_for_tokens(Backend::Cuda, {4, 4096}, 148, 64, true, b200).split_parts, 128);
  EXPECT_EQ(plan_for_tokens(Backend::Cuda, {4, 4096}, 148, 65, true, b200).split_parts, 64);
  EXPECT_EQ(plan_for_tokens(Backend::Cuda, {4, 7168}, 148, 100, true, b200).split_parts, 148);
  EXPECT_EQ(plan_for_tokens(Backend::Cuda, {4, 7168}, 148, 1, true, b200).split_parts, 112);
  // The backend's workspace for a bucket holds the most parts any call of it may run.
  for (int s = 1; s <= 256; ++s) {
    EXPECT_GE(hcwarm_mhc::cuda_max_parts(s), cuda::cuda_num_parts(s)) << s;
    EXPECT_GE(hcwarm_mhc::cuda_max_parts(s), hcwarm_mhc::cuda_residual_parts(s, 4, 7168, 1, 132)) << s;
  }
}

// The embedding's split pair: fewer, wider parts where tokens are plentiful,
// never fewer than a quarter of the residual's, and a grid of at least 3 blocks
// per SM wherever it runs fewer than the residual's; the workspace follows.
TEST(HcPreLaunchPlan, EmbeddingRunsFewerWiderPartsWhereTokensArePlentiful) {
  for (const int sms : {132, 148}) {
    for (const int hidden : {4096, 7168}) {
      const MhcDims d{4, hidden};
      CudaKernelOptions cuda;
      cuda.num_sms = sms;
      for (const int64_t t : {1, 77, 512, 2048, 3000, 4500, 9000, 16384}) {
        const std::string where = "sms " + std::to_string(sms) + " D " + std::to_string(hidden) + " T " + std::to_string(t);
        const HcPreLaunchPlan embed = plan_for_tokens(Backend::Cuda, d, sms, t, true, cuda, HcPreInput::Embed);
        const HcPreLaunchPlan residual = plan_for_tokens(Backend::Cuda, d, sms, t, true, cuda);
        ASSERT_FALSE(embed.one_pass()) << where;
        const int full = cuda::cuda_num_parts(embed.kernel_splits);
        const int64_t tile = 16 * hcwarm_mhc::cuda_partial_warps(embed.kernel_splits);
        const int64_t blocks = embed.split_parts * ((t + tile - 1) / tile);
        EXPECT_LE(embed.split_parts, full) << where;
        EXPECT_GE(embed.split_parts * 4, full) << where;
        if (embed.split_parts < full) EXPECT_GE(blocks, 3 * sms) << where;
        // One part fewer would leave the grid short of 3 blocks per SM, or go below a quarter.
        if (embed.split_parts * 4 > full + 3) EXPECT_LT((embed.split_parts - 1) * ((t + tile - 1) / tile), 3 * sms) << where;
        const size_t partials = static_cast<size_t>(t) * embed.split_parts * hcwarm_mhc::kPartialStride * sizeof(float);
        EXPECT_EQ(embed.workspace_bytes, partials + (embed.fold_fn ? 24 * hidden * sizeof(float) : 0)) << where;
        if (!residual.one_pass()) {  // residual streams: the class's parts, or twice where the grid is coarse
          EXPECT_EQ(residual.split_parts, hcwarm_mhc::cuda_residual_parts(residual.kernel_splits, 4, hidden, t, sms)) << where;
        }
      }
      // The largest bucket runs a quarter of the residual's parts; decode all of them.
      EXPECT_EQ(plan_for_tokens(Backend::Cuda, d, sms, 16384, true, cuda, HcPreInput::Embed).split_parts, 6);
      const HcPreLaunchPlan decode = plan_for_tokens(Backend::Cuda, d, sms, 1, true, cuda, HcPreInput::Embed);
      EXPECT_EQ(decode.split_parts, cuda::cuda_num_parts(decode.kernel_splits));
    }
  }
  // Without an SM count (a key's plan): the residual's count.
  const HcPreLaunchPlan unknown = plan_for_tokens(Backend::Cuda, {4, 7168}, 132, 16384, true, {}, HcPreInput::Embed);
  EXPECT_EQ(unknown.split_parts, cuda::cuda_num_parts(unknown.kernel_splits));
}

// The embedding's streaming finish at the buckets where it was measured (docs/BENCHMARKS.md,
// "The first layer's pre from the embedding"): four row vectors in flight at 2048 tokens (4
// splits) at both widths and from 8192 tokens (1 split) at hidden 7168, which there also runs a
// y and a comb block per token; one row and one block a token at hidden 4096 from 8192 tokens,
// in the generic kernels, and for residual streams.
TEST(HcPreLaunchPlan, EmbeddingStreamingFinishRowsAndBlocksFollowTheMeasuredBuckets) {
  CudaKernelOptions cuda;
  cuda.num_sms = 132;
  for (const int hidden : {4096, 7168}) {
    const MhcDims d{4, hidden};
    for (const int64_t t : {2048, 8192, 16384}) {
      const std::string where = "D " + std::to_string(hidden) + " T " + std::to_string(t);
      const HcPreLaunchPlan embed = plan_for_tokens(Backend::Cuda, d, 132, t, true, cuda, HcPreInput::Embed);
      const int c = embed.split_class;
      ASSERT_EQ(c, t == 2048 ? 3 : 1) << where;
      const bool wide_single = c == 1 && hidden >= 7168;
      EXPECT_EQ(hcwarm_mhc::cuda_finish_stream_rows(c, hidden, hcwarm_mhc::kInputEmbed), c == 3 || wide_single ? 4 : 1) << where;
      EXPECT_EQ(hcwarm_mhc::cuda_split_finish(embed.kernel_splits, hidden, hcwarm_mhc::kInputEmbed, t, false), wide_single) << where;
      EXPECT_FALSE(hcwarm_mhc::cuda_split_finish(embed.kernel_splits, hidden, hcwarm_mhc::kInputEmbed, t, true)) << where << " generic";
      const HcPreLaunchPlan residual = plan_for_tokens(Backend::Cuda, d, 132, t, true, cuda);
      EXPECT_EQ(hcwarm_mhc::cuda_finish_stream_rows(residual.split_class, hidden, hcwarm_mhc::kInputResidual), 1) << where;
      EXPECT_FALSE(hcwarm_mhc::cuda_split_finish(residual.kernel_splits, hidden, hcwarm_mhc::kInputResidual, t, false)) << where;
    }
  }
  EXPECT_EQ(hcwarm_mhc::cuda_finish_stream_rows(hcwarm_mhc::kCudaAnyStreamingClass, 0, hcwarm_mhc::kInputRuntime), 1) << "generic";
}

// The embedding's fn is folded once per call, by the fold kernel, from
// kCudaEmbedFoldMinTokens tokens on: the plan sets the room for it after the
// partials. Other inputs, smaller calls and other backends fold nothing.
TEST(HcPreLaunchPlan, EmbeddingFoldsFnOnceWhereTokensArePlentiful) {
  for (const int hidden : {4096, 7168}) {
    const MhcDims d{4, hidden};
    CudaKernelOptions cuda;
    cuda.num_sms = 132;
    for (const int64_t t : {1, 512, 2047, 2048, 4500, 16384}) {
      const std::string where = "D " + std::to_string(hidden) + " T " + std::to_string(t);
      const HcPreLaunchPlan embed = plan_for_tokens(Backend::Cuda, d, 132, t, true, cuda, HcPreInput::Embed);
      EXPECT_EQ(embed.fold_fn, t >= 2048) << where;
      const size_t partials = static_cast<size_t>(t) * embed.split_parts * hcwarm_mhc::kPartialStride * sizeof(float);
      EXPECT_EQ(embed.fold_offset, embed.fold_fn ? partials : 0) << where;
      EXPECT_EQ(embed.fold_offset % 16, 0u) << where;  // the fold kernel stores 16 bytes at a time
      EXPECT_EQ(embed.workspace_bytes, partials + (embed.fold_fn ? 24u * hidden * sizeof(float) : 0)) << where;
      for (const HcPreInput other : {HcPreInput::Residual, HcPreInput::Post}) {
        EXPECT_FALSE(plan_for_tokens(Backend::Cuda, d, 132, t, true, cuda, other).fold_fn) << where;
      }
      EXPECT_FALSE(plan_for_tokens(Backend::Cpu, d, 132, t, true, {}, HcPreInput::Embed).fold_fn) << where;
    }
    // A bucket's plan (no token count, its key) folds nothing; its kernels still carry the fold.
    const HcPreLaunchPlan bucket = plan_hc_pre_launch({.backend = Backend::Cuda, .dims = d, .cuda = cuda,
                                                       .input = HcPreInput::Embed, .num_splits = 1});
    EXPECT_FALSE(bucket.fold_fn);
    EXPECT_TRUE(cuda::mhc_pre_entries(bucket).fold.has_value());
  }
}

// How far the one-pass kernel's TMA runs ahead of its y (the launcher passes it
// from the device's L2): the rows of that many 128-token chunks fit 60% of the
// L2, at most kOnePassWindow, at least one; 5 where the L2 is not known.
TEST(HcPreLaunchPlan, OnePassWindowKeepsItsRowsInSixtyPercentOfTheL2) {
  using hcwarm_mhc::kOnePassWindow;
  using hcwarm_mhc::one_pass_window;
  for (const long long l2 : {8LL << 20, 40LL << 20, 50LL << 20, 60LL << 20, 126LL << 20}) {
    for (const int hidden : {1024, 2048, 4096, 5120, 7168}) {
      const int w = one_pass_window(hidden, l2);
      const long long rows = static_cast<long long>(hcwarm_mhc::kOnePassTokens) * 4 * hidden * 2;
      const long long budget = l2 / 5 * 3;
      SCOPED_TRACE(fmt::format("L2 {} MiB, hidden {}", l2 >> 20, hidden));
      EXPECT_GE(w, 1);
      EXPECT_LE(w, kOnePassWindow);
      if (w > 1) EXPECT_LE(w * rows, budget);
      if (w < kOnePassWindow) EXPECT_GT((w + 1) * rows, budget);
    }
  }
  EXPECT_EQ(one_pass_window(7168, 50LL << 20), 4);  // H100: 5 chunks (36.7 MB) overflowed its L2
  EXPECT_EQ(one_pass_window(7168, 60LL << 20), 5);  // H200
  EXPECT_EQ(one_pass_window(4096, 50LL << 20), 5);
  EXPECT_EQ(one_pass_window(7168, 0), kOnePassWindow);  // L2 size unknown: as before it was read
  EXPECT_EQ(one_pass_window(7168, 1LL << 20), 1);       // not one chunk's rows: still makes progress
}

// The source generator reads the form and refuses a one-pass source for a
// count other than 1 or an input other than the residual, and a CPU plan.
TEST(HcPreLaunchPlan, SourceGeneratorOnlyReadsThePlan) {
  EXPECT_THROW(cuda::mhc_pre_cuda_source(2, 4, 4096, true, /*one_pass=*/true, true), Error);
  EXPECT_THROW(cuda::mhc_pre_cuda_source(1, 4, 4096, true, true, true, hcwarm_mhc::kInputEmbed), Error);
  HcPreLaunchRequest r;
  r.backend = Backend::Cpu;
  r.dims = {4, 4096};
  r.num_splits = 4;
  EXPECT_THROW(cuda::mhc_pre_cuda_source(plan_hc_pre_launch(r)), Error);
  r.backend = Backend::Cuda;
  r.num_splits = 1;
  r.splits_are = HcPreSplitsAre::Kernel;
  const HcPreLaunchPlan plan = plan_hc_pre_launch(r);
  ASSERT_TRUE(plan.one_pass());
  EXPECT_EQ(cuda::mhc_pre_cuda_source(plan), cuda::mhc_pre_cuda_source(1, 4, 4096, false, true, true));
}

}  // namespace
}  // namespace hcwarm::mhc
