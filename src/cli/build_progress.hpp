#pragma once
// How the CLI shows a JIT build's progress: a live bar on stderr when it is a
// terminal, one log line per finished key otherwise, nothing when disabled
// (--json). Give callback() to JitOptions::progress; the display must outlive
// the runtime that calls it.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "jit/progress.hpp"

namespace hcwarm::cli {

class BuildProgressDisplay {
 public:
  explicit BuildProgressDisplay(bool enabled);
  ~BuildProgressDisplay();  // ends a bar still drawing
  BuildProgressDisplay(const BuildProgressDisplay&) = delete;
  BuildProgressDisplay& operator=(const BuildProgressDisplay&) = delete;

  // Empty when disabled (the library then logs at debug level only).
  jit::BuildProgressFn callback();

 private:
  void on_event(const jit::BuildProgressEvent& e);
  void stop_ticker();
  void draw_locked(bool final);

  const bool enabled_;
  const bool bar_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread ticker_;
  bool stop_ = false;
  bool drawing_ = false;  // a bar is on screen without its final newline
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_note_;  // without a terminal: the last progress line at info
  int total_ = 0, done_ = 0, compiled_ = 0, disk_ = 0, memory_ = 0, failed_ = 0;
  std::string last_;
};

}  // namespace hcwarm::cli
