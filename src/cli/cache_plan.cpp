#include "cli/cache_plan.hpp"

#include <set>

#include "core/error.hpp"

namespace hcwarm::cli {

void add_cache_plan_options(CLI::App* cmd, CachePlanOptions& o) {
  add_plan_options(cmd, o.model);
  add_backend_option(cmd, o.model, "cpu | cuda", "cuda");
  cmd->add_option("--arch", o.arch, "GPU architecture to compile for (CUDA backend)")->capture_default_str();
  add_mlp_width_option(cmd, o.mlp_width);
}

CachePlan make_cache_plan(const CliContext& ctx, const CachePlanOptions& o) {
  CachePlan p{o.model.resolve(ctx), {}, {}};
  runtime::KernelPlanInput& in = p.input;
  in.model = p.resolved.model;
  in.server = p.resolved.server;
  in.env = ctx.env;
  in.backend = o.model.backend.empty() ? mhc::Backend::Cuda : mhc::parse_backend(o.model.backend);
  // The keys the runner will ask for: a target below sm_90 (or HCWARM_CUDA_PORTABLE) takes the portable forms.
  in.cuda = mhc::cuda_kernel_options(o.arch, ctx.env.mhc_one_pass, ctx.env.cuda_portable);
  in.mlp_width = o.mlp_width;
  HCWARM_CHECK_ARG(in.backend != mhc::Backend::Reference, "--backend reference has no kernels to build");
  p.specs = runtime::make_kernel_registry(in).planned(/*include_mhc=*/true);
  return p;
}

std::vector<PlannedKey> planned_keys(const jit::JitRuntime& jit, const std::vector<jit::KernelSpec>& specs) {
  std::vector<PlannedKey> out;
  std::set<std::string> seen;
  for (const jit::KernelSpec& s : specs) {
    PlannedKey k{jit.cache_namespace(s), jit.key(s), s.family, s.describe()};
    if (seen.insert(k.key).second) out.push_back(std::move(k));
  }
  return out;
}

}  // namespace hcwarm::cli
