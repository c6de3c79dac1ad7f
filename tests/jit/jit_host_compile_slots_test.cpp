// HostCompileSlots: the lock-file slots that the processes sharing one cache
// take for their compile threads. Two instances on one directory contend as two
// processes do (flock locks belong to the open file), so together they never
// hold more than the count; a budget gated by them bounds its threads the same way.
// A wait for a slot ends after the lock timeout, naming the holder's pid.
#include "core/stopwatch.hpp"
#include "jit/host_compile_slots.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "common/test_util.hpp"
#include "core/error.hpp"
#include "jit/disk_cache.hpp"
#include "jit/fs_util.hpp"
#include "jit_test_util.hpp"

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

TEST(HostCompileSlots, AWaitForAHeldSlotEndsNamingTheHolder) {
  test::TempDir dir;
  HostCompileSlots holder(dir.path(), 2);  // "another process": flock is per open file
  ASSERT_EQ(holder.try_take(2), 2);
  ThreadBudget waiter(1);
  waiter.attach_gate(std::make_shared<HostCompileSlots>(dir.path(), 2, 0.3), 2);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    waiter.acquire(1, 1);
    FAIL() << "took a slot that another holder has";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Timeout);
    EXPECT_NE(e.message().find(fmt::format("pid {} on", ::getpid())), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(dir.path().string()), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("HCWARM_LOCK_TIMEOUT_S"), std::string::npos) << e.message();
  }
  EXPECT_GE(seconds_since(t0), 0.3);
  EXPECT_LT(seconds_since(t0), 5.0);
  EXPECT_EQ(waiter.in_use(), 0);  // the failed wait holds nothing
  holder.give_back(1);
  EXPECT_EQ(waiter.acquire(1, 1).count(), 1);  // a freed slot is taken at once
}

TEST(HostCompileSlots, AWaitIsLoggedOnceAfterAFewSeconds) {
  test::TempDir dir;
  HostCompileSlots holder(dir.path(), 1);
  ASSERT_EQ(holder.try_take(1), 1);
  HostCompileSlots waiter(dir.path(), 1, 600);
  test::LogCapture logs;
  waiter.waiting(1.0);  // too early to log
  EXPECT_EQ(logs.count(spdlog::level::info, "host compile slot"), 0);
  waiter.waiting(fsu::kLogWaitAfterSeconds);
  waiter.waiting(fsu::kLogWaitAfterSeconds + 1);
  const auto infos = logs.messages(spdlog::level::info);
  ASSERT_EQ(logs.count(spdlog::level::info, "host compile slot"), 1);
  for (const auto& m : infos) {
    if (m.find("host compile slot") == std::string::npos) continue;
    EXPECT_NE(m.find(dir.path().string()), std::string::npos) << m;
    EXPECT_NE(m.find(fmt::format("pid {}", ::getpid())), std::string::npos) << m;
  }
  waiter.waiting(0);  // a new wait
  waiter.waiting(fsu::kLogWaitAfterSeconds);
  EXPECT_EQ(logs.count(spdlog::level::info, "host compile slot"), 2);
  EXPECT_THROW(waiter.waiting(600), Error);
}

TEST(HostCompileSlots, AStoppedHolderFailsAWarmWithinTheTimeoutNamingItsPid) {
  // A process stopped (SIGSTOP, as by Ctrl-Z) while it holds every slot of the cache.
  test::TempDir dir;
  const fs::path cache = dir.path() / "cache";
  const fs::path slots_dir = DiskCache(cache).version_dir();
  fsu::make_dirs(slots_dir);
  constexpr int kSlots = 2;
  const fs::path ready = dir.path() / "ready";
  const pid_t child = jit::test::spawn_child(
      "holdslots",
      {{"HCWARM_JIT_SLOTS_DIR", slots_dir.string()}, {"HCWARM_JIT_SLOTS", std::to_string(kSlots)},
       {"HCWARM_JIT_READY", ready.string()}},
      dir.path() / "child.log");
  for (int i = 0; i < 1000 && !fs::exists(ready); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(ready)) << test::read_file(dir.path() / "child.log");
  ASSERT_EQ(::kill(child, SIGSTOP), 0);

  auto o = jit::test::options(cache);
  o.host_compile_slots = kSlots;
  o.lock_timeout_s = 0.5;
  JitRuntime rt(o);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    const std::vector<KernelSpec> specs{jit::test::host_spec(1)};
    rt.build(specs);
    ADD_FAILURE() << "built while a stopped process held every slot";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Timeout) << e.what();
    EXPECT_NE(e.message().find(fmt::format("pid {} on", child)), std::string::npos) << e.message();
  }
  EXPECT_LT(seconds_since(t0), 5.0);
  ::kill(child, SIGKILL);
  EXPECT_EQ(jit::test::wait_child(child), 128 + SIGKILL);
}

TEST(HostCompileSlots, RefusesACountBelowOne) {
  test::TempDir dir;
  EXPECT_THROW(HostCompileSlots(dir.path(), 0), Error);
}

}  // namespace
}  // namespace hcwarm::jit
