// Exit codes: 2 only for bad input (a file, an option, a field); a warmup whose
// build fails for any other reason (a compile error, a compile or lock timeout, a
// full disk) exits 1 naming the key or the holder and the cause. What the CLI
// echoes of a chatty compiler is bounded.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "cli/cli_fixtures.hpp"
#include "common/test_util.hpp"
#include "core/limits.hpp"
#include "jit/disk_cache.hpp"
#include "jit/fs_util.hpp"
#include "jit/host_compile_slots.hpp"

extern char** environ;

namespace hcwarm {
namespace {
namespace fs = std::filesystem;

// A host compiler script answering the identity probes and running `body` for a compile.
std::string compiler(const TempDir& dir, const std::string& body) {
  const fs::path cxx = dir / "cxx";
  test::write_file(cxx,
                   "#!/bin/sh\n"
                   "if [ \"$1\" = \"--version\" ]; then echo 'c++ (Script 1) 1.0'; exit 0; fi\n"
                   "if [ \"$1\" = \"-dumpmachine\" ]; then echo x86_64-linux-gnu; exit 0; fi\n" +
                       body + "\n");
  fs::permissions(cxx, fs::perms::owner_all);
  return cxx.string();
}

std::vector<std::string> warm_args(const TempDir& dir) { return cat({"warm"}, tiny_model_args(dir)); }

void expect_build_failure(const test::CliResult& r, const std::string& cause) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("error: warmup:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(key "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(cause), std::string::npos) << r.err;
}

TEST(CliExitCodes, BadInputExitsTwo) {
  TempDir dir;
  EXPECT_EQ(run_cli({"plan", "--num-sms", "0x10"}).exit_code, 2);
  EXPECT_EQ(run_cli({"plan", "--model", (dir / "missing.json").string()}).exit_code, 2);
  EXPECT_EQ(run_cli({"replay", "--trace", "synthetic:max_output_tokens=9223372036854775807", "--backend",
                     "reference"})
                .exit_code,
            2);
  EXPECT_EQ(run_cli({"info", "--no-such-option"}).exit_code, 2);
}

TEST(CliExitCodes, ACompileErrorDuringWarmupExitsOne) {
  TempDir dir;
  const auto r = run_cli(warm_args(dir), {"HCWARM_CXX=" + compiler(dir, "echo 'kernel.cpp:1:1: error: boom'; exit 1")});
  expect_build_failure(r, "kernel.cpp:1:1: error: boom");
}

TEST(CliExitCodes, ACompileTimeoutDuringWarmupExitsOne) {
  TempDir dir;
  // Every key at once (HCWARM_JOBS), so that the test takes one timeout, not one per key.
  const auto r = run_cli(warm_args(dir), {"HCWARM_CXX=" + compiler(dir, "exec sleep 30"), "HCWARM_COMPILE_TIMEOUT_S=1",
                                          "HCWARM_JOBS=32"});
  expect_build_failure(r, "did not finish within 1 s");
}

TEST(CliExitCodes, ALockTimeoutDuringWarmupExitsOneNamingTheHolder) {
  // This process holds every host compile slot of the cache the CLI warms.
  if (std::getenv("HCWARM_JOBS") != nullptr || std::getenv("HCWARM_LOCK_TIMEOUT_S") != nullptr) {
    GTEST_SKIP() << "HCWARM_JOBS or HCWARM_LOCK_TIMEOUT_S is set for the whole run";
  }
  TempDir dir;
  const fs::path slots = jit::DiskCache(dir / "cache").version_dir();
  jit::fsu::make_dirs(slots);
  const int count = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  jit::HostCompileSlots held(slots, count);
  ASSERT_EQ(held.try_take(count), count);
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_cli(warm_args(dir), {"HCWARM_LOCK_TIMEOUT_S=1"});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(15));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("host compile slot"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(fmt::format("pid {} on", ::getpid())), std::string::npos) << r.err;
}

// Runs the CLI in a private mount namespace where `full` is a tmpfs filled to the
// last byte; exit code 77 when this process may not mount (not root).
test::CliResult run_cli_on_full_tmpfs(const fs::path& full, const std::vector<std::string>& args,
                                      const std::vector<std::string>& env) {
  TempDir io("hcwarm-cli");
  const std::string out = (io / "stdout").string(), err = (io / "stderr").string();
  std::vector<std::string> argv_s{HCWARM_CLI_PATH};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<std::string> env_s = env;  // first: getenv takes the first of a name
  for (char** e = environ; *e != nullptr; ++e) env_s.emplace_back(*e);
  std::vector<char*> argv = test::c_array(argv_s), envp = test::c_array(env_s);
  const std::string filler = (full / "filler").string();
  fs::create_directories(full);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", full.c_str(), "tmpfs", 0, "size=64k,mode=0777") != 0) {
      ::_exit(77);
    }
    const int fd = ::open(filler.c_str(), O_WRONLY | O_CREAT, 0600);
    static char block[4096];
    while (fd >= 0 && ::write(fd, block, sizeof block) > 0) {
    }
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0) ::_exit(78);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(79);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  test::CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (fs::exists(out)) r.out = test::read_file(out);
  if (fs::exists(err)) r.err = test::read_file(err);
  return r;
}

TEST(CliExitCodes, AFullDiskDuringWarmupExitsOne) {
  // Kernels in memory only, compiled in a temporary directory on a full file system.
  TempDir dir;
  const auto r = run_cli_on_full_tmpfs(dir / "tmp", cat({"warm"}, tiny_model_args(dir, /*with_cache_dir=*/false)),
                                       {"TMPDIR=" + (dir / "tmp").string(), "HCWARM_CACHE_DIR="});
  if (r.exit_code == 77) GTEST_SKIP() << "needs root to mount a tmpfs";
  expect_build_failure(r, "No space left on device");
}

TEST(CliExitCodes, AChattyFailingCompilerIsEchoedBounded) {
  TempDir dir;
  // 1 MB per key, 9 keys: each echoed (a few times) within its bound.
  const auto r = run_cli(warm_args(dir), {"HCWARM_CXX=" + compiler(dir, "head -c 1000000 /dev/zero | tr '\\0' x; "
                                                                         "echo; echo 'error: the end'; exit 1")});
  expect_build_failure(r, "bytes dropped");
  EXPECT_NE(r.err.find("error: the end"), std::string::npos);
  EXPECT_LT(r.err.size(), 2 * 9 * (limits::kMaxEchoedLogHead + limits::kMaxEchoedLogTail + 1024) +
                             limits::kMaxMessageHead + limits::kMaxMessageTail);
}

}  // namespace
}  // namespace hcwarm
