// The runtime in one process: compile and load, single flight, concurrency,
// errors, the serving guard, accounting, build(), NVRTC.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <thread>

#include "common/test_util.hpp"
#include "jit/report.hpp"
#include "jit_test_util.hpp"

namespace hcwarm::jit::test {
namespace {

TEST(JitRuntime, CompilesLoadsAndCallsAHostKernel) {
  JitRuntime rt(options(std::nullopt));
  const auto m = rt.get(host_spec(7));
  EXPECT_EQ(call_answer(*m), 107);
  EXPECT_EQ(m->key(), rt.key(host_spec(7)));
  EXPECT_THROW(
      {
        try {
          m->function("no_such_symbol");
        } catch (const Error& e) {
          EXPECT_EQ(e.kind(), ErrorKind::Internal);
          EXPECT_NE(e.message().find("no_such_symbol"), std::string::npos);
          throw;
        }
      },
      Error);
  EXPECT_EQ(rt.get(host_spec(7)), m);  // the same module from memory
  const auto st = rt.stats();
  EXPECT_EQ(st.compiled, 1);
  EXPECT_EQ(st.memory_hits, 1);
  EXPECT_GT(st.compile_seconds, 0);
  EXPECT_EQ(rt.disk_cache(), nullptr);
}

TEST(JitRuntime, SixteenThreadsOneKeyCompileOnce) {
  hcwarm::test::TempDir dir("hcwarm-jit-sf");
  for (const bool with_disk : {false, true}) {
    std::atomic<int> compiles{0};
    auto o = options(with_disk ? std::optional(dir.path()) : std::nullopt);
    o.test_hook = [&](std::string_view s) {
      if (s == "compile-begin") ++compiles;
    };
    JitRuntime rt(o);
    std::barrier start(16);
    std::vector<std::thread> ts;
    std::atomic<int> good{0};
    for (int i = 0; i < 16; ++i) {
      ts.emplace_back([&] {
        start.arrive_and_wait();
        good += call_answer(*rt.get(host_spec(3))) == 103;
      });
    }
    for (auto& t : ts) t.join();
    EXPECT_EQ(good, 16);
    EXPECT_EQ(compiles, 1) << "with_disk=" << with_disk;
    EXPECT_EQ(rt.stats().compiled, 1);
    EXPECT_EQ(rt.stats().memory_hits, 15);
    EXPECT_EQ(rt.events().size(), 16u);
  }
}

TEST(JitRuntime, DistinctKeysCompileConcurrently) {
  // Both compiles must be inside the compiler at the same time: each waits at
  // "compile-begin" until the other arrives (a serialized runtime times out).
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  bool overlapped = true;
  auto o = options(std::nullopt);
  o.test_hook = [&](std::string_view s) {
    if (s != "compile-begin") return;
    std::unique_lock lock(mu);
    ++arrived;
    cv.notify_all();
    if (!cv.wait_for(lock, std::chrono::seconds(20), [&] { return arrived >= 2; })) overlapped = false;
  };
  JitRuntime rt(o);
  std::thread t1([&] { rt.get(host_spec(11)); });
  std::thread t2([&] { rt.get(host_spec(12)); });
  t1.join();
  t2.join();
  EXPECT_TRUE(overlapped);
  EXPECT_EQ(rt.stats().compiled, 2);
}

TEST(JitRuntime, CompileErrorCarriesLogAndKey) {
  JitRuntime rt(options(std::nullopt));
  KernelSpec bad = host_spec(1);
  bad.source = "extern \"C\" int answer() { return undeclared_thing; }\n";
  const auto k = rt.key(bad);
  try {
    rt.get(bad);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Compile);
    EXPECT_NE(e.message().find(k), std::string::npos) << e.message();
    EXPECT_NE(e.log().find("undeclared_thing"), std::string::npos) << e.log();
  }
  EXPECT_EQ(rt.stats().failed, 1);
  // Not cached as a failure forever: the next get tries again (and fails again).
  EXPECT_THROW(rt.get(bad), Error);
}

TEST(JitRuntime, ColdCompileAfterReadyWarnsAndCounts) {
  LogCapture logs;
  JitRuntime rt(options(std::nullopt));
  rt.get(host_spec(1));
  rt.mark_ready();
  EXPECT_TRUE(rt.ready());
  rt.get(host_spec(1));  // memory: fine
  EXPECT_EQ(rt.stats().compiles_after_ready, 0);
  const auto k = rt.key(host_spec(2));
  EXPECT_EQ(call_answer(*rt.get(host_spec(2))), 102);
  EXPECT_EQ(rt.stats().compiles_after_ready, 1);
  EXPECT_EQ(logs.count(spdlog::level::warn, "cold compile during serving"), 1);
  EXPECT_EQ(logs.count(spdlog::level::warn, k), 1);
  const auto ev = rt.events();
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].phase, Phase::Warmup);
  EXPECT_EQ(ev[2].phase, Phase::Serving);
  EXPECT_EQ(ev[2].source, ArtifactSource::Compiled);
  EXPECT_EQ(ev[2].key, k);
  EXPECT_EQ(ev[2].family, "answer");
  EXPECT_EQ(ev[2].params, host_spec(2).params);
  const auto j = to_json(rt.stats());
  EXPECT_EQ(j["compiles_after_ready"], 1);
  EXPECT_EQ(to_json(ev[2])["phase"], "serving");
}

