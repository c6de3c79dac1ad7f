#include "core/thread_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

namespace hcwarm::model {
namespace {

TEST(ThreadPoolTest, CoversEveryIndexOnce) {
  ThreadPool pool(4);
  EXPECT_EQ(pool.size(), 4);
  for (int64_t n : {0, 1, 7, 16, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    pool.parallel_for(n, 7, [&](int64_t b, int64_t e) {
      EXPECT_LE(e - b, 7);
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
}

TEST(ThreadPoolTest, ReusableManyTimes) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  for (int rep = 0; rep < 500; ++rep) {
    pool.parallel_for(64, 4, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) sum += i;
    });
  }
  EXPECT_EQ(sum.load(), 500 * (63 * 64 / 2));
}

TEST(ThreadPoolTest, RethrowsAndRecovers) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.parallel_for(100, 1,
                                 [](int64_t b, int64_t) {
                                   if (b == 42) throw std::runtime_error("chunk 42");
                                 }),
               std::runtime_error);
  std::atomic<int> n{0};
  pool.parallel_for(10, 1, [&](int64_t, int64_t) { ++n; });
  EXPECT_EQ(n.load(), 10);
}

TEST(ThreadPoolTest, SingleThreadAndConcurrentCallers) {
  ThreadPool one(1);
  EXPECT_EQ(one.size(), 1);
  int calls = 0;
  one.parallel_for(10, 3, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 1);  // runs inline, one call for the whole range

  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  auto submit = [&] {
    for (int rep = 0; rep < 100; ++rep) {
      pool.parallel_for(32, 2, [&](int64_t b, int64_t e) { total += e - b; });
    }
  };
  std::thread a(submit), b(submit);
  a.join();
  b.join();
  EXPECT_EQ(total.load(), 2 * 100 * 32);
}

}  // namespace
}  // namespace hcwarm::model
