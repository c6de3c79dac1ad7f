// Signed kernel bundles (jit/bundle_signature.hpp) and the streaming checksum
// (jit/bundle_file.hpp): a signature line after the checksum, verified against
// trusted Ed25519 keys; a bundle file checked in bounded chunks before it is
// read whole.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "common/ed25519_test_keys.hpp"
#include "common/test_util.hpp"
#include "core/env_config.hpp"
#include "core/error.hpp"
#include "jit/bundle_file.hpp"
#include "jit/bundle_signature.hpp"
#include "jit/cache_bundle.hpp"
#include "jit/sha256.hpp"

namespace hcwarm::jit::test {
namespace {
namespace fs = std::filesystem;
using hcwarm::test::TempDir;
using hcwarm::test::write_file;

// An empty bundle: header and checksum, no entries.
std::string empty_bundle() { return write_bundle(Bundle{}); }
std::string checksum_of(const std::string& bundle) { return bundle.substr(bundle.size() - 65, 64); }

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.message();
    return e.message();
  }
  ADD_FAILURE() << "no error";
  return {};
}

class BundleSignature : public ::testing::Test {
 protected:
  TempDir dir_{"hcwarm-bundle-sig"};
  hcwarm::test::Ed25519TestKey a_ = hcwarm::test::make_ed25519_key(dir_.path(), "a");
  hcwarm::test::Ed25519TestKey b_ = hcwarm::test::make_ed25519_key(dir_.path(), "b");
};

TEST_F(BundleSignature, ASignedBundleVerifiesUnderItsKeyOnly) {
  const std::string unsigned_bundle = empty_bundle();
  const Ed25519Key priv = Ed25519Key::load_private(a_.private_pem);
  const std::string line = priv.signature_line(checksum_of(unsigned_bundle));
  ASSERT_EQ(line.size(), kBundleSignatureLineBytes);
  const std::string signed_bundle = unsigned_bundle + line;

  // parse_bundle takes both forms; the signature does not change the entries.
  EXPECT_EQ(parse_bundle(signed_bundle, "s.hcwb").sha256, checksum_of(unsigned_bundle));
  const BundleTrailer t = parse_bundle_trailer(signed_bundle, signed_bundle.size(), "s.hcwb");
  ASSERT_TRUE(t.signature.has_value());
  EXPECT_EQ(t.body_bytes, unsigned_bundle.size() - 72);
  const BundleTrailer u = parse_bundle_trailer(unsigned_bundle, unsigned_bundle.size(), "u.hcwb");
  EXPECT_FALSE(u.signature.has_value());
  EXPECT_EQ(u.sha256, t.sha256);

  std::vector<Ed25519Key> trusted_a, trusted_b, both;
  trusted_a.push_back(Ed25519Key::load_public(a_.public_pem));
  trusted_b.push_back(Ed25519Key::load_public(b_.public_pem));
  both.push_back(Ed25519Key::load_public(b_.public_pem));
  both.push_back(Ed25519Key::load_public(a_.public_pem));
  EXPECT_EQ(trusted_a[0].id(), priv.id());
  EXPECT_EQ(require_trusted_signature(t.signature, t.sha256, trusted_a, "s.hcwb").path(), a_.public_pem.string());
  EXPECT_EQ(require_trusted_signature(t.signature, t.sha256, both, "s.hcwb").id(), priv.id());

  const std::string other = error_of([&] { require_trusted_signature(t.signature, t.sha256, trusted_b, "s.hcwb"); });
  EXPECT_NE(other.find("does not match any of 1 trusted key"), std::string::npos) << other;
  EXPECT_NE(other.find("not trusted"), std::string::npos) << other;
  const std::string unsig = error_of([&] { require_trusted_signature(u.signature, u.sha256, both, "u.hcwb"); });
  EXPECT_NE(unsig.find("unsigned"), std::string::npos) << unsig;
  // The signature is over the checksum: another checksum does not verify.
  const std::string moved =
      error_of([&] { require_trusted_signature(t.signature, sha256_hex("other"), trusted_a, "s.hcwb"); });
  EXPECT_NE(moved.find("does not match any of 1 trusted key"), std::string::npos) << moved;
}

TEST_F(BundleSignature, AlteredOrMalformedSignaturesAreRefused) {
  const std::string bundle = empty_bundle();
  const std::string line = Ed25519Key::load_private(a_.private_pem).signature_line(checksum_of(bundle));
  std::vector<Ed25519Key> trusted;
  trusted.push_back(Ed25519Key::load_public(a_.public_pem));
  // Every hex digit of the signature flipped to another hex digit: refused.
  for (size_t i = 8 + 65; i < line.size() - 1; i += 9) {
    std::string bad = line;
    bad[i] = bad[i] == '0' ? '1' : '0';
    const BundleTrailer t = parse_bundle_trailer(bundle + bad, bundle.size() + bad.size(), "s.hcwb");
    const std::string why = error_of([&] { require_trusted_signature(t.signature, t.sha256, trusted, "s.hcwb"); });
    EXPECT_NE(why.find("does not match any of 1 trusted key"), std::string::npos) << why;
  }
  // Not hex, cut short, an extra byte: malformed, before any key is tried.
  for (std::string bad : {line.substr(0, 100) + "zz" + line.substr(102), line.substr(0, line.size() - 3) + "\n",
                          line.substr(0, line.size() - 1) + "0\n", std::string("ed25519 \n")}) {
    const std::string s = bundle + bad;
    const std::string why = error_of([&] { parse_bundle_trailer(s, s.size(), "s.hcwb"); });
    EXPECT_NE(why.find("malformed signature"), std::string::npos) << why;
    EXPECT_NE(error_of([&] { parse_bundle(s, "s.hcwb"); }).find("malformed signature"), std::string::npos);
  }
}

