#pragma once
// A bounded set of background threads for the JIT runtime's tiered execution:
// jobs (one per kernel key) run in submission order on at most `threads`
// threads, started on the first submit. A caller that needs a queued key now
// can take() its job and run it itself. stop() (and the destructor) drops the
// queued jobs, calling their cancel hook, and waits for the ones running.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace hcwarm::jit {

class BackgroundCompiler {
 public:
  struct Job {
    std::string key;
    std::function<void()> run;     // must not throw
    std::function<void()> cancel;  // dropped by stop() before it ran
  };

  explicit BackgroundCompiler(int threads);
  ~BackgroundCompiler();
  BackgroundCompiler(const BackgroundCompiler&) = delete;
  BackgroundCompiler& operator=(const BackgroundCompiler&) = delete;

  // Queues a job; after stop() the job is cancelled at once.
  void submit(Job job);
  // Removes the queued (not started) job of `key`, for a caller that runs it itself.
  std::optional<Job> take(const std::string& key);
  // Blocks until nothing is queued or running.
  void drain();
  void stop();
  int threads() const { return max_threads_; }

 private:
  void loop();

  const int max_threads_;
  std::mutex mu_;
  std::condition_variable cv_;       // work arrived, or stop
  std::condition_variable idle_cv_;  // a job finished
  std::deque<Job> queue_;
  std::vector<std::thread> workers_;
  int running_ = 0;
  bool stopping_ = false;
};

}  // namespace hcwarm::jit
