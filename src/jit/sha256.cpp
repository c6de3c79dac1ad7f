#include "jit/sha256.hpp"

#include <openssl/evp.h>

#include "core/error.hpp"

namespace hcwarm::jit {

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
  bool done = false;
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  HCWARM_ASSERT(impl_->ctx != nullptr, "EVP_MD_CTX_new failed");
  HCWARM_ASSERT(EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr) == 1, "EVP_DigestInit_ex(sha256) failed");
}

Sha256::~Sha256() { EVP_MD_CTX_free(impl_->ctx); }

Sha256& Sha256::update(std::string_view bytes) {
  HCWARM_ASSERT(!impl_->done, "Sha256 updated after hex()");
  if (!bytes.empty()) {
    HCWARM_ASSERT(EVP_DigestUpdate(impl_->ctx, bytes.data(), bytes.size()) == 1, "EVP_DigestUpdate failed");
  }
  return *this;
}

Sha256& Sha256::update(std::span<const std::byte> bytes) {
  return update(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

Sha256& Sha256::field(std::string_view tag, std::string_view value) {
  update(tag);
  update(std::string_view("\0", 1));
  update(std::to_string(value.size()));
  update(":");
  return update(value);
}

Sha256& Sha256::field(std::string_view tag, std::string_view a, std::string_view b) {
  field(tag, a);
  return field(tag, b);
}

std::string Sha256::hex() {
  HCWARM_ASSERT(!impl_->done, "Sha256::hex() called twice");
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HCWARM_ASSERT(EVP_DigestFinal_ex(impl_->ctx, md, &len) == 1 && len == 32, "EVP_DigestFinal_ex failed");
  impl_->done = true;
  static const char kHex[] = "0123456789abcdef";
  std::string out(64, '0');
  for (unsigned i = 0; i < 32; ++i) {
    out[2 * i] = kHex[md[i] >> 4];
    out[2 * i + 1] = kHex[md[i] & 15];
  }
  return out;
}

std::string sha256_hex(std::string_view bytes) { return Sha256().update(bytes).hex(); }
std::string sha256_hex(std::span<const std::byte> bytes) { return Sha256().update(bytes).hex(); }

bool is_sha256_hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace hcwarm::jit
