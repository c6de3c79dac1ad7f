// The disk cache: reuse across runtimes, corruption detection and rebuild,
// `hcwarm cache` (ls / verify / prune / clear), LRU pruning, stale staging,
// and the unusable-cache cases (read-only, uncreatable, full).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/test_util.hpp"
#include "jit/sha256.hpp"
#include "jit_test_util.hpp"

namespace hcwarm::jit::test {
namespace {

class JitDisk : public CacheFixture {
 protected:
  std::string key_of(int v) { return JitRuntime(options(cache())).key(host_spec(v)); }
  size_t quarantined() const {
    size_t n = 0;
    for (const auto& e : fs::recursive_directory_iterator(cache()))
      n += e.is_directory() && e.path().parent_path().filename() == "quarantine";
    return n;
  }
  // Detected by DiskCache::verify and `hcwarm cache verify`, then rebuilt on use.
  void expect_detected_and_rebuilt(std::vector<int> bad_values, const std::string& reason) {
    std::vector<std::string> bad_keys;
    for (int v : bad_values) bad_keys.push_back(key_of(v));
    const auto vr = DiskCache(cache()).verify();
    ASSERT_EQ(vr.bad.size(), bad_keys.size());
    for (const auto& b : vr.bad) {
      EXPECT_NE(std::find(bad_keys.begin(), bad_keys.end(), b.entry.key), bad_keys.end());
      EXPECT_NE(b.reason.find(reason), std::string::npos) << b.reason;
    }
    const auto cli = run_cli({"cache", "verify", "--cache-dir", cache().string()});
    EXPECT_EQ(cli.exit_code, 1) << cli.out << cli.err;
    for (const auto& k : bad_keys) EXPECT_NE(cli.out.find("BAD " + k), std::string::npos) << cli.out;
    const auto cj = run_cli({"cache", "verify", "--cache-dir", cache().string(), "--json"});
    EXPECT_EQ(cj.exit_code, 1);
    const auto j = nlohmann::json::parse(cj.out);
    EXPECT_EQ(j["ok"], false);
    EXPECT_EQ(j["bad"].size(), bad_keys.size());

    LogCapture logs;
    JitRuntime rt(options(cache()));
    for (int v : bad_values) EXPECT_EQ(call_answer(*rt.get(host_spec(v))), 100 + v);
    EXPECT_EQ(rt.stats().compiled, static_cast<int64_t>(bad_values.size()));
    EXPECT_EQ(logs.count(spdlog::level::warn, "is bad"), static_cast<int>(bad_values.size()));
    EXPECT_EQ(quarantined(), bad_values.size());
    EXPECT_TRUE(DiskCache(cache()).verify().bad.empty());
    EXPECT_EQ(run_cli({"cache", "verify", "--cache-dir", cache().string()}).exit_code, 0);
  }
};

TEST_F(JitDisk, PublishIsAtomicAndTheLoserOfARaceKeepsTheWinner) {
  DiskCache dc(cache());
  const std::string ns = "host-test-000000000000", key = sha256_hex("k");
  dc.prepare(ns);
  EXPECT_EQ(dc.lookup(ns, key, "a.bin").status, DiskCache::Lookup::Status::Missing);
  const std::string first = "first artifact", second = "second";
  Manifest m;
  m.family = "f";
  m.description = "f[]@x";
  m.params = {{"p", "1"}};
  const auto bytes = [](const std::string& s) { return std::as_bytes(std::span<const char>(s.data(), s.size())); };
  EXPECT_EQ(dc.publish(ns, key, m, {{"a.bin", bytes(first)}}), DiskCache::Published::Yes);
  EXPECT_EQ(dc.publish(ns, key, m, {{"a.bin", bytes(second)}}), DiskCache::Published::LostRace);
  const auto lk = dc.lookup(ns, key, "a.bin");
  ASSERT_EQ(lk.status, DiskCache::Lookup::Status::Ok) << lk.reason;
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(lk.artifact.data()), lk.artifact.size()), first);
  EXPECT_EQ(lk.manifest.params, m.params);
  EXPECT_EQ(lk.manifest.files.at(0).sha256, sha256_hex(first));
  EXPECT_EQ(Manifest::parse(lk.manifest.to_json()).to_json(), lk.manifest.to_json());
  EXPECT_TRUE(fs::is_empty(dc.namespace_dir(ns) / "staging"));  // the loser's staging is gone
  EXPECT_EQ(dc.lookup(ns, key, "other.bin").status, DiskCache::Lookup::Status::Bad);
}

