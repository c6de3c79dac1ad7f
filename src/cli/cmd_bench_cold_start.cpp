// hcwarm bench cold-start: N processes of one host warming one empty cache
// directory at the same moment, as the ranks of a server start, against one
// process alone on another empty directory. Each child runs the start-up
// warmup of `hcwarm warm` and reports what it compiled and loaded and when it
// was ready; the per-key cache lock should make the compiles between them
// equal the planned keys, and every child should end with all keys loaded.
// With --hosts H, H simulated hosts of N processes each, one cache directory
// and one CPU slice per host, exchange what they built through a loopback hub
// (jit/kernel_exchange.hpp, runtime/exchange_hub.hpp) before warming.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>

#include "cli/bench_hosts.hpp"
#include "cli/cold_start_runs.hpp"
#include "cli/commands.hpp"
#include "cli/json_output.hpp"
#include "cli/runner_options.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "sim/latency_report.hpp"

namespace hcwarm::cli {
namespace fs = std::filesystem;
namespace {

// The middle value, or the mean of the two middle ones.
double median(const std::vector<double>& v) { return sim::percentile(v, 0.5); }

struct Pair {
  Run group;  // N processes on one cache, or --hosts H of N
  Run alone;
  std::optional<Run> restart;  // --hosts: the same job again on its caches
  double ratio() const { return alone.wall_s > 0 ? group.wall_s / alone.wall_s : 0; }
  // A correctness finding, not a timing one: a key compiled twice, a process left short, a restart that compiled.
  bool ok() const {
    return group.compiled_total == group.planned_keys && group.all_loaded && alone.all_loaded &&
           (!restart || (restart->compiled_total == 0 && restart->all_loaded));
  }
};

void run_bench(CliContext& ctx, const ColdStartOptions& o) {
  HCWARM_CHECK_ARG(o.processes >= 1 && o.processes <= 256, "--processes must be in [1, 256], got {}", o.processes);
  HCWARM_CHECK_ARG(o.repeat >= 1 && o.repeat <= 100, "--repeat must be in [1, 100], got {}", o.repeat);
  HCWARM_CHECK_ARG(o.hosts >= 0 && o.hosts <= 64 && o.hosts * o.processes <= 256,
                   "--hosts must be in [0, 64] with at most 256 processes in all, got {} hosts of {}", o.hosts,
                   o.processes);
  const fs::path dir(o.runner.model.cache_dir);
  std::error_code ec;
  HCWARM_CHECK_ARG(!fs::exists(dir, ec) || (fs::is_directory(dir, ec) && fs::is_empty(dir, ec)),
                   "--cache-dir {} must be an empty or absent directory: the benchmark starts from cold caches",
                   dir.string());
  const std::string backend = mhc::to_string(o.runner.model.backend_or_default(ctx));
  const bool hosts = o.hosts > 0;
  const std::vector<std::vector<int>> slices = hosts ? cpu_slices(o.hosts) : std::vector<std::vector<int>>{};
  const double timeout_s = ctx.env.group_timeout_s.value_or(kDefaultHubTimeoutS);
  const std::string job = hosts ? fmt::format("{} hosts of {} process{}", o.hosts, o.processes,
                                              o.processes == 1 ? "" : "es")
                                : fmt::format("{} processes", o.processes);

  std::vector<Pair> pairs;
  for (int k = 0; k < o.repeat; ++k) {
    const fs::path base = o.repeat == 1 ? dir : dir / fmt::format("run-{}", k + 1);
    const fs::path group_dir = base / (hosts ? fmt::format("hosts-{}x{}", o.hosts, o.processes)
                                             : fmt::format("processes-{}", o.processes));
    const fs::path alone_dir = base / "one-process";
    const std::string of = o.repeat == 1 ? "" : fmt::format(" (run {} of {})", k + 1, o.repeat);
    // Alternate which goes first, so that neither always finds the host's file cache warm.
    Pair p;
    const bool group_first = k % 2 == 0;
    for (int step = 0; step < 2; ++step) {
      if ((step == 0) == group_first) {
        spdlog::info("bench cold-start{}: {} on {}", of, job, hosts ? "an empty cache each" : "one empty cache");
        p.group = hosts ? run_hosts(o, backend, group_dir, slices, timeout_s)
                        : run_group(o, backend, o.processes, group_dir);
      } else {
        spdlog::info("bench cold-start{}: one process alone on another empty cache{}", of,
                     hosts ? " and one host's CPUs" : "");
        p.alone = run_group(o, backend, 1, alone_dir, hosts ? slices[0] : std::vector<int>{});
      }
    }
    if (hosts) {
      spdlog::info("bench cold-start{}: {} again on their caches (a restart)", of, job);
      p.restart = run_hosts(o, backend, group_dir, slices, timeout_s);
    }
    pairs.push_back(std::move(p));
  }
  bool ok = true;
  std::vector<double> group_wall, alone_wall, skews;
  nlohmann::json runs = nlohmann::json::array();
  for (const Pair& p : pairs) {
    ok = ok && p.ok();
    group_wall.push_back(p.group.wall_s);
    alone_wall.push_back(p.alone.wall_s);
    skews.push_back(p.group.skew_s);
    nlohmann::json r{{"group", run_json(p.group)}, {"one_process", run_json(p.alone)}, {"wall_ratio", p.ratio()}};
    if (p.restart) r["restart"] = run_json(*p.restart);
    runs.push_back(std::move(r));
  }
  if (!ok) ctx.exit_code = 1;
  // The ratio of the medians: one slow compile in one run moves it less than a ratio of single runs.
  const double ratio = median(alone_wall) > 0 ? median(group_wall) / median(alone_wall) : 0;

  nlohmann::json j{{"command", "hcwarm bench cold-start"},
                   {"model", o.runner.model.model},
                   {"backend", backend},
                   {"processes", o.processes},
                   {"hosts", o.hosts},
                   {"repeat", o.repeat},
                   {"ok", ok},
                   {"group", runs[0]["group"]},
                   {"one_process", runs[0]["one_process"]},
                   {"wall_ratio", ratio},
                   {"median_group_wall_s", median(group_wall)},
                   {"median_one_process_wall_s", median(alone_wall)},
                   {"max_ready_skew_s", *std::max_element(skews.begin(), skews.end())}};
  if (hosts) {
    j["restart"] = runs[0]["restart"];
    std::vector<std::string> cpus;
    for (const auto& s : slices) cpus.push_back(cpu_list(s));
    j["host_cpus"] = cpus;
  }
  if (o.repeat > 1) j["runs"] = runs;
  if (!o.out.empty()) write_output_file(o.out, versioned(j).dump(2) + "\n");
  if (o.json) {
    print_json(std::cout, j);
    return;
  }
  auto title = [&](const Run& r, const std::string& what) {
    if (r.hosts > 0) {
      std::vector<std::string> cpus;
      for (const auto& s : slices) cpus.push_back(cpu_list(s));
      return fmt::format("{}{} on {} (a cache directory per host; CPUs {} by host)", job, what, r.cache.string(),
                         fmt::join(cpus, " | "));
    }
    return fmt::format("{} process{} on {}{}", r.processes, r.processes == 1 ? "" : "es", r.cache.string(),
                       hosts ? fmt::format(" (one host's CPUs: {})", cpu_list(slices[0])) : "");
  };
  for (size_t k = 0; k < pairs.size(); ++k) {
    if (pairs.size() > 1) std::cout << fmt::format("run {} of {}:\n", k + 1, pairs.size());
    print_run(pairs[k].group, title(pairs[k].group, ""), pairs[k].group.planned_keys);
    print_run(pairs[k].alone, title(pairs[k].alone, ""), pairs[k].alone.planned_keys);
    if (pairs[k].restart) print_run(*pairs[k].restart, title(*pairs[k].restart, ", restarted"), 0);
  }
  if (pairs.size() > 1) {
    std::cout << fmt::format("{:>5}  {:>14}  {:>12}  {:>9}  {:>7}\n", "run", "together s", "alone s", "skew s", "ratio");
    for (size_t k = 0; k < pairs.size(); ++k) {
      std::cout << fmt::format("{:>5}  {:>14.3f}  {:>12.3f}  {:>9.3f}  {:>6.2f}x\n", k + 1, pairs[k].group.wall_s,
                               pairs[k].alone.wall_s, pairs[k].group.skew_s, pairs[k].ratio());
    }
  }
  std::cout << fmt::format("{} together took {:.2f}x the wall time of one alone{}\n", job, ratio,
                           pairs.size() > 1 ? fmt::format(" (median {:.3f}s over median {:.3f}s, {} runs)",
                                                          median(group_wall), median(alone_wall), pairs.size())
                                            : "");
}

}  // namespace

void register_bench_cold_start(CLI::App* bench, CliContext& ctx) {
  auto o = std::make_shared<ColdStartOptions>();
  CLI::App* cmd = bench->add_subcommand(
      "cold-start", "N processes warming one empty cache together vs one alone: compiles, loads, ready times");
  cmd->footer(
      "Starts --processes children at one moment, each running the start-up warmup (as `hcwarm warm`) on\n"
      "DIR/processes-N, then one child alone on DIR/one-process; children get HCWARM_LOCAL_WORLD_SIZE=N.\n"
      "Reports per process keys compiled / loaded, warmup seconds and ready time (from the common start),\n"
      "the compiles between them against the planned keys, the ready-time skew, and the N-process wall time\n"
      "over the one-process one. --repeat K runs K such pairs on DIR/run-1..K (alternating which goes first)\n"
      "and reports the median N-process wall time over the median one-process one.\n"
      "--hosts H simulates H hosts without a shared file system: host h's N ranks warm DIR/hosts-HxN/host-h\n"
      "pinned to an equal slice h of this machine's CPUs; rank r builds planned keys r, r+HN, ..., the ranks\n"
      "exchange what they built through a loopback hub and publish each other's verified entries, then warm.\n"
      "The one process alone gets one host's CPUs, so the ratio is the job's against one process on one host.\n"
      "The job then starts again on its caches (a restart), which must compile nothing. Each rank waits at\n"
      "most HCWARM_GROUP_TIMEOUT_S (default 600) for the others' kernels.\n"
      "Exits 1 when a key was compiled twice, a process did not load every key or a restart compiled.");
  add_plan_options(cmd, o->runner.model);
  add_backend_option(cmd, o->runner.model, "cpu | cuda");
  cmd->add_option("--cache-dir", o->runner.model.cache_dir,
                  "Empty (or absent) directory for the benchmark's caches")->required();
  cmd->add_option("--processes", o->processes, "Processes warming one cache together (per host with --hosts)")
      ->capture_default_str();
  cmd->add_option("--hosts", o->hosts,
                  "Simulate H hosts of --processes ranks each: a cache directory and an equal CPU slice per host, "
                  "kernels exchanged between ranks (0: one host)")
      ->capture_default_str();
  cmd->add_option("--repeat", o->repeat, "Pairs of runs (N together, one alone) to take the medians of")
      ->capture_default_str();
  add_mlp_width_option(cmd, o->runner.mlp_width);
  cmd->add_option("--out", o->out, "Also write the JSON report to this file");
  add_json_flag(cmd, o->json);
  // The children's own entry point (not for users).
  cmd->add_option("--child-start-ns", o->child_start_ns)->group("");
  cmd->add_option("--child-rank", o->child_rank)->group("");
  cmd->add_option("--child-world", o->child_world)->group("");
  cmd->add_option("--child-hub-port", o->child_hub_port)->group("");
  cmd->add_option("--child-cpus", o->child_cpus)->group("");
  cmd->callback([&ctx, o] {
    if (o->child_start_ns > 0) {
      run_child(ctx, *o);
    } else {
      run_bench(ctx, *o);
    }
  });
}

}  // namespace hcwarm::cli
