// hcwarm replay: a request trace through the scheduler and the model, with or
// without the start-up prewarm; per-forward latency, stalls, compiles after ready.
#include <iostream>

#include "cli/cache_dir.hpp"
#include "cli/commands.hpp"
#include "cli/json_output.hpp"
#include "cli/replay_output.hpp"
#include "cli/runner_options.hpp"
#include "cli/workload_run.hpp"

namespace hcwarm::cli {
namespace {

struct ReplayCliOptions {
  RunnerOptions runner;
  std::string trace;
  std::optional<int64_t> max_requests;
  int64_t max_running = 64;
  bool no_prewarm = false;
  bool json = false;
  std::string report;
};

void run_replay(const CliContext& ctx, const ReplayCliOptions& o) {
  sim::TraceReadOptions tro;
  tro.max_requests = o.max_requests;
  const std::vector<sim::Request> requests = sim::load_trace(o.trace, tro);
  const WorkloadRun how{o.no_prewarm ? "no prewarm" : "prewarm", !o.no_prewarm, o.json, o.max_running};
  const std::vector<sim::RunReport> runs{run_workload(make_runner_config(ctx, o.runner), requests, how)};
  if (o.json) {
    print_json(std::cout, replay_results_json(runs), kReplaySchemaVersion);
  } else {
    print_replay_table(std::cout, runs);
  }
  if (!o.report.empty()) write_replay_report(o.report, runs, "hcwarm replay: " + o.trace);
}

}  // namespace

void register_replay(CLI::App& app, CliContext& ctx) {
  auto opts = std::make_shared<ReplayCliOptions>();
  CLI::App* cmd =
      app.add_subcommand("replay", "Replay a request trace through the scheduler and the model; report latency");
  cmd->footer(
      "Requests run through continuous batching with chunked prefill; every step's token count goes through\n"
      "the model. Reports per-forward latency (p50/p99/max), the forwards that waited for a kernel compile (and\n"
      "for how long), calls served by generic kernels while a specialization compiled in the background\n"
      "(HCWARM_TIERED), compiles after the runtime was ready, and slow forwards (slower than 10x the median of\n"
      "their split bucket: a timing heuristic).");
  cmd->add_option("--trace", opts->trace,
                  "Azure LLM trace CSV (TIMESTAMP,ContextTokens,GeneratedTokens), JSONL ({arrival_s, prompt_tokens,\n"
                  "output_tokens} per line), \"synthetic\" or \"synthetic:n=2000,seed=3,...\"")
      ->required();
  add_plan_options(cmd, opts->runner.model);
  add_backend_option(cmd, opts->runner.model);
  add_cache_dir_option(cmd, opts->runner.model.cache_dir);
  add_layers_option(cmd, opts->runner.layers);
  add_mlp_width_option(cmd, opts->runner.mlp_width);
  add_weight_options(cmd, opts->runner);
  cmd->add_option("--max-requests", opts->max_requests, "Replay only the first N requests (default: all)");
  cmd->add_option("--max-running", opts->max_running, "Most requests running at once")->capture_default_str();
  cmd->add_flag("--no-prewarm", opts->no_prewarm, "Skip the mHC prewarm (the situation before the upstream fix)");
  add_json_flag(cmd, opts->json);
  cmd->add_option("--report", opts->report,
                  "Also write a report: FILE.svg (latency over time, stalls marked) or FILE.json (every forward)");
  cmd->callback([&ctx, opts] { run_replay(ctx, *opts); });
}

}  // namespace hcwarm::cli
