#pragma once
// Ed25519 key pairs for the bundle-signing tests, made with OpenSSL's API (no
// `openssl` command needed): <dir>/<name>.pem (private) and <name>.pub.pem.
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

namespace hcwarm::test {

struct Ed25519TestKey {
  std::filesystem::path private_pem, public_pem;
};

inline Ed25519TestKey make_ed25519_key(const std::filesystem::path& dir, const std::string& name) {
  std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr),
                                                                  &EVP_PKEY_CTX_free);
  EVP_PKEY* raw = nullptr;
  if (!ctx || EVP_PKEY_keygen_init(ctx.get()) != 1 || EVP_PKEY_keygen(ctx.get(), &raw) != 1) {
    throw std::runtime_error("Ed25519 key generation failed");
  }
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(raw, &EVP_PKEY_free);
  Ed25519TestKey k{dir / (name + ".pem"), dir / (name + ".pub.pem")};
  auto write = [&](const std::filesystem::path& p, bool priv) {
    std::unique_ptr<FILE, decltype(&std::fclose)> f(std::fopen(p.c_str(), "w"), &std::fclose);
    const int ok = !f ? 0
                   : priv ? PEM_write_PrivateKey(f.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr)
                          : PEM_write_PUBKEY(f.get(), key.get());
    if (ok != 1) throw std::runtime_error("cannot write " + p.string());
  };
  write(k.private_pem, true);
  write(k.public_pem, false);
  return k;
}

}  // namespace hcwarm::test
