// hcwarm cache build: fill a kernel cache with every specialization a server
// of this configuration will ask for, with no GPU needed (NVRTC emits cubins
// for an explicit architecture): a bundle to ship to serving machines.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/model_options.hpp"
#include "jit/jit_runtime.hpp"
#include "runtime/kernel_plan.hpp"

namespace hcwarm::cli {
namespace {

struct CacheBuildOptions {
  ModelOptions model;
  std::string arch = "sm_90a";
  int mlp_width = 256;
  bool json = false;
};

void run_cache_build(CliContext& ctx, const CacheBuildOptions& o) {
  const ModelOptions::Resolved r = o.model.resolve(ctx);
  runtime::KernelPlanInput in;
  in.model = r.model;
  in.server = r.server;
  in.env = ctx.env;
  in.backend = o.model.backend.empty() ? mhc::Backend::Cuda : mhc::parse_backend(o.model.backend);
  in.cuda.arch = o.arch;
  in.cuda.one_pass = ctx.env.mhc_one_pass;  // the keys the runner will ask for
  in.mlp_width = o.mlp_width;
  HCWARM_CHECK_ARG(in.backend != mhc::Backend::Reference, "--backend reference has no kernels to build");
  HCWARM_CHECK_ARG(o.mlp_width >= 1, "--mlp-width must be >= 1, got {}", o.mlp_width);

  jit::JitOptions jo = jit::JitOptions::from_env(ctx.env);
  if (!o.model.cache_dir.empty()) jo.cache_dir = std::filesystem::path(o.model.cache_dir);
  HCWARM_CHECK_ARG(jo.cache_dir.has_value(), "cache build needs a cache directory (--cache-dir or HCWARM_CACHE_DIR)");
  jo.progress = !o.json;
  jit::JitRuntime jit(jo);
  HCWARM_CHECK_ARG(jit.disk_cache() != nullptr, "cache directory {} is not usable (see the warning above)",
                   jo.cache_dir->string());

  const runtime::KernelRegistry registry = runtime::make_kernel_registry(in);
  const std::vector<jit::KernelSpec> specs = registry.planned(/*include_mhc=*/true);
  const jit::BuildReport b = jit.build(specs, jit::BuildMode::CompileOnly);
  if (b.failed > 0) ctx.exit_code = 1;
  // A bundle that kept nothing is a failed build, not a successful one.
  if (jit.disk_cache() == nullptr || (b.compiled > 0 && !jit.disk_writable())) {
    HCWARM_THROW(ErrorKind::Io, "nothing could be stored in cache directory {} (see the warning above)",
                 jo.cache_dir->string());
  }

  if (o.json) {
    nlohmann::json j{{"cache_dir", jo.cache_dir->string()},
                     {"model", r.model.name},
                     {"backend", mhc::to_string(in.backend)},
                     {"arch", in.backend == mhc::Backend::Cuda ? o.arch : "host"},
                     {"num_sms", r.server.num_sms},
                     {"max_num_tokens", r.server.max_num_tokens()},
                     {"keys", b.keys},
                     {"compiled", b.compiled},
                     {"already_cached", b.loaded_from_disk + b.memory_hits},
                     {"failed", b.failed},
                     {"seconds", b.seconds},
                     {"errors", b.errors}};
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format(
      "cache build for {} ({} backend, {}), num_sms {}, max_num_tokens {} -> {}\n"
      "  {} keys: {} compiled, {} already cached, {} failed, in {:.2f}s\n",
      r.model.name, mhc::to_string(in.backend), in.backend == mhc::Backend::Cuda ? o.arch : "host ISA",
      r.server.num_sms, r.server.max_num_tokens(), jo.cache_dir->string(), b.keys, b.compiled,
      b.loaded_from_disk + b.memory_hits, b.failed, b.seconds);
  for (const auto& e : b.errors) std::cout << "  error: " << e << "\n";
}

}  // namespace

void register_cache_build(CLI::App* cache, CliContext& ctx) {
  auto o = std::make_shared<CacheBuildOptions>();
  CLI::App* cmd = cache->add_subcommand(
      "build",
      "Fill a cache with every kernel a server of this configuration will need, without a GPU\n"
      "(--backend defaults to cuda here)\n"
      "(e.g. --model dsv4-pro --num-sms 132 --chunked-prefill-size 16384 --arch sm_90a); copy the\n"
      "directory to the serving machines and point HCWARM_CACHE_DIR at it");
  add_model_options(cmd, o->model);
  cmd->add_option("--arch", o->arch, "GPU architecture to compile for (CUDA backend)")->capture_default_str();
  cmd->add_option("--mlp-width", o->mlp_width, "Width of the shipped SwiGLU sublayer (its CUDA kernel is planned too)")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([&ctx, o] { run_cache_build(ctx, *o); });
}

}  // namespace hcwarm::cli
