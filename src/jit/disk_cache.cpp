#include "jit/disk_cache.hpp"
#include "core/logging.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "jit/sha256.hpp"

namespace hcwarm::jit {
namespace fs = std::filesystem;

namespace {

constexpr const char* kManifest = "manifest.json";
// The standard cache-directory tag (bford.info/cachedir): backup tools skip the
// directory, and `hcwarm cache clear` only empties a directory that carries it.
constexpr const char* kTagName = "CACHEDIR.TAG";
constexpr std::string_view kTagSignature = "Signature: 8a477f597d28d172789f06886806bc55";
constexpr std::string_view kTagText =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This directory is an hcwarm kernel cache: `hcwarm cache clear` empties it.\n";
constexpr size_t kMaxQuarantine = 32;  // per namespace; older ones are deleted

std::string_view as_text(const std::vector<std::byte>& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

bool simple_name(const std::string& n) {
  return !n.empty() && n != "." && n != ".." && n.find('/') == std::string::npos && n != kManifest;
}


// Verifies the entry in dir. Returns the reason it is bad, or nullopt; on success
// fills manifest and, when `want` names one of its files, that file's bytes.
std::optional<std::string> verify_dir(const fs::path& dir, std::string_view version, std::string_view ns,
                                      std::string_view key, std::string_view want, Manifest* manifest_out,
                                      std::vector<std::byte>* want_bytes) {
  try {
    const auto mtext = fsu::read_file(dir / kManifest);
    if (!mtext) return std::string("manifest.json is missing");
    Manifest m;
    try {
      m = Manifest::parse(as_text(*mtext));
    } catch (const Error& e) {
      return fmt::format("manifest.json is unreadable: {}", e.message());
    }
    if (m.key != key) return fmt::format("manifest.json names key {} (entry swapped or moved)", m.key);
    if (m.ns != ns || m.hcwarm_version != version) {
      return fmt::format("manifest.json is for {}/v{}, not {}/v{}", m.ns, m.hcwarm_version, ns, version);
    }
    std::set<std::string> listed;
    bool found_want = want.empty();
    for (const auto& f : m.files) {
      if (!simple_name(f.name) || !listed.insert(f.name).second) return fmt::format("bad file name {} in manifest", quoted_excerpt(f.name));
      const auto bytes = fsu::read_file(dir / f.name);
      if (!bytes) return fmt::format("{} is missing", f.name);
      if (bytes->size() != f.size) {
        return fmt::format("{} has {} bytes, the manifest says {} ({})", f.name, bytes->size(), f.size,
                           bytes->size() < f.size ? "truncated or half-written" : "modified");
      }
      if (sha256_hex(*bytes) != f.sha256) return fmt::format("{} does not match its SHA-256 (corrupted or replaced)", f.name);
      if (f.name == want) {
        found_want = true;
        if (want_bytes) *want_bytes = std::move(*bytes);
      }
    }
    if (!found_want) return fmt::format("the entry has no {}", want);
    std::error_code ec;
    for (const auto& de : fs::directory_iterator(dir, ec)) {
      const std::string n = de.path().filename().string();
      if (n != kManifest && !listed.count(n)) return fmt::format("unexpected file {} in the entry", n);
    }
    if (ec) return fmt::format("cannot list the entry: {}", ec.message());
    if (manifest_out) *manifest_out = std::move(m);
    return std::nullopt;
  } catch (const Error& e) {
    return e.message();
  }
}

// The real directories under p (symlinks are not followed: maintenance never
// works on a tree outside the cache).
std::vector<fs::path> subdirs(const fs::path& p) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(p, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code ec2;
    if (it->symlink_status(ec2).type() == fs::file_type::directory) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Every name under p, whatever its type.
std::vector<fs::path> children(const fs::path& p) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(p, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// "v" followed by a dotted version: the top-level directories hcwarm creates.
bool version_dir_name(const std::string& n) {
  if (n.size() < 2 || n[0] != 'v' || !std::isdigit(static_cast<unsigned char>(n[1]))) return false;
  return std::all_of(n.begin() + 1, n.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
}

bool has_tag(const fs::path& root) {
  try {
    const auto t = fsu::read_file(root / kTagName);
    return t && as_text(*t).substr(0, kTagSignature.size()) == kTagSignature;
  } catch (const Error&) {
    return false;
  }
}

// All namespace dirs: (version, ns, path).
struct NsDir {
  std::string version, ns;
  fs::path dir;
};
std::vector<NsDir> namespaces(const fs::path& root) {
  std::vector<NsDir> out;
  for (const auto& vdir : subdirs(root)) {
    const std::string vn = vdir.filename().string();
    if (!version_dir_name(vn)) continue;
    for (const auto& nsdir : subdirs(vdir)) out.push_back({vn.substr(1), nsdir.filename().string(), nsdir});
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------- Manifest

std::string Manifest::to_json() const {
  nlohmann::ordered_json j;
  j["format"] = kFormat;
  j["key"] = key;
  j["hcwarm_version"] = hcwarm_version;
  j["namespace"] = ns;
  j["compiler"] = compiler;
  j["target"] = target;
  j["family"] = family;
  j["description"] = description;
  j["params"] = nlohmann::ordered_json::array();
  for (const auto& [k, v] : params) j["params"].push_back({k, v});
  j["files"] = nlohmann::ordered_json::array();
  for (const auto& f : files) j["files"].push_back({{"name", f.name}, {"size", f.size}, {"sha256", f.sha256}});
  j["created"] = created;
  return j.dump(2) + "\n";
}

Manifest Manifest::parse(std::string_view text) {
  // Depth-checked: a planted, deeply nested manifest must not overflow the stack.
  const nlohmann::json j = parse_json_bounded(text, "manifest.json");
  try {
    HCWARM_CHECK_ARG(j.is_object(), "not a JSON object");
    // Integers are checked as such: nlohmann's get<int> of a float out of range is undefined behaviour.
    const auto& format = j.at("format");
    HCWARM_CHECK_ARG(format.is_number_integer() && format.get<int64_t>() == kFormat, "format {} is not {}",
                     json_excerpt(format), kFormat);
    Manifest m;
    m.key = j.at("key").get<std::string>();
    HCWARM_CHECK_ARG(is_sha256_hex(m.key), "key {} is not a SHA-256", quoted_excerpt(m.key));
    m.hcwarm_version = j.at("hcwarm_version").get<std::string>();
    m.ns = j.at("namespace").get<std::string>();
    m.compiler = j.at("compiler").get<std::string>();
    m.target = j.at("target").get<std::string>();
    m.family = j.at("family").get<std::string>();
    m.description = j.at("description").get<std::string>();
    for (const auto& p : j.at("params")) m.params.emplace_back(p.at(0).get<std::string>(), p.at(1).get<std::string>());
    for (const auto& f : j.at("files")) {
      const auto& size = f.at("size");
      HCWARM_CHECK_ARG(size.is_number_unsigned(), "file size {} is not a non-negative integer", json_excerpt(size));
      ManifestFile mf{f.at("name").get<std::string>(), size.get<uint64_t>(), f.at("sha256").get<std::string>()};
      HCWARM_CHECK_ARG(is_sha256_hex(mf.sha256), "file {} has a bad sha256", excerpt(mf.name));
      m.files.push_back(std::move(mf));
    }
    HCWARM_CHECK_ARG(!m.files.empty(), "no files");
    if (j.contains("created")) m.created = j.at("created").get<std::string>();
    return m;
  } catch (const nlohmann::json::exception& e) {
    HCWARM_THROW(ErrorKind::InvalidArgument, "missing or mistyped field: {}", json_error_text(e));
  }
}

// ---------------------------------------------------------------- DiskCache: layout

DiskCache::DiskCache(fs::path root, CacheTrust trust) : root_(std::move(root)), trust_(trust) {}

std::optional<std::string> DiskCache::not_a_cache() const {
  std::error_code ec;
  if (!fs::exists(root_, ec) || has_tag(root_)) return std::nullopt;
  // Untagged: an hcwarm cache holds nothing but its version directories.
  for (const auto& c : children(root_)) {
    const std::string n = c.filename().string();
    if (n.starts_with(std::string(".") + kTagName + ".")) continue;  // another process writing the tag
    std::error_code ec2;
    if (!(version_dir_name(n) && fs::symlink_status(c, ec2).type() == fs::file_type::directory)) {
      // Another process may have tagged the root since the first look (the tag is then listed).
      if (has_tag(root_)) return std::nullopt;
      return fmt::format("{} is not an hcwarm cache directory: it holds {} and no {}; use a directory of its own",
                         root_.string(), quoted_excerpt(n), kTagName);
    }
  }
  return std::nullopt;
}

fs::path DiskCache::version_dir() const { return root_ / ("v" HCWARM_VERSION); }
fs::path DiskCache::namespace_dir(std::string_view ns) const { return version_dir() / std::string(ns); }
fs::path DiskCache::entry_dir(std::string_view ns, std::string_view key) const {
  return namespace_dir(ns) / "entries" / std::string(key);
}

// ---------------------------------------------------------------- runtime side

std::optional<std::string> DiskCache::prepare(std::string_view ns) const {
  static constexpr const char* kSubdirs[] = {"entries", "locks", "staging", "quarantine"};
  const fs::path d = namespace_dir(ns);
  // Code is loaded from here: check what exists before creating anything in it.
  bool foreign = false;
  auto check = [&](const fs::path& p, bool follow) {
    struct stat st {};
    if ((follow ? ::stat(p.c_str(), &st) : ::lstat(p.c_str(), &st)) != 0) {
      if (errno == ENOENT) return;
      HCWARM_THROW(ErrorKind::Io, "cannot stat {}: {}", p.string(), errno_string(errno));
    }
    if (!S_ISDIR(st.st_mode)) HCWARM_THROW(ErrorKind::Io, "{} is not a directory", p.string());
    if (auto why = fsu::distrust(p, st, trust_ == CacheTrust::Shared)) HCWARM_THROW(ErrorKind::Io, "{}", *why);
    foreign = foreign || st.st_uid != ::geteuid();
  };
  check(root_, true);  // the root itself may be a symlink the user chose
  if (auto why = not_a_cache()) HCWARM_THROW(ErrorKind::Io, "{}", *why);
  check(version_dir(), false);
  check(d, false);
  for (const char* sub : kSubdirs) check(d / sub, false);

  std::optional<std::string> read_only;
  if (foreign) {
    read_only = fmt::format("{} belongs to another user", root_.string());
  } else {
    try {
      for (const char* sub : kSubdirs) fsu::make_dirs(d / sub);
      if (!has_tag(root_)) write_tag();
    } catch (const Error& e) {
      read_only = e.message();
    }
  }
  if (read_only) {
    struct stat st {};
    if (::lstat((d / "entries").c_str(), &st) != 0) throw Error(ErrorKind::Io, *read_only, __FILE__, __LINE__);
    return read_only;  // nothing to write, but there may be entries to load
  }
  // Proves the directory is writable now rather than at the first publish.
  // (no fsync: only the permission / space check matters here).
  const fs::path probe = d / "staging" / fmt::format("probe.{}.{}", ::getpid(), fsu::random_suffix());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return fmt::format("cannot create {}: {}", probe.string(), errno_string(errno));
  const bool wrote = ::write(fd, "ok", 2) == 2;
  const int err = errno;
  ::close(fd);
  ::unlink(probe.c_str());
  if (!wrote) return fmt::format("cannot write {}: {}", probe.string(), errno_string(err));
  sweep_staging(d, {});
  return std::nullopt;
}

void DiskCache::write_tag() const {
  const fs::path tmp = root_ / fmt::format(".{}.{}.{}", kTagName, ::getpid(), fsu::random_suffix());
  fsu::write_file_durable(tmp, kTagText);
  if (::rename(tmp.c_str(), (root_ / kTagName).c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    HCWARM_THROW(ErrorKind::Io, "cannot create {}: {}", (root_ / kTagName).string(), errno_string(err));
  }
}

fsu::FileLock DiskCache::lock_key(std::string_view ns, std::string_view key, double timeout_s,
                                  std::string_view what) const {
  return fsu::FileLock::acquire(namespace_dir(ns) / "locks" / (std::string(key) + ".lock"), timeout_s, what);
}

fsu::FileLock DiskCache::try_lock_key(std::string_view ns, std::string_view key) const {
  return fsu::FileLock::try_acquire(namespace_dir(ns) / "locks" / (std::string(key) + ".lock"));
}

void DiskCache::sweep_staging(const fs::path& ns_dir, std::string_view only_key) const {
  std::error_code ec;
  const fs::path staging = ns_dir / "staging";
  for (auto it = fs::directory_iterator(staging, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::string key = name.substr(0, name.find('.'));
    if (!only_key.empty()) {
      // The caller holds only_key's lock: every staging dir of that key is dead.
      if (key == only_key) fsu::remove_tree(it->path());
      continue;
    }
    if (!is_sha256_hex(key)) {
      // Probes and foreign files: remove when old.
      std::error_code ec2;
      const auto age = fs::file_time_type::clock::now() - fs::last_write_time(it->path(), ec2);
      if (!ec2 && age > std::chrono::hours(1)) fsu::remove_tree(it->path());
      continue;
    }
    try {
      auto lock = fsu::FileLock::try_acquire(ns_dir / "locks" / (key + ".lock"));
      if (lock.owns()) {
        log::debug("jit cache: removing stale staging dir {}", it->path().string());
        fsu::remove_tree(it->path());
      }
    } catch (const Error&) {
      // Read-only locks dir: leave it.
    }
  }
}

void DiskCache::clean_staging(std::string_view ns, std::string_view key) const { sweep_staging(namespace_dir(ns), key); }

std::unique_ptr<fsu::ScratchDir> DiskCache::make_work_dir(std::string_view ns, std::string_view key) const {
  return std::make_unique<fsu::ScratchDir>(namespace_dir(ns) / "staging",
                                           fmt::format("{}.{}.work.", key, ::getpid()));
}

DiskCache::Lookup DiskCache::lookup(std::string_view ns, std::string_view key, std::string_view artifact_name) const {
  Lookup r;
  const fs::path dir = entry_dir(ns, key);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return r;  // Missing
  if (!S_ISDIR(st.st_mode)) {
    r.status = Lookup::Status::Bad;
    r.reason = "the entry is not a directory";
    return r;
  }
  // The directories above were checked by prepare(); the entry and its files here.
  // Non-regular files are left to verify_dir, which refuses them (a bad entry).
  const bool any_owner = trust_ == CacheTrust::Shared;
  if (auto why = fsu::distrust(dir, st, any_owner)) HCWARM_THROW(ErrorKind::Io, "{}", *why);
  std::error_code ec;
  for (const auto& de : fs::directory_iterator(dir, ec)) {
    struct stat fst {};
    if (::lstat(de.path().c_str(), &fst) != 0 || !S_ISREG(fst.st_mode)) continue;
    if (auto why = fsu::distrust(de.path(), fst, any_owner)) HCWARM_THROW(ErrorKind::Io, "{}", *why);
  }
  auto bad = verify_dir(dir, HCWARM_VERSION, ns, key, artifact_name, &r.manifest, &r.artifact);
  if (bad) {
    r.status = Lookup::Status::Bad;
    r.reason = std::move(*bad);
    r.artifact.clear();
    return r;
  }
  r.status = Lookup::Status::Ok;
  ::utimensat(AT_FDCWD, dir.c_str(), nullptr, 0);  // LRU; fails harmlessly on a read-only cache
  return r;
}

fs::path DiskCache::quarantine(std::string_view ns, std::string_view key) const {
  const fs::path qdir = namespace_dir(ns) / "quarantine";
  fsu::make_dirs(qdir);
  const fs::path dest = qdir / fmt::format("{}.{}.{}", key, ::getpid(), fsu::random_suffix());
  if (::rename(entry_dir(ns, key).c_str(), dest.c_str()) != 0) {
    const int err = errno;
    if (err == ENOENT) return {};
    HCWARM_THROW(ErrorKind::Io, "cannot move {} aside: {}", entry_dir(ns, key).string(), errno_string(err));
  }
  // Bound the quarantine: drop the oldest beyond kMaxQuarantine.
  std::vector<std::pair<fs::file_time_type, fs::path>> q;
  std::error_code ec;
  for (const auto& d : subdirs(qdir)) q.emplace_back(fs::last_write_time(d, ec), d);
  if (q.size() > kMaxQuarantine) {
    std::sort(q.begin(), q.end());
    for (size_t i = 0; i + kMaxQuarantine < q.size(); ++i) fsu::remove_tree(q[i].second);
  }
  return dest;
}

DiskCache::Published DiskCache::publish(std::string_view ns, std::string_view key, Manifest manifest,
                                        const std::vector<std::pair<std::string, std::span<const std::byte>>>& files) const {
  hook("publish-begin");
  const fs::path ns_dir = namespace_dir(ns);
  const fs::path entries = ns_dir / "entries";
  std::string tmpl = (ns_dir / "staging" / fmt::format("{}.{}.XXXXXX", key, ::getpid())).string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    HCWARM_THROW(ErrorKind::Io, "cannot create a staging dir in {}: {}", (ns_dir / "staging").string(),
                 errno_string(errno));
  }
  const fs::path staging = tmpl;
  struct Cleanup {
    fs::path p;
    bool armed = true;
    ~Cleanup() {
      if (armed) fsu::remove_tree(p);
    }
  } cleanup{staging};  // mkdtemp made it 0700, which the entry keeps
  hook("publish-staging-created");

  manifest.key = std::string(key);
  manifest.ns = std::string(ns);
  manifest.hcwarm_version = HCWARM_VERSION;
  manifest.created = fsu::utc_now();
  manifest.files.clear();
  for (const auto& [name, bytes] : files) {
    HCWARM_ASSERT(simple_name(name), "bad cache file name {}", quoted_excerpt(name));
    fsu::write_file_durable(staging / name, bytes);
    manifest.files.push_back({name, bytes.size(), sha256_hex(bytes)});
    hook("publish-file-written");
  }
  fsu::write_file_durable(staging / kManifest, manifest.to_json());
  hook("publish-manifest-written");
  fsu::fsync_dir(staging);
  hook("publish-dir-synced");

  const fs::path final_dir = entries / std::string(key);
  if (::rename(staging.c_str(), final_dir.c_str()) != 0) {
    const int err = errno;
    if (err == EEXIST || err == ENOTEMPTY) {
      log::debug("jit cache: {} was published by another process first; using theirs", key);
      return Published::LostRace;  // cleanup discards ours
    }
    HCWARM_THROW(ErrorKind::Io, "cannot rename {} to {}: {}", staging.string(), final_dir.string(), errno_string(err));
  }
  cleanup.armed = false;
  hook("publish-renamed");
  fsu::fsync_dir(entries);
  hook("publish-done");
  return Published::Yes;
}

// ---------------------------------------------------------------- maintenance

std::vector<CacheEntry> DiskCache::list() const {
  std::vector<CacheEntry> out;
  for (const auto& n : namespaces(root_)) {
    for (const auto& d : children(n.dir / "entries")) {
      CacheEntry e;
      e.dir = d;
      e.version = n.version;
      e.ns = n.ns;
      e.key = d.filename().string();
      e.bytes = fsu::tree_bytes(d);
      std::error_code ec;
      e.last_used = fs::last_write_time(d, ec);
      try {
        if (auto t = fsu::read_file(d / kManifest)) e.description = Manifest::parse(as_text(*t)).description;
      } catch (const Error&) {
      }
      out.push_back(std::move(e));
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.last_used < b.last_used; });
  return out;
}

std::optional<std::string> DiskCache::check_entry(const CacheEntry& e) {
  if (!is_sha256_hex(e.key)) return fmt::format("{} is not a key", quoted_excerpt(e.key));
  std::error_code ec;
  const auto type = fs::symlink_status(e.dir, ec).type();
  if (type == fs::file_type::symlink) return std::string("the entry is a symlink, not a directory");
  if (type != fs::file_type::directory) return std::string("the entry is not a directory");
  return verify_dir(e.dir, e.version, e.ns, e.key, {}, nullptr, nullptr);
}

VerifyResult DiskCache::verify(bool quarantine_bad) const {
  VerifyResult r;
  for (auto& e : list()) {
    ++r.checked;
    auto bad = check_entry(e);
    if (!bad) continue;
    if (quarantine_bad) {
      try {
        const fs::path ns_dir = e.dir.parent_path().parent_path();
        auto lock = fsu::FileLock::acquire(ns_dir / "locks" / (e.key + ".lock"));
        if (check_entry(e)) {  // still bad under the lock
          const fs::path dest = ns_dir / "quarantine" / fmt::format("{}.{}.{}", e.key, ::getpid(), fsu::random_suffix());
          fsu::make_dirs(dest.parent_path());
          if (::rename(e.dir.c_str(), dest.c_str()) == 0) ++r.quarantined;
        }
      } catch (const Error& err) {
        log::warn("jit cache: cannot move {} aside: {}", e.dir.string(), err.message());
      }
    }
    r.bad.push_back({std::move(e), std::move(*bad)});
  }
  return r;
}

uint64_t DiskCache::total_bytes() const { return fsu::tree_bytes(root_); }

bool DiskCache::remove_entry_locked(const CacheEntry& e) const {
  const fs::path ns_dir = e.dir.parent_path().parent_path();
  try {
    auto lock = fsu::FileLock::try_acquire(ns_dir / "locks" / (e.key + ".lock"));
    if (!lock.owns()) return false;
    // Rename first so that a reader never sees a half-deleted entry.
    const fs::path trash = ns_dir / "staging" / fmt::format("{}.{}.trash.{}", e.key, ::getpid(), fsu::random_suffix());
    fsu::make_dirs(trash.parent_path());
    if (::rename(e.dir.c_str(), trash.c_str()) != 0) return false;
    fsu::remove_tree(trash);
    return true;
  } catch (const Error&) {
    return false;
  }
}

PruneResult DiskCache::prune(uint64_t max_bytes) const {
  if (auto why = not_a_cache()) HCWARM_THROW(ErrorKind::InvalidArgument, "{}; nothing removed", *why);
  PruneResult r;
  r.bytes_before = total_bytes();
  for (const auto& n : namespaces(root_)) {
    for (const auto& q : subdirs(n.dir / "quarantine")) {
      if (fsu::remove_tree(q)) ++r.removed_other;
    }
    std::error_code ec;
    const auto before = fs::exists(n.dir / "staging", ec) ? std::distance(fs::directory_iterator(n.dir / "staging", ec), {}) : 0;
    sweep_staging(n.dir, {});
    const auto after = fs::exists(n.dir / "staging", ec) ? std::distance(fs::directory_iterator(n.dir / "staging", ec), {}) : 0;
    r.removed_other += static_cast<int>(before - after);
  }
  auto entries = list();  // oldest first
  uint64_t total = 0;
  for (const auto& e : entries) total += e.bytes;
  for (const auto& e : entries) {
    if (total <= max_bytes) break;
    if (!is_sha256_hex(e.key)) continue;  // not a name hcwarm gives an entry: not ours to remove
    if (remove_entry_locked(e)) {
      ++r.removed;
      total -= e.bytes;
    } else {
      ++r.busy;
    }
  }
  r.bytes_after = total_bytes();
  return r;
}

PruneResult DiskCache::clear() const { return prune(0); }

}  // namespace hcwarm::jit
