#pragma once
// Ed25519 signatures of kernel bundles (OpenSSL EVP): who made a bundle, beyond
// the trailing SHA-256 that only says it is whole. A bundle holds native code
// that the next warm runs, so a fleet can require one of its own keys.
//
// The signature line follows the checksum line (jit/cache_bundle.hpp):
//
//   ed25519 <64 hex: SHA-256 of the raw 32-byte public key> <128 hex: signature>\n
//
// The signed message is the ASCII text "hcwarm-kernel-bundle-signature 1\n"
// followed by the checksum line "sha256 <64 hex>\n": the checksum covers every
// byte before it, and the prefix keeps the signature from meaning anything else.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hcwarm::jit {

// Length of the signature line, newline included.
inline constexpr size_t kBundleSignatureLineBytes = 8 + 64 + 1 + 128 + 1;

// An Ed25519 key read from a PEM file (private for signing, public for verifying).
class Ed25519Key {
 public:
  // InvalidArgument "<path>: ..." when the file is missing, too large, not PEM,
  // or not an Ed25519 key of that kind.
  static Ed25519Key load_private(const std::filesystem::path& path);
  static Ed25519Key load_public(const std::filesystem::path& path);
  ~Ed25519Key();
  Ed25519Key(Ed25519Key&&) noexcept;
  Ed25519Key& operator=(Ed25519Key&&) noexcept;

  const std::string& path() const { return path_; }
  // SHA-256 (hex) of the raw public key: names the key in bundles and messages.
  const std::string& id() const { return id_; }

  // The signature line for a bundle whose checksum is `sha256` (64 hex). Private keys only.
  std::string signature_line(std::string_view sha256) const;
  // True when `signature` (64 raw bytes) signs `sha256` under this key.
  bool verifies(std::string_view sha256, std::string_view signature) const;

 private:
  struct Impl;
  Ed25519Key(std::unique_ptr<Impl> impl, std::string path, std::string id);
  static Ed25519Key load(const std::filesystem::path& path, bool private_key);
  std::unique_ptr<Impl> impl_;
  std::string path_, id_;
};

// A signature line, parsed (not verified).
struct BundleSignature {
  std::string key_id;     // 64 hex, as the bundle claims it
  std::string signature;  // 64 raw bytes
};

// Parses "ed25519 <id> <sig>\n"; InvalidArgument "<source>: malformed signature: ..." otherwise.
BundleSignature parse_signature_line(std::string_view line, const std::string& source);

// The bundle's signature against the trusted keys (at least one). InvalidArgument
// "<source>: ..." naming why when it is unsigned or matches none of them;
// returns the key that verifies it.
const Ed25519Key& require_trusted_signature(const std::optional<BundleSignature>& signature, std::string_view sha256,
                                            const std::vector<Ed25519Key>& trusted, const std::string& source);

}  // namespace hcwarm::jit
