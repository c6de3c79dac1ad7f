#include "jit/cache_bundle.hpp"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "jit/fs_util.hpp"
#include "jit/sha256.hpp"

namespace hcwarm::jit {
namespace {

constexpr std::string_view kTrailerTag = "sha256 ";
constexpr size_t kTrailerBytes = 7 + 64 + 1;          // "sha256 " + hex + "\n"
constexpr uint64_t kMaxHeaderBytes = uint64_t{64} << 20;  // ~1 KiB per entry at the entry bound
constexpr uint64_t kMaxManifestBytes = uint64_t{1} << 20;
constexpr size_t kMaxFilesPerEntry = 64;


// A directory name the cache layout can hold: no separators, not "." or "..".
bool simple_name(std::string_view n) {
  if (n.empty() || n == "." || n == ".." || n.size() > 255) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '+';
  });
}

std::span<const std::byte> as_bytes(std::string_view s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

// Reads the bundle front to back; every take is bounds-checked against what is left.
class Reader {
 public:
  Reader(std::string_view body, const std::string& source) : body_(body), source_(source) {}
  std::string_view take(uint64_t n, std::string_view what) {
    HCWARM_CHECK_ARG(n <= body_.size() - pos_, "{}: truncated: {} needs {} bytes, {} are left", source_, what, n,
                     body_.size() - pos_);
    const std::string_view s = body_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::string_view line(uint64_t max, std::string_view what) {
    const size_t nl = body_.find('\n', pos_);
    HCWARM_CHECK_ARG(nl != std::string_view::npos && nl - pos_ <= max, "{}: {} is missing or too long", source_, what);
    const std::string_view s = body_.substr(pos_, nl - pos_);
    pos_ = nl + 1;
    return s;
  }
  uint64_t left() const { return body_.size() - pos_; }

 private:
  std::string_view body_;
  const std::string& source_;
  size_t pos_ = 0;
};

uint64_t parse_count(std::string_view s, const std::string& source, std::string_view what) {
  HCWARM_CHECK_ARG(!s.empty() && s.size() <= 19 && std::all_of(s.begin(), s.end(), [](char c) {
                     return std::isdigit(static_cast<unsigned char>(c));
                   }),
                   "{}: {} {} is not a decimal count", source, what, quoted_excerpt(s));
  return std::stoull(std::string(s));
}

// The header's entry record, checked field by field.
struct HeaderEntry {
  std::string ns, key;
  uint64_t manifest_bytes = 0;
  std::string manifest_sha256;
};

HeaderEntry header_entry(const nlohmann::json& e, const std::string& where) {
  HCWARM_CHECK_ARG(e.is_object(), "{}: not an object", where);
  auto str = [&](const char* field) {
    HCWARM_CHECK_ARG(e.contains(field) && e.at(field).is_string(), "{}: \"{}\" is missing or not a string", where,
                     field);
    return e.at(field).get<std::string>();
  };
  HeaderEntry h;
  h.ns = str("namespace");
  h.key = str("key");
  h.manifest_sha256 = str("manifest_sha256");
  HCWARM_CHECK_ARG(simple_name(h.ns), "{}: namespace {} is not a directory name", where, quoted_excerpt(h.ns));
  HCWARM_CHECK_ARG(is_sha256_hex(h.key), "{}: key {} is not a SHA-256", where, quoted_excerpt(h.key));
  HCWARM_CHECK_ARG(is_sha256_hex(h.manifest_sha256), "{}: manifest_sha256 is not a SHA-256", where);
  HCWARM_CHECK_ARG(e.contains("manifest_bytes") && e.at("manifest_bytes").is_number_unsigned(),
                   "{}: \"manifest_bytes\" is missing or not a non-negative integer", where);
  h.manifest_bytes = e.at("manifest_bytes").get<uint64_t>();
  HCWARM_CHECK_ARG(h.manifest_bytes <= kMaxManifestBytes, "{}: manifest of {} bytes is over the limit of {}", where,
                   h.manifest_bytes, kMaxManifestBytes);
  return h;
}

// The entry's manifest against its header record and this hcwarm.
void check_manifest(const Manifest& m, const HeaderEntry& h, const std::string& where) {
  HCWARM_CHECK_ARG(m.key == h.key, "{}: manifest names key {}", where, m.key);
  HCWARM_CHECK_ARG(m.ns == h.ns, "{}: manifest names namespace {}", where, quoted_excerpt(m.ns));
  HCWARM_CHECK_ARG(m.hcwarm_version == HCWARM_VERSION, "{}: manifest is for hcwarm {}, this is hcwarm {}", where,
                   quoted_excerpt(m.hcwarm_version), HCWARM_VERSION);
  HCWARM_CHECK_ARG(m.files.size() <= kMaxFilesPerEntry, "{}: {} files, over the limit of {}", where, m.files.size(),
                   kMaxFilesPerEntry);
  std::set<std::string> names;
  for (const auto& f : m.files) {
    HCWARM_CHECK_ARG(simple_name(f.name) && f.name != "manifest.json" && names.insert(f.name).second,
                     "{}: file name {} is not a plain, unique file name", where, quoted_excerpt(f.name));
  }
}

}  // namespace

BundleTrailer parse_bundle_trailer(std::string_view tail, uint64_t total_bytes, const std::string& source) {
  HCWARM_CHECK_ARG(total_bytes > kTrailerBytes && tail.size() > kTrailerBytes,
                   "{}: truncated: no checksum line", source);
  BundleTrailer t;
  // The last line is the signature when it says so; else it must be the checksum.
  const size_t prev_nl = tail.rfind('\n', tail.size() - 2);
  const std::string_view last = prev_nl == std::string_view::npos ? tail : tail.substr(prev_nl + 1);
  size_t trailer_bytes = kTrailerBytes;
  if (last.substr(0, 8) == "ed25519 ") {
    t.signature = parse_signature_line(last, source);
    trailer_bytes += last.size();
    HCWARM_CHECK_ARG(tail.size() >= trailer_bytes && total_bytes > trailer_bytes,
                     "{}: truncated: no checksum line before the signature", source);
  }
  const std::string_view sum = tail.substr(tail.size() - trailer_bytes, kTrailerBytes);
  HCWARM_CHECK_ARG(sum.substr(0, kTrailerTag.size()) == kTrailerTag && sum.back() == '\n' &&
                       is_sha256_hex(sum.substr(kTrailerTag.size(), 64)),
                   "{}: truncated or damaged: the {} line is not \"sha256 <64 hex>\"", source,
                   t.signature ? "line before the signature" : "last");
  t.sha256 = std::string(sum.substr(kTrailerTag.size(), 64));
  t.body_bytes = total_bytes - trailer_bytes;
  return t;
}

std::string write_bundle(const Bundle& bundle, const BundleLimits& limits) {
  HCWARM_CHECK_ARG(bundle.entries.size() <= limits.max_entries, "a bundle holds at most {} entries, not {}",
                   limits.max_entries, bundle.entries.size());
  nlohmann::ordered_json header;
  header["format"] = kBundleFormat;
  header["hcwarm_version"] = bundle.hcwarm_version.empty() ? std::string(HCWARM_VERSION) : bundle.hcwarm_version;
  header["created"] = bundle.created.empty() ? fsu::utc_now() : bundle.created;
  header["entries"] = nlohmann::ordered_json::array();
  uint64_t payload = 0;
  std::set<std::pair<std::string, std::string>> seen;
  for (const BundleEntry& e : bundle.entries) {
    HCWARM_CHECK_ARG(seen.emplace(e.ns, e.key).second, "entry {} of namespace {} is in the bundle twice", e.key, e.ns);
    HCWARM_ASSERT(e.files.size() == e.manifest.files.size(), "entry {}: {} files for a manifest of {}", e.key,
                  e.files.size(), e.manifest.files.size());
    header["entries"].push_back({{"namespace", e.ns},
                                 {"key", e.key},
                                 {"description", e.manifest.description},
                                 {"manifest_bytes", e.manifest_text.size()},
                                 {"manifest_sha256", sha256_hex(e.manifest_text)}});
    payload += e.manifest_text.size();
    for (const auto& f : e.files) payload += f.second.size();
  }
  header["payload_bytes"] = payload;
  const std::string htext = header.dump();
  const std::string head = fmt::format("{} {}\n{}\n{}\n", kBundleMagic, kBundleFormat, htext.size(), htext);
  const uint64_t total = head.size() + payload + kTrailerBytes + kBundleSignatureLineBytes;
  HCWARM_CHECK_ARG(total <= limits.max_bytes, "the bundle would be {} bytes, over the limit of {} bytes", total,
                   limits.max_bytes);
  std::string out;
  out.reserve(total);
  out += head;
  for (const BundleEntry& e : bundle.entries) {
    out += e.manifest_text;
    for (const auto& f : e.files) out.append(reinterpret_cast<const char*>(f.second.data()), f.second.size());
  }
  const std::string digest = sha256_hex(out);
  out += kTrailerTag;
  out += digest;
  out += '\n';
  return out;
}

Bundle parse_bundle(std::string_view bytes, const std::string& source, const BundleLimits& limits) {
  HCWARM_CHECK_ARG(bytes.size() <= limits.max_bytes, "{}: {} bytes, over the bundle limit of {} bytes", source,
                   bytes.size(), limits.max_bytes);
  HCWARM_CHECK_ARG(bytes.substr(0, kBundleMagic.size()) == kBundleMagic, "{}: not an hcwarm kernel bundle", source);
  // The checksum first: a truncated or altered bundle fails here, whatever part was hit.
  const BundleTrailer trailer = parse_bundle_trailer(
      bytes.substr(bytes.size() - std::min<size_t>(bytes.size(), kBundleTrailerMaxBytes)), bytes.size(), source);
  const std::string_view body = bytes.substr(0, trailer.body_bytes);
  HCWARM_CHECK_ARG(sha256_hex(body) == trailer.sha256,
                   "{}: checksum mismatch: the bundle was altered or damaged after it was written", source);

  Reader rd(body, source);
  const std::string_view magic = rd.line(64, "the format line");
  HCWARM_CHECK_ARG(magic == fmt::format("{} {}", kBundleMagic, kBundleFormat), "{}: format line {} is not \"{} {}\"",
                   source, quoted_excerpt(magic), kBundleMagic, kBundleFormat);
  const uint64_t hbytes = parse_count(rd.line(20, "the header length"), source, "header length");
  HCWARM_CHECK_ARG(hbytes <= kMaxHeaderBytes, "{}: header of {} bytes is over the limit of {}", source, hbytes,
                   kMaxHeaderBytes);
  const nlohmann::json h = parse_json_bounded(rd.take(hbytes, "the header"), source + " header");
  HCWARM_CHECK_ARG(rd.take(1, "the header's end") == "\n", "{}: the header does not end where its length says",
                   source);

  Bundle b;
  b.sha256 = trailer.sha256;
  try {
    HCWARM_CHECK_ARG(h.is_object(), "{}: the header is not a JSON object", source);
    const auto& format = h.at("format");
    HCWARM_CHECK_ARG(format.is_number_integer() && format.get<int64_t>() == kBundleFormat,
                     "{}: header format {} is not {}", source, json_excerpt(format), kBundleFormat);
    b.hcwarm_version = h.at("hcwarm_version").get<std::string>();
    HCWARM_CHECK_ARG(b.hcwarm_version == HCWARM_VERSION,
                     "{}: the bundle holds kernels of hcwarm {}, this is hcwarm {} (its cache would never load them)",
                     source, quoted_excerpt(b.hcwarm_version), HCWARM_VERSION);
    if (h.contains("created") && h.at("created").is_string()) b.created = h.at("created").get<std::string>();
    const auto& payload = h.at("payload_bytes");
    HCWARM_CHECK_ARG(payload.is_number_unsigned() && payload.get<uint64_t>() == rd.left(),
                     "{}: payload_bytes {} does not match the {} bytes between header and checksum", source,
                     json_excerpt(payload), rd.left());
    const auto& entries = h.at("entries");
    HCWARM_CHECK_ARG(entries.is_array(), "{}: \"entries\" is not an array", source);
    HCWARM_CHECK_ARG(entries.size() <= limits.max_entries, "{}: {} entries, over the limit of {}", source,
                     entries.size(), limits.max_entries);
    std::set<std::pair<std::string, std::string>> seen;
    for (size_t i = 0; i < entries.size(); ++i) {
      const std::string where = fmt::format("{}: entry {}", source, i);
      const HeaderEntry he = header_entry(entries[i], where);
      HCWARM_CHECK_ARG(seen.emplace(he.ns, he.key).second, "{}: key {} of namespace {} appears twice", where, he.key,
                       he.ns);
      BundleEntry e;
      e.ns = he.ns;
      e.key = he.key;
      e.manifest_text = std::string(rd.take(he.manifest_bytes, where + " manifest"));
      HCWARM_CHECK_ARG(sha256_hex(e.manifest_text) == he.manifest_sha256, "{}: manifest does not match its SHA-256",
                       where);
      try {
        e.manifest = Manifest::parse(e.manifest_text);
      } catch (const Error& err) {
        HCWARM_THROW(ErrorKind::InvalidArgument, "{}: manifest: {}", where, err.message());
      }
      check_manifest(e.manifest, he, where);
      for (const ManifestFile& f : e.manifest.files) {
        const std::string_view data = rd.take(f.size, fmt::format("{} file {}", where, f.name));
        HCWARM_CHECK_ARG(sha256_hex(data) == f.sha256, "{} ({}): file {} does not match its SHA-256", where, e.key,
                         f.name);
        e.files.emplace_back(f.name, as_bytes(data));
      }
      b.entries.push_back(std::move(e));
    }
  } catch (const nlohmann::json::exception& e) {
    HCWARM_THROW(ErrorKind::InvalidArgument, "{}: header: missing or mistyped field: {}", source, json_error_text(e));
  }
  HCWARM_CHECK_ARG(rd.left() == 0, "{}: {} bytes after the last entry", source, rd.left());
  return b;
}

CacheEntryRead read_cache_entry(const DiskCache& cache, std::string_view ns, std::string_view key,
                                std::vector<std::vector<std::byte>>& storage) {
  CacheEntryRead out;
  // The first lookup verifies the whole entry and names its files; one lookup per
  // further file hands out its verified bytes. A manifest that changes between
  // them (the entry was rebuilt meanwhile) is reported, not mixed.
  auto lk = cache.lookup(ns, key, {});
  if (lk.status != DiskCache::Lookup::Status::Ok) {
    out.problem = lk.status == DiskCache::Lookup::Status::Missing ? "missing" : lk.reason;
    return out;
  }
  BundleEntry e;
  e.ns = std::string(ns);
  e.key = std::string(key);
  e.manifest = lk.manifest;
  e.manifest_text = e.manifest.to_json();
  for (const ManifestFile& f : e.manifest.files) {
    auto fl = cache.lookup(ns, key, f.name);
    if (fl.status != DiskCache::Lookup::Status::Ok) {
      out.problem = fl.status == DiskCache::Lookup::Status::Missing ? "missing" : fl.reason;
      return out;
    }
    if (fl.manifest.to_json() != e.manifest_text) {
      out.problem = "the entry changed while it was read";
      return out;
    }
    storage.push_back(std::move(fl.artifact));
    e.files.emplace_back(f.name, std::span<const std::byte>(storage.back()));
  }
  out.entry = std::move(e);
  return out;
}

ImportResult import_bundle(const DiskCache& cache, const Bundle& bundle, double lock_timeout_s) {
  if (auto why = cache.not_a_cache()) HCWARM_THROW(ErrorKind::InvalidArgument, "{}; nothing imported", *why);
  std::set<std::string> namespaces;
  for (const BundleEntry& e : bundle.entries) namespaces.insert(e.ns);
  for (const std::string& ns : namespaces) {
    if (auto read_only = cache.prepare(ns)) {
      HCWARM_THROW(ErrorKind::Io, "cannot import into {}: {}; nothing imported", cache.root().string(), *read_only);
    }
  }
  ImportResult r;
  for (const BundleEntry& e : bundle.entries) {
    using Status = DiskCache::Lookup::Status;
    if (cache.lookup(e.ns, e.key, {}).status == Status::Ok) {
      ++r.already_present;
      continue;
    }
    // As the runtime publishes a compile: under the key's lock, looking again first.
    auto lock = cache.lock_key(e.ns, e.key, lock_timeout_s, fmt::format("kernel {} (key {})", e.manifest.description, e.key));
    const auto lk = cache.lookup(e.ns, e.key, {});
    if (lk.status == Status::Ok) {
      ++r.already_present;
      continue;
    }
    bool replaced = false;
    if (lk.status == Status::Bad) {
      cache.quarantine(e.ns, e.key);
      replaced = true;
    }
    cache.clean_staging(e.ns, e.key);
    if (cache.publish(e.ns, e.key, e.manifest, e.files) == DiskCache::Published::Yes) {
      ++r.imported;
      r.replaced_bad += replaced;
    } else {
      ++r.already_present;
    }
  }
  return r;
}

}  // namespace hcwarm::jit
