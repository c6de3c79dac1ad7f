#include "cli/workload_run.hpp"

namespace hcwarm::cli {

sim::RunReport run_workload(runtime::RunnerConfig cfg, const std::vector<sim::Request>& requests,
                                const WorkloadRun& run) {
  cfg.jit.progress = !run.quiet;
  runtime::ModelRunner runner(cfg);
  const runtime::WarmupReport w = runner.kernel_warmup(run.prewarm);
  sim::ReplayOptions ro;
  ro.max_running_requests = run.max_running;
  ro.progress = !run.quiet;
  return sim::replay(runner, requests, ro, run.name, w);
}

}  // namespace hcwarm::cli
