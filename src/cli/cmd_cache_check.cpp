// hcwarm cache check: is every kernel a configuration plans present and valid
// in a cache? Plans like `cache build` (no GPU needed) and looks each key up
// where the runtime would, with the runtime's verification and trust rules.
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <nlohmann/json.hpp>

#include "cli/cache_dir.hpp"
#include "cli/cache_plan.hpp"
#include "cli/commands.hpp"
#include "cli/json_output.hpp"
#include "core/error.hpp"
#include "jit/disk_cache.hpp"
#include "jit/fs_util.hpp"

namespace hcwarm::cli {
namespace {
namespace fs = std::filesystem;

struct CheckOptions {
  CachePlanOptions plan;
  bool json = false;
};

// A namespace of the cache built by another compiler of the same kind as the
// planned keys' (another NVRTC or host compiler release): a key holds its
// compiler's full identity, so none of its entries serves here.
struct OtherCompiler {
  std::string version, ns, compiler;  // compiler: an entry's manifest's, "" when unreadable
  int entries = 0;
};

std::vector<OtherCompiler> other_compilers(const jit::DiskCache& cache, const std::set<std::string>& planned_ns) {
  std::set<std::string> kinds;  // "nvrtc-", "host-"
  for (const auto& ns : planned_ns) kinds.insert(ns.substr(0, ns.find('-') + 1));
  std::map<std::pair<std::string, std::string>, OtherCompiler> by_ns;
  std::vector<jit::CacheEntry> entries;
  try {
    entries = cache.list();
  } catch (const Error&) {
    return {};  // a layout maintenance refuses: `cache verify` names it
  }
  for (const auto& e : entries) {
    if (planned_ns.count(e.ns) || !kinds.count(e.ns.substr(0, e.ns.find('-') + 1))) continue;
    OtherCompiler& o = by_ns[{e.version, e.ns}];
    if (o.entries++ > 0) continue;
    o.version = e.version;
    o.ns = e.ns;
    try {
      if (const auto bytes = jit::fsu::read_file(e.dir / "manifest.json")) {
        o.compiler = jit::Manifest::parse(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()))
                         .compiler;
      }
    } catch (const Error&) {
      // unreadable: the namespace is named without its compiler
    }
  }
  std::vector<OtherCompiler> out;
  for (auto& [k, o] : by_ns) out.push_back(std::move(o));
  return out;
}

void run_check(CliContext& ctx, const CheckOptions& o) {
  const CachePlan plan = make_cache_plan(ctx, o.plan);
  const jit::DiskCache cache(existing_cache_dir(ctx, o.plan.model.cache_dir),
                             jit::CacheTrust::from_env(ctx.env));
  if (auto why = cache.not_a_cache()) HCWARM_THROW(ErrorKind::InvalidArgument, "{}", *why);
  jit::JitOptions jo = jit_options(ctx, {});
  jo.cache_dir.reset();  // keys only
  const jit::JitRuntime jit(jo);
  const std::vector<PlannedKey> keys = planned_keys(jit, plan.specs);

  struct Finding {
    const PlannedKey* key;
    std::string status;  // "missing" or "bad"
    std::string reason;
  };
  std::vector<Finding> findings;
  std::map<std::string, std::optional<std::string>> distrusted;  // per namespace
  for (const PlannedKey& k : keys) {
    if (!distrusted.count(k.ns)) distrusted[k.ns] = cache.untrusted(k.ns);
    if (const auto& why = distrusted[k.ns]) {
      findings.push_back({&k, "bad", *why + " (the runtime does not load from it)"});
      continue;
    }
    try {
      const auto lk = cache.lookup(k.ns, k.key, {});
      if (lk.status == jit::DiskCache::Lookup::Status::Missing) findings.push_back({&k, "missing", ""});
      if (lk.status == jit::DiskCache::Lookup::Status::Bad) findings.push_back({&k, "bad", lk.reason});
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Io) throw;
      findings.push_back({&k, "bad", e.message()});  // present, but the runtime would not load it
    }
  }
  if (!findings.empty()) ctx.exit_code = 1;