TEST(JitRuntime, StrictModeMakesAColdCompileAnError) {
  auto o = options(std::nullopt);
  o.strict_warmup = true;
  JitRuntime rt(o);
  rt.get(host_spec(1));
  rt.mark_ready();
  EXPECT_EQ(call_answer(*rt.get(host_spec(1))), 101);  // warmed: fine
  try {
    rt.get(host_spec(2));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("cold compile during serving"), std::string::npos);
    EXPECT_NE(e.message().find(rt.key(host_spec(2))), std::string::npos);
  }
  EXPECT_EQ(rt.stats().compiles_after_ready, 1);
  EXPECT_EQ(rt.stats().compiled, 1);
  EXPECT_EQ(JitOptions::from_env(EnvConfig::from_map({{"HCWARM_STRICT_WARMUP", "1"}})).strict_warmup, true);
}

TEST(JitRuntime, ResetCountersKeepsModules) {
  JitRuntime rt(options(std::nullopt));
  rt.get(host_spec(1));
  rt.reset_counters();
  EXPECT_EQ(rt.stats().compiled, 0);
  EXPECT_TRUE(rt.events().empty());
  rt.get(host_spec(1));
  EXPECT_EQ(rt.stats().memory_hits, 1);
  EXPECT_EQ(rt.stats().compiled, 0);
}

