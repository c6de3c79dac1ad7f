// hcwarm warm: the start-up warmup alone, as a server would run it.
#include <fmt/ranges.h>

#include <iostream>
#include <optional>

#include "cli/cache_dir.hpp"
#include "cli/commands.hpp"
#include "cli/json_output.hpp"
#include "cli/runner_options.hpp"
#include "cli/workload_run.hpp"
#include "sim/replay.hpp"

namespace hcwarm::cli {
namespace {

struct WarmOptions {
  RunnerOptions runner;
  bool json = false;
  bool check = false;
};

void run_warm(CliContext& ctx, const WarmOptions& o) {
  runtime::RunnerConfig cfg = make_runner_config(ctx, o.runner);
  if (o.runner.layers == 0) cfg.build.num_layers = 1;  // warmup needs the first layer only
  const WarmedRunner warmed = warm_runner(cfg, /*prewarm=*/true, /*quiet=*/o.json);
  runtime::ModelRunner& runner = *warmed.runner;
  const runtime::WarmupReport& w = warmed.warmup;
  std::optional<runtime::CoverageReport> cov;
  if (o.check) {
    cov = runner.check_coverage();
    if (!cov->ok()) ctx.exit_code = 1;
  }
  if (o.json) {
    nlohmann::json j = sim::warmup_json(w);
    j.update(run_config_json(cfg.model.name, cfg.backend, runner.server_args(), cfg.jit.cache_dir));
    j["defaults"] = cfg.model.defaulted_fields;  // config fields left out, "field=value"
    // Above the runtime's own memory: host RSS on the CPU backend, device memory on CUDA.
    j["prewarm_peak_bytes"] = w.peak_bytes;
    if (cov) {
      j["check"] = {{"ok", cov->ok()}, {"calls", cov->calls}, {"token_counts", cov->token_counts},
                    {"missing", cov->missing}};
    }
    print_json(std::cout, j);
    return;
  }
  std::cout << fmt::format(
      "warmup of {} on {} (num_sms {}, max_num_tokens {}): {:.3f}s\n"
      "  keys {}: {} compiled, {} loaded from disk, {} already in memory\n"
      "  framework warmup {:.3f}s (families: {}), model hook {:.3f}s\n"
      "  mHC token counts prewarmed: {}\n"
      "  peak memory above the runtime's own: {:.1f} MiB ({})\n"
      "  config defaults used: {}\n"
      "  cache: {}\n",
      cfg.model.name, mhc::to_string(cfg.backend), runner.server_args().num_sms, runner.server_args().max_num_tokens(),
      w.seconds, w.keys, w.compiled, w.loaded_from_disk, w.memory_hits, w.framework_seconds,
      fmt::join(w.families, ", "), w.model_hook_seconds,
      w.token_counts.empty() ? std::string("none") : fmt::format("{}", fmt::join(w.token_counts, ", ")),
      static_cast<double>(w.peak_bytes) / (1 << 20), cfg.backend == mhc::Backend::Cuda ? "device" : "host RSS",
      cfg.model.defaulted_fields.empty() ? std::string("none")
                                         : fmt::format("{}", fmt::join(cfg.model.defaulted_fields, ", ")),
      cfg.jit.cache_dir ? cfg.jit.cache_dir->string() : std::string("memory only"));
  if (cov) {
    std::cout << fmt::format("  coverage check: {} calls at token counts {}: {}\n", cov->calls,
                             fmt::join(cov->token_counts, ", "),
                             cov->ok() ? "every kernel was warmed" : fmt::format("{} missed", cov->missing.size()));
    for (const std::string& m : cov->missing) std::cout << "    missed: " << m << "\n";
  }
}

}  // namespace

void register_warm(CLI::App& app, CliContext& ctx) {
  auto opts = std::make_shared<WarmOptions>();
  CLI::App* cmd = app.add_subcommand("warm", "Run the start-up kernel warmup alone, as a server would, and report it");
  cmd->footer(
      "Compiles or loads every planned kernel (in parallel, HCWARM_JOBS), runs the model's mHC prewarm hook,\n"
      "and reports keys, compiles, disk loads and seconds. A second run on the same cache compiles nothing.");
  add_plan_options(cmd, opts->runner.model);
  add_backend_option(cmd, opts->runner.model);
  add_cache_dir_option(cmd, opts->runner.model.cache_dir);
  add_layers_option(cmd, opts->runner.layers, "1: the prewarm runs on the first layer");
  add_mlp_width_option(cmd, opts->runner.mlp_width);
  add_json_flag(cmd, opts->json);
  cmd->add_flag("--check", opts->check,
                "After warmup, run every mHC op at one token count of every split bucket with compiling switched "
                "off; exit 1 naming each kernel warmup missed");
  cmd->callback([&ctx, opts] { run_warm(ctx, *opts); });
}

}  // namespace hcwarm::cli