TEST_F(JitDisk, SecondRuntimeLoadsFromDiskWithZeroCompiles) {
  populate({1, 2});
  JitRuntime rt(options(cache()));
  EXPECT_EQ(call_answer(*rt.get(host_spec(1))), 101);
  EXPECT_EQ(call_answer(*rt.get(host_spec(2))), 102);
  EXPECT_EQ(rt.stats().compiled, 0);
  EXPECT_EQ(rt.stats().loaded_from_disk, 2);
  EXPECT_EQ(rt.events()[0].source, ArtifactSource::Disk);
  // Layout: v<version>/<namespace>/entries/<key>/{manifest.json,kernel.so}
  const auto e = entry_of(1);
  EXPECT_EQ(e.parent_path().filename(), "entries");
  EXPECT_EQ(e.parent_path().parent_path().parent_path().filename(), "v" HCWARM_VERSION);
  const auto m = Manifest::parse(read_file(e / "manifest.json"));
  EXPECT_EQ(m.key, key_of(1));
  EXPECT_EQ(m.family, "answer");
  ASSERT_EQ(m.files.size(), 1u);
  EXPECT_EQ(m.files[0].name, "kernel.so");
  EXPECT_EQ(m.files[0].size, fs::file_size(e / "kernel.so"));
}

TEST_F(JitDisk, TruncatedFileIsDetectedAndRebuilt) {
  populate({1, 2});
  fs::resize_file(entry_of(1) / "kernel.so", fs::file_size(entry_of(1) / "kernel.so") / 2);
  expect_detected_and_rebuilt({1}, "truncated");
}

TEST_F(JitDisk, EmptyHalfWrittenFileIsDetectedAndRebuilt) {
  populate({1});
  fs::resize_file(entry_of(1) / "kernel.so", 0);
  expect_detected_and_rebuilt({1}, "has 0 bytes");
}

TEST_F(JitDisk, FlippedByteIsDetectedAndRebuilt) {
  populate({1, 2});
  const auto p = entry_of(2) / "kernel.so";
  std::string bytes = read_file(p);
  bytes[bytes.size() / 2] ^= 0x40;
  write_file(p, bytes);
  expect_detected_and_rebuilt({2}, "SHA-256");
}

TEST_F(JitDisk, FilesSwappedBetweenKeysAreDetectedAndRebuilt) {
  populate({1, 2});
  const auto a = entry_of(1) / "kernel.so", b = entry_of(2) / "kernel.so", t = dir_.path() / "tmp.so";
  fs::rename(a, t);
  fs::rename(b, a);
  fs::rename(t, b);
  expect_detected_and_rebuilt({1, 2}, "SHA-256");
}

TEST_F(JitDisk, WholeEntriesSwappedBetweenKeysAreDetectedAndRebuilt) {
  populate({1, 2});
  const auto a = entry_of(1), b = entry_of(2), t = dir_.path() / "tmp";
  fs::rename(a, t);
  fs::rename(b, a);
  fs::rename(t, b);
  expect_detected_and_rebuilt({1, 2}, "names key");
}

TEST_F(JitDisk, MissingManifestIsDetectedAndRebuilt) {
  populate({1, 2});
  fs::remove(entry_of(1) / "manifest.json");
  expect_detected_and_rebuilt({1}, "manifest.json is missing");
}

TEST_F(JitDisk, GarbageManifestAndStrayFileAreDetected) {
  populate({1, 2});
  write_file(entry_of(1) / "manifest.json", "{\"format\": 1, \"key\": 12");
  write_file(entry_of(2) / "extra.bin", "x");
  expect_detected_and_rebuilt({1, 2}, "");
}

