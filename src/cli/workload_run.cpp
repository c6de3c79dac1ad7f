#include "cli/workload_run.hpp"

namespace hcwarm::cli {

runtime::RunReport run_workload(runtime::RunnerConfig cfg, const std::vector<runtime::Request>& requests,
                                const WorkloadRun& run) {
  cfg.jit.progress = !run.quiet;
  runtime::ModelRunner runner(cfg);
  const runtime::WarmupReport w = runner.kernel_warmup(run.prewarm);
  runtime::ReplayOptions ro;
  ro.max_running_requests = run.max_running;
  ro.progress = !run.quiet;
  return runtime::replay(runner, requests, ro, run.name, w);
}

}  // namespace hcwarm::cli
