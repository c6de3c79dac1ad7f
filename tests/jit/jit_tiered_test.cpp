// Tiered execution in the runtime: get_or_schedule() never waits for a compile
// (the background worker builds the key and the next request loads it), the
// wait counters, the worker's bounds, failures and shutdown; BackgroundCompiler.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "common/test_util.hpp"
#include "jit/background_compiler.hpp"
#include "jit/report.hpp"
#include "jit_test_util.hpp"

namespace hcwarm::jit::test {
namespace {

using Clock = std::chrono::steady_clock;

// Waits (bounded) until the ticket leaves Pending.
int settle(const PendingModule& p) {
  const auto t0 = Clock::now();
  while (p.state.load() == PendingModule::Pending && Clock::now() - t0 < std::chrono::seconds(60)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return p.state.load();
}

TEST(JitTiered, MissIsScheduledThenTheNextRequestLoadsIt) {
  std::atomic<bool> release{false};
  auto o = options(std::nullopt);
  o.test_hook = [&](std::string_view s) {
    while (s == "compile-begin" && !release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  JitRuntime rt(o);
  ASSERT_TRUE(rt.tiered());
  rt.mark_ready();
  TieredModule first = rt.get_or_schedule(slow_host_spec(5));  // returns while the compile is held
  EXPECT_EQ(first.module, nullptr);
  ASSERT_NE(first.pending, nullptr);
  EXPECT_EQ(first.pending->state.load(), PendingModule::Pending);
  EXPECT_EQ(rt.get_or_schedule(slow_host_spec(5)).pending, first.pending);  // asked again: the same compile
  release = true;
  rt.drain_background();
  EXPECT_EQ(first.pending->state.load(), PendingModule::Landed);
  const TieredModule second = rt.get_or_schedule(slow_host_spec(5));
  ASSERT_NE(second.module, nullptr);
  EXPECT_EQ(call_answer(*second.module), 105);
  EXPECT_EQ(rt.get_or_schedule(slow_host_spec(5)).module, second.module);  // memory from then on
  EXPECT_EQ(rt.get(slow_host_spec(5)), second.module);
  const CompileStats s = rt.stats();
  EXPECT_EQ(s.compiled, 1);
  EXPECT_EQ(s.background_compiled, 1);
  EXPECT_EQ(s.waited_for_compile, 0);
  EXPECT_EQ(s.compile_wait_s, 0);
  // A compile after ready all the same (warmup missed it), done by the worker: no call waited for it.
  EXPECT_EQ(s.background_compiles_after_ready, 1);
  EXPECT_EQ(s.compiles_after_ready, 0);
  const auto j = to_json(s);
  EXPECT_EQ(j["background_compiles_after_ready"], 1);
  EXPECT_EQ(j["compiles_after_ready"], 0);
}

TEST(JitTiered, AForegroundCompileAfterReadyIsNotABackgroundOne) {
  JitRuntime rt(options(std::nullopt));
  ASSERT_TRUE(rt.tiered());
  rt.mark_ready();
  EXPECT_EQ(call_answer(*rt.get(host_spec(3))), 103);  // a blocking get() compiles in the call
  const CompileStats s = rt.stats();
  EXPECT_EQ(s.compiles_after_ready, 1);
  EXPECT_EQ(s.background_compiles_after_ready, 0);
  EXPECT_EQ(s.background_compiled, 0);
}

TEST(JitTiered, UntieredMissWaitsAndCountsItsSeconds) {
  auto o = options(std::nullopt);
  o.tiered = false;
  JitRuntime rt(o);
  EXPECT_FALSE(rt.tiered());
  const TieredModule t = rt.get_or_schedule(host_spec(2));  // untiered: get()
  ASSERT_NE(t.module, nullptr);
  EXPECT_EQ(t.pending, nullptr);
  const CompileStats s = rt.stats();
  EXPECT_EQ(s.waited_for_compile, 1);
  EXPECT_GT(s.compile_wait_s, 0);
  EXPECT_EQ(s.background_compiled, 0);
  rt.get(host_spec(2));  // a memory hit waits for nothing
  EXPECT_EQ(rt.stats().waited_for_compile, 1);
  EXPECT_EQ(JitOptions::from_env(EnvConfig::from_map({{"HCWARM_TIERED", "0"}})).tiered, false);
  EXPECT_EQ(JitOptions::from_env(EnvConfig::from_map({})).tiered, true);
}

TEST(JitTiered, WaitingForAnotherThreadsCompileCounts) {
  std::atomic<bool> in_compile{false}, release{false};
  auto o = options(std::nullopt);
  o.test_hook = [&](std::string_view s) {
    if (s != "compile-begin") return;
    in_compile = true;
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  JitRuntime rt(o);
  std::thread a([&] { rt.get(host_spec(1)); });
  while (!in_compile) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::thread b([&] { rt.get(host_spec(1)); });  // finds a's compile in flight and waits for it
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  release = true;
  a.join();
  b.join();
  const CompileStats s = rt.stats();
  EXPECT_EQ(s.compiled, 1);
  EXPECT_EQ(s.memory_hits, 1);
  EXPECT_EQ(s.waited_for_compile, 2);  // a for its own compile, b for a's
  EXPECT_GT(s.compile_wait_s, 0.2);    // b alone waited that long
}

TEST(JitTiered, ABlockingRequestTakesAQueuedKeyInsteadOfWaitingBehindOthers) {
  auto o = options(std::nullopt);
  o.background_jobs = 1;
  JitRuntime rt(o);
  rt.mark_ready();
  const TieredModule busy = rt.get_or_schedule(slow_host_spec(1));  // occupies the one worker
  const TieredModule queued = rt.get_or_schedule(host_spec(2));
  ASSERT_NE(queued.pending, nullptr);
  // get() of the queued key compiles it in this thread (the worker is busy with the slow one).
  EXPECT_EQ(call_answer(*rt.get(host_spec(2))), 102);
  EXPECT_EQ(queued.pending->state.load(), PendingModule::Landed);
  rt.drain_background();
  EXPECT_EQ(settle(*busy.pending), PendingModule::Landed);
  const CompileStats s = rt.stats();
  EXPECT_EQ(s.compiled, 2);             // each key once
  EXPECT_EQ(s.background_compiled, 1);  // the slow one
  EXPECT_EQ(s.waited_for_compile, 1);   // the get() that compiled host_spec(2)
  // After ready, each compile counts once, where it ran: the call's path or the worker.
  EXPECT_EQ(s.compiles_after_ready, 1);
  EXPECT_EQ(s.background_compiles_after_ready, 1);
}

TEST(JitTiered, DiskHitIsLoadedAtOnce) {
  hcwarm::test::TempDir dir("hcwarm-jit-tiered");
  populate_cache(dir.path(), {4});
  JitRuntime rt(options(dir.path()));
  const TieredModule t = rt.get_or_schedule(host_spec(4));
  ASSERT_NE(t.module, nullptr);
  EXPECT_EQ(call_answer(*t.module), 104);
  EXPECT_EQ(rt.stats().loaded_from_disk, 1);
  EXPECT_EQ(rt.stats().compiled, 0);
  // And a background compile publishes to the disk cache as a request-path compile would.
  const TieredModule miss = rt.get_or_schedule(host_spec(6));
  ASSERT_NE(miss.pending, nullptr);
  rt.drain_background();
  EXPECT_FALSE(entry_dir_of(dir.path(), 6).empty());
  JitRuntime restarted(options(dir.path()));
  EXPECT_NE(restarted.get_or_schedule(host_spec(6)).module, nullptr);
  EXPECT_EQ(restarted.stats().loaded_from_disk, 1);
}

TEST(JitTiered, BackgroundFailureIsLoggedOnceCountedAndNotRetried) {
  LogCapture logs;
  JitRuntime rt(options(std::nullopt));
  KernelSpec bad = host_spec(9);
  bad.source = "extern \"C\" int answer() { return undeclared_thing; }\n";
  const TieredModule t = rt.get_or_schedule(bad);
  ASSERT_NE(t.pending, nullptr);
  rt.drain_background();
  EXPECT_EQ(t.pending->state.load(), PendingModule::Failed);
  const TieredModule again = rt.get_or_schedule(bad);  // no second compile
  EXPECT_EQ(again.module, nullptr);
  ASSERT_NE(again.pending, nullptr);
  EXPECT_EQ(again.pending->state.load(), PendingModule::Failed);
  rt.drain_background();
  const CompileStats s = rt.stats();
  EXPECT_EQ(s.background_failed, 1);
  EXPECT_EQ(s.failed, 0);  // no request threw
  EXPECT_EQ(logs.count(spdlog::level::err, rt.key(bad)), 1);
  EXPECT_THROW(rt.get(bad), Error);  // a blocking request still sees the compiler's error
}

TEST(JitTiered, StrictAndNoJitModesDoNotTier) {
  auto strict = options(std::nullopt);
  strict.strict_warmup = true;
  JitRuntime s(strict);
  EXPECT_FALSE(s.tiered());
  s.mark_ready();
  try {
    s.get_or_schedule(host_spec(1));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("HCWARM_STRICT_WARMUP=1"), std::string::npos) << e.message();
  }
  auto nojit = options(std::nullopt);
  nojit.allow_compile = false;
  JitRuntime n(nojit);
  EXPECT_FALSE(n.tiered());
  try {
    n.get_or_schedule(host_spec(1));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NotWarmed);
  }
  EXPECT_EQ(s.stats().background_compiled + n.stats().background_compiled, 0);
}

TEST(JitTiered, DestructorDropsQueuedWorkAndWaitsForTheRunningCompile) {
  std::atomic<int> begun{0}, ended{0};
  auto o = options(std::nullopt);
  o.background_jobs = 1;
  o.test_hook = [&](std::string_view s) {
    if (s == "compile-begin") ++begun;
    if (s == "compile-end") ++ended;
  };
  std::shared_ptr<const PendingModule> queued;
  {
    JitRuntime rt(o);
    rt.get_or_schedule(slow_host_spec(1));
    for (int v = 2; v < 6; ++v) queued = rt.get_or_schedule(slow_host_spec(v)).pending;
    while (begun == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }  // destroyed while the first compiles and four wait
  EXPECT_EQ(begun.load(), ended.load());  // the one in flight finished
  EXPECT_LT(begun.load(), 5);             // the queued ones were dropped
  EXPECT_NE(queued->state.load(), PendingModule::Pending);
}

TEST(JitTiered, BackgroundJobsNeverExceedTheBuildBudget) {
  std::atomic<int> inside{0}, most{0};
  auto o = options(std::nullopt);
  o.jobs = 2;
  o.background_jobs = 8;
  o.test_hook = [&](std::string_view s) {
    if (s == "compile-begin") {
      const int n = ++inside;
      int m = most.load();
      while (n > m && !most.compare_exchange_weak(m, n)) {
      }
    }
    if (s == "compile-end") --inside;
  };
  JitRuntime rt(o);
  for (int v = 1; v <= 4; ++v) rt.get_or_schedule(host_spec(v));
  rt.drain_background();
  EXPECT_EQ(rt.stats().background_compiled, 4);
  EXPECT_LE(most.load(), 2);
}

TEST(BackgroundCompiler, TakeStopAndDrain) {
  std::atomic<int> ran{0}, cancelled{0};
  std::atomic<bool> release{false};
  {
    BackgroundCompiler bc(1);
    bc.submit({"block", [&] {
                 while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                 ++ran;
               },
               [&] { ++cancelled; }});
    bc.submit({"a", [&] { ++ran; }, [&] { ++cancelled; }});
    bc.submit({"b", [&] { ++ran; }, [&] { ++cancelled; }});
    auto a = bc.take("a");
    ASSERT_TRUE(a.has_value());
    EXPECT_FALSE(bc.take("a").has_value());
    a->run();  // the caller's now
    release = true;
    bc.drain();
    EXPECT_EQ(ran.load(), 3);
    release = false;
    bc.submit({"block2", [&] {
                 while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                 ++ran;
               },
               [&] { ++cancelled; }});
    bc.submit({"c", [&] { ++ran; }, [&] { ++cancelled; }});
    std::thread unblock([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      release = true;
    });
    bc.stop();  // "c" is dropped unless the worker already took it
    unblock.join();
    bc.submit({"late", [&] { ++ran; }, [&] { ++cancelled; }});  // after stop: cancelled at once
  }
  EXPECT_GE(cancelled.load(), 1);
  EXPECT_EQ(ran.load() + cancelled.load(), 6);  // every job once: run or cancelled
}

}  // namespace
}  // namespace hcwarm::jit::test
