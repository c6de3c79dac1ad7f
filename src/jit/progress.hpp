#pragma once
// Progress of JitRuntime::build(): a live bar on stderr when it is a terminal,
// one log line per finished key otherwise, nothing when disabled.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace hcwarm::jit {

class BuildProgress {
 public:
  BuildProgress(int total, bool enabled);
  ~BuildProgress();
  BuildProgress(const BuildProgress&) = delete;
  BuildProgress& operator=(const BuildProgress&) = delete;

  // what: "compiled" / "disk" / "memory" / "failed".
  void done(const std::string& description, const std::string& what, double seconds);
  void finish();  // draws the final state (idempotent)

 private:
  void draw_locked(bool final);

  const int total_;
  const bool bar_;
  const bool lines_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex mu_;
  std::condition_variable cv_;
  int finished_ = 0, compiled_ = 0, disk_ = 0, memory_ = 0, failed_ = 0;
  std::string last_;
  bool stop_ = false;
  bool finished_drawn_ = false;
  std::thread ticker_;
};

}  // namespace hcwarm::jit
