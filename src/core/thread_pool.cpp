#include "core/thread_pool.hpp"

#include <algorithm>

namespace hcwarm {

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_work_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_chunks() {
  while (true) {
    int64_t begin;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (next_ >= n_ || error_) return;
      begin = next_;
      next_ = std::min(n_, next_ + grain_);
    }
    const int64_t end = std::min(n_, begin + grain_);
    try {
      (*fn_)(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
      return;
    }
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_work_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      ++active_;
    }
    run_chunks();
    {
      std::lock_guard<std::mutex> lock(mu_);
      --active_;
    }
    cv_done_.notify_all();
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  if (workers_.empty() || n <= grain) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> call(call_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_ = n;
    grain_ = grain;
    next_ = 0;
    error_ = nullptr;
    ++generation_;
  }
  cv_work_.notify_all();
  run_chunks();
  std::exception_ptr err;
  {
    std::unique_lock<std::mutex> lock(mu_);
    // Workers that woke for this generation finish their chunk; late wakers find no work.
    cv_done_.wait(lock, [&] { return active_ == 0 && (next_ >= n_ || error_); });
    err = error_;
    fn_ = nullptr;
    n_ = 0;
  }
  if (err) std::rethrow_exception(err);
}

}  // namespace hcwarm