TEST_F(BundleSignature, KeyFilesAreCheckedByKind) {
  EXPECT_NE(error_of([&] { Ed25519Key::load_public(a_.private_pem); }).find("not a PEM"), std::string::npos);
  EXPECT_NE(error_of([&] { Ed25519Key::load_private(a_.public_pem); }).find("not a PEM"), std::string::npos);
  EXPECT_NE(error_of([&] { Ed25519Key::load_public(dir_ / "absent.pem"); }).find("cannot open"), std::string::npos);
  write_file(dir_ / "junk.pem", "-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----\n");
  EXPECT_NE(error_of([&] { Ed25519Key::load_public(dir_ / "junk.pem"); }).find("junk.pem"), std::string::npos);
}

TEST(BundleTrustedKeysSetting, IsAColonSeparatedListOfPaths) {
  EXPECT_TRUE(EnvConfig::from_map({}).bundle_trusted_keys.empty());
  EXPECT_TRUE(EnvConfig::from_map({{"HCWARM_BUNDLE_TRUSTED_KEYS", ""}}).bundle_trusted_keys.empty());
  const auto two = EnvConfig::from_map({{"HCWARM_BUNDLE_TRUSTED_KEYS", "/k/a.pem:b.pem"}}).bundle_trusted_keys;
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0], fs::path("/k/a.pem"));
  EXPECT_EQ(two[1], fs::path("b.pem"));
  for (const char* bad : {"a.pem::b.pem", ":a.pem", "a.pem:"}) {
    const std::string why = error_of([&] { EnvConfig::from_map({{"HCWARM_BUNDLE_TRUSTED_KEYS", bad}}); });
    EXPECT_NE(why.find("HCWARM_BUNDLE_TRUSTED_KEYS"), std::string::npos) << why;
  }
}

// A file of the magic, `zeros` zero bytes and a checksum line (right or wrong), made sparse.
fs::path sparse_bundle(const fs::path& p, uint64_t zeros, bool right_checksum) {
  const std::string magic = "hcwarm-kernel-bundle";
  Sha256 h;
  h.update(magic);
  const std::string chunk(1 << 20, '\0');
  for (uint64_t left = zeros; left > 0;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, chunk.size()));
    h.update(std::string_view(chunk.data(), n));
    left -= n;
  }
  const std::string sum = right_checksum ? h.hex() : sha256_hex("something else");
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::write(fd, magic.data(), magic.size()), static_cast<ssize_t>(magic.size()));
  EXPECT_EQ(::ftruncate(fd, static_cast<off_t>(magic.size() + zeros)), 0);
  const std::string trailer = "sha256 " + sum + "\n";
  EXPECT_EQ(::pwrite(fd, trailer.data(), trailer.size(), static_cast<off_t>(magic.size() + zeros)),
            static_cast<ssize_t>(trailer.size()));
  ::close(fd);
  return p;
}

TEST_F(BundleSignature, TheChecksumIsVerifiedInBoundedChunks) {
  const uint64_t zeros = uint64_t{8} << 20;
  const BundleFile ok(sparse_bundle(dir_ / "ok.hcwb", zeros, true));
  EXPECT_EQ(ok.largest_read(), limits::kBundleHashChunkBytes);
  EXPECT_EQ(ok.trailer().body_bytes, zeros + 20);
  EXPECT_FALSE(ok.trailer().signature.has_value());
  const std::string bad = error_of([&] { BundleFile(sparse_bundle(dir_ / "bad.hcwb", zeros, false)); });
  EXPECT_NE(bad.find("checksum mismatch"), std::string::npos) << bad;
  // Over the bound: refused by size before any byte is hashed.
  const std::string big = error_of([&] { BundleFile(dir_ / "ok.hcwb", BundleLimits{zeros, 10}); });
  EXPECT_NE(big.find("over the bundle limit"), std::string::npos) << big;
  // A real bundle reads back whole, with the checksum verified.
  write_file(dir_ / "real.hcwb", empty_bundle());
  const BundleFile real(dir_ / "real.hcwb");
  EXPECT_EQ(parse_bundle(real.read_all(), "real.hcwb").sha256, real.trailer().sha256);
  EXPECT_NE(error_of([&] { BundleFile(dir_.path()); }).find("not a regular file"), std::string::npos);
  write_file(dir_ / "other", "not a bundle at all, really not one");
  EXPECT_NE(error_of([&] { BundleFile(dir_ / "other"); }).find("not an hcwarm kernel bundle"), std::string::npos);
}

}  // namespace
}  // namespace hcwarm::jit::test
