#include "jit/background_compiler.hpp"

#include <algorithm>

namespace hcwarm::jit {

BackgroundCompiler::BackgroundCompiler(int threads) : max_threads_(std::max(1, threads)) {}

BackgroundCompiler::~BackgroundCompiler() { stop(); }

void BackgroundCompiler::submit(Job job) {
  {
    std::unique_lock lock(mu_);
    if (!stopping_) {
      queue_.push_back(std::move(job));
      // One more thread while the queue outgrows the idle ones, up to the bound.
      const size_t idle = workers_.size() - static_cast<size_t>(running_);
      if (workers_.size() < static_cast<size_t>(max_threads_) && queue_.size() > idle) {
        workers_.emplace_back([this] { loop(); });
      }
      lock.unlock();
      cv_.notify_one();
      return;
    }
  }
  if (job.cancel) job.cancel();
}

std::optional<BackgroundCompiler::Job> BackgroundCompiler::take(const std::string& key) {
  std::lock_guard lock(mu_);
  const auto it = std::find_if(queue_.begin(), queue_.end(), [&](const Job& j) { return j.key == key; });
  if (it == queue_.end()) return std::nullopt;
  Job job = std::move(*it);
  queue_.erase(it);
  idle_cv_.notify_all();
  return job;
}

void BackgroundCompiler::drain() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [&] { return queue_.empty() && running_ == 0; });
}

void BackgroundCompiler::stop() {
  std::deque<Job> dropped;
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    dropped.swap(queue_);
    workers.swap(workers_);
  }
  cv_.notify_all();
  for (Job& j : dropped) {
    if (j.cancel) j.cancel();
  }
  for (std::thread& t : workers) t.join();
  idle_cv_.notify_all();
}

void BackgroundCompiler::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left to run
    Job job = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    lock.unlock();
    job.run();
    lock.lock();
    --running_;
    idle_cv_.notify_all();
  }
}

}  // namespace hcwarm::jit
