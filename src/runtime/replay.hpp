#pragma once
// Replays requests through the scheduler and a model runner: every step's
// token count goes through ModelRunner::forward, timed, with the JIT compiles
// that happened inside it.
#include <optional>
#include <string>
#include <vector>

#include "runtime/latency_report.hpp"
#include "runtime/model_runner.hpp"
#include "runtime/scheduler.hpp"
#include "runtime/trace.hpp"

namespace hcwarm::runtime {

struct ReplayOptions {
  int64_t max_running_requests = 64;
  std::optional<int64_t> max_forwards;
  bool progress = false;  // a line every few seconds on stderr
};

// `warmup` is what kernel_warmup() returned for this runner; it goes into the report.
RunReport replay(ModelRunner& runner, const std::vector<Request>& requests, const ReplayOptions& options,
                 const std::string& name, const WarmupReport& warmup);

nlohmann::json warmup_json(const WarmupReport& w);

}  // namespace hcwarm::runtime
