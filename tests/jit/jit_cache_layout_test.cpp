// The cache is worked in by descriptor from a root whose parents nobody else can
// swap: a cache under a group-writable parent without the sticky bit is refused,
// maintenance refuses a layout with links and never touches anything outside it,
// reports what it could not do (exit 1), and HCWARM_CACHE_TRUST=shared:USER
// names the one other owner accepted.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "common/jit_fixtures.hpp"
#include "common/test_util.hpp"
#include "jit/cache_trust.hpp"
#include "jit_test_util.hpp"

namespace hcwarm::jit::test {
namespace {


class JitLayout : public CacheFixture {
 protected:
  fs::path ns_dir() const { return entry_of(1).parent_path().parent_path(); }
  // Every path under p with its size, to show that nothing there changed.
  static std::vector<std::string> snapshot(const fs::path& p) {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(p)) {
      out.push_back(e.path().string() + (e.is_regular_file() ? ":" + std::to_string(e.file_size()) : "/"));
    }
    std::sort(out.begin(), out.end());
    return out;
  }
};

TEST_F(JitLayout, CacheUnderAGroupWritableParentWithoutTheStickyBitIsRefused) {
  const fs::path team = dir_.path() / "team", cache = team / "cache";
  fs::create_directories(team);
  ::chmod(team.c_str(), 0775);  // a shared scratch directory: a group member could swap the cache for hers
  {
    LogCapture logs;
    JitRuntime rt(options(cache));
    EXPECT_EQ(call_answer(*rt.get(host_spec(1))), 101);
    EXPECT_EQ(rt.disk_cache(), nullptr);
    const auto warns = logs.messages(spdlog::level::warn);
    ASSERT_EQ(warns.size(), 1u);
    EXPECT_NE(warns[0].find(team.string() + " (above the cache"), std::string::npos) << warns[0];
    EXPECT_NE(warns[0].find("without the sticky bit"), std::string::npos) << warns[0];
  }
  EXPECT_TRUE(DiskCache(cache).untrusted().has_value());
  const auto cli = run_cli({"cache", "clear", "--cache-dir", cache.string()});
  EXPECT_EQ(cli.exit_code, 1) << cli.out << cli.err;
  EXPECT_NE(cli.err.find("without the sticky bit"), std::string::npos) << cli.err;

  ::chmod(team.c_str(), 01777);  // sticky: only the owner of a name may rename it
  populate_cache(cache, {1});
  JitRuntime rt(options(cache));
  EXPECT_EQ(call_answer(*rt.get(host_spec(1))), 101);
  EXPECT_EQ(rt.stats().loaded_from_disk, 1);
}

TEST_F(JitLayout, ParentOwnedByAnotherUserIsRefusedUnlessThatOwnerIsTrusted) {
  if (::geteuid() == 0 && ::getuid() == 0) {
    const fs::path theirs = dir_.path() / "theirs", cache = theirs / "cache";
    fs::create_directories(theirs);
    ASSERT_EQ(::chown(theirs.c_str(), hcwarm::test::kNobodyUid, hcwarm::test::kNobodyUid), 0);
    // Not there yet: the directory it would be created in is checked itself.
    EXPECT_NE(DiskCache(cache).untrusted().value_or("").find(theirs.string() + " (above the cache"), std::string::npos);
    fs::create_directories(cache);
    EXPECT_NE(DiskCache(cache).untrusted().value_or("").find("owned by uid 65534, who could swap the cache"),
              std::string::npos);
    EXPECT_FALSE(DiskCache(cache, CacheTrust::shared_with(hcwarm::test::kNobodyUid, "nobody")).untrusted().has_value());
  } else {
    GTEST_SKIP() << "needs root to give a directory to another user";
  }
}

// Each layout directory replaced by a link to a directory outside the cache (as a
// user could plant in a cache root's cleanup job walks): clear, prune and verify
// --quarantine refuse, exit 1 naming the link, and leave the outside as it was.
TEST_F(JitLayout, MaintenanceRefusesSymlinkedLayoutDirectoriesAndTouchesNothingOutside) {
  for (const std::string sub : {"quarantine", "staging", "locks", "entries", "", "version"}) {
    SCOPED_TRACE(sub.empty() ? "namespace" : sub);
    fs::remove_all(cache());
    populate({1, 2});
    const std::string k2 = fs::path(entry_of(2)).filename().string();
    const fs::path outside = dir_.path() / "outside";
    fs::remove_all(outside);
    // Looks like what maintenance removes: a quarantined entry, a stale staging dir, an entry, a lock.
    write_file(outside / (k2 + ".1.aaaa") / "kernel.so", "precious");
    write_file(outside / (k2 + ".lock"), "precious");
    write_file(outside / k2 / "manifest.json", "precious");
    const fs::path victim = sub == "version" ? ns_dir().parent_path() : sub.empty() ? ns_dir() : ns_dir() / sub;
    fs::rename(victim, dir_.path() / "moved");
    fs::create_directory_symlink(outside, victim);
    const auto before = snapshot(outside);
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"cache", "clear"}, {"cache", "prune", "--max-size", "1M"}, {"cache", "verify", "--quarantine"}}) {
      auto a = args;
      a.insert(a.end(), {"--cache-dir", cache().string()});
      const auto cli = run_cli(a);
      SCOPED_TRACE(args[1]);
      EXPECT_EQ(cli.exit_code, 1) << cli.out << cli.err;
      EXPECT_NE(cli.err.find("symlink"), std::string::npos) << cli.err;
      EXPECT_EQ(snapshot(outside), before);
    }
    fs::remove(victim);
    fs::rename(dir_.path() / "moved", victim);
  }
}

