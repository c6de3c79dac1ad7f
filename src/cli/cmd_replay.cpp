// hcwarm replay: a request trace through the scheduler and the model, with or
// without the start-up prewarm; per-forward latency, stalls, compiles after ready.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/replay_output.hpp"
#include "cli/runner_options.hpp"
#include "sim/replay.hpp"

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
  runtime::RunnerConfig cfg = make_runner_config(ctx, o.runner);
  cfg.jit.progress = !o.json;
  runtime::ModelRunner runner(cfg);
  const runtime::WarmupReport w = runner.kernel_warmup(!o.no_prewarm);
  sim::ReplayOptions ro;
  ro.max_running_requests = o.max_running;
  ro.progress = !o.json;
  const std::string name = o.no_prewarm ? "no prewarm" : "prewarm";
  const sim::RunReport run = sim::replay(runner, requests, ro, name, w);
  print_replay_results(std::cout, {run}, o.json);
  if (!o.report.empty()) write_replay_report(o.report, {run}, "hcwarm replay: " + o.trace);
}

}  // namespace

void register_replay(CLI::App& app, CliContext& ctx) {
  auto opts = std::make_shared<ReplayCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "replay",
      "Replay a request trace through continuous batching with chunked prefill and the model; report per-forward\n"
      "latency (p50/p99/max), stalls (a forward slower than 10x the median of its split bucket) and compiles after\n"
      "the runtime was ready");
  add_runner_options(cmd, opts->runner);
  cmd->add_option("--trace", opts->trace,
                  "Azure LLM trace CSV (TIMESTAMP,ContextTokens,GeneratedTokens), JSONL ({arrival_s, prompt_tokens,\n"
                  "output_tokens} per line), \"synthetic\" or \"synthetic:n=2000,seed=3,...\"")
      ->required();
  cmd->add_option("--max-requests", opts->max_requests, "Replay only the first N requests");
  cmd->add_option("--max-running", opts->max_running, "Most requests running at once")->capture_default_str();
  cmd->add_flag("--no-prewarm", opts->no_prewarm, "Skip the mHC prewarm (the situation before the upstream fix)");
  cmd->add_flag("--json", opts->json, "Print one JSON object");
  cmd->add_option("--report", opts->report, "Write the report: .svg (latency over time) or .json (every forward)");
  cmd->callback([&ctx, opts] { run_replay(ctx, *opts); });
}

}  // namespace hcwarm::cli
