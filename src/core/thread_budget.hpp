#pragma once
// How many threads may compile at once in this process: one count shared by
// everything that starts compile threads (a JIT build's workers, the parallel
// parts of one NVRTC compile), so that together they never exceed it.
// A Lease holds slots and gives them back when released or destroyed.
// A gate (optional) is a second count that every slot must also hold: the
// host-wide slots that the processes of one host share (jit/host_compile_slots.hpp).
#include <condition_variable>
#include <memory>
#include <mutex>

namespace hcwarm {

class SlotGate {
 public:
  virtual ~SlotGate() = default;
  // Takes up to n slots now, never waiting; returns how many it took.
  virtual int try_take(int n) = 0;
  // Gives back n of the slots taken (at most what is held).
  virtual void give_back(int n) = 0;
  // Told, while a taker waits because try_take found nothing free, how long it has
  // waited so far (0 at a wait's first look): may log what it waits for, and
  // throws to end the wait.
  virtual void waiting(double seconds) { (void)seconds; }
};

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
    Lease(ThreadBudget* b, int n, int gated) : budget_(b), count_(n), gated_(gated) {}
    ThreadBudget* budget_ = nullptr;
    mutable std::mutex mu_;
    int count_ = 0;
    int gated_ = 0;  // of count_, the slots that also hold a gate slot
  };

  // Waits until at least `at_least` slots are free (1 <= at_least <= capacity),
  // here and in the gate, then takes up to `at_most` of them. A wait on the gate
  // ends as the gate's waiting() says (HostCompileSlots: ErrorKind::Timeout).
  Lease acquire(int at_least, int at_most);
  // All n slots now, or none (count() == 0); never waits.
  Lease try_acquire(int n);

  // From now on every slot taken also takes one of the gate's, and the capacity
  // becomes at least `capacity`: the gate bounds the threads, not this count.
  void attach_gate(std::shared_ptr<SlotGate> gate, int capacity);
  bool gated() const;

  int capacity() const;
  int in_use() const;
  int peak() const;  // the most slots held at once so far

 private:
  struct Taken {
    int slots;  // 0: fewer than asked for were free in the gate, and none is held
    int gated;  // of them, the ones that hold a gate slot
  };
  // Under `lock`: n more slots here and, with a gate, n of its (released while
  // asking); all-or-nothing below `need` of them.
  Taken take(std::unique_lock<std::mutex>& lock, int n, int need);
  void give_back(int n, int gated);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  int capacity_;
  std::shared_ptr<SlotGate> gate_;
  int used_ = 0;
  int peak_ = 0;
};

}  // namespace hcwarm
