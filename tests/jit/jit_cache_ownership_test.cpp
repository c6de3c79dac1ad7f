// The cache only writes into, loads from and removes what is its own: a root
// tagged CACHEDIR.TAG (or empty, or holding only its version directories), and
// under it only names its layout gives. `cache verify` checks entry types.
#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "jit/disk_cache.hpp"
#include "jit_test_util.hpp"

namespace hcwarm::jit::test {
namespace {

TEST(JitCacheOwnership, NewCacheIsTagged) {
  TempDir d;
  populate_cache(d / "cache", {1});
  EXPECT_EQ(read_file(d / "cache" / "CACHEDIR.TAG").rfind("Signature: 8a477f597d28d172789f06886806bc55", 0), 0u);
  EXPECT_FALSE(DiskCache(d / "cache").not_a_cache());
}

TEST(JitCacheOwnership, DirectoryHoldingOtherFilesIsNeverUsedOrCleared) {
  TempDir d;
  const fs::path home = d / "home";
  write_file(home / "notes.txt", "mine");
  // Looks like a cache's layout, but the directory is not one.
  write_file(home / "v0.1.0" / "ns" / "entries" / "x" / "data", "mine too");
  const DiskCache cache(home);
  ASSERT_TRUE(cache.not_a_cache());
  EXPECT_NE(cache.not_a_cache()->find("notes.txt"), std::string::npos);

  LogCapture logs;
  JitRuntime rt(options(home));
  EXPECT_EQ(call_answer(*rt.get(host_spec(1))), 101);  // served from memory
  EXPECT_FALSE(rt.disk_writable());
  EXPECT_EQ(logs.count(spdlog::level::warn, "not an hcwarm cache directory"), 1);
  EXPECT_FALSE(fs::exists(home / "CACHEDIR.TAG"));

  for (const char* verb : {"clear", "prune"}) {
    std::vector<std::string> args{"cache", verb, "--cache-dir", home.string()};
    if (std::string(verb) == "prune") args.insert(args.end(), {"--max-size", "0"});
    const auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << verb << ": " << r.err;
    EXPECT_NE(r.err.find("nothing removed"), std::string::npos) << r.err;
  }
  EXPECT_EQ(read_file(home / "notes.txt"), "mine");
  EXPECT_EQ(read_file(home / "v0.1.0" / "ns" / "entries" / "x" / "data"), "mine too");
}

TEST(JitCacheOwnership, FileSystemRootIsRefused) {
  EXPECT_TRUE(DiskCache("/").not_a_cache());
  const auto r = run_cli({"cache", "clear", "--cache-dir", "/"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

TEST(JitCacheOwnership, UntaggedCacheOfVersionDirsIsStillACache) {
  TempDir d;
  populate_cache(d / "cache", {1});
  fs::remove(d / "cache" / "CACHEDIR.TAG");
  EXPECT_FALSE(DiskCache(d / "cache").not_a_cache());
  JitRuntime rt(options(d / "cache"));
  rt.get(host_spec(1));
  EXPECT_EQ(rt.stats().loaded_from_disk, 1);
  EXPECT_TRUE(fs::exists(d / "cache" / "CACHEDIR.TAG"));  // tagged on first writable use
}

TEST(JitCacheOwnership, VerifyFlagsEntriesThatAreNotDirectoriesAndClearLeavesForeignNames) {
  TempDir d;
  const fs::path cache = d / "cache";
  populate_cache(cache, {1});
  const fs::path entries = entry_dir_of(cache, 1).parent_path();
  const std::string fake_key(64, 'a');
  write_file(entries / fake_key, "a file where an entry directory belongs");
  write_file(d / "elsewhere" / "manifest.json", "{}");
  fs::create_symlink(d / "elsewhere", entries / std::string(64, 'b'));
  write_file(entries / "README" / "x", "not hcwarm's");

  const auto v = DiskCache(cache).verify();
  EXPECT_EQ(v.checked, 4);
  ASSERT_EQ(v.bad.size(), 3u);
  int not_dir = 0, symlink = 0, not_key = 0;
  for (const auto& b : v.bad) {
    if (b.reason.find("symlink") != std::string::npos) ++symlink;
    else if (b.reason.find("not a directory") != std::string::npos) ++not_dir;
    else if (b.reason.find("not a key") != std::string::npos) ++not_key;
  }
  EXPECT_EQ(not_dir, 1);
  EXPECT_EQ(symlink, 1);
  EXPECT_EQ(not_key, 1);
  EXPECT_EQ(run_cli({"cache", "verify", "--cache-dir", cache.string()}).exit_code, 1);

  const auto c = run_cli({"cache", "clear", "--cache-dir", cache.string()});
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_FALSE(fs::exists(entry_dir_of(cache, 1)));
  EXPECT_TRUE(fs::exists(entries / "README" / "x"));              // not a name hcwarm gives
  EXPECT_EQ(read_file(d / "elsewhere" / "manifest.json"), "{}");  // never followed
}

}  // namespace
}  // namespace hcwarm::jit::test
