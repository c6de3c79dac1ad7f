// hcwarm cache import: publishes the entries of a bundle (`cache export`) into a
// cache, each through the cache's own lock + staging + rename path, after the
// whole bundle has been verified (jit/cache_bundle.hpp).
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/byte_units.hpp"
#include "cli/cache_dir.hpp"
#include "cli/commands.hpp"
#include "cli/json_output.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "jit/bundle_file.hpp"
#include "jit/bundle_signature.hpp"
#include "jit/cache_bundle.hpp"

namespace hcwarm::cli {
namespace {

struct ImportOptions {
  std::string bundle;
  std::string cache_dir;
  std::vector<std::string> trusted_keys;  // PEM Ed25519 public keys; with HCWARM_BUNDLE_TRUSTED_KEYS
  bool json = false;
};

void run_import(const CliContext& ctx, const ImportOptions& o) {
  const auto dir = effective_cache_dir(ctx, o.cache_dir);
  HCWARM_CHECK_ARG(dir.has_value(), "no cache directory: HCWARM_CACHE_DIR is empty (disk cache disabled); pass "
                                    "--cache-dir DIR");
  std::vector<jit::Ed25519Key> trusted;
  for (const auto& k : o.trusted_keys) trusted.push_back(jit::Ed25519Key::load_public(k));
  for (const auto& k : ctx.env.bundle_trusted_keys) trusted.push_back(jit::Ed25519Key::load_public(k));

  // Everything is read and verified before the cache is touched: the checksum in
  // bounded memory, then who signed it, and only then the whole bundle.
  const jit::BundleFile file(o.bundle);
  std::string signer;
  if (!trusted.empty()) {
    signer = jit::require_trusted_signature(file.trailer().signature, file.trailer().sha256, trusted, o.bundle).id();
  } else {
    std::cerr << fmt::format("hcwarm: note: {} was not authenticated ({}): it is native code from whoever made it; "
                             "require a signature with --trusted-key or HCWARM_BUNDLE_TRUSTED_KEYS\n",
                             o.bundle, file.trailer().signature ? "it is signed, but no trusted key is set" : "unsigned");
  }
  const std::string bytes = file.read_all();
  const jit::Bundle bundle = jit::parse_bundle(bytes, o.bundle);
  HCWARM_CHECK_ARG(bundle.sha256 == file.trailer().sha256,
                   "{}: the bundle changed while it was read (its checksum is not the one verified); nothing imported",
                   o.bundle);

  std::error_code ec;
  const std::filesystem::path root = std::filesystem::absolute(*dir, ec);
  const jit::DiskCache cache(ec ? *dir : root,
                             jit::CacheTrust::from_env(ctx.env));
  const jit::ImportResult r = jit::import_bundle(cache, bundle, ctx.env.lock_timeout_s);

  if (o.json) {
    print_json(std::cout, {{"bundle", o.bundle},
                           {"cache_dir", cache.root().string()},
                           {"entries", bundle.entries.size()},
                           {"imported", r.imported},
                           {"already_present", r.already_present},
                           {"replaced_bad", r.replaced_bad},
                           {"created", bundle.created},
                           {"signed_by", signer.empty() ? nlohmann::json(nullptr) : nlohmann::json(signer)}});
    return;
  }
  std::cout << fmt::format("imported {} of {} entries ({}) from {} into {}: {} already present", r.imported,
                           bundle.entries.size(), human_bytes(bytes.size()), o.bundle, cache.root().string(),
                           r.already_present);
  if (r.replaced_bad) std::cout << fmt::format(", {} bad entries moved to quarantine and replaced", r.replaced_bad);
  if (!signer.empty()) std::cout << fmt::format("; signed by trusted key {}", signer.substr(0, 16));
  std::cout << "\n";
}

}  // namespace

void register_cache_import(CLI::App* cache, CliContext& ctx) {
  auto o = std::make_shared<ImportOptions>();
  CLI::App* cmd = cache->add_subcommand(
      "import", "Verify a bundle from `cache export` whole, then publish its entries into a cache");
  cmd->footer(
      "A truncated, altered or oversized bundle, or one of another hcwarm version, is refused (exit 2) before\n"
      "anything in the cache changes. Entries already present and valid are kept; bad ones are quarantined and\n"
      "replaced. The cache's rules apply: a directory holding other things is refused (exit 2), one this user\n"
      "cannot write or trust fails (exit 1).\n"
      "A bundle is native code that the next warm runs. With --trusted-key (or HCWARM_BUNDLE_TRUSTED_KEYS) an\n"
      "unsigned bundle, or one whose signature matches none of those keys, is refused (exit 2) before anything\n"
      "is written; without any trusted key it is imported unauthenticated, and the import says so.");
  cmd->add_option("bundle", o->bundle, "Bundle file written by `hcwarm cache export`")->required();
  add_cache_dir_option(cmd, o->cache_dir);
  cmd->add_option("--trusted-key", o->trusted_keys,
                  "PEM Ed25519 public key file (repeatable): import only bundles signed by one of them")
      ->allow_extra_args(false);
  add_json_flag(cmd, o->json);
  cmd->callback([&ctx, o] { run_import(ctx, *o); });
}

}  // namespace hcwarm::cli
