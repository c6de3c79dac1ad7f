#pragma once
// The runs of `hcwarm bench cold-start` (cmd_bench_cold_start.cpp): one child
// warming as `hcwarm warm` starts (with --hosts, after the kernel exchange), and
// groups of children started at one moment, on one cache or as simulated hosts.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/runner_options.hpp"

namespace hcwarm::cli {

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

struct Run {
  int processes = 0;
  int hosts = 0;  // 0: one cache directory for all
  std::filesystem::path cache;
  std::vector<nlohmann::json> children;
  int planned_keys = 0;
  int compiled_total = 0;
  bool all_loaded = true;
  double wall_s = 0;  // slowest ready time
  double skew_s = 0;  // slowest - fastest ready time
};

// The child's side: wait for the common start, warm, print one JSON line.
void run_child(const CliContext& ctx, const ColdStartOptions& o);
// n children on one empty cache, started together (one process alone: n = 1,
// on `cpus` when given, as one simulated host's share).
Run run_group(const ColdStartOptions& o, const std::string& backend, int n, const std::filesystem::path& cache,
              const std::vector<int>& cpus = {});
// o.hosts simulated hosts of o.processes ranks: host h's ranks on base/host-h and
// CPU slice h, all exchanging kernels through one loopback hub.
Run run_hosts(const ColdStartOptions& o, const std::string& backend, const std::filesystem::path& base,
              const std::vector<std::vector<int>>& slices, double timeout_s);
nlohmann::json run_json(const Run& r);
// expected_compiles: the planned keys, or 0 for a restart.
void print_run(const Run& r, const std::string& title, int expected_compiles);

}  // namespace hcwarm::cli
