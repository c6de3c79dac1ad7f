#pragma once
// SHA-256 through OpenSSL's EVP interface: an incremental hasher (used for
// kernel keys, fed length-prefixed fields) and one-shot helpers (file digests).
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace hcwarm::jit {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  Sha256& update(std::string_view bytes);
  Sha256& update(std::span<const std::byte> bytes);
  // Appends "<tag>\0<len>:<bytes>" for each part, so that no two different field
  // sequences hash the same stream.
  Sha256& field(std::string_view tag, std::string_view value);
  Sha256& field(std::string_view tag, std::string_view a, std::string_view b);
  // Lower-case hex (64 chars). The hasher cannot be updated afterwards.
  std::string hex();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string sha256_hex(std::string_view bytes);
std::string sha256_hex(std::span<const std::byte> bytes);

// True when s is 64 lower-case hex characters.
bool is_sha256_hex(std::string_view s);

}  // namespace hcwarm::jit
