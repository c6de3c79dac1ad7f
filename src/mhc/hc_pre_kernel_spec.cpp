#include "mhc/hc_pre_kernel_spec.hpp"

#include <algorithm>
#include <charconv>
#include <string>

#include "backends/cpu/mhc_pre_cpu.hpp"
#include "backends/cuda/mhc_pre_cuda.hpp"
#include "core/error.hpp"
#include "mhc/hc_post_pre.hpp"
#include "mhc/split_policy.hpp"

namespace hcwarm::mhc {

namespace {
HcPreLaunchRequest request(Backend backend, MhcDims dims, int num_splits, bool fused_norm,
                           const CudaKernelOptions& cuda, HcPreInput input, HcPreSplitsAre splits_are) {
  HcPreLaunchRequest r;
  r.backend = backend;
  r.dims = dims;
  r.cuda = cuda;
  r.input = input;
  r.fused_norm = fused_norm;
  r.num_splits = num_splits;
  r.splits_are = splits_are;
  return r;
}
}  // namespace

jit::KernelSpec hc_pre_kernel_spec(const HcPreLaunchPlan& plan) {
  HCWARM_CHECK_ARG(plan.backend != Backend::Reference, "the reference backend has no kernels");
  const bool cpu = plan.backend == Backend::Cpu;
  const MhcDims& dims = plan.dims;
  jit::KernelSpec s;
  s.family = "mhc_pre";
  // The order and the spelling of the params are the keys on disk: unchanged.
  s.params = {{cpu ? "num_splits" : "splits",
               cpu ? std::to_string(plan.kernel_splits) : cuda::cuda_split_class_name(plan.split_class)},
              {"hc", std::to_string(dims.hc_mult)},
              {"hidden", std::to_string(dims.hidden)},
              {"norm", plan.fused_norm ? "1" : "0"}};
  if (plan.input != HcPreInput::Residual) s.params.emplace_back("input", to_string(plan.input));  // residual keys stay as they were
  if (cpu) {
    s.target = jit::TargetKind::Host;
    s.source = cpu::mhc_pre_cpu_source(plan.kernel_splits, dims.hc_mult, dims.hidden, plan.fused_norm, plan.input_code);
  } else {
    s.target = jit::TargetKind::Cuda;
    s.arch = plan.arch;
    if (plan.one_pass()) s.params.emplace_back("one_pass", "1");
    if (plan.fast_finish) s.params.emplace_back("finish", "fast");
    s.set_source(cuda::mhc_pre_cuda_source(plan));
  }
  return s;
}

jit::KernelSpec hc_pre_kernel_spec(Backend backend, MhcDims dims, int splits, bool fused_norm,
                                   const CudaKernelOptions& cuda, HcPreInput input) {
  HCWARM_CHECK_ARG(backend != Backend::Reference, "the reference backend has no kernels");
  return hc_pre_kernel_spec(
      plan_hc_pre_launch(request(backend, dims, splits, fused_norm, cuda, input, HcPreSplitsAre::Kernel)));
}

int hc_pre_kernel_splits(Backend backend, MhcDims dims, int num_splits, const CudaKernelOptions& cuda,
                         HcPreInput input) {
  return plan_hc_pre_launch(request(backend, dims, num_splits, false, cuda, input, HcPreSplitsAre::Bucket))
      .kernel_splits;
}

int hc_pre_spec_num_splits(const jit::KernelSpec& spec) {
  HCWARM_CHECK_ARG(spec.family == "mhc_pre", "{} is not an hc_pre spec", spec.family);
  const std::string_view n = spec.param("num_splits");
  const std::string_view c = n.empty() ? spec.param("splits") : n;  // a class: "3-4", "22+" -> its first count
  int v = 0;
  const auto [end, ec] = std::from_chars(c.data(), c.data() + c.size(), v);
  HCWARM_CHECK_ARG(ec == std::errc{} && end != c.data() && v >= 1,
                   "hc_pre spec with no split count (num_splits or splits): {}", spec.describe());
  return v;
}

std::vector<jit::KernelSpec> hc_pre_planned_specs(Backend backend, MhcDims dims, int num_sms, int64_t max_num_tokens,
                                                  bool fused_norm, const CudaKernelOptions& cuda, HcPreInput input) {
  std::vector<jit::KernelSpec> out;
  // The boundary runs the fused kernel only up to fused_boundary_max_tokens (hc_post_pre.hpp).
  if (input == HcPreInput::Post) {
    max_num_tokens = std::min(max_num_tokens, fused_boundary_max_tokens(backend, dims, num_sms));
  }
  // What run() does per call: the bucket's split count, planned, and the plan's spec.
  for (const SplitBucket& b : split_buckets(max_num_tokens, dims.k(), num_sms)) {
    HCWARM_ASSERT(mhc::num_splits(b.representative(), dims.k(), num_sms) == b.num_splits,
                  "split bucket disagrees with num_splits");
    jit::KernelSpec s = hc_pre_kernel_spec(
        plan_hc_pre_launch(request(backend, dims, b.num_splits, fused_norm, cuda, input, HcPreSplitsAre::Bucket)));
    // CUDA: the buckets of a split class share one spec.
    const bool seen = std::any_of(out.begin(), out.end(), [&](const jit::KernelSpec& o) { return o.params == s.params; });
    if (!seen) out.push_back(std::move(s));
  }
  return out;
}

}  // namespace hcwarm::mhc
