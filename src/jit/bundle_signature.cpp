#include "jit/bundle_signature.hpp"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/limits.hpp"
#include "jit/sha256.hpp"

namespace hcwarm::jit {

// An OpenSSL key, freed with it. Outside the anonymous namespace: Ed25519Key::Impl holds one.
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

namespace {

constexpr std::string_view kTag = "ed25519 ";
constexpr std::string_view kDomain = "hcwarm-kernel-bundle-signature 1\n";
constexpr size_t kSignatureBytes = 64;

std::string to_hex(std::string_view raw) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(raw.size() * 2);
  for (unsigned char c : raw) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::optional<std::string> from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<char>(hi * 16 + lo);
  }
  return out;
}

std::string message(std::string_view sha256) { return std::string(kDomain) + "sha256 " + std::string(sha256) + "\n"; }

// Never prompts: an encrypted PEM fails to load instead of waiting on a terminal.
int no_passphrase(char*, int, int, void*) { return 0; }

Pkey read_pem(const std::filesystem::path& path, bool private_key) {
  const std::string what = private_key ? "Ed25519 private key" : "Ed25519 public key";
  const std::string text = read_input_file(path, what, limits::kMaxKeyFileBytes);
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())),
                                                &BIO_free);
  HCWARM_ASSERT(bio != nullptr, "BIO_new_mem_buf failed");
  Pkey k(private_key ? PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr)
                     : PEM_read_bio_PUBKEY(bio.get(), nullptr, no_passphrase, nullptr));
  HCWARM_CHECK_ARG(k != nullptr, "{}: not a PEM {} (unencrypted \"{}\")", path.string(), what,
                   private_key ? "PRIVATE KEY" : "PUBLIC KEY");
  HCWARM_CHECK_ARG(EVP_PKEY_id(k.get()) == EVP_PKEY_ED25519, "{}: the {} is not an Ed25519 key", path.string(),
                   private_key ? "private key" : "public key");
  return k;
}

}  // namespace

struct Ed25519Key::Impl {
  Pkey key;
};

Ed25519Key::Ed25519Key(std::unique_ptr<Impl> impl, std::string path, std::string id)
    : impl_(std::move(impl)), path_(std::move(path)), id_(std::move(id)) {}
Ed25519Key::~Ed25519Key() = default;
Ed25519Key::Ed25519Key(Ed25519Key&&) noexcept = default;
Ed25519Key& Ed25519Key::operator=(Ed25519Key&&) noexcept = default;

Ed25519Key Ed25519Key::load(const std::filesystem::path& path, bool private_key) {
  auto impl = std::make_unique<Impl>();
  impl->key = read_pem(path, private_key);
  unsigned char raw[32];
  size_t n = sizeof raw;
  HCWARM_ASSERT(EVP_PKEY_get_raw_public_key(impl->key.get(), raw, &n) == 1 && n == 32,
                "EVP_PKEY_get_raw_public_key failed");
  std::string id = sha256_hex(std::string_view(reinterpret_cast<const char*>(raw), n));
  return Ed25519Key(std::move(impl), path.string(), std::move(id));
}

Ed25519Key Ed25519Key::load_private(const std::filesystem::path& path) { return load(path, true); }
Ed25519Key Ed25519Key::load_public(const std::filesystem::path& path) { return load(path, false); }

std::string Ed25519Key::signature_line(std::string_view sha256) const {
  HCWARM_ASSERT(is_sha256_hex(sha256), "signature_line: the checksum is not 64 hex");
  const std::string msg = message(sha256);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  HCWARM_ASSERT(ctx != nullptr, "EVP_MD_CTX_new failed");
  // Ed25519 hashes internally: no digest, one-shot EVP_DigestSign.
  HCWARM_CHECK_ARG(EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, impl_->key.get()) == 1,
                   "{}: cannot sign with this key (not a private key)", path_);
  unsigned char sig[kSignatureBytes];
  size_t n = sizeof sig;
  HCWARM_ASSERT(EVP_DigestSign(ctx.get(), sig, &n, reinterpret_cast<const unsigned char*>(msg.data()), msg.size()) == 1 &&
                    n == kSignatureBytes,
                "EVP_DigestSign(Ed25519) failed");
  return std::string(kTag) + id_ + " " + to_hex(std::string_view(reinterpret_cast<const char*>(sig), n)) + "\n";
}

bool Ed25519Key::verifies(std::string_view sha256, std::string_view signature) const {
  if (signature.size() != kSignatureBytes) return false;
  const std::string msg = message(sha256);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  HCWARM_ASSERT(ctx != nullptr, "EVP_MD_CTX_new failed");
  HCWARM_ASSERT(EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, impl_->key.get()) == 1,
                "EVP_DigestVerifyInit(Ed25519) failed");
  return EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                          reinterpret_cast<const unsigned char*>(msg.data()), msg.size()) == 1;
}

BundleSignature parse_signature_line(std::string_view line, const std::string& source) {
  const auto bad = [&](std::string_view why) {
    HCWARM_THROW(ErrorKind::InvalidArgument, "{}: malformed signature: {} (expected \"ed25519 <64 hex key id> <128 hex "
                 "signature>\" after the checksum line)", source, why);
  };
  if (line.substr(0, kTag.size()) != kTag) bad("the line does not start with \"ed25519 \"");
  if (line.size() != kBundleSignatureLineBytes || line.back() != '\n' || line[kTag.size() + 64] != ' ') {
    bad(fmt::format("the line is {} bytes, not {}", line.size(), kBundleSignatureLineBytes));
  }
  BundleSignature s;
  s.key_id = std::string(line.substr(kTag.size(), 64));
  if (!is_sha256_hex(s.key_id)) bad("the key id is not 64 lower-case hex");
  auto raw = from_hex(line.substr(kTag.size() + 65, 2 * kSignatureBytes));
  if (!raw) bad("the signature is not 128 lower-case hex");
  s.signature = std::move(*raw);
  return s;
}

const Ed25519Key& require_trusted_signature(const std::optional<BundleSignature>& signature, std::string_view sha256,
                                            const std::vector<Ed25519Key>& trusted, const std::string& source) {
  HCWARM_ASSERT(!trusted.empty(), "require_trusted_signature without trusted keys");
  HCWARM_CHECK_ARG(signature.has_value(),
                   "{}: the bundle is unsigned, and {} trusted key{} ({}) require a signature; nothing imported",
                   source, trusted.size(), trusted.size() == 1 ? " is set" : "s are set",
                   "--trusted-key / HCWARM_BUNDLE_TRUSTED_KEYS");
  // Every trusted key is tried: the key id in the bundle only names a key for messages.
  for (const Ed25519Key& k : trusted) {
    if (k.verifies(sha256, signature->signature)) return k;
  }
  const bool known = std::any_of(trusted.begin(), trusted.end(), [&](const auto& k) { return k.id() == signature->key_id; });
  HCWARM_THROW(ErrorKind::InvalidArgument,
               "{}: the signature does not match any of {} trusted key{} (it names key {}, {}); nothing imported",
               source, trusted.size(), trusted.size() == 1 ? "" : "s", signature->key_id.substr(0, 16),
               known ? "a trusted one: the signature or the checksum was altered" : "which is not trusted");
}

}  // namespace hcwarm::jit
