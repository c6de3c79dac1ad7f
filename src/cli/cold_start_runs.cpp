#include "cli/cold_start_runs.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <thread>

#include "cli/bench_hosts.hpp"
#include "cli/json_output.hpp"
#include "core/error.hpp"
#include "jit/kernel_exchange.hpp"
#include "jit/process.hpp"
#include "runtime/exchange_hub.hpp"

namespace hcwarm::cli {
namespace fs = std::filesystem;
namespace {

using SysClock = std::chrono::system_clock;

double to_seconds(SysClock::duration d) { return std::chrono::duration<double>(d).count(); }

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

}  // namespace

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

namespace {
// Each of n ranks sharing `cpus` compiles with an equal share of them.
std::string host_jobs(const std::vector<int>& cpus, int n) {
  return fmt::format("HCWARM_JOBS={}", std::max<size_t>(1, cpus.size() / static_cast<size_t>(n)));
}
}  // namespace

// n children on one empty cache, started together (one process alone: n = 1,
// on `cpus` when given, as one simulated host's share).
Run run_group(const ColdStartOptions& o, const std::string& backend, int n, const fs::path& cache,
              const std::vector<int>& cpus) {
  std::vector<ChildSpec> specs(static_cast<size_t>(n));
  for (ChildSpec& c : specs) {
    c.env = {fmt::format("HCWARM_LOCAL_WORLD_SIZE={}", n)};
    c.args = {"--cache-dir", cache.string()};
    if (!cpus.empty()) {
      c.env.push_back(host_jobs(cpus, n));
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
    c.env = {fmt::format("HCWARM_LOCAL_WORLD_SIZE={}", n), host_jobs(cpus, n)};
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

}  // namespace hcwarm::cli
