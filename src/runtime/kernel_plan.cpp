#include "runtime/kernel_plan.hpp"

#include "model/standin/swiglu_cuda.hpp"
#include "mhc/hc_head_op.hpp"
#include "mhc/hc_post_op.hpp"
#include "model/deepseek_v4.hpp"

namespace hcwarm::runtime {

std::string mhc_prewarm_skipped(const KernelPlanInput& in) {
  const bool fast = mhc::HcPreOp::uses_fast_path(in.backend, in.variant);
  return in.model_hook_conditions ? model::mhc_hook_skip_reason(in.model, fast, in.env)
                                  : model::mhc_prewarm_skip_reason(fast, in.env);
}

KernelRegistry make_kernel_registry(const KernelPlanInput& in) {
  KernelRegistry r;
  const mhc::MhcDims dims = in.model.mhc_dims();
  const bool cuda = in.backend == mhc::Backend::Cuda;
  r.add(
      "mhc_pre",
      [in, dims]() -> std::vector<jit::KernelSpec> {
        if (!mhc_prewarm_skipped(in).empty()) return {};
        // Every layer fuses its sublayer's RMSNorm into hc_pre.
        return mhc::hc_pre_planned_specs(in.backend, dims, in.server.num_sms, in.server.max_num_tokens(),
                                         /*fused_norm=*/true, in.cuda);
      },
      /*mhc_prewarm=*/true);
  // The first layer's hc_pre reads the token embedding (input=embed): its own key per bucket.
  r.add(
      "mhc_pre_embed",
      [in, dims]() -> std::vector<jit::KernelSpec> {
        if (!mhc_prewarm_skipped(in).empty()) return {};
        return mhc::hc_pre_planned_specs(in.backend, dims, in.server.num_sms, in.server.max_num_tokens(),
                                         /*fused_norm=*/true, in.cuda, mhc::HcPreInput::Embed);
      },
      /*mhc_prewarm=*/true);
  // The sublayer boundary (hc_post of sublayer n fused with hc_pre of n + 1, input=post):
  // its own key per bucket, with the next sublayer's norm.
  r.add(
      "mhc_post_pre",
      [in, dims]() -> std::vector<jit::KernelSpec> {
        if (!mhc_prewarm_skipped(in).empty()) return {};
        return mhc::hc_pre_planned_specs(in.backend, dims, in.server.num_sms, in.server.max_num_tokens(),
                                         /*fused_norm=*/true, in.cuda, mhc::HcPreInput::Post);
      },
      /*mhc_prewarm=*/true);
  r.add("mhc_head", [cuda, dims, arch = in.cuda.arch, portable = in.cuda.portable]() -> std::vector<jit::KernelSpec> {
    if (!cuda) return {};
    return {mhc::HcHeadOp::cuda_spec(dims, arch, portable)};
  });
  r.add("mhc_post", [cuda, dims, arch = in.cuda.arch]() -> std::vector<jit::KernelSpec> {
    if (!cuda) return {};
    return {mhc::HcPostOp::cuda_spec(dims, arch)};
  });
  r.add("swiglu_mlp", [cuda, hidden = in.model.hidden_size, width = in.mlp_width, arch = in.cuda.arch]()
                          -> std::vector<jit::KernelSpec> {
    if (!cuda) return {};
    return {cuda::CudaSwigluBackend::kernel_spec(hidden, width, arch)};
  });
  return r;
}

}  // namespace hcwarm::runtime
