#pragma once
// One start-up and one replay of a workload, as `replay` and `demo` run it: a
// model runner, its kernel warmup (with or without the mHC prewarm), then every
// request of the trace through the scheduler.
#include <memory>
#include <string>
#include <vector>

#include "cli/build_progress.hpp"
#include "sim/replay.hpp"

namespace hcwarm::cli {

// A model runner after its kernel warmup, which showed its progress unless quiet.
struct WarmedRunner {
  std::unique_ptr<BuildProgressDisplay> progress;  // outlives the runner, which holds its callback
  std::unique_ptr<runtime::ModelRunner> runner;
  runtime::WarmupReport warmup;
  // Construction (device, model, and the compiles that ran meanwhile) plus the
  // warmup: the time to ready, where warmup.seconds is only what remained after.
  double startup_seconds = 0.0;
};
WarmedRunner warm_runner(runtime::RunnerConfig cfg, bool prewarm, bool quiet);

struct WorkloadRun {
  std::string name;         // the report's name ("prewarm, empty cache")
  bool prewarm = true;
  bool quiet = false;       // --json: no progress output
  int64_t max_running = 64; // requests running at once
};

sim::RunReport run_workload(runtime::RunnerConfig cfg, const std::vector<sim::Request>& requests,
                                const WorkloadRun& run);

}  // namespace hcwarm::cli
