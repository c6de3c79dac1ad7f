// Nothing waits forever: a key lock held by a stuck process and a host compiler
// that never exits both end in ErrorKind::Timeout naming the key and the holder
// (or the compiler command); a build takes free keys before busy ones.
#include <gtest/gtest.h>

#include <chrono>

#include "core/stopwatch.hpp"
#include "common/test_util.hpp"
#include "jit/disk_cache.hpp"
#include "jit/fs_util.hpp"
#include "jit/process.hpp"
#include "jit_test_util.hpp"

namespace hcwarm::jit::test {
namespace {
using Clock = std::chrono::steady_clock;


// The namespace directory of the host compiler in `cache` (made by one get()).
fs::path host_namespace_dir(const fs::path& cache) {
  JitRuntime(options(cache)).get(host_spec(999));
  for (const auto& v : fs::directory_iterator(cache)) {
    if (!v.is_directory()) continue;
    for (const auto& ns : fs::directory_iterator(v.path())) return ns.path();
  }
  return {};
}

TEST(JitTimeout, LockWaitEndsNamingTheKeyAndTheHolder) {
  TempDir d;
  const fs::path lock_file = d / "k.lock";
  auto held = fsu::FileLock::acquire(lock_file);  // "another process": flock is per open file
  ASSERT_TRUE(held.owns());
  const auto t0 = Clock::now();
  try {
    fsu::FileLock::acquire(lock_file, 0.3, "kernel answer[value=1] (key abc)");
    FAIL() << "acquired a held lock";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Timeout);
    EXPECT_NE(e.message().find("kernel answer[value=1] (key abc)"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(fmt::format("pid {}", ::getpid())), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("HCWARM_LOCK_TIMEOUT_S"), std::string::npos) << e.message();
  }
  EXPECT_GE(seconds_since(t0), 0.3);
  EXPECT_LT(seconds_since(t0), 5.0);
  held.release();
  EXPECT_TRUE(fsu::FileLock::acquire(lock_file, 0.3).owns());
}

TEST(JitTimeout, RuntimeGivesUpOnAStuckKeyLock) {
  TempDir d;
  const fs::path cache = d / "cache";
  const fs::path ns = host_namespace_dir(cache);
  ASSERT_FALSE(ns.empty());
  auto o = options(cache);
  o.lock_timeout_s = 0.3;
  JitRuntime rt(o);
  const std::string key = rt.key(host_spec(1));
  auto held = fsu::FileLock::acquire(ns / "locks" / (key + ".lock"));
  try {
    rt.get(host_spec(1));
    FAIL() << "compiled while another holder had the key's lock";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Timeout) << e.what();
    EXPECT_NE(e.message().find(key), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("pid "), std::string::npos) << e.message();
  }
  held.release();
  EXPECT_EQ(call_answer(*rt.get(host_spec(1))), 101);  // retried once the lock is free
}

TEST(JitTimeout, BuildTakesFreeKeysBeforeOnesAnotherProcessIsBuilding) {
  TempDir d;
  const fs::path cache = d / "cache";
  const fs::path ns = host_namespace_dir(cache);
  auto o = options(cache);
  o.lock_timeout_s = 0.5;  // a build that waited for key 1 first would fail it
  o.jobs = 1;
  fsu::FileLock held;
  int compiles = 0;
  // "The other process" finishes with key 1 once this build has started compiling another key.
  o.test_hook = [&](std::string_view stage) {
    if (stage == "compile-begin" && ++compiles == 1) held.release();
  };
  JitRuntime rt(o);
  const std::vector<KernelSpec> specs{host_spec(1), host_spec(2), host_spec(3)};
  held = fsu::FileLock::acquire(ns / "locks" / (rt.key(specs[0]) + ".lock"));
  const BuildReport rep = rt.build(specs, BuildMode::Load);
  EXPECT_EQ(rep.failed, 0) << (rep.errors.empty() ? "" : rep.errors[0]);
  EXPECT_EQ(rep.compiled, 3);
  EXPECT_EQ(compiles, 3);
}

TEST(JitTimeout, ProcessPastItsTimeoutIsKilledAndNamed) {
  const auto t0 = Clock::now();
  try {
    // The shell's child (sleep) is in the same process group and is killed with it.
    run_process({"sh", "-c", "sleep 30 & wait"}, {}, 0.3);
    FAIL() << "a 30 s command returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Timeout);
    EXPECT_NE(e.message().find("sleep 30 & wait"), std::string::npos) << e.message();
  }
  EXPECT_LT(seconds_since(t0), 5.0);
  EXPECT_EQ(run_process({"sh", "-c", "echo ok"}, {}, 5).output, "ok\n");
}

TEST(JitTimeout, HostCompilerThatNeverExitsFailsTheKernel) {
  TempDir d;
  const auto stuck = d / "c++";
  hcwarm::test::write_file(stuck,
                           "#!/bin/sh\n"
                           "if [ \"$1\" = \"--version\" ]; then echo 'c++ (Stuck 1) 1.0'; exit 0; fi\n"
                           "if [ \"$1\" = \"-dumpmachine\" ]; then echo x86_64-linux-gnu; exit 0; fi\n"
                           "exec sleep 30\n");
  fs::permissions(stuck, fs::perms::owner_all);
  auto o = options(std::nullopt);
  o.host_cxx = stuck.string();
  o.compile_timeout_s = 0.5;
  JitRuntime rt(o);
  const auto t0 = Clock::now();
  try {
    rt.get(host_spec(1));
    FAIL() << "a stuck compiler produced a kernel";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Timeout) << e.what();
    EXPECT_NE(e.message().find(rt.key(host_spec(1))), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(stuck.string()), std::string::npos) << e.message();
  }
  EXPECT_LT(seconds_since(t0), 10.0);
}

TEST(JitTimeout, TimeoutsComeFromTheEnvironment) {
  const auto env = EnvConfig::from_map({{"HCWARM_LOCK_TIMEOUT_S", "7"}, {"HCWARM_COMPILE_TIMEOUT_S", "9"}});
  const auto o = JitOptions::from_env(env);
  EXPECT_EQ(o.lock_timeout_s, 7);
  EXPECT_EQ(o.compile_timeout_s, 9);
  EXPECT_EQ(JitOptions::from_env(EnvConfig::from_map({})).lock_timeout_s, 600);
  EXPECT_THROW(EnvConfig::from_map({{"HCWARM_LOCK_TIMEOUT_S", "0"}}), Error);
  EXPECT_THROW(EnvConfig::from_map({{"HCWARM_COMPILE_TIMEOUT_S", "forever"}}), Error);
}

}  // namespace
}  // namespace hcwarm::jit::test
