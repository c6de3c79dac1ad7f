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
#include <chrono>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>

#include "cli/bench_hosts.hpp"
#include "cli/commands.hpp"
#include "cli/json_output.hpp"
#include "cli/runner_options.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "jit/kernel_exchange.hpp"
#include "jit/process.hpp"
#include "runtime/exchange_hub.hpp"
#include "sim/latency_report.hpp"

namespace hcwarm::cli {
namespace fs = std::filesystem;
namespace {

using SysClock = std::chrono::system_clock;

struct ColdStartOptions {
  RunnerOptions runner;
  int processes = 4;
  int repeat = 1;         // pairs of (N together, one alone), each on fresh directories
  std::string out;        // also write the JSON here
  bool json = false;
  int hosts = 0;          // > 0: simulated hosts of `processes` each, exchanging kernels
  int64_t child_start_ns = 0;  // > 0: this process is one child; warm at this system-clock time
  // A child of --hosts: its rank among all, their count, the hub's port, its host's CPUs.
  int child_rank = 0;
  int child_world = 1;
  int child_hub_port = 0;
  std::string child_cpus;
};

// The exchange's bound when HCWARM_GROUP_TIMEOUT_S is not set.
constexpr int kDefaultHubTimeoutS = 600;

double to_seconds(SysClock::duration d) { return std::chrono::duration<double>(d).count(); }

// A child: wait for the common start, warm like `hcwarm warm`, print one JSON line.
// With --hosts: every rank's shard built, gathered through the hub and published here.
void run_child(const CliContext& ctx, const ColdStartOptions& o) {
  if (!o.child_cpus.empty()) pin_to_cpus(o.child_cpus);
  const SysClock::time_point start{std::chrono::nanoseconds(o.child_start_ns)};
  std::this_thread::sleep_until(start);
  runtime::RunnerConfig cfg = make_runner_config(ctx, o.runner);
  cfg.build.num_layers = 1;  // warmup needs the first layer only
  // As `hcwarm warm` starts; a rank of --hosts builds its shard only.
  cfg.compile_while_device_starts = o.child_hub_port == 0;
  runtime::ModelRunner runner(cfg);
  // Where start-up time goes: the device (context, model) before warmup, then the warmup.
  const double runner_s = to_seconds(SysClock::now() - start);
  jit::ExchangeReport ex;
  if (o.child_hub_port > 0) {
    const double timeout_s = ctx.env.group_timeout_s.value_or(kDefaultHubTimeoutS);
    const std::vector<jit::KernelSpec> specs = runner.registry().planned(/*include_mhc=*/true);
    ex = jit::exchange_kernels(runner.jit(), specs, o.child_rank, o.child_world, [&](const std::string& mine) {
      return runtime::hub_gather(o.child_hub_port, o.child_rank, mine, timeout_s);
    });
  }
  const runtime::WarmupReport w = runner.kernel_warmup(true);
  const double ready_s = to_seconds(SysClock::now() - start);
  const jit::CompileStats st = runner.jit().stats();
  nlohmann::json j{{"pid", static_cast<int64_t>(::getpid())},
                   {"rank", o.child_rank},
                   {"keys", w.keys},
                   {"compiled", w.compiled + ex.compiled},
                   {"warmup_compiled", w.compiled},
                   {"shard_keys", ex.shard_keys.size()},
                   {"received", ex.received},
                   {"refused", ex.refused},
                   {"exchange_s", ex.build_seconds + ex.exchange_seconds},
                   {"loaded_from_disk", w.loaded_from_disk},
                   {"memory_hits", w.memory_hits},
                   {"failed", st.failed},
                   {"runner_s", runner_s},
                   {"warmup_seconds", w.seconds},
                   {"framework_seconds", w.framework_seconds},
                   {"model_hook_seconds", w.model_hook_seconds},
                   {"compile_threads", runner.jit().options().jobs},
                   {"ready_s", ready_s}};
  std::cout << j.dump() << std::endl;
}

// The child's arguments: the same model, server options and backend as ours.
std::vector<std::string> child_args(const ColdStartOptions& o, const std::string& backend) {
  const ModelOptions& m = o.runner.model;
  std::vector<std::string> a{"--model", m.model, "--dp-size", std::to_string(m.dp_size), "--mlp-width",
                             std::to_string(o.runner.mlp_width), "--backend", backend};
  if (m.num_sms) a.insert(a.end(), {"--num-sms", std::to_string(*m.num_sms)});
  if (m.chunked_prefill_size) a.insert(a.end(), {"--chunked-prefill-size", std::to_string(*m.chunked_prefill_size)});
  if (m.enable_dp_attention) a.push_back("--enable-dp-attention");
  return a;
}

struct Run {
  int processes = 0;
  int hosts = 0;  // 0: one cache directory for all
  fs::path cache;
  std::vector<nlohmann::json> children;
  int planned_keys = 0;
  int compiled_total = 0;
  bool all_loaded = true;
  double wall_s = 0;  // slowest ready time
  double skew_s = 0;  // slowest - fastest ready time
};

// One child to start: its extra arguments and environment, and its host.
struct ChildSpec {
  std::vector<std::string> env;   // NAME=VALUE
  std::vector<std::string> args;  // after the common ones
  int host = 0;
};

// The children, started together; each on --cache-dir `cache` unless its args name one.
Run run_children(const ColdStartOptions& o, const std::string& backend, const std::vector<ChildSpec>& specs,
                 const fs::path& cache) {
  const int n = static_cast<int>(specs.size());
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  // Far enough ahead that every child is exec'ed and parsed its options by then.
  const auto start = SysClock::now() + std::chrono::milliseconds(300 + 50 * n);
  const int64_t start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count();
  const auto shared = child_args(o, backend);
  std::vector<std::vector<std::string>> argvs;
  for (const ChildSpec& c : specs) {
    std::vector<std::string> argv{"env"};
    argv.insert(argv.end(), c.env.begin(), c.env.end());
    argv.insert(argv.end(), {self, "bench", "cold-start", "--child-start-ns", std::to_string(start_ns)});
    argv.insert(argv.end(), shared.begin(), shared.end());
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    argvs.push_back(std::move(argv));
  }

  std::vector<jit::ProcessResult> results(n);
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      try {
        results[i] = jit::run_process(argvs[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();

  Run r;
  r.processes = n;
  r.cache = cache;
  double first = 0;
  for (int i = 0; i < n; ++i) {
    if (errors[i]) std::rethrow_exception(errors[i]);
    const std::string& out = results[i].output;
    const size_t at = out.rfind("\n{");
    const std::string line = out.substr(at == std::string::npos ? 0 : at + 1);
    if (results[i].exit_code != 0 || line.empty() || line[0] != '{') {
      const std::string tail = out.size() > 4000 ? out.substr(out.size() - 4000) : out;
      HCWARM_THROW_LOG(ErrorKind::Internal, tail, "bench cold-start: process {} of {} failed with exit code {}", i + 1,
                       n, results[i].exit_code);
    }
    nlohmann::json c = nlohmann::json::parse(line);
    c["host"] = specs[static_cast<size_t>(i)].host;
    const int keys = c.at("keys").get<int>();
    const int loaded =
        c.at("warmup_compiled").get<int>() + c.at("loaded_from_disk").get<int>() + c.at("memory_hits").get<int>();
    c["all_loaded"] = loaded == keys && c.at("failed").get<int>() == 0;
    r.all_loaded = r.all_loaded && c["all_loaded"].get<bool>();
    r.planned_keys = std::max(r.planned_keys, keys);
    r.compiled_total += c.at("compiled").get<int>();
    const double ready = c.at("ready_s").get<double>();
    r.wall_s = i == 0 ? ready : std::max(r.wall_s, ready);
    first = i == 0 ? ready : std::min(first, ready);
    r.children.push_back(std::move(c));
  }
  r.skew_s = r.wall_s - first;
  for (const auto& c : r.children) r.all_loaded = r.all_loaded && c.at("keys").get<int>() == r.planned_keys;
  return r;
}

// n children on one empty cache, started together (one process alone: n = 1,
// on `cpus` when given, as one simulated host's share).
Run run_group(const ColdStartOptions& o, const std::string& backend, int n, const fs::path& cache,
              const std::vector<int>& cpus = {}) {
  std::vector<ChildSpec> specs(static_cast<size_t>(n));
  for (ChildSpec& c : specs) {
    c.env = {fmt::format("HCWARM_LOCAL_WORLD_SIZE={}", n)};
    c.args = {"--cache-dir", cache.string()};
    if (!cpus.empty()) {
      c.env.push_back(fmt::format("HCWARM_JOBS={}", std::max<size_t>(1, cpus.size() / static_cast<size_t>(n))));
      c.args.insert(c.args.end(), {"--child-cpus", cpu_list(cpus)});
    }
  }
  return run_children(o, backend, specs, cache);
}

// H simulated hosts of N ranks: host h's ranks on DIR/host-h and CPU slice h,
// all exchanging through one hub.
Run run_hosts(const ColdStartOptions& o, const std::string& backend, const fs::path& base,
              const std::vector<std::vector<int>>& slices, double timeout_s) {
  const int hosts = o.hosts, n = o.processes, world = hosts * n;
  runtime::ExchangeHub hub(world, timeout_s);
  std::vector<ChildSpec> specs;
  for (int rank = 0; rank < world; ++rank) {
    const int h = rank / n;
    const std::vector<int>& cpus = slices[static_cast<size_t>(h)];
    ChildSpec c;
    c.host = h;
    c.env = {fmt::format("HCWARM_LOCAL_WORLD_SIZE={}", n),
             fmt::format("HCWARM_JOBS={}", std::max<size_t>(1, cpus.size() / static_cast<size_t>(n)))};
    c.args = {"--cache-dir",  (base / fmt::format("host-{}", h)).string(),
              "--child-rank", std::to_string(rank),
              "--child-world", std::to_string(world),
              "--child-hub-port", std::to_string(hub.port()),
              "--child-cpus", cpu_list(cpus)};
    specs.push_back(std::move(c));
  }
  Run r = run_children(o, backend, specs, base);
  r.hosts = hosts;
  return r;
}

nlohmann::json run_json(const Run& r) {
  nlohmann::json j{{"processes", r.processes},
                   {"cache_dir", r.cache.string()},
                   {"planned_keys", r.planned_keys},
                   {"compiled_total", r.compiled_total},
                   {"each_key_compiled_once", r.compiled_total == r.planned_keys},
                   {"all_loaded", r.all_loaded},
                   {"wall_s", r.wall_s},
                   {"ready_skew_s", r.skew_s},
                   {"per_process", r.children}};
  if (r.hosts > 0) j["hosts"] = r.hosts;
  return j;
}

// expected_compiles: the planned keys, or 0 for a restart.
void print_run(const Run& r, const std::string& title, int expected_compiles) {
  const bool hosts = r.hosts > 0;
  std::cout << title << ":\n";
  std::cout << fmt::format("  {:>4}  {}{:>8}  {}{:>8}  {:>7}  {:>9}  {}{:>10}  {:>9}\n", "#", hosts ? " host  " : "",
                           "compiled", hosts ? "received  " : "", "loaded", "keys", "device s",
                           hosts ? "exchange s  " : "", "warmup s", "ready s");
  int i = 0;
  for (const auto& c : r.children) {
    std::cout << fmt::format(
        "  {:>4}  {}{:>8}  {}{:>8}  {:>7}  {:>9.3f}  {}{:>10.3f}  {:>9.3f}{}{}\n", ++i,
        hosts ? fmt::format("{:>5}  ", c.at("host").get<int>()) : "", c.at("compiled").get<int>(),
        hosts ? fmt::format("{:>8}  ", c.at("received").get<int>()) : "",
        c.at("loaded_from_disk").get<int>() + c.at("memory_hits").get<int>(), c.at("keys").get<int>(),
        c.at("runner_s").get<double>(), hosts ? fmt::format("{:>10.3f}  ", c.at("exchange_s").get<double>()) : "",
        c.at("warmup_seconds").get<double>(), c.at("ready_s").get<double>(),
        c.at("all_loaded").get<bool>() ? "" : "  NOT ALL LOADED",
        c.contains("refused") && !c["refused"].empty() ? fmt::format("  {} refused", c["refused"].size()) : "");
  }
  const bool as_expected = r.compiled_total == expected_compiles;
  std::cout << fmt::format("  compiles between them: {} for {} planned keys{}; ready after {:.3f}s, skew {:.3f}s\n",
                           r.compiled_total, r.planned_keys,
                           expected_compiles == 0 ? (as_expected ? " (none, as a restart should)" : " (NOT none)")
                                                  : (as_expected ? " (each key once)" : " (NOT each key once)"),
                           r.wall_s, r.skew_s);
}

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
