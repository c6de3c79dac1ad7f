// JitRuntime's statistics: the counters and the event of every request.
#include "jit/jit_runtime.hpp"

namespace hcwarm::jit {

void JitRuntime::record(const KernelSpec& spec, const std::string& key, ArtifactSource src, double seconds) {
  std::lock_guard lock(stats_mu_);
  switch (src) {
    case ArtifactSource::Compiled: ++stats_.compiled; break;
    case ArtifactSource::Disk: ++stats_.loaded_from_disk; break;
    case ArtifactSource::Memory: ++stats_.memory_hits; break;
  }
  if (events_.size() >= kMaxEvents) {
    ++stats_.events_dropped;
    return;
  }
  events_.push_back({key, spec.family, spec.describe(), spec.params, ready_ ? Phase::Serving : Phase::Warmup, src,
                     seconds});
}

void JitRuntime::record_failure() {
  std::lock_guard lock(stats_mu_);
  ++stats_.failed;
}

CompileStats JitRuntime::stats() const {
  std::lock_guard lock(stats_mu_);
  CompileStats s = stats_;
  s.served_by_generic = served_by_generic_.load(std::memory_order_relaxed);
  return s;
}

std::vector<CompileEvent> JitRuntime::events() const {
  std::lock_guard lock(stats_mu_);
  return events_;
}

void JitRuntime::reset_counters() {
  std::lock_guard lock(stats_mu_);
  stats_ = {};
  events_.clear();
  served_by_generic_.store(0, std::memory_order_relaxed);
}

}  // namespace hcwarm::jit
