// Child mode: the multi-process tests run this test binary again with
// HCWARM_JIT_CHILD=<mode> and --gtest_filter=JitChild.Main. In a normal run the
// test skips itself.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/test_util.hpp"
#include "jit/host_compile_slots.hpp"
#include "jit_test_util.hpp"

namespace hcwarm::jit::test {
namespace {

std::string env_or(const char* k, const std::string& def = {}) {
  const char* v = std::getenv(k);
  return v ? v : def;
}

std::vector<int> values_from_env() {
  std::vector<int> out;
  std::stringstream ss(env_or("HCWARM_JIT_VALUES"));
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::stoi(item));
  return out;
}

void append_line(const std::string& file, const std::string& line) {
  std::ofstream f(file, std::ios::app);
  f << line << "\n";
}

// Fills the file system holding `dir` until it reports ENOSPC.
void fill_fs(const std::filesystem::path& dir) {
  std::ofstream f(dir / "filler", std::ios::binary | std::ios::app);
  std::string block(4096, 'x');
  for (int i = 0; i < 1 << 20 && f.good(); ++i) f.write(block.data(), block.size()), f.flush();
}

int check_read_only_cache(bool served) {
  LogCapture logs;
  auto opts = options(std::filesystem::path(env_or("HCWARM_JIT_CACHE")));
  opts.cache_trust = JitOptions::from_env(EnvConfig::from_environment()).cache_trust;
  JitRuntime rt(std::move(opts));
  for (int v : {1, 2, 1}) {
    if (call_answer(*rt.get(host_spec(v))) != 100 + v) return 11;
  }
  const auto st = rt.stats();
  const int refused = logs.count(spdlog::level::warn, "not usable"), ro = logs.count(spdlog::level::warn, "read-only");
  std::fprintf(stderr, "not usable: %d, read-only: %d, disk: %p, compiled %lld, from disk %lld\n", refused, ro,
               static_cast<const void*>(rt.disk_cache()), static_cast<long long>(st.compiled),
               static_cast<long long>(st.loaded_from_disk));
  if (st.memory_hits != 1) return 12;
  if (served) {
    if (refused != 0 || ro != 1 || rt.disk_cache() == nullptr || rt.disk_writable()) return 13;
    if (st.loaded_from_disk != 1 || st.compiled != 1) return 14;
  } else {
    if (refused != 1 || rt.disk_cache() != nullptr) return 15;
    if (st.loaded_from_disk != 0 || st.compiled != 2) return 16;
  }
  return 0;
}

// build: N processes started together, each building the same keys.
int child_build() {
  const std::string go = env_or("HCWARM_JIT_GO");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!go.empty() && !std::filesystem::exists(go) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  auto opts = options(std::filesystem::path(env_or("HCWARM_JIT_CACHE")));
  // Slow compiles, so that every process is still starting while the first compiles.
  const int compile_sleep_ms = std::stoi(env_or("HCWARM_JIT_COMPILE_SLEEP_MS", "0"));
  opts.test_hook = [&](std::string_view stage) {
    if (stage == "compile-begin") std::this_thread::sleep_for(std::chrono::milliseconds(compile_sleep_ms));
  };
  JitRuntime rt(std::move(opts));
  std::vector<KernelSpec> specs;
  for (int v : values_from_env()) specs.push_back(host_spec(v));
  const auto rep = rt.build(specs);
  if (rep.failed) {
    for (const auto& e : rep.errors) std::fprintf(stderr, "%s\n", e.c_str());
    return 3;
  }
  for (const auto& s : specs) {
    const int v = std::stoi(s.params[0].second);
    if (call_answer(*rt.get(s)) != 100 + v) return 4;
  }
  for (const auto& e : rt.events()) {
    if (e.source != ArtifactSource::Memory) append_line(env_or("HCWARM_JIT_OUT"), e.key + " " + to_string(e.source));
  }
  return 0;
}

// killme: compiles one key, reporting each stage to a file and sleeping in
// publish stages so that the parent's SIGKILL lands at a random point.
int child_killme() {
  const std::string stages = env_or("HCWARM_JIT_STAGES");
  const int sleep_ms = std::stoi(env_or("HCWARM_JIT_STAGE_SLEEP_MS", "0"));
  auto opts = options(std::filesystem::path(env_or("HCWARM_JIT_CACHE")));
  opts.test_hook = [&](std::string_view stage) {
    append_line(stages, std::string(stage));
    if (stage.rfind("publish", 0) == 0 && sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
  };
  JitRuntime rt(std::move(opts));
  const int v = values_from_env().at(0);
  const bool slow = env_or("HCWARM_JIT_SLOW") == "1";
  const bool ok = call_answer(*rt.get(slow ? slow_host_spec(v) : host_spec(v))) == 100 + v;
  append_line(stages, "finished");
  return ok ? 0 : 4;
}

// readonly: as a user that cannot write the populated cache dir (drops root to
// nobody; HCWARM_CACHE_TRUST from the environment). HCWARM_JIT_EXPECT=served: value
// 1 comes from the disk, 2 is compiled in memory with one read-only warning;
// refused: nothing is loaded from it (memory only, one "not usable" warning).
int child_readonly() {
  if (::geteuid() == 0) {
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) return 10;
  }
  return check_read_only_cache(env_or("HCWARM_JIT_EXPECT") == "served");
}

// dir bind-mounted read-only in a private mount namespace; false where that is not allowed.
bool bind_read_only(const std::filesystem::path& dir) {
  return ::unshare(CLONE_NEWNS) == 0 && ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
         ::mount(dir.c_str(), dir.c_str(), nullptr, MS_BIND, nullptr) == 0 &&
         ::mount(nullptr, dir.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) == 0;
}

// rofs: the populated cache dir bind-mounted read-only (as root the permission bits
// do not stop writes; a read-only mount does): served.
int child_rofs() {
  const std::filesystem::path dir = env_or("HCWARM_JIT_CACHE");
  if (!bind_read_only(dir)) return 77;
  return check_read_only_cache(true);
}

// rofs_maintenance: `cache clear` and `cache verify --quarantine` on the populated
// cache bind-mounted read-only (entry 2 corrupted by the parent) exit 1 naming
// the read-only file system, and report nothing removed.
int child_rofs_maintenance() {
  const std::filesystem::path dir = env_or("HCWARM_JIT_CACHE");
  if (!bind_read_only(dir)) return 77;
  const auto clear = hcwarm::test::run_cli({"cache", "clear", "--cache-dir", dir.string()});
  std::fprintf(stderr, "clear: %d\n%s%s", clear.exit_code, clear.out.c_str(), clear.err.c_str());
  if (clear.exit_code != 1) return 30;
  if (clear.err.find("Read-only file system") == std::string::npos) return 31;
  if (clear.out.find("removed 0 entries") == std::string::npos) return 32;
  const auto verify = hcwarm::test::run_cli({"cache", "verify", "--quarantine", "--cache-dir", dir.string()});
  std::fprintf(stderr, "verify: %d\n%s%s", verify.exit_code, verify.out.c_str(), verify.err.c_str());
  if (verify.exit_code != 1) return 33;
  if (verify.err.find("Read-only file system") == std::string::npos) return 34;
  if (verify.out.find("0 moved to quarantine") == std::string::npos) return 35;
  return 0;
}

// enospc: a tiny tmpfs as the cache dir, filled up when the first publish begins
// (so the publish hits ENOSPC), then a second runtime on the full file system.
int child_enospc() {
  const std::filesystem::path dir = env_or("HCWARM_JIT_CACHE");
  if (::unshare(CLONE_NEWNS) != 0) return 77;
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return 77;
  if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=256k,mode=0700") != 0) return 77;
  LogCapture logs;
  {
    auto opts = options(dir);
    opts.test_hook = [&](std::string_view stage) {
      if (stage == "publish-begin") fill_fs(dir);
    };
    JitRuntime rt(std::move(opts));
    for (int v : {1, 2}) {
      if (call_answer(*rt.get(host_spec(v))) != 100 + v) return 20;
    }
    // The failed publish turns the cache read-only: still loaded from, never dropped.
    if (logs.count(spdlog::level::warn, "read-only") != 1) return 21;
    if (logs.count(spdlog::level::warn, "No space left") != 1) return 22;
    if (rt.disk_cache() == nullptr || rt.disk_writable()) return 23;
  }
  {
    JitRuntime rt(options(dir));  // full from the start: the prepare probe fails
    if (call_answer(*rt.get(host_spec(3))) != 103) return 24;
    // The probe fails: nothing more can be stored, but loads would still be served.
    if (logs.count(spdlog::level::warn, "read-only") != 2) return 25;
    if (rt.disk_writable()) return 26;
  }
  return 0;
}

// holdslots: takes every host compile slot of HCWARM_JIT_SLOTS_DIR (HCWARM_JIT_SLOTS
// of them), says so by creating HCWARM_JIT_READY, and keeps them (the parent stops
// it with SIGSTOP, as Ctrl-Z would, and kills it at the end).
int child_holdslots() {
  const int count = std::stoi(env_or("HCWARM_JIT_SLOTS"));
  HostCompileSlots slots(env_or("HCWARM_JIT_SLOTS_DIR"), count);
  if (slots.try_take(count) != count) return 30;
  append_line(env_or("HCWARM_JIT_READY"), "held");
  std::this_thread::sleep_for(std::chrono::seconds(60));
  return 0;
}

}  // namespace

TEST(JitChild, Main) {
  const std::string mode = env_or("HCWARM_JIT_CHILD");
  if (mode.empty()) GTEST_SKIP() << "child-process entry of the multi-process JIT tests (not a test by itself)";
  int rc = 99;
  try {
    if (mode == "build") rc = child_build();
    else if (mode == "killme") rc = child_killme();
    else if (mode == "readonly") rc = child_readonly();
    else if (mode == "rofs") rc = child_rofs();
    else if (mode == "rofs_maintenance") rc = child_rofs_maintenance();
    else if (mode == "enospc") rc = child_enospc();
    else if (mode == "holdslots") rc = child_holdslots();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child %s: %s\n", mode.c_str(), e.what());
    rc = 98;
  }
  std::fflush(nullptr);
  std::_Exit(rc);
}

}  // namespace hcwarm::jit::test