  // Missing keys with entries of another compiler release in the cache (a bundle
  // built with another NVRTC patch release): say which built them and which runs.
  std::set<std::string> planned_ns;
  for (const PlannedKey& k : keys) planned_ns.insert(k.ns);
  std::string running;  // the identity of the compiler the keys are for
  if (!plan.specs.empty()) running = jit.compiler_for(plan.specs.front()).identity();
  const bool any_missing =
      std::any_of(findings.begin(), findings.end(), [](const Finding& f) { return f.status == "missing"; });
  const std::vector<OtherCompiler> others = any_missing ? other_compilers(cache, planned_ns) : std::vector<OtherCompiler>{};

  const std::string arch = plan.input.backend == mhc::Backend::Cuda ? o.plan.arch : "host";
  if (o.json) {
    nlohmann::json j = run_config_json(plan.resolved.model.name, plan.input.backend, plan.resolved.server,
                                       cache.root());
    j.update({{"arch", arch},
              {"keys", keys.size()},
              {"present", keys.size() - findings.size()},
              {"ok", findings.empty()},
              {"compiler", running},
              {"other_compilers", nlohmann::json::array()},
              {"problems", nlohmann::json::array()}});
    for (const auto& o : others) {
      j["other_compilers"].push_back({{"version", o.version},
                                      {"namespace", o.ns},
                                      {"compiler", o.compiler.empty() ? nlohmann::json() : nlohmann::json(o.compiler)},
                                      {"entries", o.entries}});
    }
    for (const auto& f : findings) {
      j["problems"].push_back({{"key", f.key->key},
                               {"namespace", f.key->ns},
                               {"family", f.key->family},
                               {"description", f.key->description},
                               {"status", f.status},
                               {"reason", f.reason}});
    }
    print_json(std::cout, j);
    return;
  }
  for (const auto& f : findings) {
    std::cout << fmt::format("{} {} (key {}){}\n", f.status == "missing" ? "MISSING" : "BAD", f.key->description,
                             f.key->key, f.reason.empty() ? "" : ": " + f.reason);
  }
  std::cout << fmt::format(
      "cache check of {} ({} backend, {}), num_sms {}, max_num_tokens {} in {}: {} keys planned, {} present and "
      "valid{}\n",
      plan.resolved.model.name, mhc::to_string(plan.input.backend), arch, plan.resolved.server.num_sms,
      plan.resolved.server.max_num_tokens(), cache.root().string(), keys.size(), keys.size() - findings.size(),
      findings.empty() ? "" : fmt::format(", {} missing or bad (hcwarm cache build fills them)", findings.size()));
  for (const auto& o : others) {
    std::cout << fmt::format(
        "the cache's v{}/{} ({} entr{}) was built with {}, not with this machine's {}: a kernel's key holds its "
        "compiler's full version, so none of them is used here (build with the same compiler release)\n",
        o.version, o.ns, o.entries, o.entries == 1 ? "y" : "ies", o.compiler.empty() ? "another compiler" : o.compiler,
        running);
  }
}

}  // namespace

void register_cache_check(CLI::App* cache, CliContext& ctx) {
  auto o = std::make_shared<CheckOptions>();
  CLI::App* cmd = cache->add_subcommand(
      "check", "Exit 0 when every kernel a configuration plans is in the cache and valid, else 1 naming each");
  cmd->footer(
      "Give the same model, server and --mlp-width options as the servers (and `cache build`): they decide the\n"
      "keys. Plans for this machine's GPU, else --num-sms / HCWARM_NUM_SMS / an H200; no GPU is needed.\n"
      "A key counts only when the runtime would load it: complete, matching its SHA-256s, trusted. Where keys\n"
      "are missing and the cache holds entries of another release of the same compiler (a bundle built with\n"
      "another NVRTC), it names which compiler built them and which runs here: keys hold the full version.");
  add_cache_plan_options(cmd, o->plan);
  add_cache_dir_option(cmd, o->plan.model.cache_dir);
  add_json_flag(cmd, o->json);
  cmd->callback([&ctx, o] { run_check(ctx, *o); });
}

}  // namespace hcwarm::cli
