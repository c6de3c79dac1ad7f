// `hcwarm cache export --sign` and `cache import --trusted-key` (or
// HCWARM_BUNDLE_TRUSTED_KEYS): a signed bundle imports under its key; unsigned,
// foreign-signed and altered ones are refused (exit 2, naming why) with the cache
// unchanged; a huge damaged bundle is refused by its checksum in bounded memory.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "cli/cli_fixtures.hpp"
#include "common/ed25519_test_keys.hpp"
#include "jit/disk_cache.hpp"
#include "jit/sha256.hpp"

namespace hcwarm {
namespace {
namespace fs = std::filesystem;
using test::read_file;


bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

class CliBundleSigning : public ::testing::Test {
 protected:
  void SetUp() override {
    // Two made-up entries: import checks manifests and checksums, not what the code does.
    jit::DiskCache dc(src());
    const std::string ns = "host-test-aaaaaaaaaaaa";
    for (int i = 0; i < 2; ++i) {
      dc.prepare(ns);
      jit::Manifest m;
      m.family = "f";
      m.description = "f[i=" + std::to_string(i) + "]@x";
      const std::string a = "artifact " + std::to_string(i);
      dc.publish(ns, jit::sha256_hex("key " + std::to_string(i)), m,
                 {{"kernel.bin", std::as_bytes(std::span<const char>(a.data(), a.size()))}});
    }
    fs::create_directories(dst());
  }
  fs::path src() const { return tmp_ / "src"; }
  fs::path dst() const { return tmp_ / "dst"; }
  fs::path bundle(const std::string& name, const std::vector<std::string>& extra = {}) {
    const fs::path out = tmp_ / name;
    const auto r = run_cli(cat({"cache", "export", "--all", "--cache-dir", src().string(), "--out", out.string()}, extra));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return out;
  }
  test::CliResult import(const fs::path& b, const std::vector<std::string>& extra = {},
                         const std::vector<std::string>& env = {}) {
    return run_cli(cat({"cache", "import", b.string(), "--cache-dir", dst().string()}, extra), env);
  }
  // Refused with exit 2 naming `why`, and nothing in the target cache changed.
  void expect_refused(const test::CliResult& r, const std::string& why, const std::map<std::string, std::string>& before) {
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_TRUE(has(r.err, why)) << r.err;
    EXPECT_EQ(test::tree_snapshot(dst()), before);
  }