TEST(JitRuntime, BuildDedupesRunsInParallelAndReportsFailures) {
  hcwarm::test::TempDir dir("hcwarm-jit-build");
  std::vector<KernelSpec> specs{host_spec(1), host_spec(2), host_spec(1), host_spec(3)};
  KernelSpec bad = host_spec(4);
  bad.source = "this is not C++\n";
  specs.push_back(bad);
  auto o = options(dir.path());
  std::vector<BuildProgressEvent> events;
  o.progress = [&](const BuildProgressEvent& e) { events.push_back(e); };
  LogCapture logs;
  JitRuntime rt(o);
  const auto r = rt.build(specs);
  // One start event, then one per key with done counting up; the library itself writes no info lines.
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0].done, 0);
  int failed = 0;
  for (size_t i = 1; i < events.size(); ++i) {
    EXPECT_EQ(events[i].done, static_cast<int>(i));
    EXPECT_EQ(events[i].total, 4);
    failed += events[i].source ? 0 : 1;
  }
  EXPECT_EQ(failed, 1);
  EXPECT_EQ(logs.count(spdlog::level::info, "jit build ["), 0);
  EXPECT_EQ(r.keys, 4);
  EXPECT_EQ(r.compiled, 3);
  EXPECT_EQ(r.failed, 1);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find(rt.key(bad)), std::string::npos);
  EXPECT_NE(format_build_report(r).find("3 compiled"), std::string::npos);
  EXPECT_EQ(to_json(r)["failed"], 1);
  // Loaded: get() is now a memory hit.
  rt.reset_counters();
  rt.get(host_spec(2));
  EXPECT_EQ(rt.stats().memory_hits, 1);

  // CompileOnly in a fresh runtime: everything is on disk already, nothing loaded.
  JitRuntime rt2(options(dir.path()));
  const std::vector<KernelSpec> good{host_spec(1), host_spec(2), host_spec(3), host_spec(5)};
  const auto r2 = rt2.build(good, BuildMode::CompileOnly);
  EXPECT_EQ(r2.loaded_from_disk, 3);
  EXPECT_EQ(r2.compiled, 1);
  EXPECT_EQ(r2.failed, 0);
  // A third process-like runtime then loads all from disk with zero compiles.
  JitRuntime rt3(options(dir.path()));
  const auto r3 = rt3.build(good);
  EXPECT_EQ(r3.compiled, 0);
  EXPECT_EQ(r3.loaded_from_disk, 4);
  EXPECT_EQ(call_answer(*rt3.get(host_spec(5))), 105);
}

TEST(JitRuntime, NvrtcCompilesSm90aWithoutAGpu) {
  if (!nvrtc_available()) GTEST_SKIP() << "NVRTC not installed";
  hcwarm::test::TempDir dir("hcwarm-jit-nvrtc");
  JitRuntime rt(options(dir.path()));
  const auto& c = rt.compiler_for(cuda_spec(1));
  EXPECT_EQ(c.target(), "sm_90a");
  EXPECT_EQ(c.identity().rfind("nvrtc ", 0), 0u) << c.identity();
  const std::vector<KernelSpec> specs{cuda_spec(1), cuda_spec(2)};
  const auto r = rt.build(specs, BuildMode::CompileOnly);
  EXPECT_EQ(r.compiled, 2) << format_build_report(r);
  const auto entries = DiskCache(dir.path()).list();
  ASSERT_EQ(entries.size(), 2u);
  const auto cubin = hcwarm::test::read_file(entries[0].dir / "kernel.cubin");
  ASSERT_GT(cubin.size(), 4u);
  EXPECT_EQ(cubin.substr(0, 4), "\x7f" "ELF");
  // No CUDA loader in this process: get() says so instead of crashing.
  try {
    rt.get(cuda_spec(1));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unavailable);
  }
  // An NVRTC compile error carries NVRTC's log.
  auto bad = cuda_spec(3);
  bad.source = "extern \"C\" __global__ void k() { nope(); }\n";
  const auto rb = rt.build(std::vector<KernelSpec>{bad}, BuildMode::CompileOnly);
  ASSERT_EQ(rb.failed, 1);
  EXPECT_NE(rb.errors[0].find("nope"), std::string::npos) << rb.errors[0];
}

TEST(JitRuntime, MissingNvrtcIsUnavailableAndHostStillWorks) {
  auto o = options(std::nullopt);
  o.nvrtc_library = "/nonexistent/libnvrtc.so";
  JitRuntime rt(o);
  try {
    rt.key(cuda_spec(1));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unavailable);
    EXPECT_NE(e.message().find("NVRTC is not available"), std::string::npos);
  }
  EXPECT_EQ(call_answer(*rt.get(host_spec(1))), 101);
}

TEST(JitRuntime, MissingHostCompilerIsUnavailable) {
  auto o = options(std::nullopt);
  o.host_cxx = "/nonexistent/c++";
  JitRuntime rt(o);
  try {
    rt.get(host_spec(1));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unavailable) << e.what();
  }
}

}  // namespace
}  // namespace hcwarm::jit::test