TEST_F(JitDisk, StaleStagingFromDeadProcessesIsSwept) {
  populate({1});
  const auto ns_dir = entry_of(1).parent_path().parent_path();
  const auto k2 = key_of(2), k3 = key_of(3);
  fs::create_directories(ns_dir / "staging" / (k2 + ".999999.abcdef"));
  write_file(ns_dir / "staging" / (k2 + ".999999.abcdef") / "kernel.so", "half");
  fs::create_directories(ns_dir / "staging" / (k3 + ".1.work.xyz"));
  // k3's lock is held (a live compile): its staging stays.
  auto held = fsu::FileLock::acquire(ns_dir / "locks" / (k3 + ".lock"));
  JitRuntime rt(options(cache()));
  rt.get(host_spec(1));
  EXPECT_FALSE(fs::exists(ns_dir / "staging" / (k2 + ".999999.abcdef")));
  EXPECT_TRUE(fs::exists(ns_dir / "staging" / (k3 + ".1.work.xyz")));
  held.release();
  const auto pr = DiskCache(cache()).prune(1ull << 40);
  EXPECT_EQ(pr.removed, 0);
  EXPECT_EQ(pr.removed_other, 1);
  EXPECT_FALSE(fs::exists(ns_dir / "staging" / (k3 + ".1.work.xyz")));
  EXPECT_TRUE(fs::exists(ns_dir / "locks" / (k3 + ".lock")));  // lock files are never removed
}

TEST_F(JitDisk, PruneRemovesLeastRecentlyUsedAndUseRefreshes) {
  populate({1, 2, 3});
  const auto now = fs::file_time_type::clock::now();
  fs::last_write_time(entry_of(1), now - std::chrono::hours(3));
  fs::last_write_time(entry_of(2), now - std::chrono::hours(2));
  fs::last_write_time(entry_of(3), now - std::chrono::hours(1));
  {
    JitRuntime rt(options(cache()));
    rt.get(host_spec(1));  // a load refreshes 1: now 2 is the oldest
  }
  const auto entries = DiskCache(cache()).list();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries.front().key, key_of(2));
  const uint64_t one = entries.front().bytes;
  const auto r = DiskCache(cache()).prune(2 * one + one / 2);
  EXPECT_EQ(r.removed, 1);
  EXPECT_TRUE(entry_of(2).empty());
  EXPECT_FALSE(entry_of(1).empty());
  EXPECT_FALSE(entry_of(3).empty());

  // The runtime prunes by itself past cache_max_bytes.
  auto o = options(cache());
  o.cache_max_bytes = 2 * one + one / 2;
  {
    JitRuntime rt(o);
    rt.get(host_spec(4));
    rt.get(host_spec(5));
  }
  EXPECT_EQ(DiskCache(cache()).list().size(), 2u);
  EXPECT_FALSE(entry_of(5).empty());
}

TEST_F(JitDisk, CliLsPruneClear) {
  populate({1, 2});
  auto ls = run_cli({"cache", "ls", "--cache-dir", cache().string()});
  EXPECT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_NE(ls.out.find("2 entries"), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find("answer[value=1]"), std::string::npos) << ls.out;
  ls = run_cli({"cache", "ls", "--json"}, {"HCWARM_CACHE_DIR=" + cache().string()});  // dir from the environment
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  auto j = nlohmann::json::parse(ls.out);
  ASSERT_EQ(j["entries"].size(), 2u);
  EXPECT_EQ(j["entries"][0]["key"].get<std::string>().size(), 64u);

  auto pr = run_cli({"cache", "prune", "--cache-dir", cache().string(), "--max-size", "1G", "--json"});
  ASSERT_EQ(pr.exit_code, 0) << pr.err;
  EXPECT_EQ(nlohmann::json::parse(pr.out)["removed"], 0);
  pr = run_cli({"cache", "prune", "--cache-dir", cache().string(), "--max-size", "12x"});
  EXPECT_EQ(pr.exit_code, 2);
  pr = run_cli({"cache", "prune", "--cache-dir", cache().string(), "--max-size", "1"});
  EXPECT_EQ(pr.exit_code, 0);
  EXPECT_NE(pr.out.find("pruned 2 entries"), std::string::npos) << pr.out;
  EXPECT_TRUE(DiskCache(cache()).list().empty());

  populate({3});

  const auto cl = run_cli({"cache", "clear", "--cache-dir", cache().string(), "--json"});
  ASSERT_EQ(cl.exit_code, 0) << cl.err;
  EXPECT_EQ(nlohmann::json::parse(cl.out)["removed"], 1);
  EXPECT_TRUE(DiskCache(cache()).list().empty());
  const auto v = run_cli({"cache", "verify", "--cache-dir", cache().string()});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.out.find("verified 0 entries"), std::string::npos);
}

