// HostCompileSlots: the lock-file slots that the processes sharing one cache
// take for their compile threads. Two instances on one directory contend as two
// processes do (flock locks belong to the open file), so together they never
// hold more than the count; a budget gated by them bounds its threads the same way.
#include "jit/host_compile_slots.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/test_util.hpp"
#include "core/error.hpp"

namespace hcwarm::jit {
namespace {
namespace fs = std::filesystem;

TEST(HostCompileSlots, TwoHoldersNeverShareASlot) {
  test::TempDir dir;
  HostCompileSlots a(dir.path(), 3), b(dir.path(), 3);
  EXPECT_EQ(a.try_take(2), 2);
  EXPECT_EQ(b.try_take(3), 1);  // one left
  EXPECT_EQ(a.try_take(1), 0);
  a.give_back(2);
  EXPECT_EQ(a.held(), 0);
  EXPECT_EQ(b.try_take(5), 2);
  EXPECT_EQ(b.held(), 3);
  b.give_back(10);  // no more than it holds
  EXPECT_EQ(b.held(), 0);
  EXPECT_TRUE(fs::exists(dir.path() / HostCompileSlots::slot_file_name(0)));
}

TEST(HostCompileSlots, GatedBudgetsOfTwoProcessesShareTheHostCount) {
  test::TempDir dir;
  ThreadBudget p1(1), p2(1);  // each alone would run 1; gated, up to the host's 4 between them
  p1.attach_gate(std::make_shared<HostCompileSlots>(dir.path(), 4), 4);
  p2.attach_gate(std::make_shared<HostCompileSlots>(dir.path(), 4), 4);
  auto l1 = p1.acquire(1, 3);
  EXPECT_EQ(l1.count(), 3);
  auto l2 = p2.acquire(1, 4);
  EXPECT_EQ(l2.count(), 1);  // what the first left
  EXPECT_EQ(p2.try_acquire(1).count(), 0);
  l1.release(3);
  EXPECT_EQ(p2.try_acquire(3).count(), 3);  // the peer's slots, free again
}

TEST(HostCompileSlots, SlotFilesThatCannotBeOpenedBoundNothing) {
  // A shared cache where another user's slot file is not ours to lock: compiles
  // go on, bounded per process only, instead of waiting for a slot forever.
  test::TempDir dir;
  fs::create_directory(dir.path() / HostCompileSlots::slot_file_name(0));  // open(2) fails on it
  HostCompileSlots s(dir.path(), 1);
  EXPECT_EQ(s.try_take(3), 3);
  EXPECT_EQ(s.held(), 0);
  s.give_back(3);
}

TEST(HostCompileSlots, RefusesACountBelowOne) {
  test::TempDir dir;
  EXPECT_THROW(HostCompileSlots(dir.path(), 0), Error);
}

}  // namespace
}  // namespace hcwarm::jit
