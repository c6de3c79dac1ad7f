#pragma once
// The kernels a server of one configuration will ask for, planned the way
// `hcwarm cache build` plans them (runtime/kernel_plan.hpp), for the commands
// that build, check or export the cache of a configuration without a GPU.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/model_options.hpp"
#include "cli/runner_options.hpp"
#include "jit/jit_runtime.hpp"
#include "runtime/kernel_plan.hpp"

namespace hcwarm::cli {

struct CachePlanOptions {
  ModelOptions model;
  std::string arch = "sm_90a";
  int mlp_width = kDefaultMlpWidth;  // the servers' default: the keys depend on it
};

// --model, --num-sms, the server options, --backend (default cuda), --arch and --mlp-width.
void add_cache_plan_options(CLI::App* cmd, CachePlanOptions& o);

struct CachePlan {
  ModelOptions::Resolved resolved;
  runtime::KernelPlanInput input;
  std::vector<jit::KernelSpec> specs;  // every planned spec, family by family
};
// InvalidArgument for a bad option or --backend reference.
CachePlan make_cache_plan(const CliContext& ctx, const CachePlanOptions& o);

// One planned key, where the runtime would look for it on disk.
struct PlannedKey {
  std::string ns, key, family, description;
};
// The distinct keys of specs in plan order (the compilers are needed for keys, not a GPU).
std::vector<PlannedKey> planned_keys(const jit::JitRuntime& jit, const std::vector<jit::KernelSpec>& specs);

}  // namespace hcwarm::cli