TEST_F(JitDisk, UncreatableCacheDirMeansMemoryOnlyWithOneWarning) {
  write_file(dir_.path() / "file", "not a directory");
  LogCapture logs;
  JitRuntime rt(options(dir_.path() / "file" / "cache"));
  for (int v : {1, 2, 1}) EXPECT_EQ(call_answer(*rt.get(host_spec(v))), 100 + v);
  EXPECT_EQ(logs.count(spdlog::level::warn, "not usable"), 1);
  EXPECT_EQ(rt.disk_cache(), nullptr);
  EXPECT_EQ(rt.stats().compiled, 2);
}

TEST_F(JitDisk, ReadOnlyCacheDirIsStillLoadedFromWithOneWarning) {
  populate({1});
  // Read-only for everyone; the child drops root (root ignores permissions).
  ::chmod(dir_.path().c_str(), 0755);
  for (const auto& e : fs::recursive_directory_iterator(cache())) {
    ::chmod(e.path().c_str(), e.is_directory() ? 0555 : 0444);
  }
  ::chmod(cache().c_str(), 0555);
  const auto log = dir_.path() / "child.log";
  const bool root = ::geteuid() == 0;
  // As root the child is nobody, to whom the cache is foreign: refused unless shared.
  pid_t pid = spawn_child("readonly", {{"HCWARM_JIT_CACHE", cache().string()},
                                       {"HCWARM_JIT_EXPECT", root ? "refused" : "served"}}, log);
  EXPECT_EQ(wait_child(pid), 0) << read_file(log);
  pid = spawn_child("readonly", {{"HCWARM_JIT_CACHE", cache().string()}, {"HCWARM_CACHE_TRUST", "shared"},
                                 {"HCWARM_JIT_EXPECT", "served"}}, log);
  EXPECT_EQ(wait_child(pid), 0) << read_file(log);
}

TEST_F(JitDisk, ReadOnlyMountIsStillLoadedFromWithOneWarning) {
  populate({1});
  const auto log = dir_.path() / "child.log";
  const int rc = wait_child(spawn_child("rofs", {{"HCWARM_JIT_CACHE", cache().string()}}, log));
  if (rc == 77) GTEST_SKIP() << "cannot bind-mount read-only here (needs a private mount namespace)";
  EXPECT_EQ(rc, 0) << read_file(log);
  EXPECT_EQ(DiskCache(cache()).list().size(), 1u);  // value 2 stayed in memory
}

TEST_F(JitDisk, FullCacheDirMeansMemoryOnlyWithOneWarning) {
  fs::create_directories(cache());
  const auto log = dir_.path() / "child.log";
  const int rc = wait_child(spawn_child("enospc", {{"HCWARM_JIT_CACHE", cache().string()}}, log));
  if (rc == 77) GTEST_SKIP() << "cannot mount a small tmpfs here (needs a private mount namespace)";
  EXPECT_EQ(rc, 0) << read_file(log);
}

