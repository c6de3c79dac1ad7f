// A child process (the host compiler) cannot make hcwarm's memory or messages
// grow without end, nor hold a compile up after it exited: its output is kept up
// to a head and a tail (the bytes between counted and said), and the call returns
// when it exits, whatever it left running with the output pipe open.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "core/stopwatch.hpp"
#include "common/test_util.hpp"
#include "core/limits.hpp"
#include "jit/process.hpp"
#include "jit_test_util.hpp"

namespace hcwarm::jit::test {
namespace {
using Clock = std::chrono::steady_clock;


constexpr size_t kKept = limits::kMaxProcessOutputHead + limits::kMaxProcessOutputTail;

// True once pid is gone or a zombie (nobody may reap a process it did not start).
bool dead(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const auto close = line.rfind(')');
  return close != std::string::npos && line.size() > close + 2 && line[close + 2] == 'Z';
}

pid_t read_pid(const fs::path& p) {
  for (int i = 0; i < 200 && !fs::exists(p); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return static_cast<pid_t>(std::stol(read_file(p)));
}

// A host compiler script answering the identity probes and running `body` for a compile.
fs::path compiler_script(const TempDir& d, const std::string& body) {
  const auto cxx = d / "c++";
  write_file(cxx,
             "#!/bin/sh\n"
             "if [ \"$1\" = \"--version\" ]; then echo 'c++ (Script 1) 1.0'; exit 0; fi\n"
             "if [ \"$1\" = \"-dumpmachine\" ]; then echo x86_64-linux-gnu; exit 0; fi\n" +
                 body + "\n");
  fs::permissions(cxx, fs::perms::owner_all);
  return cxx;
}

TEST(ProcessBounds, ChattyOutputKeepsItsEndsAndSaysHowMuchWasDropped) {
  const auto r = run_process({"sh", "-c", "echo FIRST; head -c 3000000 /dev/zero | tr '\\0' x; echo; echo LAST"}, {}, 30);
  EXPECT_EQ(r.exit_code, 0);
  const uint64_t total = 6 + 3000000 + 1 + 5;
  EXPECT_EQ(r.output_dropped, total - kKept);
  EXPECT_LT(r.output.size(), kKept + 100);
  EXPECT_EQ(r.output.rfind("FIRST\n", 0), 0u);
  EXPECT_EQ(r.output.substr(r.output.size() - 6), "\nLAST\n");
  EXPECT_NE(r.output.find(fmt::format("[... {} bytes dropped ...]", total - kKept)), std::string::npos);
}

TEST(ProcessBounds, EndlessOutputIsBoundedUntilTheTimeout) {
  const auto t0 = Clock::now();
  try {
    run_process({"yes", "endless"}, {}, 0.5);
    FAIL() << "an endless writer returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Timeout);
    EXPECT_LT(e.log().size(), kKept + 100);
    EXPECT_NE(e.log().find("bytes dropped"), std::string::npos);
  }
  EXPECT_LT(seconds_since(t0), 5.0);
}

TEST(ProcessBounds, ABackgroundChildHoldingTheOutputDoesNotHoldUpTheCall) {
  TempDir d;
  const fs::path pid_file = d / "bg.pid";
  const auto t0 = Clock::now();
  // The background shell keeps stdout and stderr (the pipe) open for 30 s.
  const auto r = run_process({"sh", "-c",
                              "sh -c 'echo $$ > \"$1\"; exec sleep 30' bg \"$1\" &\n"
                              "while [ ! -s \"$1\" ]; do sleep 0.01; done; echo done",  // exits once it runs
                              "sh", pid_file.string()},
                             {}, 20);
  EXPECT_LT(seconds_since(t0), 5.0);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "done\n");
  // The rest of its process group is killed.
  const pid_t bg = read_pid(pid_file);
  for (int i = 0; i < 200 && !dead(bg); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(dead(bg)) << "background child " << bg << " outlived the call";
}

TEST(ProcessBounds, ADaemonOutsideTheGroupIsLeftRunningButNotWaitedFor) {
  TempDir d;
  const fs::path pid_file = d / "daemon.pid";
  const auto t0 = Clock::now();
  const auto r = run_process(
      {"sh", "-c",
       "setsid sh -c 'echo $$ > \"$1\"; exec sleep 30' daemon \"$1\" &\n"
       "while [ ! -s \"$1\" ]; do sleep 0.01; done; echo done",  // exits once the daemon has left the group
       "sh", pid_file.string()},
      {}, 20);
  EXPECT_LT(seconds_since(t0), 5.0);
  EXPECT_EQ(r.exit_code, 0);
  ::kill(read_pid(pid_file), SIGKILL);  // a compiler cache's server would stay; this one is ours to end
}

TEST(ProcessBounds, AChattyFailingCompilerGivesABoundedLog) {
  TempDir d;
  auto o = options(std::nullopt);
  o.host_cxx = compiler_script(d, "echo 'kernel.cpp:1: error: first'; head -c 2000000 /dev/zero | tr '\\0' e; "
                                  "echo; echo 'last line'; exit 1").string();
  JitRuntime rt(o);
  try {
    rt.get(host_spec(1));
    FAIL() << "a failing compiler produced a kernel";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Compile) << e.what();
    EXPECT_LT(e.log().size(), kKept + 100);
    EXPECT_EQ(e.log().rfind("kernel.cpp:1: error: first", 0), 0u);
    EXPECT_NE(e.log().find("bytes dropped"), std::string::npos);
    EXPECT_NE(e.log().find("last line"), std::string::npos);
  }
}

TEST(ProcessBounds, ACompilerLeavingABackgroundChildReturnsPromptly) {
  // A wrapper (a compiler cache) that starts a server sharing its output, then compiles.
  TempDir d;
  auto o = options(std::nullopt);
  o.host_cxx = compiler_script(d, "sleep 30 &\nexec c++ \"$@\"").string();
  o.compile_timeout_s = 20;
  JitRuntime rt(o);
  const auto t0 = Clock::now();
  EXPECT_EQ(call_answer(*rt.get(host_spec(1))), 101);
  EXPECT_LT(seconds_since(t0), 10.0);
}

}  // namespace
}  // namespace hcwarm::jit::test
