#include "jit/kernel_exchange.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.hpp"
#include "core/stopwatch.hpp"
#include "jit/cache_bundle.hpp"
#include "jit/sha256.hpp"

namespace hcwarm::jit {
namespace {

constexpr std::string_view kMagic = "hcwarm-kernel-exchange";

// One planned key: where it lives and how to build it.
struct PlannedKey {
  std::string key, ns, description;
  const KernelSpec* spec = nullptr;
};

// The plan's distinct keys, in plan order.
std::vector<PlannedKey> distinct_keys(const JitRuntime& jit, std::span<const KernelSpec> specs) {
  std::vector<PlannedKey> out;
  std::set<std::string> seen;
  for (const KernelSpec& s : specs) {
    std::string key = jit.key(s);
    if (!seen.insert(key).second) continue;
    out.push_back({std::move(key), jit.cache_namespace(s), s.describe(), &s});
  }
  return out;
}

std::string plan_digest(const std::vector<PlannedKey>& keys) {
  Sha256 h;
  for (const PlannedKey& k : keys) h.field("key", k.ns, k.key);
  return h.hex();
}

// The build's message for `key` ("<description> (key <key>): <message>"), or `fallback`.
std::string build_error_for(const BuildReport& b, const std::string& key, const std::string& fallback) {
  for (const std::string& e : b.errors) {
    if (e.find(key) != std::string::npos) return e;
  }
  return fallback;
}

struct Payload {
  nlohmann::json header;
  std::string_view body;  // the entries' bundles, back to back
};

// The sender's header and body; InvalidArgument naming what is wrong.
Payload parse_payload(std::string_view bytes, int sender) {
  const std::string where = fmt::format("kernels from rank {}", sender);
  const std::string magic = fmt::format("{} {}\n", kMagic, kExchangeFormat);
  HCWARM_CHECK_ARG(bytes.substr(0, magic.size()) == magic, "{}: not an hcwarm {} payload", where, magic.substr(0, magic.size() - 1));
  bytes.remove_prefix(magic.size());
  const size_t nl = bytes.find('\n');
  HCWARM_CHECK_ARG(nl != std::string_view::npos && nl > 0 && nl <= 12, "{}: truncated before the header length", where);
  uint64_t header_bytes = 0;
  for (char c : bytes.substr(0, nl)) {
    HCWARM_CHECK_ARG(c >= '0' && c <= '9', "{}: the header length is not a number", where);
    header_bytes = header_bytes * 10 + static_cast<uint64_t>(c - '0');
  }
  bytes.remove_prefix(nl + 1);
  HCWARM_CHECK_ARG(header_bytes + 1 <= bytes.size() && bytes[header_bytes] == '\n', "{}: truncated in the header",
                   where);
  Payload p;
  p.header = nlohmann::json::parse(bytes.substr(0, header_bytes), nullptr, /*allow_exceptions=*/false);
  HCWARM_CHECK_ARG(p.header.is_object(), "{}: the header is not a JSON object", where);
  p.body = bytes.substr(header_bytes + 1);
  return p;
}

// Every field the receiver reads, of the type it reads it as.
bool header_well_formed(const nlohmann::json& h) {
  auto str = [&](const char* k) { return h.contains(k) && h[k].is_string(); };
  if (!h.contains("rank") || !h["rank"].is_number_integer() || !str("cache") || !str("plan")) return false;
  if (h.contains("error") && !h["error"].is_string()) return false;
  if (!h.contains("failed") || !h["failed"].is_array() || !h.contains("entries") || !h["entries"].is_array()) {
    return false;
  }
  for (const auto& f : h["failed"]) {
    if (!f.is_object() || !f.contains("key") || !f["key"].is_string() || !f.contains("error") || !f["error"].is_string()) {
      return false;
    }
  }
  for (const auto& e : h["entries"]) {
    if (!e.is_object() || !e.contains("key") || !e["key"].is_string() || !e.contains("bytes") ||
        !e["bytes"].is_number_unsigned()) {
      return false;
    }
  }
  return true;
}

std::string pack_payload(const nlohmann::json& header, const std::vector<std::string>& bundles) {
  const std::string h = header.dump();
  std::string out = fmt::format("{} {}\n{}\n{}\n", kMagic, kExchangeFormat, h.size(), h);
  for (const std::string& b : bundles) out += b;
  return out;
}

// A payload header with nothing failed and nothing sent yet.
nlohmann::json empty_header(int rank, int world, const std::string& identity, const std::string& digest) {
  return {{"rank", rank},
          {"world", world},
          {"cache", identity},
          {"plan", digest},
          {"hcwarm_version", HCWARM_VERSION},
          {"failed", nlohmann::json::array()},
          {"entries", nlohmann::json::array()}};
}

// This rank's payload: every shard entry as a one-entry bundle, or why it has none.
std::string pack_shard(const JitRuntime& jit, const std::vector<PlannedKey>& shard, const BuildReport& built,
                       int rank, int world, const std::string& identity, const std::string& digest) {
  nlohmann::json header = empty_header(rank, world, identity, digest);
  std::vector<std::string> bundles;
  const DiskCache* cache = jit.disk_writable() ? jit.disk_cache() : nullptr;
  if (cache == nullptr) return pack_payload(header, bundles);  // nothing stored to send
  for (const PlannedKey& k : shard) {
    std::vector<std::vector<std::byte>> storage;
    CacheEntryRead read = read_cache_entry(*cache, k.ns, k.key, storage);
    if (!read.entry) {
      header["failed"].push_back(
          {{"key", k.key}, {"error", build_error_for(built, k.key, fmt::format("{} (key {}): {}", k.description, k.key, read.problem))}});
      continue;
    }
    Bundle one;
    one.entries.push_back(std::move(*read.entry));
    bundles.push_back(write_bundle(one));
    header["entries"].push_back({{"key", k.key}, {"bytes", bundles.back().size()}});
  }
  return pack_payload(header, bundles);
}

// The identity of this rank's cache directory ("<host>:<device>:<inode>" of its
// root): equal for ranks that share the directory, on one host or over a shared file system.
std::string cache_identity(const JitRuntime& jit, int rank) {
  const DiskCache* cache = jit.disk_cache();
  struct stat st {};
  if (cache == nullptr || ::stat(cache->root().c_str(), &st) != 0) return fmt::format("none:{}", rank);
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return fmt::format("{}:{}:{}", host, static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino));
}

}  // namespace

