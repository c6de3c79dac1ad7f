// ThreadBudget: slots taken all-or-nothing or as many as are free, given back by
// release or destruction, a waiting acquire woken by a release, and a peak that
// never passes the capacity.
#include "core/thread_budget.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace hcwarm {
namespace {

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
