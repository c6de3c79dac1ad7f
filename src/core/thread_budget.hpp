#pragma once
// How many threads may compile at once in this process: one count shared by
// everything that starts compile threads (a JIT build's workers, the parallel
// parts of one NVRTC compile), so that together they never exceed it.
// A Lease holds slots and gives them back when released or destroyed.
#include <condition_variable>
#include <mutex>

namespace hcwarm {

class ThreadBudget {
 public:
  explicit ThreadBudget(int capacity);  // capacity >= 0
  ThreadBudget(const ThreadBudget&) = delete;
  ThreadBudget& operator=(const ThreadBudget&) = delete;

  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& o) noexcept;
    Lease& operator=(Lease&& o) noexcept;
    ~Lease() { release(count_); }
    int count() const;
    // Gives n of the held slots back (thread-safe; at most what is held).
    void release(int n = 1);

   private:
    friend class ThreadBudget;
    Lease(ThreadBudget* b, int n) : budget_(b), count_(n) {}
    ThreadBudget* budget_ = nullptr;
    mutable std::mutex mu_;
    int count_ = 0;
  };

  // Waits until at least `at_least` slots are free (1 <= at_least <= capacity),
  // then takes up to `at_most` of them.
  Lease acquire(int at_least, int at_most);
  // All n slots now, or none (count() == 0); never waits.
  Lease try_acquire(int n);

  int capacity() const { return capacity_; }
  int in_use() const;
  int peak() const;  // the most slots held at once so far

 private:
  void give_back(int n);

  const int capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int used_ = 0;
  int peak_ = 0;
};

}  // namespace hcwarm
