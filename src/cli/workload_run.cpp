#include "cli/workload_run.hpp"

#include <chrono>

namespace hcwarm::cli {

WarmedRunner warm_runner(runtime::RunnerConfig cfg, bool prewarm, bool quiet) {
  const auto start = std::chrono::steady_clock::now();
  WarmedRunner w;
  w.progress = std::make_unique<BuildProgressDisplay>(!quiet);
  cfg.jit.progress = w.progress->callback();
  cfg.compile_while_device_starts = prewarm;
  w.runner = std::make_unique<runtime::ModelRunner>(std::move(cfg));
  w.warmup = w.runner->kernel_warmup(prewarm);
  w.startup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return w;
}

sim::RunReport run_workload(runtime::RunnerConfig cfg, const std::vector<sim::Request>& requests,
                                const WorkloadRun& run) {
  const WarmedRunner w = warm_runner(std::move(cfg), run.prewarm, run.quiet);
  sim::ReplayOptions ro;
  ro.max_running_requests = run.max_running;
  ro.progress = !run.quiet;
  sim::RunReport report = sim::replay(*w.runner, requests, ro, run.name, w.warmup);
  report.extra["startup_seconds"] = w.startup_seconds;
  return report;
}

}  // namespace hcwarm::cli
