#include "mhc/hc_pre_launch_plan.hpp"

#include <algorithm>
#include <utility>

#include "backends/cuda/mhc_pre_cuda.hpp"
#include "core/error.hpp"
#include "jit/cuda_targets.hpp"
#include "kernels/common/mhc_params.hpp"

namespace hcwarm::mhc {

namespace {

// The kernels' name of an input kind (kernels/common/mhc_params.hpp).
int input_code(HcPreInput input) {
  return input == HcPreInput::Embed  ? hcwarm_mhc::kInputEmbed
         : input == HcPreInput::Post ? hcwarm_mhc::kInputPost
                                     : hcwarm_mhc::kInputResidual;
}

// The decision itself (see the header for the rule and its source).
bool runs_one_pass(const HcPreLaunchRequest& r) {
  if (r.backend != Backend::Cuda || !r.cuda.one_pass || r.cuda.portable || r.input != HcPreInput::Residual) {
    return false;
  }
  const int hidden = static_cast<int>(r.dims.hidden);
  const auto cc = jit::parse_cuda_arch(r.cuda.arch);  // an unreadable target: no one-pass kernel
  if (!cc || !cuda::one_pass_supported(r.dims.hc_mult, hidden, cc->first, r.cuda.num_sms)) return false;
  return r.splits_are == HcPreSplitsAre::Kernel ? r.num_splits == 1 : r.num_splits <= cuda::one_pass_max_splits(hidden);
}

}  // namespace

CudaKernelOptions cuda_kernel_options(std::string arch, bool one_pass, bool force_portable) {
  CudaKernelOptions o;
  o.portable = force_portable || jit::cuda_portable_target(arch);
  o.arch = std::move(arch);
  o.one_pass = one_pass;
  return o;
}

const char* to_string(HcPreKernelForm form) {
  return form == HcPreKernelForm::OnePass ? "one-pass" : "split-k pair";
}

HcPreLaunchPlan plan_hc_pre_launch(const HcPreLaunchRequest& r) {
  HCWARM_CHECK_ARG(r.num_splits >= 1, "num_splits must be >= 1, got {}", r.num_splits);
  HcPreLaunchPlan p;
  p.backend = r.backend;
  p.variant = r.variant;
  p.dims = r.dims;
  p.input = r.input;
  p.input_code = input_code(r.input);
  p.fused_norm = r.fused_norm;
  p.num_tokens = std::max<int64_t>(r.num_tokens, 0);
  p.bucket_splits = r.num_splits;
  p.form = runs_one_pass(r) ? HcPreKernelForm::OnePass : HcPreKernelForm::SplitKPair;
  p.kernel_splits = p.one_pass() ? 1 : r.num_splits;
  p.split_class = p.kernel_splits;
  p.split_parts = p.kernel_splits;  // the CPU's partial stage: one part per split
  if (r.backend == Backend::Cuda) {
    p.arch = r.cuda.arch;
    p.fast_finish = r.cuda.fast_finish;
    p.num_sms = r.cuda.num_sms;
    // CUDA kernels read the split count at run time: one specialization serves a class.
    p.split_class = cuda::cuda_split_class(p.kernel_splits);
    const int hidden = static_cast<int>(r.dims.hidden);
    p.split_parts = p.input == HcPreInput::Embed
                        ? hcwarm_mhc::cuda_embed_parts(p.kernel_splits, p.num_tokens, r.cuda.num_sms)
                    : p.input == HcPreInput::Residual
                        ? hcwarm_mhc::cuda_residual_parts(p.kernel_splits, r.dims.hc_mult, hidden, p.num_tokens, r.cuda.num_sms)
                        : cuda::cuda_num_parts(p.kernel_splits);
    p.partial_warps = cuda::cuda_partial_warps(p.kernel_splits);
    if (p.one_pass()) p.one_pass_threads = cuda::one_pass_threads(hidden);
    p.fold_fn = p.input == HcPreInput::Embed && hcwarm_mhc::cuda_embed_folds(p.num_tokens);
    p.one_wave_kernels = hcwarm_mhc::cuda_one_wave_kernels(p.split_class, hidden, p.input_code);
    p.deep_partial_kernels = hcwarm_mhc::cuda_deep_partial_kernels(p.split_class, hidden, p.input_code);
    // The deep partial's grids are sized for two of its 88 KB blocks per SM: not where an SM holds one.
    const bool two_deep_blocks = !r.cuda.portable && jit::cuda_large_smem_target(r.cuda.arch);
    p.one_wave = p.one_wave_kernels && r.cuda.one_wave && two_deep_blocks &&
                 hcwarm_mhc::cuda_one_wave(p.kernel_splits, hidden, p.num_tokens);
    if (p.one_wave) p.one_wave_parts = hcwarm_mhc::cuda_one_wave_parts(p.kernel_splits);
    p.deep_partial = p.one_wave || (p.deep_partial_kernels && two_deep_blocks &&
                                    hcwarm_mhc::cuda_deep_partial(p.kernel_splits, hidden, p.num_tokens));
  }
  if (r.backend != Backend::Reference && p.num_tokens > 0) {
    p.workspace_bytes =
        static_cast<size_t>(p.num_tokens) * p.split_parts * hcwarm_mhc::kPartialStride * sizeof(float);
    if (p.fold_fn) {  // after the partials: a multiple of 128 bytes from the workspace's start
      p.fold_offset = p.workspace_bytes;
      p.workspace_bytes += static_cast<size_t>(hcwarm_mhc::fold_bytes(r.dims.hc_mult, r.dims.hidden));
    }
    if (p.one_pass()) p.workspace_bytes = std::max(p.workspace_bytes, cuda::one_pass_workspace_bytes(p.num_tokens));
  }
  return p;
}

}  // namespace hcwarm::mhc
