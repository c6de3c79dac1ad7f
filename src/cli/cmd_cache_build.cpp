// hcwarm cache build: fill a kernel cache with every specialization a server
// of this configuration will ask for, with no GPU needed (NVRTC emits cubins
// for an explicit architecture): a bundle to ship to serving machines.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/build_progress.hpp"
#include "cli/cache_dir.hpp"
#include "cli/cache_plan.hpp"
#include "cli/commands.hpp"
#include "cli/json_output.hpp"
#include "jit/jit_runtime.hpp"

namespace hcwarm::cli {
namespace {

struct CacheBuildOptions {
  CachePlanOptions plan;
  bool json = false;
};

void run_cache_build(CliContext& ctx, const CacheBuildOptions& o) {
  const CachePlan plan = make_cache_plan(ctx, o.plan);
  const ModelOptions::Resolved& r = plan.resolved;
  const runtime::KernelPlanInput& in = plan.input;
  const std::string& arch = o.plan.arch;

  jit::JitOptions jo = jit_options(ctx, o.plan.model.cache_dir);
  HCWARM_CHECK_ARG(jo.cache_dir.has_value(), "cache build needs a cache directory (--cache-dir or HCWARM_CACHE_DIR)");
  BuildProgressDisplay progress(!o.json);
  jo.progress = progress.callback();
  jit::JitRuntime jit(jo);
  HCWARM_CHECK_ARG(jit.disk_cache() != nullptr, "cache directory {} is not usable (see the warning above)",
                   jo.cache_dir->string());

  const jit::BuildReport b = jit.build(plan.specs, jit::BuildMode::CompileOnly);
  if (b.failed > 0) ctx.exit_code = 1;
  // A bundle that kept nothing is a failed build, not a successful one.
  if (jit.disk_cache() == nullptr || (b.compiled > 0 && !jit.disk_writable())) {
    HCWARM_THROW(ErrorKind::Io, "nothing could be stored in cache directory {} (see the warning above)",
                 jo.cache_dir->string());
  }

  if (o.json) {
    nlohmann::json j = run_config_json(r.model.name, in.backend, r.server, jo.cache_dir);
    j.update({{"arch", in.backend == mhc::Backend::Cuda ? arch : "host"},
              {"keys", b.keys},
              {"compiled", b.compiled},
              {"already_cached", b.loaded_from_disk + b.memory_hits},
              {"failed", b.failed},
              {"seconds", b.seconds},
              {"errors", b.errors}});
    print_json(std::cout, j);
    return;
  }
  std::cout << fmt::format(
      "cache build for {} ({} backend, {}), num_sms {}, max_num_tokens {} -> {}\n"
      "  {} keys: {} compiled, {} already cached, {} failed, in {:.2f}s\n",
      r.model.name, mhc::to_string(in.backend), in.backend == mhc::Backend::Cuda ? arch : "host ISA",
      r.server.num_sms, r.server.max_num_tokens(), jo.cache_dir->string(), b.keys, b.compiled,
      b.loaded_from_disk + b.memory_hits, b.failed, b.seconds);
  for (const auto& e : b.errors) std::cout << "  error: " << e << "\n";
}

}  // namespace

void register_cache_build(CLI::App* cache, CliContext& ctx) {
  auto o = std::make_shared<CacheBuildOptions>();
  CLI::App* cmd = cache->add_subcommand(
      "build", "Fill a cache with every kernel a server of this configuration will need, without a GPU");
  cmd->footer(
      "E.g. --model dsv4-pro --num-sms 132 --chunked-prefill-size 16384 --arch sm_90a --cache-dir bundle/;\n"
      "copy the directory to the serving machines and point HCWARM_CACHE_DIR at it. Give the same model,\n"
      "server and --mlp-width options as the servers: they decide the keys. --backend defaults to cuda here.");
  add_cache_plan_options(cmd, o->plan);
  add_cache_dir_option(cmd, o->plan.model.cache_dir);
  add_json_flag(cmd, o->json);
  cmd->callback([&ctx, o] { run_cache_build(ctx, *o); });
}

}  // namespace hcwarm::cli
