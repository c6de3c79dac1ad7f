// hcwarm cache export: one file holding verified cache entries (every entry of
// this hcwarm version, or the keys a configuration plans), for `cache import`
// on other machines (format: jit/cache_bundle.hpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/byte_units.hpp"
#include "cli/cache_dir.hpp"
#include "cli/cache_plan.hpp"
#include "cli/commands.hpp"
#include "cli/json_output.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "jit/cache_bundle.hpp"

namespace hcwarm::cli {
namespace {

struct ExportOptions {
  CachePlanOptions plan;
  std::string out;
  std::string sign;  // PEM Ed25519 private key file, or empty: unsigned
  bool all = false;
  bool json = false;
};

struct Problem {
  std::string ns, key, description, reason;
};

// The entry, verified, into the bundle; or why not.
void add_entry(const jit::DiskCache& cache, const std::string& ns, const std::string& key,
               const std::string& description, jit::Bundle& bundle, std::vector<std::vector<std::byte>>& storage,
               std::vector<Problem>& problems) {
  try {
    jit::CacheEntryRead r = jit::read_cache_entry(cache, ns, key, storage);
    if (r.entry) {
      bundle.entries.push_back(std::move(*r.entry));
      return;
    }
    problems.push_back({ns, key, description, r.problem});
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Io) throw;
    problems.push_back({ns, key, description, e.message()});  // an entry that cannot be trusted
  }
}

void run_export(CliContext& ctx, const ExportOptions& o, bool model_given) {
  HCWARM_CHECK_ARG(o.all || model_given, "cache export: say which entries: --model ... (the keys a configuration "
                                         "plans) or --all (every entry of hcwarm {})", HCWARM_VERSION);
  const jit::DiskCache cache(existing_cache_dir(ctx, o.plan.model.cache_dir),
                             jit::CacheTrust::from_env(ctx.env));
  if (auto why = cache.not_a_cache()) HCWARM_THROW(ErrorKind::InvalidArgument, "{}; nothing exported", *why);
  // The key is read before any entry, so that a bad key costs nothing.
  std::optional<jit::Ed25519Key> key;
  if (!o.sign.empty()) key = jit::Ed25519Key::load_private(o.sign);

  jit::Bundle bundle;
  std::vector<std::vector<std::byte>> storage;
  std::vector<Problem> problems;
  int planned = 0;
  if (o.all) {
    std::vector<jit::CacheEntry> entries = cache.list();
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return std::tie(a.ns, a.key) < std::tie(b.ns, b.key); });
    for (const auto& e : entries) {
      if (e.version != HCWARM_VERSION) continue;
      add_entry(cache, e.ns, e.key, e.description, bundle, storage, problems);
    }
  } else {
    const CachePlan plan = make_cache_plan(ctx, o.plan);
    jit::JitOptions jo = jit_options(ctx, {});
    jo.cache_dir.reset();  // keys only: nothing is compiled or stored
    const jit::JitRuntime jit(jo);
    const std::vector<PlannedKey> keys = planned_keys(jit, plan.specs);
    planned = static_cast<int>(keys.size());
    for (const auto& k : keys) add_entry(cache, k.ns, k.key, k.description, bundle, storage, problems);
    if (!problems.empty()) {
      std::string list;
      for (const auto& p : problems) list += fmt::format("\n  {} (key {}): {}", p.description, p.key, p.reason);
      HCWARM_THROW(ErrorKind::Io,
                   "{} of the {} planned keys cannot be exported from {} (hcwarm cache build fills them); nothing "
                   "written:{}",
                   problems.size(), keys.size(), cache.root().string(), list);
    }
  }
  std::string bytes = jit::write_bundle(bundle);
  if (key) bytes += key->signature_line(bytes.substr(bytes.size() - 65, 64));  // the checksum line's hex
  write_output_file(o.out, bytes);

  if (o.json) {
    nlohmann::json j{{"cache_dir", cache.root().string()},
                     {"out", o.out},
                     {"entries", bundle.entries.size()},
                     {"bytes", bytes.size()},
                     {"scope", o.all ? "all" : "model"},
                     {"signed_by", key ? nlohmann::json(key->id()) : nlohmann::json(nullptr)},
                     {"skipped", nlohmann::json::array()}};
    if (!o.all) j["planned_keys"] = planned;
    for (const auto& p : problems) {
      j["skipped"].push_back({{"namespace", p.ns}, {"key", p.key}, {"description", p.description}, {"reason", p.reason}});
    }
    print_json(std::cout, j);
    return;
  }
  std::cout << fmt::format("exported {} entries ({}) from {} to {}{}\n", bundle.entries.size(),
                           human_bytes(bytes.size()), cache.root().string(), o.out,
                           key ? fmt::format(", signed by key {}", key->id().substr(0, 16)) : std::string());
  for (const auto& p : problems) {
    std::cout << fmt::format("  skipped {} (key {}): {}\n", p.description.empty() ? "?" : p.description, p.key,
                             p.reason);
  }
}

}  // namespace

void register_cache_export(CLI::App* cache, CliContext& ctx) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* cmd = cache->add_subcommand(
      "export", "Write verified cache entries into one bundle file (the keys of a configuration, or --all)");
  cmd->footer(
      "E.g. cache export --model dsv4-pro --num-sms 132 --chunked-prefill-size 16384 --cache-dir built/ --out\n"
      "dsv4-pro.hcwb after `cache build` with the same options; then `cache import dsv4-pro.hcwb` on each server.\n"
      "With --model every planned key must be in the cache and valid (else exit 1, nothing written); --all takes\n"
      "every valid entry of this hcwarm version and names the bad ones it leaves out. The bundle carries each\n"
      "entry's manifest (size and SHA-256 of every file) and a SHA-256 of the whole. --sign KEY adds an Ed25519\n"
      "signature over that SHA-256, which `cache import --trusted-key` requires: a bundle is native code, and\n"
      "the checksum says only that it is whole, not who made it.");
  add_cache_plan_options(cmd, o->plan);
  add_cache_dir_option(cmd, o->plan.model.cache_dir);
  cmd->add_option("--out", o->out, "Bundle file to write (whole or not at all)")->required();
  cmd->add_option("--sign", o->sign, "PEM Ed25519 private key file: sign the bundle (cache import --trusted-key)");
  cmd->add_flag("--all", o->all, "Every valid entry of this hcwarm version instead of one configuration's keys");
  add_json_flag(cmd, o->json);
  cmd->callback([&ctx, o, cmd] {
    std::vector<std::string> plan_options;
    for (const char* name : {"--model", "--num-sms", "--chunked-prefill-size", "--dp-size", "--enable-dp-attention",
                             "--backend", "--arch", "--mlp-width"}) {
      if (cmd->count(name) > 0) plan_options.push_back(name);
    }
    HCWARM_CHECK_ARG(!o->all || plan_options.empty(), "cache export: --all takes every entry, so {} means nothing "
                     "with it; give one or the other", fmt::join(plan_options, ", "));
    HCWARM_CHECK_ARG(cmd->count("--sign") == 0 || !o->sign.empty(), "cache export: --sign needs a key file");
    run_export(ctx, *o, cmd->count("--model") > 0);
  });
}

}  // namespace hcwarm::cli