  TempDir tmp_{"hcwarm-cli-signing"};
  test::Ed25519TestKey a_ = test::make_ed25519_key(tmp_.path(), "a");
  test::Ed25519TestKey b_ = test::make_ed25519_key(tmp_.path(), "b");
};

TEST_F(CliBundleSigning, ASignedBundleImportsUnderItsKey) {
  const fs::path signed_a = bundle("a.hcwb", {"--sign", a_.private_pem.string()});
  const auto r = import(signed_a, {"--trusted-key", b_.public_pem.string(), "--trusted-key", a_.public_pem.string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "imported 2 of 2 entries")) << r.out;
  EXPECT_TRUE(has(r.out, "signed by trusted key")) << r.out;
  EXPECT_FALSE(has(r.err, "not authenticated")) << r.err;
  EXPECT_EQ(run_cli({"cache", "verify", "--cache-dir", dst().string()}).exit_code, 0);
}

TEST_F(CliBundleSigning, UnsignedForeignAndAlteredBundlesAreRefusedUntouched) {
  const auto before = test::tree_snapshot(dst());
  const std::vector<std::string> trust_a{"--trusted-key", a_.public_pem.string()};
  expect_refused(import(bundle("u.hcwb"), trust_a), "unsigned", before);
  const fs::path by_b = bundle("b.hcwb", {"--sign", b_.private_pem.string()});
  expect_refused(import(by_b, trust_a), "does not match any of 1 trusted key", before);

  // Signature bytes altered (hex for hex): does not verify; not hex: malformed.
  const fs::path by_a = bundle("a.hcwb", {"--sign", a_.private_pem.string()});
  std::string bytes = read_file(by_a);
  bytes[bytes.size() - 10] = bytes[bytes.size() - 10] == '0' ? '1' : '0';
  test::write_file(tmp_ / "flipped.hcwb", bytes);
  expect_refused(import(tmp_ / "flipped.hcwb", trust_a), "does not match any of 1 trusted key", before);
  bytes[bytes.size() - 10] = 'x';
  test::write_file(tmp_ / "garbled.hcwb", bytes);
  expect_refused(import(tmp_ / "garbled.hcwb", trust_a), "malformed signature", before);
  // A signature line alone, its checksum line dropped: no checksum where it must be.
  std::string cut = read_file(by_a);
  cut.erase(cut.size() - 202 - 72, 72);
  test::write_file(tmp_ / "cut.hcwb", cut);
  expect_refused(import(tmp_ / "cut.hcwb", trust_a), "sha256 <64 hex>", before);

  // A key file that is not a public key: exit 2 naming it, before the bundle is read.
  const auto wrong_kind = import(by_a, {"--trusted-key", a_.private_pem.string()});
  EXPECT_EQ(wrong_kind.exit_code, 2) << wrong_kind.err;
  EXPECT_TRUE(has(wrong_kind.err, a_.private_pem.string())) << wrong_kind.err;
  EXPECT_EQ(test::tree_snapshot(dst()), before);
  const auto no_key = run_cli({"cache", "export", "--all", "--cache-dir", src().string(), "--out",
                               (tmp_ / "x.hcwb").string(), "--sign", (tmp_ / "absent.pem").string()});
  EXPECT_EQ(no_key.exit_code, 2) << no_key.err;
  EXPECT_FALSE(fs::exists(tmp_ / "x.hcwb"));
}

TEST_F(CliBundleSigning, TheSettingWorksLikeTheFlag) {
  const auto before = test::tree_snapshot(dst());
  const std::string env = "HCWARM_BUNDLE_TRUSTED_KEYS=" + b_.public_pem.string() + ":" + a_.public_pem.string();
  expect_refused(import(bundle("u.hcwb"), {}, {env}), "unsigned", before);
  expect_refused(import(bundle("c.hcwb", {"--sign", test::make_ed25519_key(tmp_.path(), "c").private_pem.string()}),
                        {}, {env}),
                 "does not match any of 2 trusted keys", before);
  const auto ok = import(bundle("a.hcwb", {"--sign", a_.private_pem.string()}), {"--json"}, {env});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_TRUE(has(ok.out, "\"signed_by\"")) << ok.out;
  const auto info = run_cli({"info"}, {env});
  EXPECT_TRUE(has(info.out, "HCWARM_BUNDLE_TRUSTED_KEYS")) << info.out;
  const auto bad = run_cli({"cache", "import", (tmp_ / "a.hcwb").string(), "--cache-dir", dst().string()},
                           {"HCWARM_BUNDLE_TRUSTED_KEYS=a::b"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(has(bad.err, "HCWARM_BUNDLE_TRUSTED_KEYS")) << bad.err;
}

TEST_F(CliBundleSigning, WithoutTrustedKeysTheImportSaysItIsNotAuthenticated) {
  const auto u = import(bundle("u.hcwb"));
  EXPECT_EQ(u.exit_code, 0) << u.err;
  EXPECT_TRUE(has(u.err, "not authenticated (unsigned)")) << u.err;
  const auto s = import(bundle("a.hcwb", {"--sign", a_.private_pem.string()}));
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_TRUE(has(s.err, "it is signed, but no trusted key is set")) << s.err;
}

// 1 GiB of zeros (sparse) behind a wrong checksum: refused naming the checksum,
// with a peak RSS far below the file's size (it is read in chunks, never whole).
TEST_F(CliBundleSigning, AHugeDamagedBundleIsRefusedInBoundedMemory) {
  const fs::path p = tmp_ / "huge.hcwb";
  const uint64_t size = uint64_t{1} << 30;
  const std::string magic = "hcwarm-kernel-bundle 1\n", trailer = "sha256 " + jit::sha256_hex("x") + "\n";
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, magic.data(), magic.size()), static_cast<ssize_t>(magic.size()));
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(size - trailer.size())), 0);
  ASSERT_EQ(::pwrite(fd, trailer.data(), trailer.size(), static_cast<off_t>(size - trailer.size())),
            static_cast<ssize_t>(trailer.size()));
  ::close(fd);
  const auto before = test::tree_snapshot(dst());
  const auto r = import(p);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "checksum mismatch")) << r.err;
  EXPECT_LT(r.max_rss_kb, 256 * 1024) << "peak RSS " << r.max_rss_kb << " KiB for a " << (size >> 20) << " MiB bundle";
  EXPECT_EQ(test::tree_snapshot(dst()), before);
}

}  // namespace
}  // namespace hcwarm
