#pragma once
// A small fixed thread pool owned by whoever needs one (no global instance).
// parallel_for hands out ranges of [0, n) in chunks of `grain` to the workers
// and to the calling thread, and returns when all are done. Not reentrant:
// one parallel_for at a time per pool (calls are serialized).
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hcwarm {

class ThreadPool {
 public:
  // num_threads <= 0: std::thread::hardware_concurrency(). The caller counts as one.
  explicit ThreadPool(int num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // fn(begin, end) over chunks; the first exception thrown is rethrown here.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker_loop();
  void run_chunks();

  std::vector<std::thread> workers_;
  std::mutex call_mu_;  // serializes parallel_for calls
  std::mutex mu_;
  std::condition_variable cv_work_;
  std::condition_variable cv_done_;
  uint64_t generation_ = 0;
  bool stop_ = false;
  int active_ = 0;
  // the current job
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t grain_ = 1;
  int64_t next_ = 0;
  std::exception_ptr error_;
};

}  // namespace hcwarm