ExchangeReport exchange_kernels(JitRuntime& jit, std::span<const KernelSpec> specs, int rank, int world,
                                const GatherBytes& gather) {
  HCWARM_CHECK_ARG(world >= 1 && rank >= 0 && rank < world, "group rank {} of {} is not in [0, {})", rank, world,
                   world);
  ExchangeReport r;
  r.rank = rank;
  r.world = world;
  const std::vector<PlannedKey> keys = distinct_keys(jit, specs);
  r.planned_keys = static_cast<int>(keys.size());
  const std::string digest = plan_digest(keys);
  std::string identity = fmt::format("none:{}", rank);  // until this rank's cache directory exists
  // Rank s builds keys s, s+N, ...: every rank knows every shard without being told.
  auto shard_of = [&](int s) {
    std::vector<PlannedKey> out;
    for (size_t i = static_cast<size_t>(s); i < keys.size(); i += static_cast<size_t>(world)) out.push_back(keys[i]);
    return out;
  };

  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<PlannedKey> mine = shard_of(rank);
  std::vector<KernelSpec> mine_specs;
  for (const PlannedKey& k : mine) {
    r.shard_keys.push_back(k.key);
    mine_specs.push_back(*k.spec);
  }
  // Whatever goes wrong here is sent, not thrown: the others must not wait in
  // the gather for a rank that gave up.
  std::string payload;
  try {
    BuildReport built;
    if (jit.disk_writable() && !mine_specs.empty()) built = jit.build(mine_specs, BuildMode::CompileOnly);
    // The directory exists once prepared (an empty shard builds nothing): identify it then.
    if (jit.disk_writable() && !keys.empty() && !jit.disk_cache()->prepare(keys.front().ns)) {
      identity = cache_identity(jit, rank);
    }
    r.compiled = built.compiled;
    r.shard_present = built.loaded_from_disk + built.memory_hits;
    if (!jit.disk_writable()) {
      spdlog::warn("kernel exchange: rank {} has no writable disk cache; it sends nothing and compiles every key itself",
                   rank);
    }
    payload = pack_shard(jit, mine, built, rank, world, identity, digest);
  } catch (const std::exception& e) {
    nlohmann::json header = empty_header(rank, world, identity, digest);
    header["error"] = e.what();
    payload = pack_payload(header, {});
  }
  r.build_seconds = seconds_since(t0);

  const auto t1 = std::chrono::steady_clock::now();
  r.bytes_sent = payload.size();
  const std::vector<std::string> all = gather(payload);
  HCWARM_CHECK_ARG(static_cast<int>(all.size()) == world, "kernel exchange: the gather returned {} payloads for {} ranks",
                   all.size(), world);

  const DiskCache* cache = jit.disk_writable() ? jit.disk_cache() : nullptr;
  std::string first_failure;
  for (int s = 0; s < world; ++s) {
    const std::vector<PlannedKey> theirs = shard_of(s);
    auto refuse = [&](const PlannedKey& k, const std::string& why) {
      r.refused.push_back(fmt::format("{} from rank {}: {}", k.key, s, why));
      spdlog::warn("kernel exchange: refused {} (key {}) from rank {}: {}; it compiles here", k.description, k.key, s,
                   why);
    };
    if (s != rank) r.bytes_received += all[s].size();
    Payload p;
    try {
      p = parse_payload(all[s], s);
    } catch (const Error& e) {
      if (s == rank) throw;
      for (const PlannedKey& k : theirs) refuse(k, e.what());
      continue;
    }
    const nlohmann::json& h = p.header;
    if (!header_well_formed(h)) {
      if (s == rank) HCWARM_THROW(ErrorKind::Internal, "kernel exchange: this rank's own payload header is malformed");
      for (const PlannedKey& k : theirs) refuse(k, "its payload header is malformed");
      continue;
    }
    if (s != rank && h.value("rank", -1) != s) {
      for (const PlannedKey& k : theirs) refuse(k, fmt::format("its payload says it is rank {}", h.value("rank", -1)));
      continue;
    }
    const std::string plan = h.value("plan", std::string());
    HCWARM_CHECK_ARG(plan == digest,
                     "kernel exchange: rank {} planned other kernels than rank {} (plan {} vs {}): every rank must "
                     "prewarm the same configuration with the same hcwarm and compiler",
                     s, rank, plan.substr(0, 12), digest.substr(0, 12));
    if (h.contains("error") && first_failure.empty()) {
      first_failure =
          fmt::format("kernel exchange: rank {} could not build its share: {}", s, h["error"].get<std::string>());
    }
    std::set<std::string> failed;  // every rank raises for these below: not refused one by one
    for (const auto& f : h["failed"]) {
      failed.insert(f["key"].get<std::string>());
      if (first_failure.empty()) {
        first_failure = fmt::format("kernel exchange: rank {} failed to build {}", s, f["error"].get<std::string>());
      }
    }
    if (s == rank) continue;
    if (cache == nullptr) continue;  // compiled in the later prewarm
    if (h.value("cache", std::string()) == identity) {
      r.shared += static_cast<int>(theirs.size());
      continue;
    }
    // The entries the sender sent, by key, as views into its body.
    std::map<std::string, std::string_view> sent;
    std::string_view body = p.body;
    bool framing_ok = true;
    for (const auto& e : h["entries"]) {
      const uint64_t n = e["bytes"].get<uint64_t>();
      if (n > body.size()) {
        framing_ok = false;
        break;
      }
      sent[e["key"].get<std::string>()] = body.substr(0, n);
      body.remove_prefix(n);
    }
    if (!framing_ok) {
      for (const PlannedKey& k : theirs) refuse(k, "its entry list does not match its payload");
      continue;
    }
    for (const PlannedKey& k : theirs) {
      const auto it = sent.find(k.key);
      if (failed.count(k.key)) continue;
      if (it == sent.end()) {
        refuse(k, "not sent");
        continue;
      }
      try {
        const Bundle b = parse_bundle(it->second, "the entry received");
        HCWARM_CHECK_ARG(b.entries.size() == 1 && b.entries[0].key == k.key && b.entries[0].ns == k.ns,
                         "holds another entry than key {} of namespace {}", k.key, k.ns);
        const ImportResult ir = import_bundle(*cache, b, jit.options().lock_timeout_s);
        r.received += ir.imported;
        r.already_present += ir.already_present;
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::InvalidArgument) throw;  // our cache's trouble, not the sender's
        refuse(k, e.what());
      }
    }
  }
  r.exchange_seconds = seconds_since(t1);
  if (!first_failure.empty()) HCWARM_THROW(ErrorKind::Compile, "{}", first_failure);
  return r;
}

}  // namespace hcwarm::jit
