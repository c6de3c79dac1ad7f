#pragma once
// A small owned thread pool for CPU sublayers: parallel_for over a range, the
// calling thread taking part. One job runs at a time; workers sleep between jobs.
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hcwarm::model {

class CpuWorkerPool {
 public:
  // `threads` counts the caller too; <= 0 means the hardware's thread count.
  explicit CpuWorkerPool(int threads);
  ~CpuWorkerPool();
  CpuWorkerPool(const CpuWorkerPool&) = delete;
  CpuWorkerPool& operator=(const CpuWorkerPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) on disjoint chunks covering [0, n) and returns when
  // all are done. Spread over threads, chunks hold at most `grain` indices;
  // with no workers, or n <= grain, it is one inline call for the whole range.
  // The first exception thrown by fn is rethrown here (later chunks are skipped).
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker_loop();
  void work_on_current_job(std::unique_lock<std::mutex>& lock);  // lock held on entry and exit

  std::vector<std::thread> workers_;
  std::mutex submit_mu_;          // one parallel_for at a time
  std::mutex mu_;                 // guards everything below
  std::condition_variable wake_;  // a new job or shutdown
  std::condition_variable idle_;  // a worker finished the current job
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t grain_ = 1;
  int64_t next_ = 0;              // first unclaimed index
  uint64_t generation_ = 0;       // bumped per job so a worker joins each job once
  int busy_workers_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
};

}  // namespace hcwarm::model
