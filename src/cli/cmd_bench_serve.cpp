// hcwarm bench serve: the five start-up configurations of the proof, each in a
// fresh process, on one workload: (1) no prewarm, not tiered, empty cache; (2)
// prewarm, empty cache; (3) prewarm, warm cache (a restart); (4) prewarm from a
// cache built ahead of time by `hcwarm cache build` with no GPU visible, then
// copied; (5) no prewarm, tiered (generic kernels serve while the
// specializations compile in the background), empty cache. Writes one JSON and
// one SVG chart (latency over time, start-up cost).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/bench_serve.hpp"
#include "cli/commands.hpp"
#include "cli/json_output.hpp"
#include "cli/replay_output.hpp"
#include "cli/runner_options.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "jit/process.hpp"
#include "mhc/hc_pre_op.hpp"
#include "sim/latency_report.hpp"

namespace hcwarm::cli {
namespace fs = std::filesystem;
namespace {

struct ServeOptions {
  ModelOptions model;
  int layers = 0;
  int mlp_width = kDefaultMlpWidth;
  std::string trace = "synthetic:n=2000";
  std::optional<int64_t> max_requests;
  int64_t max_running = 64;
  std::string arch = "sm_90a";
  std::string aot_cache;  // a cache built elsewhere to copy for configuration 4
  std::string out = "bench-serve";
  bool render_only = false;  // redraw from the config*.json an earlier run left in `out`
};

// The options every child process gets: the same model, server and workload.
std::vector<std::string> shared_args(const ServeOptions& o, std::string_view backend) {
  std::vector<std::string> a{"--model", o.model.model, "--dp-size", std::to_string(o.model.dp_size),
                             "--mlp-width", std::to_string(o.mlp_width), "--backend", std::string(backend)};
  if (o.model.num_sms) a.insert(a.end(), {"--num-sms", std::to_string(*o.model.num_sms)});
  if (o.model.chunked_prefill_size) {
    a.insert(a.end(), {"--chunked-prefill-size", std::to_string(*o.model.chunked_prefill_size)});
  }
  if (o.model.enable_dp_attention) a.push_back("--enable-dp-attention");
  return a;
}

jit::ProcessResult run_child(const std::vector<std::string>& argv, const std::string& what) {
  spdlog::info("bench serve: {}", what);
  jit::ProcessResult r = jit::run_process(argv);
  if (r.exit_code != 0) {
    const std::string tail = r.output.size() > 4000 ? r.output.substr(r.output.size() - 4000) : r.output;
    HCWARM_THROW_LOG(ErrorKind::Internal, tail, "bench serve: {} failed with exit code {}", what, r.exit_code);
  }
  return r;
}

void copy_tree(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::remove_all(to, ec);
  fs::create_directories(to.parent_path());
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
}

void run_serve(const CliContext& ctx, const ServeOptions& o) {
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  const std::string backend = mhc::to_string(o.model.backend_or_default(ctx));
  const fs::path out(o.out);
  fs::create_directories(out);
  if (!o.render_only) {
    for (const char* d : {"cache-1", "cache-2", "cache-4", "cache-5", "cache-aot"}) fs::remove_all(out / d);
  }
  const auto shared = shared_args(o, backend);

  // Configuration 4's cache: built with no GPU visible to the building process.
  if (o.render_only) {
    // nothing to build
  } else if (o.aot_cache.empty()) {
    std::vector<std::string> argv{"env", "HCWARM_CUDA_LIBRARY=/hcwarm-no-gpu/libcuda.so.1", self, "cache", "build",
                                  "--cache-dir", (out / "cache-aot").string(), "--arch", o.arch};
    argv.insert(argv.end(), shared.begin(), shared.end());
    run_child(argv, "building the ahead-of-time cache with no GPU visible");
    copy_tree(out / "cache-aot", out / "cache-4");
  } else {
    copy_tree(o.aot_cache, out / "cache-4");
  }

  struct Config {
    std::string name;
    std::string cache;
    bool prewarm;
    bool tiered;
  };
  const Config configs[] = {{"1: no prewarm, not tiered, empty cache", "cache-1", false, false},
                            {"2: prewarm, empty cache", "cache-2", true, true},
                            {"3: prewarm, warm cache (restart)", "cache-2", true, true},
                            {"4: prewarm, cache built ahead of time", "cache-4", true, true},
                            {"5: no prewarm, tiered, empty cache", "cache-5", false, true}};
  std::vector<sim::RunReport> runs;
  int i = 0;
  for (const Config& c : configs) {
    const fs::path report = out / fmt::format("config{}.json", ++i);
    std::vector<std::string> argv{"env", c.tiered ? "HCWARM_TIERED=1" : "HCWARM_TIERED=0", self, "replay", "--trace",
                                  o.trace, "--max-running", std::to_string(o.max_running), "--cache-dir",
                                  (out / c.cache).string(), "--json", "--report", report.string()};
    if (o.max_requests) argv.insert(argv.end(), {"--max-requests", std::to_string(*o.max_requests)});
    if (!c.prewarm) argv.push_back("--no-prewarm");
    if (o.layers > 0) argv.insert(argv.end(), {"--layers", std::to_string(o.layers)});
    argv.insert(argv.end(), shared.begin(), shared.end());
    if (!o.render_only) run_child(argv, fmt::format("configuration {} in a fresh process", c.name));
    HCWARM_CHECK_ARG(fs::exists(report), "{} is missing", report.string());
    const nlohmann::json j = nlohmann::json::parse(read_input_file(report, "replay report", 1u << 30));
    sim::RunReport run = sim::run_report_from_json(j.at("runs").at(0), report.string());
    run.name = c.name;
    runs.push_back(std::move(run));
  }

  nlohmann::json all{{"command", "hcwarm bench serve"},
                     {"backend", backend},
                     {"model", o.model.model},
                     {"trace", o.trace},
                     {"mlp_width", o.mlp_width},
                     {"layers", o.layers},
                     {"configurations", nlohmann::json::array()}};
  for (const auto& r : runs) all["configurations"].push_back(sim::report_json(r));
  sim::write_text_file((out / "serve.json").string(), versioned(all, kReplaySchemaVersion).dump(2));
  sim::write_text_file((out / "serve.svg").string(),
                           sim::render_report_svg(runs, fmt::format("hcwarm bench serve: {} on {}", o.model.model,
                                                                        backend)));
  print_replay_table(std::cout, runs);
  std::cout << fmt::format("\nwritten: {}/serve.json, {}/serve.svg, {}/config{{1..5}}.json\n", o.out, o.out, o.out);
}

}  // namespace

void register_bench_serve(CLI::App* bench, CliContext& ctx) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd =
      bench->add_subcommand("serve", "The five start-up configurations, each in a fresh process: JSON + chart");
  cmd->footer(
      "Replays one workload in five fresh processes: (1) no prewarm, not tiered, empty cache; (2) prewarm, empty\n"
      "cache; (3) prewarm, warm cache (a restart); (4) prewarm from a cache built ahead of time by `hcwarm cache\n"
      "build` with no GPU visible, then copied; (5) no prewarm, tiered (HCWARM_TIERED=1: generic kernels serve\n"
      "while the specializations compile in the background), empty cache. Writes OUT/serve.json and OUT/serve.svg.");
  add_plan_options(cmd, o->model);
  add_backend_option(cmd, o->model, "cpu | cuda");
  add_layers_option(cmd, o->layers);
  add_mlp_width_option(cmd, o->mlp_width);
  cmd->add_option("--trace", o->trace, "Workload (as for `hcwarm replay`)")->capture_default_str();
  cmd->add_option("--max-requests", o->max_requests, "Replay only the first N requests");
  cmd->add_option("--max-running", o->max_running, "Most requests running at once")->capture_default_str();
  cmd->add_option("--arch", o->arch, "GPU architecture of the ahead-of-time cache")->capture_default_str();
  cmd->add_option("--aot-cache", o->aot_cache,
                  "Use this cache (built elsewhere by `hcwarm cache build`) for configuration 4 instead of building one");
  cmd->add_option("--out", o->out,
                  "Output directory (created): serve.json, serve.svg, config{1..5}.json and their caches")
      ->capture_default_str();
  cmd->add_flag("--render-only", o->render_only,
                "Run nothing: redraw OUT/serve.json and OUT/serve.svg from the config{1..5}.json of an earlier run");
  cmd->callback([&ctx, o] { run_serve(ctx, *o); });
}

}  // namespace hcwarm::cli
