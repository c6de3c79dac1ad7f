// Kernel bundles (jit/cache_bundle.hpp): verified entries out of one cache and
// into another, whole or not at all; truncated, altered, oversized and
// malicious bundles are refused before the target cache changes.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/test_util.hpp"
#include "jit/cache_bundle.hpp"
#include "jit/sha256.hpp"
#include "jit_test_util.hpp"

namespace hcwarm::jit::test {
namespace {
namespace fs = std::filesystem;
using hcwarm::test::TempDir;

std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

// Every file and directory under p with its size (or -1) and content hash: a snapshot to compare.
std::map<std::string, std::string> snapshot(const fs::path& p) {
  std::map<std::string, std::string> out;
  if (!fs::exists(p)) return out;
  for (const auto& e : fs::recursive_directory_iterator(p)) {
    out[e.path().lexically_relative(p).string()] =
        e.is_regular_file() ? sha256_hex(hcwarm::test::read_file(e.path())) : std::string("dir");
  }
  return out;
}

class CacheBundle : public ::testing::Test {
 protected:
  TempDir dir_{"hcwarm-bundle"};
  fs::path src() const { return dir_ / "src"; }
  fs::path dst() const { return dir_ / "dst"; }
  const std::string ns_a = "host-test-aaaaaaaaaaaa", ns_b = "nvrtc-test-bbbbbbbbbbbb";

  // Publishes an entry of one or two files with made-up contents into `cache`.
  std::string publish(const fs::path& cache, const std::string& ns, int i, bool two_files = false) {
    DiskCache dc(cache);
    dc.prepare(ns);
    const std::string key = sha256_hex("key " + std::to_string(i));
    Manifest m;
    m.family = "f";
    m.description = "f[i=" + std::to_string(i) + "]@x";
    m.params = {{"i", std::to_string(i)}};
    const std::string a = "artifact " + std::to_string(i) + std::string(i * 7, 'x');
    const std::string b = "second file";
    std::vector<std::pair<std::string, std::span<const std::byte>>> files{{"kernel.bin", bytes_of(a)}};
    if (two_files) files.emplace_back("extra.bin", bytes_of(b));
    dc.publish(ns, key, m, files);
    return key;
  }

  // src holds three entries of ns_a (one of two files) and one of ns_b.
  std::vector<std::pair<std::string, std::string>> fill_src() {
    std::vector<std::pair<std::string, std::string>> keys;
    for (int i = 1; i <= 3; ++i) keys.emplace_back(ns_a, publish(src(), ns_a, i, i == 2));
    keys.emplace_back(ns_b, publish(src(), ns_b, 4));
    return keys;
  }

