// Several processes on one cache: each key compiled exactly once, and SIGKILL
// at random points of compile and publish never leaves a loadable bad entry.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "common/test_util.hpp"
#include "jit_test_util.hpp"

namespace hcwarm::jit::test {
namespace {

TEST(JitMultiProcess, FourProcessesStartedTogetherCompileEachKeyOnce) {
  TempDir dir("hcwarm-jit-mp");
  const auto cache = dir / "cache", out = dir / "events.txt", go = dir / "go", log = dir / "children.log";
  std::vector<pid_t> pids;
  for (int i = 0; i < 4; ++i) {
    pids.push_back(spawn_child("build",
                               {{"HCWARM_JIT_CACHE", cache.string()},
                                {"HCWARM_JIT_VALUES", "21,22,23"},
                                {"HCWARM_JIT_OUT", out.string()},
                                {"HCWARM_JIT_GO", go.string()},
                                {"HCWARM_JIT_COMPILE_SLEEP_MS", "150"}},
                               log));
  }
  hcwarm::test::write_file(go, "go");
  for (pid_t p : pids) EXPECT_EQ(wait_child(p), 0) << read_file(log);
  std::map<std::string, std::map<std::string, int>> per_key;
  std::istringstream in(read_file(out));
  std::string key, source;
  while (in >> key >> source) ++per_key[key][source];
  ASSERT_EQ(per_key.size(), 3u) << read_file(out);
  for (auto& [k, by] : per_key) {
    EXPECT_EQ(by["compiled"], 1) << k;
    EXPECT_EQ(by["disk"], 3) << k;
  }
  EXPECT_TRUE(DiskCache(cache).verify().bad.empty());
}

TEST(JitMultiProcess, SigkillDuringCompileOrPublishLeavesNothingLoadable) {
  TempDir dir("hcwarm-jit-kill");
  const auto cache = dir / "cache", log = dir / "children.log";
  const unsigned seed = static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count());
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  int killed[2] = {0, 0};
  for (int i = 0; i < 20; ++i) {
    const bool in_publish = i % 2 == 1;
    const int value = 1000 + i;
    const auto stages = dir / ("stages-" + std::to_string(i));
    const pid_t pid = spawn_child("killme",
                                  {{"HCWARM_JIT_CACHE", cache.string()},
                                   {"HCWARM_JIT_VALUES", std::to_string(value)},
                                   {"HCWARM_JIT_STAGES", stages.string()},
                                   {"HCWARM_JIT_STAGE_SLEEP_MS", "20"},
                                   {"HCWARM_JIT_SLOW", in_publish ? "0" : "1"}},
                                  log);
    const std::string wait_for = in_publish ? "publish-begin" : "compile-begin";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (read_file(stages).find(wait_for) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // A random point: the slow kernel's compile takes ~0.3 s; publish sleeps 20 ms at each of its 7 stages (the rename comes after ~100 ms).
    std::uniform_int_distribution<int> ms(0, in_publish ? 90 : 150);
    std::this_thread::sleep_for(std::chrono::milliseconds(ms(rng)));
    ::kill(pid, SIGKILL);
    const int rc = wait_child(pid);
    const std::string st = read_file(stages);
    // Where it died: the last stage it reported.
    const std::string last = st.substr(st.rfind('\n', st.size() - 2) + 1);
    if (rc == 128 + SIGKILL && last == "compile-begin\n") ++killed[0];
    if (rc == 128 + SIGKILL && last.rfind("publish", 0) == 0 && st.find("publish-renamed") == std::string::npos) {
      ++killed[1];
    }
    SCOPED_TRACE(fmt::format("iteration {} ({}), child exit {}, stages:\n{}", i, wait_for, rc, st));

    // Nothing visible in the cache is bad...
    const auto v = DiskCache(cache).verify();
    EXPECT_TRUE(v.bad.empty()) << (v.bad.empty() ? "" : v.bad[0].reason);
    // ...and a later process rebuilds, or uses an entry only if it was fully written.
    JitRuntime rt(options(cache));
    EXPECT_EQ(call_answer(*rt.get(in_publish ? host_spec(value) : slow_host_spec(value))), 100 + value);
    const auto src = rt.events().at(0).source;
    if (src == ArtifactSource::Disk) {
      EXPECT_NE(st.find("publish-dir-synced"), std::string::npos) << "loaded an entry that was not fully published";
    } else {
      EXPECT_EQ(src, ArtifactSource::Compiled);
    }
  }
  EXPECT_GE(killed[0], 6) << "too few kills landed during compile";
  EXPECT_GE(killed[1], 4) << "too few kills landed during publish before its rename";
  std::printf("kills during compile: %d, during publish before the rename: %d (of 10 each)\n", killed[0], killed[1]);
  // All staging of the dead processes is gone after a sweep.
  DiskCache(cache).prune(1ull << 40);
  size_t staging_left = 0;
  for (const auto& e : fs::recursive_directory_iterator(cache))
    staging_left += e.path().parent_path().filename() == "staging";
  EXPECT_EQ(staging_left, 0u);
  EXPECT_TRUE(DiskCache(cache).verify().bad.empty());
}

}  // namespace
}  // namespace hcwarm::jit::test
