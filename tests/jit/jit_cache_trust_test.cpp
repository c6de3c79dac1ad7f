// The cache is trusted code: its directories are private (0700), a directory or
// file that others could have written is never loaded from (memory-only with one
// warning), symlinks and FIFOs planted in it are neither followed nor waited on,
// and a read-only bundle is still served (HCWARM_CACHE_TRUST=shared for a foreign one).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

#include "common/jit_fixtures.hpp"
#include "common/test_util.hpp"
#include "jit_test_util.hpp"

namespace hcwarm::jit::test {
namespace {


class JitTrust : public CacheFixture {
 protected:
  static int mode_of(const fs::path& p) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -1;
  }
  // A runtime on the cache must ignore it: value 1 compiled in memory, one warning naming `path` and `why`.
  void expect_refused(const fs::path& path, const std::string& why, CacheTrust trust = CacheTrust::Owner) {
    LogCapture logs;
    auto o = options(cache());
    o.cache_trust = trust;
    JitRuntime rt(o);
    EXPECT_EQ(call_answer(*rt.get(host_spec(1))), 101);
    EXPECT_EQ(rt.stats().loaded_from_disk, 0);
    EXPECT_EQ(rt.stats().compiled, 1);
    EXPECT_EQ(rt.disk_cache(), nullptr);
    const auto warns = logs.messages(spdlog::level::warn);
    ASSERT_EQ(warns.size(), 1u);
    EXPECT_NE(warns[0].find(path.string() + " "), std::string::npos) << warns[0];
    EXPECT_NE(warns[0].find(why), std::string::npos) << warns[0];
  }
};

TEST_F(JitTrust, DirectoriesTheCacheCreatesArePrivate) {
  populate({1});
  const fs::path e = entry_of(1), ns = e.parent_path().parent_path();
  for (const fs::path& d : {cache(), ns.parent_path(), ns, ns / "entries", ns / "locks", ns / "staging",
                            ns / "quarantine", e}) {
    EXPECT_EQ(mode_of(d), 0700) << d;
  }
}

TEST_F(JitTrust, GroupOrOtherWritableDirectoriesAndFilesAreNotLoadedFrom) {
  populate({1});
  const fs::path e = entry_of(1), ns = e.parent_path().parent_path();
  for (const fs::path& p : {cache(), ns.parent_path(), ns, ns / "entries", e, e / "kernel.so", e / "manifest.json"}) {
    SCOPED_TRACE(p.string());
    const int old = mode_of(p);
    ::chmod(p.c_str(), fs::is_directory(p) ? 0777 : 0666);
    expect_refused(p, "writable by group or others");
    ::chmod(p.c_str(), 0770 & (fs::is_directory(p) ? 0777 : 0666));  // group-writable is as bad
    expect_refused(p, "writable by group or others", CacheTrust::Shared);
    ::chmod(p.c_str(), old);
  }
  JitRuntime rt(options(cache()));  // restored: loaded again
  rt.get(host_spec(1));
  EXPECT_EQ(rt.stats().loaded_from_disk, 1);
}

TEST_F(JitTrust, ForeignOwnedCacheIsRefusedUnlessShared) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give files to another user";
  populate({1});
  const fs::path e = entry_of(1), ns = e.parent_path().parent_path();
  for (const fs::path& p : {cache(), ns, e, e / "kernel.so"}) {
    SCOPED_TRACE(p.string());
    ASSERT_EQ(::chown(p.c_str(), hcwarm::test::kNobodyUid, hcwarm::test::kNobodyUid), 0);
    expect_refused(p, "owned by uid 65534");
    ASSERT_EQ(::chown(p.c_str(), 0, 0), 0);
  }
  // Shared: a foreign, read-only-for-others bundle is loaded from, and never written.
  chown_tree(cache(), hcwarm::test::kNobodyUid);
  LogCapture logs;
  auto o = options(cache());
  o.cache_trust = CacheTrust::Shared;
  JitRuntime rt(o);
  EXPECT_EQ(call_answer(*rt.get(host_spec(1))), 101);
  EXPECT_EQ(call_answer(*rt.get(host_spec(2))), 102);
  EXPECT_EQ(rt.stats().loaded_from_disk, 1);
  EXPECT_EQ(rt.stats().compiled, 1);
  EXPECT_NE(rt.disk_cache(), nullptr);
  EXPECT_FALSE(rt.disk_writable());
  EXPECT_EQ(logs.count(spdlog::level::warn, "read-only"), 1);
  EXPECT_EQ(logs.count(spdlog::level::warn), 1);
  EXPECT_TRUE(entry_of(2).empty());
  EXPECT_EQ(EnvConfig::from_map({{"HCWARM_CACHE_TRUST", "shared"}}).cache_trust_shared, true);
  EXPECT_EQ(JitOptions::from_env(EnvConfig::from_map({{"HCWARM_CACHE_TRUST", "shared"}})).cache_trust, CacheTrust::Shared);
  EXPECT_EQ(JitOptions::from_env(EnvConfig::from_map({})).cache_trust, CacheTrust::Owner);
  EXPECT_THROW(EnvConfig::from_map({{"HCWARM_CACHE_TRUST", "anyone"}}), Error);
}

TEST_F(JitTrust, LockFileReplacedBySymlinkIsNotFollowed) {
  populate({1});
  const fs::path ns = entry_of(1).parent_path().parent_path();
  const std::string k2 = JitRuntime(options(cache())).key(host_spec(2));
  const fs::path outside = dir_.path() / "outside.txt";
  fs::create_symlink(outside, ns / "locks" / (k2 + ".lock"));
  LogCapture logs;
  JitRuntime rt(options(cache()));
  EXPECT_EQ(call_answer(*rt.get(host_spec(2))), 102);
  EXPECT_FALSE(fs::exists(outside));  // O_CREAT through the link would have made it
  EXPECT_EQ(logs.count(spdlog::level::warn, (ns / "locks" / (k2 + ".lock")).string()), 1);
  EXPECT_EQ(rt.disk_cache(), nullptr);
}

TEST_F(JitTrust, FifoPlantedAsArtifactIsABadEntryNotAHang) {
  populate({1});
  const fs::path e = entry_of(1), fifo = e / "kernel.so";
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  auto run = std::async(std::launch::async, [&] {
    const auto vr = DiskCache(cache()).verify();
    LogCapture logs;
    JitRuntime rt(options(cache()));
    const int answer = call_answer(*rt.get(host_spec(1)));
    return std::tuple(vr.bad.size() == 1 ? vr.bad[0].reason : std::string("?"), answer, rt.stats().compiled,
                      logs.count(spdlog::level::warn, "is bad"));
  });
  // Past the deadline, open the FIFO's other end so that a blocked reader returns and the test fails, not hangs.
  bool hung = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (run.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
    if (std::chrono::steady_clock::now() < deadline) continue;
    hung = true;
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  }
  EXPECT_FALSE(hung) << "reading a FIFO in the cache blocked";
  const auto [reason, answer, compiled, bad_warnings] = run.get();
  EXPECT_NE(reason.find("not a regular file"), std::string::npos) << reason;
  EXPECT_EQ(answer, 101);
  EXPECT_EQ(compiled, 1);
  EXPECT_EQ(bad_warnings, 1);
}

}  // namespace
}  // namespace hcwarm::jit::test