  std::string export_src(const std::vector<std::pair<std::string, std::string>>& keys) {
    DiskCache cache(src());
    Bundle b;
    std::vector<std::vector<std::byte>> storage;
    for (const auto& [ns, key] : keys) {
      auto r = read_cache_entry(cache, ns, key, storage);
      EXPECT_TRUE(r.entry) << r.problem;
      if (r.entry) b.entries.push_back(std::move(*r.entry));
    }
    return write_bundle(b);
  }
};

// A bundle's body with a fresh checksum line: what someone rewriting a bundle on purpose makes.
std::string reseal(const std::string& bundle) {
  const std::string body = bundle.substr(0, bundle.size() - 72);
  return body + "sha256 " + sha256_hex(body) + "\n";
}

// The bundle with its header JSON edited by f, resealed (header length fixed up).
std::string with_header(const std::string& bundle, const std::function<void(nlohmann::json&)>& f) {
  const size_t l1 = bundle.find('\n'), l2 = bundle.find('\n', l1 + 1);
  const size_t hlen = std::stoull(bundle.substr(l1 + 1, l2 - l1 - 1));
  nlohmann::json h = nlohmann::json::parse(bundle.substr(l2 + 1, hlen));
  f(h);
  const std::string ht = h.dump();
  return reseal(bundle.substr(0, l1 + 1) + std::to_string(ht.size()) + "\n" + ht + bundle.substr(l2 + 1 + hlen));
}

void expect_refused(const std::string& bundle, const std::string& needle, const BundleLimits& limits = {}) {
  try {
    parse_bundle(bundle, "b.hcwb", limits);
    ADD_FAILURE() << "accepted; expected: " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.message();
    EXPECT_NE(e.message().find("b.hcwb"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(needle), std::string::npos) << e.message();
  }
}

TEST_F(CacheBundle, RoundTripPublishesEveryEntryVerifiedAndKeepsWhatIsThere) {
  const auto keys = fill_src();
  const std::string bundle = export_src(keys);
  const Bundle parsed = parse_bundle(bundle, "b.hcwb");
  ASSERT_EQ(parsed.entries.size(), 4u);
  EXPECT_EQ(parsed.hcwarm_version, HCWARM_VERSION);
  EXPECT_EQ(parsed.entries[1].files.size(), 2u);

  DiskCache out(dst());
  const ImportResult r = import_bundle(out, parsed);
  EXPECT_EQ(r.imported, 4);
  EXPECT_EQ(r.already_present, 0);
  EXPECT_TRUE(fs::exists(dst() / "CACHEDIR.TAG"));
  const VerifyResult v = out.verify();
  EXPECT_EQ(v.checked, 4);
  EXPECT_TRUE(v.bad.empty());
  // Byte for byte what the source holds, in the same namespaces.
  for (const auto& [ns, key] : keys) {
    const auto a = DiskCache(src()).lookup(ns, key, "kernel.bin");
    const auto b = out.lookup(ns, key, "kernel.bin");
    ASSERT_EQ(b.status, DiskCache::Lookup::Status::Ok) << key;
    EXPECT_EQ(a.artifact, b.artifact);
    EXPECT_EQ(a.manifest.description, b.manifest.description);
    EXPECT_EQ(a.manifest.params, b.manifest.params);
  }

  // Again: everything is present and valid, so nothing is written.
  const auto before = snapshot(dst());
  const ImportResult again = import_bundle(out, parse_bundle(bundle, "b.hcwb"));
  EXPECT_EQ(again.imported, 0);
  EXPECT_EQ(again.already_present, 4);
  EXPECT_EQ(snapshot(dst()), before);
}

TEST_F(CacheBundle, ABadEntryInTheTargetIsQuarantinedAndReplaced) {
  const auto keys = fill_src();
  const std::string bundle = export_src(keys);
  import_bundle(DiskCache(dst()), parse_bundle(bundle, "b.hcwb"));
  const fs::path victim = DiskCache(dst()).entry_dir(ns_a, keys[0].second) / "kernel.bin";
  hcwarm::test::write_file(victim, "truncated");
  ASSERT_EQ(DiskCache(dst()).verify().bad.size(), 1u);

  const ImportResult r = import_bundle(DiskCache(dst()), parse_bundle(bundle, "b.hcwb"));
  EXPECT_EQ(r.imported, 1);
  EXPECT_EQ(r.replaced_bad, 1);
  EXPECT_EQ(r.already_present, 3);
  EXPECT_TRUE(DiskCache(dst()).verify().bad.empty());
  EXPECT_FALSE(fs::is_empty(DiskCache(dst()).namespace_dir(ns_a) / "quarantine"));
}

TEST_F(CacheBundle, ExportReportsMissingAndBadEntriesInsteadOfShippingThem) {
  const auto keys = fill_src();
  std::vector<std::vector<std::byte>> storage;
  const DiskCache cache(src());
  EXPECT_EQ(read_cache_entry(cache, ns_a, sha256_hex("absent"), storage).problem, "missing");
  hcwarm::test::write_file(cache.entry_dir(ns_a, keys[2].second) / "kernel.bin", "changed");
  const auto r = read_cache_entry(cache, ns_a, keys[2].second, storage);
  EXPECT_FALSE(r.entry);
  EXPECT_NE(r.problem.find("kernel.bin"), std::string::npos) << r.problem;
}

TEST_F(CacheBundle, EveryTruncationAndEveryAlteredByteIsRefused) {
  const std::string bundle = export_src(fill_src());
  ASSERT_LT(bundle.size(), 8000u);
  for (size_t n = 0; n < bundle.size(); ++n) {
    EXPECT_THROW(parse_bundle(bundle.substr(0, n), "b.hcwb"), Error) << "truncated to " << n;
  }
  for (size_t i = 0; i < bundle.size(); ++i) {
    std::string bad = bundle;
    bad[i] = static_cast<char>(bad[i] ^ 0x20);
    EXPECT_THROW(parse_bundle(bad, "b.hcwb"), Error) << "byte " << i << " altered";
  }
  expect_refused(bundle.substr(0, bundle.size() - 10), "truncated");
  std::string flipped = bundle;
  flipped[bundle.size() / 2] ^= 1;
  expect_refused(flipped, "checksum mismatch");
  expect_refused("hello", "not an hcwarm kernel bundle");
}

// Someone who rewrites the checksum too still cannot get a wrong file, name or entry past the checks.
TEST_F(CacheBundle, AResealedBundleIsStillCheckedEntryByEntry) {
  const auto keys = fill_src();
  const std::string bundle = export_src(keys);
  // A file's bytes changed (same length): its manifest SHA-256 no longer matches.
  {
    std::string b = bundle;
    const size_t at = b.find("artifact 3");
    ASSERT_NE(at, std::string::npos);
    b[at] = 'A';
    expect_refused(reseal(b), "does not match its SHA-256");
  }
  expect_refused(with_header(bundle, [](auto& h) { h["hcwarm_version"] = "0.0.1"; }), "hcwarm \"0.0.1\"");
  expect_refused(with_header(bundle, [](auto& h) { h["format"] = 2; }), "format 2");
  expect_refused(with_header(bundle, [](auto& h) { h["payload_bytes"] = 5; }), "payload_bytes");
  expect_refused(with_header(bundle, [](auto& h) { h["entries"][0]["namespace"] = "../../etc"; }),
                 "not a directory name");
  expect_refused(with_header(bundle, [](auto& h) { h["entries"][0]["key"] = "zz"; }), "is not a SHA-256");
  expect_refused(with_header(bundle, [&](auto& h) { h["entries"][0]["key"] = keys[1].second; }),
                 "manifest names key");
  expect_refused(with_header(bundle, [](auto& h) { h["entries"][1] = h["entries"][0]; }), "appears twice");
  expect_refused(with_header(bundle, [](auto& h) { h["entries"][0]["manifest_bytes"] = 1u << 30; }),
                 "over the limit");
  expect_refused(with_header(bundle, [](auto& h) { h.erase("entries"); }), "entries");
  // A manifest naming a path instead of a file name, with every hash made consistent.
  {
    const DiskCache cache(src());
    std::vector<std::vector<std::byte>> storage;
    auto r = read_cache_entry(cache, ns_a, keys[0].second, storage);
    ASSERT_TRUE(r.entry);
    r.entry->manifest.files[0].name = "../../evil.so";
    r.entry->files[0].first = "../../evil.so";
    r.entry->manifest_text = r.entry->manifest.to_json();
    Bundle b;
    b.entries.push_back(std::move(*r.entry));
    expect_refused(write_bundle(b), "not a plain, unique file name");
  }
}

TEST_F(CacheBundle, SizeAndEntryBoundsHoldOnBothSides) {
  const std::string bundle = export_src(fill_src());
  expect_refused(bundle, "over the bundle limit", BundleLimits{bundle.size() - 1, 100});
  expect_refused(bundle, "over the limit of 3", BundleLimits{bundle.size(), 3});
  EXPECT_NO_THROW(parse_bundle(bundle, "b.hcwb", BundleLimits{bundle.size(), 4}));
  const Bundle parsed = parse_bundle(bundle, "b.hcwb");
  EXPECT_THROW(write_bundle(parsed, BundleLimits{bundle.size() - 1, 100}), Error);
  EXPECT_THROW(write_bundle(parsed, BundleLimits{bundle.size(), 3}), Error);
  Bundle twice = parsed;
  twice.entries.push_back(parsed.entries[0]);
  EXPECT_THROW(write_bundle(twice), Error);
}

TEST_F(CacheBundle, ADirectoryThatIsNotACacheIsRefusedUntouched) {
  const std::string bundle = export_src(fill_src());
  fs::create_directories(dst());
  hcwarm::test::write_file(dst() / "notes.txt", "mine");
  const auto before = snapshot(dst());
  try {
    import_bundle(DiskCache(dst()), parse_bundle(bundle, "b.hcwb"));
    ADD_FAILURE() << "imported into a directory that is not a cache";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(e.message().find("not an hcwarm cache directory"), std::string::npos) << e.message();
  }
  EXPECT_EQ(snapshot(dst()), before);
}

TEST_F(CacheBundle, AnUntrustedOrUnwritableCacheGetsNoEntry) {
  const std::string bundle = export_src(fill_src());
  // Writable by others: never trusted.
  fs::create_directories(dst());
  ::chmod(dst().c_str(), 0777);
  EXPECT_THROW(import_bundle(DiskCache(dst()), parse_bundle(bundle, "b.hcwb")), Error);
  EXPECT_TRUE(DiskCache(dst()).list().empty());
  ::chmod(dst().c_str(), 0700);
  // Another user's (as root) or a read-only one: served, never written.
  const fs::path ro = dir_ / "ro";
  publish(ro, ns_a, 9);
  if (::geteuid() == 0) {
    chown_tree(ro, 65534);
  } else {
    for (const auto& e : fs::recursive_directory_iterator(ro)) ::chmod(e.path().c_str(), e.is_directory() ? 0555 : 0444);
    ::chmod(ro.c_str(), 0555);
  }
  const auto before = snapshot(ro);
  try {
    import_bundle(DiskCache(ro, CacheTrust::Shared), parse_bundle(bundle, "b.hcwb"));
    ADD_FAILURE() << "imported into a cache this user cannot write";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io) << e.message();
    EXPECT_NE(e.message().find("nothing imported"), std::string::npos) << e.message();
  }
  EXPECT_EQ(snapshot(ro), before);
  ::chmod(ro.c_str(), 0700);
}

TEST_F(CacheBundle, EachEntryIsPublishedUnderItsKeyLock) {
  const auto keys = fill_src();
  const Bundle parsed = parse_bundle(export_src(keys), "b.hcwb");
  DiskCache out(dst());
  out.prepare(ns_a);
  // Another process is "compiling" the first key: the import waits for its lock, here past a 1 s limit.
  fsu::FileLock held = out.lock_key(ns_a, keys[0].second);
  try {
    import_bundle(out, parsed, /*lock_timeout_s=*/1);
    ADD_FAILURE() << "published without the key's lock";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Timeout) << e.message();
    EXPECT_NE(e.message().find(keys[0].second), std::string::npos) << e.message();
  }
  held.release();
  EXPECT_EQ(import_bundle(out, parsed).imported, 4);
}

TEST_F(CacheBundle, ImportedKernelsLoadWithoutACompile) {
  populate_cache(src(), {5});
  const std::string key = JitRuntime(options(src())).key(host_spec(5));
  const auto entries = DiskCache(src()).list();
  ASSERT_EQ(entries.size(), 1u);
  const std::string bundle = export_src({{entries[0].ns, key}});
  EXPECT_EQ(import_bundle(DiskCache(dst()), parse_bundle(bundle, "b.hcwb")).imported, 1);
  JitRuntime rt(options(dst()));
  EXPECT_EQ(call_answer(*rt.get(host_spec(5))), 105);
  EXPECT_EQ(rt.stats().compiled, 0);
  EXPECT_EQ(rt.stats().loaded_from_disk, 1);
}

}  // namespace
}  // namespace hcwarm::jit::test
