#include "model/cpu_worker_pool.hpp"

#include <algorithm>
#include <utility>

namespace hcwarm::model {

CpuWorkerPool::CpuWorkerPool(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

CpuWorkerPool::~CpuWorkerPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void CpuWorkerPool::work_on_current_job(std::unique_lock<std::mutex>& lock) {
  // Chunks are claimed under the lock and run without it.
  while (next_ < n_) {
    const int64_t begin = next_;
    const int64_t end = std::min(n_, begin + grain_);
    next_ = end;
    lock.unlock();
    std::exception_ptr failed;
    try {
      (*fn_)(begin, end);
    } catch (...) {
      failed = std::current_exception();
    }
    lock.lock();
    if (failed) {
      if (!error_) error_ = failed;
      next_ = n_;  // skip what is left
    }
  }
}

void CpuWorkerPool::worker_loop() {
  uint64_t seen = 0;
  std::unique_lock lock(mu_);
  while (true) {
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    ++busy_workers_;
    work_on_current_job(lock);
    --busy_workers_;
    idle_.notify_all();
  }
}

void CpuWorkerPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  if (workers_.empty() || n <= grain) {
    fn(0, n);
    return;
  }
  std::lock_guard submit(submit_mu_);
  std::unique_lock lock(mu_);
  fn_ = &fn;
  n_ = n;
  grain_ = grain;
  next_ = 0;
  error_ = nullptr;
  ++generation_;
  wake_.notify_all();
  work_on_current_job(lock);
  // Workers that joined this job finish their chunks; late ones find nothing left.
  idle_.wait(lock, [&] { return busy_workers_ == 0; });
  fn_ = nullptr;
  n_ = 0;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

}  // namespace hcwarm::model
