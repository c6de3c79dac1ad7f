#include "cli/workload_run.hpp"

namespace hcwarm::cli {

WarmedRunner warm_runner(runtime::RunnerConfig cfg, bool prewarm, bool quiet) {
  WarmedRunner w;
  w.progress = std::make_unique<BuildProgressDisplay>(!quiet);
  cfg.jit.progress = w.progress->callback();
  cfg.compile_while_device_starts = prewarm;
  w.runner = std::make_unique<runtime::ModelRunner>(std::move(cfg));
  w.warmup = w.runner->kernel_warmup(prewarm);
  return w;
}

sim::RunReport run_workload(runtime::RunnerConfig cfg, const std::vector<sim::Request>& requests,
                                const WorkloadRun& run) {
  const WarmedRunner w = warm_runner(std::move(cfg), run.prewarm, run.quiet);
  sim::ReplayOptions ro;
  ro.max_running_requests = run.max_running;
  ro.progress = !run.quiet;
  return sim::replay(*w.runner, requests, ro, run.name, w.warmup);
}

}  // namespace hcwarm::cli
