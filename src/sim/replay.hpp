#pragma once
// Replays requests through the scheduler and a model runner: every step's
// token count goes through runtime::ModelRunner::forward, timed, with what the
// JIT runtime's counters say happened inside it (compiles in its calls, calls
// that waited for a compile and how long, calls served by a generic kernel).
// At the end it waits for the background worker, whose compiles the report
// counts (extra "background_compiled", "background_failed").
#include <optional>
#include <string>
#include <vector>

#include "sim/latency_report.hpp"
#include "runtime/model_runner.hpp"
#include "sim/scheduler.hpp"
#include "sim/trace.hpp"

namespace hcwarm::sim {

struct ReplayOptions {
  int64_t max_running_requests = 64;
  std::optional<int64_t> max_forwards;
  bool progress = false;  // a line every few seconds on stderr
};

// `warmup` is what kernel_warmup() returned for this runner; it goes into the report.
RunReport replay(runtime::ModelRunner& runner, const std::vector<Request>& requests, const ReplayOptions& options,
                 const std::string& name, const runtime::WarmupReport& warmup);

nlohmann::json warmup_json(const runtime::WarmupReport& w);

}  // namespace hcwarm::sim
