// hcwarm demo: the main job. The same built-in synthetic workload replayed three
// ways on the default model: without prewarm on an empty kernel cache (the
// stalls upstream saw), with prewarm on an empty cache (the cost moves to
// start-up), and with prewarm after a restart (the disk cache makes it cheap).
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <filesystem>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/replay_output.hpp"
#include "cli/runner_options.hpp"
#include "sim/replay.hpp"

namespace hcwarm::cli {
namespace fs = std::filesystem;
namespace {

struct DemoOptions {
  RunnerOptions runner;
  std::string trace = "synthetic";
  std::string report = "hcwarm-demo.svg";
  bool json = false;
  bool keep_cache = false;
};

// A private cache root for the demo, removed afterwards unless asked to keep it.
class DemoCacheRoot {
 public:
  explicit DemoCacheRoot(bool keep) : keep_(keep) {
    std::string tmpl = (fs::temp_directory_path() / "hcwarm-demo-XXXXXX").string();
    HCWARM_CHECK_SYS(mkdtemp(tmpl.data()) == nullptr ? -1 : 0, "mkdtemp {}", tmpl);
    path_ = tmpl;
  }
  ~DemoCacheRoot() {
    std::error_code ec;
    if (!keep_) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
  bool keep_;
};

sim::RunReport run_one(const CliContext& ctx, const DemoOptions& o, const std::vector<sim::Request>& requests,
                           const std::string& name, const fs::path& cache_dir, bool prewarm) {
  RunnerOptions ro = o.runner;
  ro.model.cache_dir = cache_dir.string();
  runtime::RunnerConfig cfg = make_runner_config(ctx, ro);
  cfg.jit.progress = !o.json;
  if (!o.json) std::cerr << fmt::format("\n== {} ==\n", name);
  runtime::ModelRunner runner(cfg);
  const runtime::WarmupReport w = runner.kernel_warmup(prewarm);
  sim::ReplayOptions rep;
  rep.progress = !o.json;
  return sim::replay(runner, requests, rep, name, w);
}

void run_demo(const CliContext& ctx, const DemoOptions& o) {
  const std::vector<sim::Request> requests = sim::load_trace(o.trace);
  DemoCacheRoot root(o.keep_cache);
  if (!o.json) {
    const runtime::RunnerConfig probe = make_runner_config(ctx, o.runner);
    std::cerr << fmt::format(
        "hcwarm demo: {} ({} layers, hidden {}, SwiGLU MLP width {} as both sublayers), backend {},\n"
        "chunked_prefill_size {}, {} requests from \"{}\"; kernel caches under {}\n",
        probe.model.name, o.runner.layers, probe.model.hidden_size, o.runner.mlp_width, mhc::to_string(probe.backend),
        probe.server_input.chunked_prefill_size.value_or(0), requests.size(), o.trace, root.path().string());
  }
  std::vector<sim::RunReport> runs;
  runs.push_back(run_one(ctx, o, requests, "no prewarm, empty cache", root.path() / "cold", false));
  runs.push_back(run_one(ctx, o, requests, "prewarm, empty cache", root.path() / "warm", true));
  runs.push_back(run_one(ctx, o, requests, "prewarm, warm cache (restart)", root.path() / "warm", true));
  print_replay_results(std::cout, runs, o.json);
  if (!o.report.empty()) {
    write_replay_report(o.report, runs, "hcwarm demo, three start-ups");
    if (!o.json) std::cout << fmt::format("\nchart: {}\n", o.report);
  }
}

}  // namespace

void register_demo(CLI::App& app, CliContext& ctx) {
  auto opts = std::make_shared<DemoOptions>();
  // Defaults sized for a 2-core CPU in under a minute; on a GPU raise them.
  opts->runner.model.model = "dsv4-flash";
  opts->runner.model.chunked_prefill_size = 1024;
  opts->runner.layers = 2;
  opts->runner.mlp_width = 8;
  CLI::App* cmd = app.add_subcommand(
      "demo",
      "The main job: replay a built-in synthetic workload on dsv4-flash widths three ways (no prewarm on an empty\n"
      "kernel cache, prewarm on an empty cache, prewarm after a restart) and show tail latency, stalls and\n"
      "start-up cost side by side, with a chart");
  add_runner_options(cmd, opts->runner);
  cmd->add_option("--trace", opts->trace, "Trace to replay (as for `hcwarm replay`)")->capture_default_str();
  cmd->add_option("--report", opts->report, "Chart (.svg) or data (.json) to write; \"\" for none")
      ->capture_default_str();
  cmd->add_flag("--json", opts->json, "Print one JSON object");
  cmd->add_flag("--keep-cache", opts->keep_cache, "Keep the demo's kernel caches");
  cmd->callback([&ctx, opts] { run_demo(ctx, *opts); });
}

}  // namespace hcwarm::cli
