// hcwarm demo: the main job. The same built-in synthetic workload replayed four
// ways on the default model: without prewarm or tiering on an empty kernel
// cache (the stalls upstream saw), without prewarm but tiered (generic kernels
// serve while the specializations compile in the background), with prewarm on
// an empty cache (the cost moves to start-up), and with prewarm after a restart
// (the disk cache makes it cheap). The chart and the data go under --out
// (default hcwarm-demo/).
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <thread>

#include "cli/commands.hpp"
#include "cli/json_output.hpp"
#include "cli/replay_output.hpp"
#include "cli/runner_options.hpp"
#include "cli/workload_run.hpp"

namespace hcwarm::cli {
namespace fs = std::filesystem;
namespace {

// The demo's workload: the built-in synthetic trace at a load a 2-core CPU keeps up
// with (32 requests at 2 per second, prompts up to 2048 tokens), so a normal forward
// takes about a millisecond, a prefill chunk a few hundred, and a compile stall
// (one to two seconds each) stands out in the table and on the chart.
constexpr const char* kDemoTrace = "synthetic:n=32,rate=2,max_prompt_tokens=2048";

struct DemoOptions {
  RunnerOptions runner;
  std::string trace = kDemoTrace;
  std::string out = "hcwarm-demo";
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

// tiered: whether kernel misses may be served generically (never against HCWARM_TIERED=0).
sim::RunReport run_one(const CliContext& ctx, const DemoOptions& o, const std::vector<sim::Request>& requests,
                       const std::string& name, const fs::path& cache_dir, bool prewarm, bool tiered = true) {
  RunnerOptions ro = o.runner;
  ro.model.cache_dir = cache_dir.string();
  if (!o.json) std::cerr << fmt::format("\n== {} ==\n", name);
  runtime::RunnerConfig cfg = make_runner_config(ctx, ro);
  cfg.jit.tiered = cfg.jit.tiered && tiered;
  return run_workload(std::move(cfg), requests, WorkloadRun{name, prewarm, o.json});
}

// The demo's own check: a prewarmed run must not wait for a compile nor serve
// generically (exact counters), and should show no slow forward (a timing
// heuristic: reported, not fatal). Returns the line to print; *failed when a count is wrong.
std::string prewarmed_check(const std::vector<sim::RunReport>& runs, bool* failed) {
  int64_t waited = 0, generic = 0, slow = 0, checked = 0;
  for (const auto& r : runs) {
    if (!r.extra.contains("warmup") || !r.extra["warmup"].value("ran", false)) continue;
    const sim::LatencySummary s = sim::summarize(r.records);
    waited += s.forwards_waited_for_compile;
    generic += s.served_by_generic;
    slow += static_cast<int64_t>(s.slow_forwards.size());
    ++checked;
  }
  *failed = waited > 0 || generic > 0;
  return fmt::format("check: the {} prewarmed runs had {} forwards that waited for a compile, {} calls served "
                     "generically and {} slow forwards{}",
                     checked, waited, generic, slow,
                     *failed ? " (expected 0: warmup missed kernels)"
                             : (slow > 0 ? " (timing noise: no compile was involved)" : ""));
}

// Why the tiered run can take longer than compiling in the request path: said
// whenever it did, so that the table is not read as tiering being a loss.
std::string tiering_note(const std::vector<sim::RunReport>& runs, mhc::Backend backend) {
  if (runs.size() < 2 || runs[1].name.find("tiered, empty") == std::string::npos) return {};
  const double cold = sim::summarize(runs[0].records).total_s, tiered = sim::summarize(runs[1].records).total_s;
  if (tiered <= cold) return {};
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return fmt::format(
      "note: the tiered run's forwards took {:.2f} s in all against {:.2f} s without tiering. {}", tiered, cold,
      backend == mhc::Backend::Cpu
          ? fmt::format("On the CPU backend its background compiles share this machine's {} hardware thread{} with "
                        "the forwards, and the generic kernels that serve meanwhile are about 2x slower than the "
                        "specialized ones (docs/BENCHMARKS.md, \"CPU kernels\"); what tiering removes is each "
                        "forward's wait for a compile (the \"waited\" column), not the compile work.",
                        cores, cores == 1 ? "" : "s")
          : std::string("The generic kernels serve while the specializations compile; what tiering removes is each "
                        "forward's wait for a compile (the \"waited\" column)."));
}

void run_demo(const CliContext& ctx, const DemoOptions& o) {
  const std::vector<sim::Request> requests = sim::load_trace(o.trace);
  const fs::path out(o.out);
  std::error_code ec;
  fs::create_directories(out, ec);
  HCWARM_CHECK_ARG(!ec && fs::is_directory(out, ec), "--out {}: cannot create directory: {}", o.out, ec.message());
  const fs::path chart = out / "demo.svg", data = out / "demo.json";

  DemoCacheRoot root(o.keep_cache);
  const runtime::RunnerConfig probe = make_runner_config(ctx, o.runner);
  if (!o.json) {
    std::cerr << fmt::format(
        "hcwarm demo: {} ({} layers, hidden {}, SwiGLU MLP width {} as both sublayers), backend {},\n"
        "chunked_prefill_size {}, {} requests from \"{}\"; kernel caches under {}; results into {}/\n",
        probe.model.name, o.runner.layers, probe.model.hidden_size, o.runner.mlp_width, mhc::to_string(probe.backend),
        probe.server_input.chunked_prefill_size.value_or(0), requests.size(), o.trace, root.path().string(), o.out);
  }
  std::vector<sim::RunReport> runs;
  runs.push_back(run_one(ctx, o, requests, "no prewarm, not tiered, empty cache", root.path() / "cold", false,
                         /*tiered=*/false));
  if (ctx.env.tiered) {
    runs.push_back(run_one(ctx, o, requests, "no prewarm, tiered, empty cache", root.path() / "tiered", false));
  }
  runs.push_back(run_one(ctx, o, requests, "prewarm, empty cache", root.path() / "warm", true));
  runs.push_back(run_one(ctx, o, requests, "prewarm, warm cache (restart)", root.path() / "warm", true));
  const std::string title = fmt::format("hcwarm demo, {} start-ups", runs.size());
  write_replay_report(chart.string(), runs, title);
  write_replay_report(data.string(), runs, title);
  const std::string where = fmt::format("chart: {}\ndata of every forward: {}{}\n", chart.string(), data.string(),
                                        o.keep_cache ? "\nkernel caches kept in " + root.path().string() : "");
  bool failed = false;
  const std::string check = prewarmed_check(runs, &failed);
  const std::string note = tiering_note(runs, probe.backend);
  if (o.json) {
    nlohmann::json j = replay_results_json(runs);
    j["chart"] = chart.string();
    j["data"] = data.string();
    j["check"] = check;
    if (!note.empty()) j["note"] = note;
    print_json(std::cout, j, kReplaySchemaVersion);
    std::cerr << where;  // stdout stays one JSON object
  } else {
    print_replay_table(std::cout, runs);
    std::cout << "\n" << check << "\n" << (note.empty() ? "" : note + "\n") << "\n" << where;
  }
  if (failed) HCWARM_THROW(ErrorKind::Internal, "hcwarm demo: {}", check);
}

}  // namespace

void register_demo(CLI::App& app, CliContext& ctx) {
  auto opts = std::make_shared<DemoOptions>();
  // Defaults sized for a 2-core CPU; on a GPU raise them.
  opts->runner.model.model = "dsv4-flash";
  opts->runner.model.chunked_prefill_size = 1024;
  opts->runner.layers = 2;
  CLI::App* cmd = app.add_subcommand(
      "demo", "The main job: one workload, four start-ups (no prewarm, tiered, prewarm, restart) side by side");
  cmd->footer(
      "Replays a built-in synthetic workload (--trace; by default 32 requests at 2 per second, which a 2-core\n"
      "CPU serves with forwards of about a millisecond) on dsv4-flash widths four ways: no prewarm and no tiering on an\n"
      "empty kernel cache, no prewarm but tiered (generic kernels serve while the specializations compile in\n"
      "the background; skipped with HCWARM_TIERED=0), prewarm on an empty cache, prewarm after a restart;\n"
      "shows tail latency, forwards that waited for a compile and start-up cost side by side. Writes\n"
      "OUT/demo.svg (latency over time) and OUT/demo.json (every forward), OUT being --out (default\n"
      "hcwarm-demo/, created). The kernel caches live in a temporary directory, removed at the end.");
  add_plan_options(cmd, opts->runner.model);
  // The demo's own defaults, shown.
  cmd->get_option("--chunked-prefill-size")
      ->description("Prefill token budget per step")
      ->default_str(std::to_string(*opts->runner.model.chunked_prefill_size));
  add_backend_option(cmd, opts->runner.model);
  add_layers_option(cmd, opts->runner.layers);
  cmd->get_option("--layers")->description("Decoder layers to build")->capture_default_str();
  add_mlp_width_option(cmd, opts->runner.mlp_width);
  add_weight_options(cmd, opts->runner);
  cmd->add_option("--trace", opts->trace, "Trace to replay (as for `hcwarm replay`)")->capture_default_str();
  cmd->add_option("--out", opts->out, "Directory for demo.svg and demo.json (created)")->capture_default_str();
  add_json_flag(cmd, opts->json);
  cmd->add_flag("--keep-cache", opts->keep_cache, "Keep the demo's kernel caches (the last message says where)");
  cmd->callback([&ctx, opts] { run_demo(ctx, *opts); });
}

}  // namespace hcwarm::cli
