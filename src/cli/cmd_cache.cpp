// hcwarm cache ls | verify | prune | clear: inspect and maintain the persistent
// kernel cache (HCWARM_CACHE_DIR or --cache-dir). No compiler is needed.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/byte_units.hpp"
#include "cli/cache_dir.hpp"
#include "cli/commands.hpp"
#include "cli/json_output.hpp"
#include "core/error.hpp"
#include "core/json_util.hpp"
#include "jit/disk_cache.hpp"

namespace hcwarm::cli {
namespace {

// A manifest's description as it is when it is plain printable text, else
// quoted, escaped and cut (the manifest is a file anyone with write access shaped).
std::string printable(const std::string& s) {
  const bool plain = s.size() <= kMaxJsonExcerpt && std::all_of(s.begin(), s.end(), [](char c) {
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  return plain ? s : quoted_excerpt(s);
}

struct CacheOptions {
  std::string cache_dir;
  bool json = false;
  std::string max_size;
  bool quarantine = false;
};

nlohmann::json entry_json(const jit::CacheEntry& e) {
  return {{"key", e.key},   {"version", e.version}, {"namespace", e.ns},
          {"bytes", e.bytes}, {"description", e.description}, {"last_used", iso8601_utc(e.last_used)},
          {"dir", e.dir.string()}};
}

void run_ls(const CliContext& ctx, const CacheOptions& o) {
  const jit::DiskCache cache(existing_cache_dir(ctx, o.cache_dir), jit::CacheTrust::from_env(ctx.env));
  const auto entries = cache.list();
  uint64_t total = 0;
  for (const auto& e : entries) total += e.bytes;
  if (o.json) {
    nlohmann::json j;
    j["cache_dir"] = cache.root().string();
    j["entries"] = nlohmann::json::array();
    for (const auto& e : entries) j["entries"].push_back(entry_json(e));
    j["entry_bytes"] = total;
    j["total_bytes"] = cache.total_bytes();
    print_json(std::cout, j);
    return;
  }
  std::cout << fmt::format("cache {}: {} entries, {} (cap {})\n", cache.root().string(), entries.size(),
                           human_bytes(total), human_bytes(ctx.env.cache_max_bytes));
  if (entries.empty()) return;
  std::cout << fmt::format("  {:<20}  {:>9}  {:<16}  {:<34}  {}\n", "last used (UTC)", "size", "key", "namespace",
                           "kernel");
  for (const auto& e : entries) {
    std::cout << fmt::format("  {:<20}  {:>9}  {:<16}  {:<34}  {}\n", iso8601_utc(e.last_used), human_bytes(e.bytes),
                             e.key.substr(0, 16), "v" + e.version + "/" + e.ns,
                             e.description.empty() ? "(no readable manifest)" : printable(e.description));
  }
}

// What maintenance could not do: named on stderr (the first few), exit 1.
void report_failures(CliContext& ctx, const std::vector<std::string>& failed, std::string_view verb) {
  if (failed.empty()) return;
  constexpr size_t kShown = 5;
  for (size_t i = 0; i < failed.size() && i < kShown; ++i) std::cerr << "error: " << failed[i] << "\n";
  if (failed.size() > kShown) std::cerr << fmt::format("error: ... and {} more\n", failed.size() - kShown);
  std::cerr << fmt::format("error: {} of what was asked could not be {}\n", failed.size(), verb);
  ctx.exit_code = 1;
}

void run_verify(CliContext& ctx, const CacheOptions& o) {
  const jit::DiskCache cache(existing_cache_dir(ctx, o.cache_dir), jit::CacheTrust::from_env(ctx.env));
  const auto r = cache.verify(o.quarantine);
  if (o.json) {
    nlohmann::json j;
    j["cache_dir"] = cache.root().string();
    j["checked"] = r.checked;
    j["ok"] = r.bad.empty();
    j["quarantined"] = r.quarantined;
    j["failed"] = r.failed;
    j["bad"] = nlohmann::json::array();
    for (const auto& b : r.bad) {
      auto e = entry_json(b.entry);
      e["reason"] = b.reason;
      j["bad"].push_back(e);
    }
    print_json(std::cout, j);
  } else {
    for (const auto& b : r.bad) {
      std::cout << fmt::format("BAD {} (v{}/{}): {}\n", b.entry.key, b.entry.version, b.entry.ns, b.reason);
    }
    std::cout << fmt::format("verified {} entries in {}: {} bad{}\n", r.checked, cache.root().string(), r.bad.size(),
                             o.quarantine ? fmt::format(", {} moved to quarantine", r.quarantined)
                                          : (r.bad.empty() ? "" : " (each is rebuilt on next use; --quarantine moves them aside now)"));
  }
  if (!r.bad.empty()) ctx.exit_code = 1;
  report_failures(ctx, r.failed, "moved aside");
}

void print_prune(CliContext& ctx, const CacheOptions& o, const jit::DiskCache& cache, const jit::PruneResult& r,
                 const char* verb) {
  report_failures(ctx, r.failed, verb);
  if (o.json) {
    nlohmann::json j{{"cache_dir", cache.root().string()}, {"removed", r.removed},
                     {"busy", r.busy},                     {"removed_other", r.removed_other},
                     {"bytes_before", r.bytes_before},     {"bytes_after", r.bytes_after},
                     {"failed", r.failed}};
    print_json(std::cout, j);
    return;
  }
  std::cout << fmt::format("{} {} entries from {}: {} -> {}", verb, r.removed, cache.root().string(),
                           human_bytes(r.bytes_before), human_bytes(r.bytes_after));
  if (r.removed_other) std::cout << fmt::format(", {} quarantined/stale dirs removed", r.removed_other);
  if (r.busy) std::cout << fmt::format(", {} in use by another process left", r.busy);
  std::cout << "\n";
}

}  // namespace

void register_cache(CLI::App& app, CliContext& ctx) {
  CLI::App* cache = app.add_subcommand(
      "cache", "Inspect and maintain the persistent JIT kernel cache, or fill one ahead of time (build)");
  cache->require_subcommand(1);
  auto add_common = [](CLI::App* cmd, CacheOptions& o) {
    add_cache_dir_option(cmd, o.cache_dir);
    add_json_flag(cmd, o.json);
  };

  auto ls = std::make_shared<CacheOptions>();
  CLI::App* c_ls = cache->add_subcommand("ls", "List the cached kernels, least recently used first");
  add_common(c_ls, *ls);
  c_ls->callback([&ctx, ls] { run_ls(ctx, *ls); });

  auto verify = std::make_shared<CacheOptions>();
  CLI::App* c_verify = cache->add_subcommand(
      "verify", "Check every entry's manifest, sizes and SHA-256; exit 1 and name each bad entry");
  add_common(c_verify, *verify);
  c_verify->add_flag("--quarantine", verify->quarantine, "Move bad entries aside now (else they are rebuilt on use)");
  c_verify->callback([&ctx, verify] { run_verify(ctx, *verify); });

  auto prune = std::make_shared<CacheOptions>();
  CLI::App* c_prune = cache->add_subcommand(
      "prune", "Remove quarantined and stale data, then least-recently-used entries down to a size");
  add_common(c_prune, *prune);
  c_prune->add_option("--max-size", prune->max_size,
                      "Size to prune to: bytes or 512M, 4G (default: HCWARM_CACHE_MAX_MB, else 4096 MiB)");
  c_prune->callback([&ctx, prune] {
    const jit::DiskCache cache(existing_cache_dir(ctx, prune->cache_dir), jit::CacheTrust::from_env(ctx.env));
    const uint64_t max = prune->max_size.empty() ? ctx.env.cache_max_bytes : parse_size(prune->max_size);
    print_prune(ctx, *prune, cache, cache.prune(max), "pruned");
  });

  auto clear = std::make_shared<CacheOptions>();
  CLI::App* c_clear = cache->add_subcommand("clear", "Remove every entry not in use (lock files stay)");
  add_common(c_clear, *clear);
  c_clear->callback([&ctx, clear] {
    const jit::DiskCache cache(existing_cache_dir(ctx, clear->cache_dir), jit::CacheTrust::from_env(ctx.env));
    print_prune(ctx, *clear, cache, cache.clear(), "removed");
  });
}

}  // namespace hcwarm::cli
