// ThreadBudget: slots taken all-or-nothing or as many as are free, given back by
// release or destruction, a waiting acquire woken by a release, and a peak that
// never passes the capacity; with a gate, every slot also holds one of the
// gate's, and what the gate lacks is neither taken nor counted.
#include "core/thread_budget.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace hcwarm {
namespace {

// A gate of `free` slots, counting what it hands out.
class CountingGate final : public SlotGate {
 public:
  explicit CountingGate(int free) : free_(free) {}
  int try_take(int n) override {
    std::lock_guard lock(mu_);
    const int got = std::min(n, free_);
    free_ -= got;
    held_ += got;
    return got;
  }
  void give_back(int n) override {
    std::lock_guard lock(mu_);
    n = std::min(n, held_);
    held_ -= n;
    free_ += n;
  }
  int held() {
    std::lock_guard lock(mu_);
    return held_;
  }
  void set_free(int f) {
    std::lock_guard lock(mu_);
    free_ = f;
  }

 private:
  std::mutex mu_;
  int free_;
  int held_ = 0;
};

TEST(ThreadBudget, AGateBoundsTheSlotsAndRaisesTheCapacity) {
  ThreadBudget b(1);
  auto before = b.try_acquire(1);  // taken before the gate: holds none of its slots
  auto gate = std::make_shared<CountingGate>(2);
  b.attach_gate(gate, 4);
  EXPECT_TRUE(b.gated());
  EXPECT_EQ(b.capacity(), 4);
  auto two = b.acquire(1, 4);
  EXPECT_EQ(two.count(), 2);  // three free here, two in the gate
  EXPECT_EQ(gate->held(), 2);
  EXPECT_EQ(b.in_use(), 3);
  EXPECT_EQ(b.try_acquire(1).count(), 0);  // the gate is full
  EXPECT_EQ(b.in_use(), 3);                // and the refusal took nothing here
  before.release();
  EXPECT_EQ(gate->held(), 2);  // its slot was never the gate's
  two.release(1);
  EXPECT_EQ(gate->held(), 1);
  EXPECT_EQ(b.try_acquire(1).count(), 1);  // destroyed at once: back to the gate
  EXPECT_EQ(gate->held(), 1);
}

TEST(ThreadBudget, AcquireWaitsForTheGate) {
  ThreadBudget b(4);
  auto gate = std::make_shared<CountingGate>(0);  // another process holds every host slot
  b.attach_gate(gate, 4);
  std::atomic<bool> got{false};
  std::thread t([&] {
    auto l = b.acquire(1, 1);
    got = l.count() == 1;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(got.load());
  EXPECT_EQ(b.in_use(), 0);  // a waiter holds nothing while the gate is full
  gate->set_free(1);
  t.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(gate->held(), 0);
}

TEST(ThreadBudget, TryAcquireIsAllOrNothing) {
  ThreadBudget b(4);
  auto three = b.try_acquire(3);
  EXPECT_EQ(three.count(), 3);
  EXPECT_EQ(b.try_acquire(2).count(), 0);  // only one is free
  EXPECT_EQ(b.in_use(), 3);
  {
    auto one = b.try_acquire(1);
    EXPECT_EQ(one.count(), 1);
    EXPECT_EQ(b.in_use(), 4);
  }
  EXPECT_EQ(b.in_use(), 3);  // given back by the destructor
  three.release(2);
  EXPECT_EQ(three.count(), 1);
  EXPECT_EQ(b.in_use(), 1);
  three.release(5);  // no more than it holds
  EXPECT_EQ(b.in_use(), 0);
  EXPECT_EQ(b.peak(), 4);
  EXPECT_EQ(ThreadBudget(0).try_acquire(1).count(), 0);
}

TEST(ThreadBudget, AcquireTakesWhatIsFreeUpToAtMost) {
  ThreadBudget b(4);
  auto held = b.try_acquire(1);
  auto l = b.acquire(1, 8);
  EXPECT_EQ(l.count(), 3);
  ThreadBudget::Lease moved = std::move(l);
  EXPECT_EQ(moved.count(), 3);
  EXPECT_EQ(l.count(), 0);
  EXPECT_EQ(b.in_use(), 4);
  moved = ThreadBudget::Lease();
  EXPECT_EQ(b.in_use(), 1);
}

TEST(ThreadBudget, AcquireWaitsForARelease) {
  ThreadBudget b(2);
  auto all = b.acquire(2, 2);
  std::atomic<bool> got{false};
  std::thread t([&] {
    auto l = b.acquire(1, 1);
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got.load());
  all.release(1);
  t.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(b.peak(), 2);
}

TEST(ThreadBudget, ManyThreadsNeverHoldMoreThanTheCapacity) {
  ThreadBudget b(3);
  std::vector<std::thread> ts;
  for (int i = 0; i < 8; ++i) {
    ts.emplace_back([&, i] {
      for (int r = 0; r < 200; ++r) {
        auto l = (i % 2) ? b.acquire(1, 2) : b.try_acquire(2);
        ASSERT_LE(b.in_use(), 3);
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_LE(b.peak(), 3);
  EXPECT_EQ(b.in_use(), 0);
}

}  // namespace
}  // namespace hcwarm