// A write that fails mid-run (here staging/ replaced by a file, so that mkdtemp
// fails with ENOTDIR as it would with ENOSPC) turns the cache read-only with one
// warning naming the cause: the valid entries are still loaded, new kernels stay in memory.
TEST_F(JitDisk, WriteFailureKeepsServingValidEntriesWithOneWarning) {
  populate({1, 2});
  const fs::path staging = entry_of(1).parent_path().parent_path() / "staging";
  ASSERT_TRUE(fs::is_directory(staging));
  LogCapture logs;
  auto opts = options(cache());
  opts.test_hook = [&](std::string_view stage) {
    if (stage != "publish-begin" || !fs::is_directory(staging)) return;
    fs::remove_all(staging);
    write_file(staging, "not a directory");
  };
  JitRuntime rt(std::move(opts));
  EXPECT_EQ(call_answer(*rt.get(host_spec(3))), 103);  // compiled; its publish fails
  EXPECT_FALSE(rt.disk_writable());
  ASSERT_NE(rt.disk_cache(), nullptr);
  for (int v : {1, 2}) EXPECT_EQ(call_answer(*rt.get(host_spec(v))), 100 + v);
  EXPECT_EQ(rt.stats().loaded_from_disk, 2);
  EXPECT_EQ(call_answer(*rt.get(host_spec(4))), 104);  // in memory, no second attempt at the disk
  EXPECT_EQ(rt.stats().compiled, 2);
  EXPECT_EQ(logs.count(spdlog::level::warn, "read-only"), 1);
  EXPECT_EQ(logs.count(spdlog::level::warn, "staging"), 1);
  EXPECT_EQ(logs.count(spdlog::level::warn, "not usable"), 0);
  EXPECT_TRUE(entry_of(3).empty());
  EXPECT_TRUE(entry_of(4).empty());
}

// A well-formed manifest's JSON with one field set to `value` (JSON text).
std::string manifest_with(const std::string& field, const std::string& value) {
  Manifest m;
  m.key = std::string(64, 'a');
  m.files = {{"kernel.so", 12, std::string(64, 'b')}};
  auto j = nlohmann::json::parse(m.to_json());
  if (field == "size") {
    j["files"][0]["size"] = nlohmann::json::parse(value);
  } else {
    j[field] = nlohmann::json::parse(value);
  }
  return j.dump();
}

// The message of the InvalidArgument error Manifest::parse throws for text.
std::string manifest_error(const std::string& text) {
  try {
    Manifest::parse(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.what();
    return e.message();
  }
  ADD_FAILURE() << "accepted: " << text.substr(0, 300);
  return {};
}

TEST(JitManifest, FormatAndFileSizesMustBeNonNegativeIntegers) {
  EXPECT_NO_THROW(Manifest::parse(manifest_with("format", "1")));
  for (const char* v : {"1e300", "1.5", "-1", "\"1\""}) {
    SCOPED_TRACE(v);
    EXPECT_NE(manifest_error(manifest_with("format", v)).find("format"), std::string::npos);
    EXPECT_NE(manifest_error(manifest_with("size", v)).find("size"), std::string::npos);
  }
}

TEST(JitManifest, ErrorsQuoteAtMost200CharactersOfInput) {
  for (const std::string& text : {"{\"format\": 1, \"key\": \"" + std::string(100000, 'k') + "\x01\"}",
                                  "{\"format\": " + std::string(100000, 't') + "}",
                                  manifest_with("format", "\"" + std::string(100000, 'f') + "\"")}) {
    const std::string msg = manifest_error(text);
    EXPECT_LT(msg.size(), 400u) << msg.substr(0, 300);
  }
  // A long key is cut between characters, not inside one.
  const std::string msg = manifest_error(manifest_with("key", "\"" + std::string(196, 'k') + "\u00e9\u00e9\""));
  EXPECT_NE(msg.find("key \"" + std::string(196, 'k') + "...\" is not a SHA-256"), std::string::npos) << msg;
}

TEST(JitManifest, DeeplyNestedManifestIsRefusedBeforeParsing) {
  const std::string deep = "{\"format\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_NE(manifest_error(deep).find("nested deeper than 64 levels"), std::string::npos);
}

}  // namespace
}  // namespace hcwarm::jit::test