TEST_F(JitLayout, MaintenanceOnAReadOnlyMountExitsOneNamingWhy) {
  populate({1, 2});
  {
    std::ofstream(entry_of(2) / "kernel.so", std::ios::app) << "x";  // a bad entry for verify --quarantine
  }
  const auto log = dir_.path() / "child.log";
  const int rc = wait_child(spawn_child("rofs_maintenance", {{"HCWARM_JIT_CACHE", cache().string()}}, log));
  if (rc == 77) GTEST_SKIP() << "cannot bind-mount read-only here (needs a private mount namespace)";
  EXPECT_EQ(rc, 0) << read_file(log);
  EXPECT_FALSE(entry_of(1).empty());
}

TEST_F(JitLayout, RootMaintainsAnotherUsersCacheOnlyWhenThatOwnerIsNamed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give the cache to another user";
  populate({1, 2});
  const fs::path ns = ns_dir();
  chown_tree(cache(), hcwarm::test::kNobodyUid);
  const auto refused = run_cli({"cache", "clear", "--cache-dir", cache().string()});
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("owned by uid 65534"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("HCWARM_CACHE_TRUST=shared:65534"), std::string::npos) << refused.err;
  EXPECT_FALSE(entry_of(1).empty());

  const auto cleared = run_cli({"cache", "clear", "--cache-dir", cache().string()}, {"HCWARM_CACHE_TRUST=shared:65534"});
  EXPECT_EQ(cleared.exit_code, 0) << cleared.out << cleared.err;
  EXPECT_TRUE(DiskCache(cache(), CacheTrust::shared_with(hcwarm::test::kNobodyUid, "65534")).list().empty());
  // The lock files the cleanup took belong to the cache's owner, not to root.
  for (const auto& e : fs::directory_iterator(ns / "locks")) {
    struct stat st {};
    ASSERT_EQ(::lstat(e.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, hcwarm::test::kNobodyUid) << e.path();
  }
}

TEST_F(JitLayout, SharedWithANamedOwnerAcceptsThatOwnerOnly) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give the cache to another user";
  populate({1});
  chown_tree(cache(), hcwarm::test::kNobodyUid);
  {
    LogCapture logs;
    auto o = options(cache());
    o.cache_trust = CacheTrust::shared_with(hcwarm::test::kNobodyUid, "nobody");
    JitRuntime rt(o);
    EXPECT_EQ(call_answer(*rt.get(host_spec(1))), 101);
    EXPECT_EQ(rt.stats().loaded_from_disk, 1);
    EXPECT_FALSE(rt.disk_writable());  // a foreign cache is only read
  }
  LogCapture logs;
  auto o = options(cache());
  o.cache_trust = CacheTrust::shared_with(hcwarm::test::kNobodyUid - 1, "someone-else");
  JitRuntime rt(o);
  EXPECT_EQ(call_answer(*rt.get(host_spec(1))), 101);
  EXPECT_EQ(rt.stats().loaded_from_disk, 0);
  EXPECT_EQ(logs.count(spdlog::level::warn, "owned by uid 65534"), 1);
}

TEST(JitCacheTrustSetting, SharedNamesAUserOrUid) {
  EXPECT_EQ(CacheTrust::from_env(EnvConfig::from_map({})), CacheTrust::Owner);
  EXPECT_EQ(CacheTrust::from_env(EnvConfig::from_map({{"HCWARM_CACHE_TRUST", "owner"}})).describe(), "owner");
  EXPECT_EQ(CacheTrust::from_env(EnvConfig::from_map({{"HCWARM_CACHE_TRUST", "shared"}})), CacheTrust::Shared);
  const auto by_name = CacheTrust::from_env(EnvConfig::from_map({{"HCWARM_CACHE_TRUST", "shared:root"}}));
  EXPECT_EQ(by_name.who(), CacheTrust::Who::Named);
  EXPECT_TRUE(by_name.accepts_owner(0));
  EXPECT_FALSE(by_name.accepts_owner(hcwarm::test::kNobodyUid) && ::geteuid() != hcwarm::test::kNobodyUid);
  EXPECT_EQ(by_name.describe(), "shared:root");
  const auto by_uid = CacheTrust::from_env(EnvConfig::from_map({{"HCWARM_CACHE_TRUST", "shared:4242"}}));
  EXPECT_TRUE(by_uid.accepts_owner(4242));
  EXPECT_FALSE(by_uid.accepts_owner(4243) && ::geteuid() != 4243);
  for (const char* bad : {"shared:", "shared:no-such-user-hcwarm", "shared:0x10", "Shared", "shared:root:x"}) {
    SCOPED_TRACE(bad);
    try {
      EnvConfig::from_map({{"HCWARM_CACHE_TRUST", bad}});
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(e.message().find("HCWARM_CACHE_TRUST"), std::string::npos) << e.message();
    }
  }
}

}  // namespace
}  // namespace hcwarm::jit::test
