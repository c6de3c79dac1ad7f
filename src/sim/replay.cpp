#include "sim/replay.hpp"
#include "core/logging.hpp"
#include "jit/report.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

namespace hcwarm::sim {

nlohmann::json warmup_json(const runtime::WarmupReport& w) {
  nlohmann::json j = jit::to_json(static_cast<const jit::BuildCounts&>(w));
  j.update({{"ran", w.ran},
            {"seconds", w.seconds},
            {"framework_seconds", w.framework_seconds},
            {"model_hook_seconds", w.model_hook_seconds},
            {"token_counts", w.token_counts},
            {"peak_device_bytes", w.peak_device_bytes},
            {"families", w.families}});
  return j;
}

RunReport replay(runtime::ModelRunner& runner, const std::vector<Request>& requests, const ReplayOptions& options,
                 const std::string& name, const runtime::WarmupReport& warmup) {
  SchedulerConfig sc;
  sc.chunked_prefill_size = runner.max_num_tokens();
  sc.max_running_requests = options.max_running_requests;
  sc.max_forwards = options.max_forwards;
  Scheduler scheduler(sc, requests);

  RunReport report;
  report.name = name;
  report.warmup_seconds = warmup.ran ? warmup.seconds : 0.0;
  auto last_progress = std::chrono::steady_clock::now();
  const ReplayResult result = scheduler.run([&](const Batch& batch) {
    const jit::CompileStats before = runner.compile_stats();
    const double seconds = runner.forward(batch.num_tokens);
    const jit::CompileStats after = runner.compile_stats();
    ForwardRecord rec;
    rec.index = batch.index;
    rec.time_s = batch.time_s;
    rec.num_tokens = batch.num_tokens;
    rec.num_splits = runner.hc_pre().num_splits(batch.num_tokens);
    rec.seconds = seconds;
    rec.compiles_during = after.compiles_after_ready - before.compiles_after_ready;
    rec.waited_for_compile = after.waited_for_compile - before.waited_for_compile;
    rec.compile_wait_s = after.compile_wait_s - before.compile_wait_s;
    rec.served_by_generic = after.served_by_generic - before.served_by_generic;
    report.records.push_back(rec);
    if (options.progress && std::chrono::steady_clock::now() - last_progress > std::chrono::seconds(5)) {
      last_progress = std::chrono::steady_clock::now();
      log::info("[{}] {} forwards, simulated time {:.1f}s", name, report.records.size(), batch.time_s);
    }
    return seconds;
  });
  report.requests = result.requests;
  report.extra["warmup"] = warmup_json(warmup);
  report.extra["requests"] = static_cast<int64_t>(requests.size());
  report.extra["completed_requests"] = result.completed_requests;
  report.extra["prefill_tokens"] = result.prefill_tokens;
  report.extra["decode_tokens"] = result.decode_tokens;
  report.extra["simulated_seconds"] = result.end_time_s;
  // What the background worker still compiles belongs to this run's report; serving is over.
  runner.drain_background();
  const jit::CompileStats end = runner.compile_stats();
  report.extra["tiered"] = runner.tiered();
  report.extra["background_compiled"] = end.background_compiled;
  report.extra["background_failed"] = end.background_failed;
  report.extra["background_compiles_after_ready"] = end.background_compiles_after_ready;
  return report;
}

}  // namespace hcwarm::sim
