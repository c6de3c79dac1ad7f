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
#include <mutex>
#include <set>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "jit/dir_fd.hpp"
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


// Verifies the entry open as dir. Returns the reason it is bad, or nullopt; on
// success fills manifest and, when `want` names one of its files, that file's bytes.
std::optional<std::string> verify_dir(const fsu::DirFd& dir, std::string_view version, std::string_view ns,
                                      std::string_view key, std::string_view want, Manifest* manifest_out,
                                      std::vector<std::byte>* want_bytes) {
  try {
    const auto mtext = dir.read(kManifest);
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
      const auto bytes = dir.read(f.name);
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
    for (const auto& n : dir.names()) {
      if (n != kManifest && !listed.count(n)) return fmt::format("unexpected file {} in the entry", quoted_excerpt(n));
    }
    if (manifest_out) *manifest_out = std::move(m);
    return std::nullopt;
  } catch (const Error& e) {
    return e.message();
  }
}

// "v" followed by a dotted version: the top-level directories hcwarm creates.
bool version_dir_name(const std::string& n) {
  if (n.size() < 2 || n[0] != 'v' || !std::isdigit(static_cast<unsigned char>(n[1]))) return false;
  return std::all_of(n.begin() + 1, n.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
}

bool has_tag(const fsu::DirFd& root) {
  try {
    const auto t = root.read(kTagName);
    return t && as_text(*t).substr(0, kTagSignature.size()) == kTagSignature;
  } catch (const Error&) {
    return false;
  }
}

bool is_dir(const std::optional<struct stat>& st) { return st && S_ISDIR(st->st_mode); }

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

DiskCache::DiskCache(fs::path root, CacheTrust trust) : root_(std::move(root)), trust_(std::move(trust)) {}
DiskCache::~DiskCache() = default;

fs::path DiskCache::version_dir() const { return root_ / ("v" HCWARM_VERSION); }
fs::path DiskCache::namespace_dir(std::string_view ns) const { return version_dir() / std::string(ns); }
fs::path DiskCache::entry_dir(std::string_view ns, std::string_view key) const {
  return namespace_dir(ns) / "entries" / std::string(key);
}

void DiskCache::require_trusted(const fsu::DirFd& dir) const {
  if (auto why = trust_.distrust(dir.path(), dir.st())) HCWARM_THROW(ErrorKind::Io, "{}", *why);
}

std::optional<fsu::DirFd> DiskCache::open_root() const {
  auto root = fsu::DirFd::open(root_, /*follow=*/true);  // the root itself may be a symlink the user chose
  if (!root) return root;
  require_trusted(*root);
  if (auto why = trust_.insecure_ancestor(root->fd(), root_)) HCWARM_THROW(ErrorKind::Io, "{}", *why);
  return root;
}

std::optional<fsu::DirFd> DiskCache::trusted_child(const fsu::DirFd& parent, std::string_view name) const {
  auto c = parent.child(name);  // a symlink or non-directory throws Io naming it
  if (c) require_trusted(*c);
  return c;
}

std::optional<std::string> DiskCache::not_a_cache_at(const fsu::DirFd& root) const {
  if (has_tag(root)) return std::nullopt;
  // Untagged: an hcwarm cache holds nothing but its version directories.
  for (const auto& n : root.names()) {
    if (n.starts_with(std::string(".") + kTagName + ".")) continue;  // another process writing the tag
    if (!(version_dir_name(n) && is_dir(root.stat_child(n)))) {
      // Another process may have tagged the root since the first look (the tag is then listed).
      if (has_tag(root)) return std::nullopt;
      return fmt::format("{} is not an hcwarm cache directory: it holds {} and no {}; use a directory of its own",
                         root_.string(), quoted_excerpt(n), kTagName);
    }
  }
  return std::nullopt;
}

std::optional<std::string> DiskCache::not_a_cache() const {
  try {
    const auto root = fsu::DirFd::open(root_, true);
    return root ? not_a_cache_at(*root) : std::nullopt;
  } catch (const Error& e) {
    return e.message();
  }
}

std::optional<fsu::DirFd> DiskCache::layout_child(const fsu::DirFd& parent, std::string_view name, Walk walk) const {
  if (walk == Walk::Trusted) return trusted_child(parent, name);
  const auto st = parent.stat_child(name);
  if (!st) return std::nullopt;
  if (S_ISLNK(st->st_mode)) {
    HCWARM_THROW(ErrorKind::Io, "{} is a symlink; refusing to work in a cache whose layout has links",
                 (parent / name).string());
  }
  if (!S_ISDIR(st->st_mode)) return std::nullopt;  // read-only listing: nothing to list there
  return parent.child(name);
}

std::shared_ptr<const NamespaceDirs> DiskCache::walk_namespace(const fsu::DirFd& root, const std::string& vname,
                                                               std::string_view ns, Walk walk) const {
  auto v = layout_child(root, vname, walk);
  if (!v) return nullptr;
  auto d = layout_child(*v, ns, walk);
  if (!d) return nullptr;
  auto entries = layout_child(*d, "entries", walk);
  if (!entries) return nullptr;
  auto out = std::make_shared<NamespaceDirs>(NamespaceDirs{std::move(*d), std::move(*entries), {}, {}, {}});
  out->locks = layout_child(out->ns, "locks", walk);
  out->staging = layout_child(out->ns, "staging", walk);
  out->quarantine = layout_child(out->ns, "quarantine", walk);
  return out;
}

std::shared_ptr<const NamespaceDirs> DiskCache::dirs(std::string_view ns) const {
  {
    std::lock_guard lock(mu_);
    if (auto it = open_.find(ns); it != open_.end()) return it->second;
  }
  const auto root = open_root();
  return root ? walk_namespace(*root, "v" HCWARM_VERSION, ns, Walk::Trusted) : nullptr;
}

const NamespaceDirs& DiskCache::prepared(std::string_view ns) const {
  std::lock_guard lock(mu_);
  auto it = open_.find(ns);
  HCWARM_ASSERT(it != open_.end(), "the cache namespace {} is used before prepare()", ns);
  return *it->second;
}

const fsu::DirFd& DiskCache::writable_dir(const std::optional<fsu::DirFd>& d, std::string_view what) const {
  if (!d) HCWARM_THROW(ErrorKind::Io, "{} has no {} directory (a read-only cache)", root_.string(), what);
  return *d;
}

std::optional<std::string> DiskCache::untrusted(std::string_view ns) const {
  try {
    const auto root = open_root();
    if (!root) {
      // Not there yet: would the directory it is created in keep it safe?
      std::error_code ec;
      fs::path up = fs::absolute(root_, ec);
      std::optional<fsu::DirFd> parent;
      while (!parent && up.has_parent_path() && up.parent_path() != up) {
        up = up.parent_path();
        try {
          parent = fsu::DirFd::open(up, true);
        } catch (const Error&) {
          return std::nullopt;  // not creatable at all: no trust question
        }
      }
      return parent ? trust_.insecure_parent(parent->fd(), root_) : std::nullopt;
    }
    if (root && !ns.empty()) walk_namespace(*root, "v" HCWARM_VERSION, ns, Walk::Trusted);
    return std::nullopt;
  } catch (const Error& e) {
    return e.message();
  }
}

// ---------------------------------------------------------------- runtime side

std::optional<std::string> DiskCache::prepare(std::string_view ns) const {
  static constexpr const char* kSubdirs[] = {"entries", "locks", "staging", "quarantine"};
  // Code is loaded from here: check what exists before creating anything in it,
  // then work only through the descriptors checked.
  auto root = open_root();
  if (!root) {
    fsu::make_dirs(root_);
    root = open_root();
    if (!root) HCWARM_THROW(ErrorKind::Io, "{} disappeared while it was created", root_.string());
  }
  if (auto why = not_a_cache_at(*root)) HCWARM_THROW(ErrorKind::Io, "{}", *why);
  const bool foreign = root->st().st_uid != ::geteuid();
  std::optional<std::string> read_only;
  if (foreign) {
    read_only = fmt::format("{} belongs to another user", root_.string());
  } else {
    try {
      auto v = trusted_child(*root, "v" HCWARM_VERSION);
      if (!v) v = root->make_child("v" HCWARM_VERSION);
      auto d = trusted_child(*v, ns);
      if (!d) d = v->make_child(ns);
      for (const char* sub : kSubdirs) {
        if (!trusted_child(*d, sub)) d->make_child(sub);
      }
      if (!has_tag(*root)) write_tag(*root);
    } catch (const Error& e) {
      // A trust failure is not a read-only cache: nothing is loaded from it.
      if (untrusted(ns)) throw;
      read_only = e.message();
    }
  }
  auto nd = walk_namespace(*root, "v" HCWARM_VERSION, ns, Walk::Trusted);
  if (!nd) HCWARM_THROW(ErrorKind::Io, "{}", read_only ? *read_only : fmt::format("{} has no entries directory", namespace_dir(ns).string()));
  if (!read_only) {
    // Proves the directory is writable now rather than at the first publish.
    // (no fsync: only the permission / space check matters here).
    const fsu::DirFd& staging = writable_dir(nd->staging, "staging");
    const std::string probe = fmt::format("probe.{}.{}", ::getpid(), fsu::random_suffix());
    const int fd = ::openat(staging.fd(), probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
      read_only = fmt::format("cannot create {}: {}", (staging / probe).string(), errno_string(errno));
    } else {
      const bool wrote = ::write(fd, "ok", 2) == 2;
      const int err = errno;
      ::close(fd);
      ::unlinkat(staging.fd(), probe.c_str(), 0);
      if (!wrote) read_only = fmt::format("cannot write {}: {}", (staging / probe).string(), errno_string(err));
    }
    if (!read_only) sweep_staging(*nd, {});
  }
  std::lock_guard lock(mu_);
  // The first prepare's descriptors stay: callers hold references to them.
  open_.emplace(std::string(ns), std::move(nd));
  return read_only;  // when set: nothing to write, but there may be entries to load
}

void DiskCache::write_tag(const fsu::DirFd& root) const {
  const std::string tmp = fmt::format(".{}.{}.{}", kTagName, ::getpid(), fsu::random_suffix());
  root.write_durable(tmp, std::as_bytes(std::span<const char>(kTagText.data(), kTagText.size())));
  if (const int err = root.rename(tmp, root, kTagName)) {
    root.remove_tree(tmp);
    HCWARM_THROW(ErrorKind::Io, "cannot create {}: {}", (root / kTagName).string(), errno_string(err));
  }
}

fsu::FileLock DiskCache::lock_key(std::string_view ns, std::string_view key, double timeout_s,
                                  std::string_view what) const {
  return fsu::FileLock::acquire_at(writable_dir(prepared(ns).locks, "locks"), std::string(key) + ".lock", timeout_s,
                                   what);
}

fsu::FileLock DiskCache::try_lock_key(std::string_view ns, std::string_view key) const {
  return fsu::FileLock::try_acquire_at(writable_dir(prepared(ns).locks, "locks"), std::string(key) + ".lock");
}

void DiskCache::sweep_staging(const NamespaceDirs& nd, std::string_view only_key, std::vector<std::string>* failed,
                              int* removed) const {
  if (!nd.staging) return;
  const fsu::DirFd& staging = *nd.staging;
  auto remove = [&](const std::string& name) {
    int err = 0;
    if (staging.remove_tree(name, &err)) {
      if (removed) ++*removed;
    } else if (failed) {
      failed->push_back(fmt::format("cannot remove {}: {}", (staging / name).string(), errno_string(err)));
    }
  };
  std::vector<std::string> names;
  try {
    names = staging.names();
  } catch (const Error& e) {
    if (failed) failed->push_back(e.message());
    return;
  }
  for (const auto& name : names) {
    const std::string key = name.substr(0, name.find('.'));
    if (!only_key.empty()) {
      // The caller holds only_key's lock: every staging dir of that key is dead.
      if (key == only_key) remove(name);
      continue;
    }
    if (!is_sha256_hex(key)) {
      // Probes and foreign files: remove when old.
      std::optional<struct stat> st;
      try {
        st = staging.stat_child(name);
      } catch (const Error&) {
      }
      if (st && std::time(nullptr) - st->st_mtime > 3600) remove(name);
      continue;
    }
    try {
      if (!nd.locks) continue;
      auto lock = fsu::FileLock::try_acquire_at(*nd.locks, key + ".lock");
      if (lock.owns()) {
        log::debug("jit cache: removing stale staging dir {}", (staging / name).string());
        remove(name);
      }
    } catch (const Error& e) {
      if (failed) failed->push_back(e.message());  // e.g. a read-only mount: left as it is
    }
  }
}

void DiskCache::clean_staging(std::string_view ns, std::string_view key) const { sweep_staging(prepared(ns), key); }

std::unique_ptr<fsu::ScratchDir> DiskCache::make_work_dir(std::string_view ns, std::string_view key) const {
  return std::make_unique<fsu::ScratchDir>(writable_dir(prepared(ns).staging, "staging"),
                                           fmt::format("{}.{}.work.", key, ::getpid()));
}

DiskCache::Lookup DiskCache::lookup(std::string_view ns, std::string_view key, std::string_view artifact_name) const {
  Lookup r;
  const auto nd = dirs(ns);
  if (!nd) return r;  // Missing
  const std::string k(key);
  const auto st = nd->entries.stat_child(k);
  if (!st) return r;  // Missing
  if (!S_ISDIR(st->st_mode)) {
    r.status = Lookup::Status::Bad;
    r.reason = S_ISLNK(st->st_mode) ? "the entry is a symlink, not a directory" : "the entry is not a directory";
    return r;
  }
  std::optional<fsu::DirFd> dir;
  try {
    dir = nd->entries.child(k);
  } catch (const Error& e) {  // swapped for a symlink since the look above
    r.status = Lookup::Status::Bad;
    r.reason = e.message();
    return r;
  }
  if (!dir) return r;
  // The directories above were checked when they were opened; the entry and its
  // files here. Non-regular files are left to verify_dir, which refuses them.
  require_trusted(*dir);
  for (const auto& n : dir->names()) {
    const auto fst = dir->stat_child(n);
    if (!fst || !S_ISREG(fst->st_mode)) continue;
    if (auto why = trust_.distrust(*dir / n, *fst)) HCWARM_THROW(ErrorKind::Io, "{}", *why);
  }
  auto bad = verify_dir(*dir, HCWARM_VERSION, ns, key, artifact_name, &r.manifest, &r.artifact);
  if (bad) {
    r.status = Lookup::Status::Bad;
    r.reason = std::move(*bad);
    r.artifact.clear();
    return r;
  }
  r.status = Lookup::Status::Ok;
  dir->touch();  // LRU; fails harmlessly on a read-only cache
  return r;
}

fs::path DiskCache::quarantine(std::string_view ns, std::string_view key) const {
  const NamespaceDirs& nd = prepared(ns);
  const fsu::DirFd& qdir = writable_dir(nd.quarantine, "quarantine");
  const std::string dest = fmt::format("{}.{}.{}", key, ::getpid(), fsu::random_suffix());
  if (const int err = nd.entries.rename(key, qdir, dest)) {
    if (err == ENOENT) return {};
    HCWARM_THROW(ErrorKind::Io, "cannot move {} aside: {}", (nd.entries / key).string(), errno_string(err));
  }
  bound_quarantine(qdir);
  return qdir / dest;
}

void DiskCache::bound_quarantine(const fsu::DirFd& qdir) const {
  // Drop the oldest beyond kMaxQuarantine.
  std::vector<std::pair<time_t, std::string>> q;
  for (const auto& n : qdir.names()) {
    if (const auto st = qdir.stat_child(n); is_dir(st)) q.emplace_back(st->st_mtime, n);
  }
  if (q.size() > kMaxQuarantine) {
    std::sort(q.begin(), q.end());
    for (size_t i = 0; i + kMaxQuarantine < q.size(); ++i) qdir.remove_tree(q[i].second);
  }
}

DiskCache::Published DiskCache::publish(std::string_view ns, std::string_view key, Manifest manifest,
                                        const std::vector<std::pair<std::string, std::span<const std::byte>>>& files) const {
  hook("publish-begin");
  const NamespaceDirs& nd = prepared(ns);
  const fsu::DirFd& staging_root = writable_dir(nd.staging, "staging");
  const std::string name = staging_root.make_unique_child(fmt::format("{}.{}.", key, ::getpid()));
  struct Cleanup {
    const fsu::DirFd& parent;
    std::string name;
    bool armed = true;
    ~Cleanup() {
      if (armed) parent.remove_tree(name);
    }
  } cleanup{staging_root, name};  // made 0700, which the entry keeps
  const auto staging = staging_root.child(name);
  if (!staging) HCWARM_THROW(ErrorKind::Io, "{} disappeared", (staging_root / name).string());
  hook("publish-staging-created");

  manifest.key = std::string(key);
  manifest.ns = std::string(ns);
  manifest.hcwarm_version = HCWARM_VERSION;
  manifest.created = fsu::utc_now();
  manifest.files.clear();
  for (const auto& [fname, bytes] : files) {
    HCWARM_ASSERT(simple_name(fname), "bad cache file name {}", quoted_excerpt(fname));
    staging->write_durable(fname, bytes);
    manifest.files.push_back({fname, bytes.size(), sha256_hex(bytes)});
    hook("publish-file-written");
  }
  const std::string mtext = manifest.to_json();
  staging->write_durable(kManifest, std::as_bytes(std::span<const char>(mtext.data(), mtext.size())));
  hook("publish-manifest-written");
  staging->fsync();
  hook("publish-dir-synced");

  if (const int err = staging_root.rename(name, nd.entries, key)) {
    if (err == EEXIST || err == ENOTEMPTY) {
      log::debug("jit cache: {} was published by another process first; using theirs", key);
      return Published::LostRace;  // cleanup discards ours
    }
    HCWARM_THROW(ErrorKind::Io, "cannot rename {} to {}: {}", (staging_root / name).string(),
                 (nd.entries / key).string(), errno_string(err));
  }
  cleanup.armed = false;
  hook("publish-renamed");
  nd.entries.fsync();
  hook("publish-done");
  return Published::Yes;
}

// ---------------------------------------------------------------- maintenance

std::vector<DiskCache::MaintainedNamespace> DiskCache::maintained_namespaces(Walk walk) const {
  // No layout directory is reached through a link; before anything is changed
  // (Walk::Trusted) each must pass the runtime's trust rules too, so that
  // maintenance (perhaps root's) never reaches outside a tree it may work in.
  std::vector<MaintainedNamespace> out;
  auto root = walk == Walk::Trusted ? open_root() : fsu::DirFd::open(root_, true);
  if (!root && walk == Walk::Trusted) HCWARM_THROW(ErrorKind::Io, "{} does not exist; nothing done", root_.string());
  if (!root) return out;
  if (auto why = not_a_cache_at(*root)) HCWARM_THROW(ErrorKind::InvalidArgument, "{}; nothing done", *why);
  for (const auto& vn : root->names()) {
    if (!version_dir_name(vn)) continue;
    auto v = layout_child(*root, vn, walk);
    if (!v) continue;
    for (const auto& nsn : v->names()) {
      const auto st = v->stat_child(nsn);
      if (!st || S_ISREG(st->st_mode)) continue;  // the host's compile-slot lock files
      if (S_ISLNK(st->st_mode) || !S_ISDIR(st->st_mode)) {
        HCWARM_THROW(ErrorKind::Io, "{} is {}; refusing to work in a cache whose layout has links",
                     (*v / nsn).string(), S_ISLNK(st->st_mode) ? "a symlink" : "not a directory");
      }
      auto nd = walk_namespace(*root, vn, nsn, walk);
      if (nd) out.push_back({vn.substr(1), nsn, std::move(nd)});
    }
  }
  return out;
}

std::vector<CacheEntry> DiskCache::list() const { return entries_of(maintained_namespaces(Walk::Listing)); }

std::vector<CacheEntry> DiskCache::entries_of(const std::vector<MaintainedNamespace>& namespaces) const {
  std::vector<CacheEntry> out;
  for (const auto& n : namespaces) {
    for (const auto& name : n.dirs->entries.names()) {
      CacheEntry e;
      e.dir = n.dirs->entries / name;
      e.version = n.version;
      e.ns = n.ns;
      e.key = name;
      e.dirs = n.dirs;
      const auto st = n.dirs->entries.stat_child(name);
      if (st) {
        const auto mtime = std::chrono::system_clock::from_time_t(st->st_mtime) +
                           std::chrono::duration_cast<std::chrono::system_clock::duration>(
                               std::chrono::nanoseconds(st->st_mtim.tv_nsec));
        e.last_used = std::chrono::file_clock::from_sys(mtime);
      }
      if (is_dir(st)) {
        try {
          if (const auto d = n.dirs->entries.child(name)) {
            e.bytes = d->tree_bytes();
            if (auto t = d->read(kManifest)) e.description = Manifest::parse(as_text(*t)).description;
          }
        } catch (const Error&) {
        }
      } else if (st && S_ISREG(st->st_mode)) {
        e.bytes = static_cast<uint64_t>(st->st_size);
      }
      out.push_back(std::move(e));
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.last_used < b.last_used; });
  return out;
}

std::optional<std::string> DiskCache::check_entry(const CacheEntry& e) {
  if (!is_sha256_hex(e.key)) return fmt::format("{} is not a key", quoted_excerpt(e.key));
  std::optional<fsu::DirFd> dir;
  try {
    if (e.dirs) {
      const auto st = e.dirs->entries.stat_child(e.key);
      if (st && S_ISLNK(st->st_mode)) return std::string("the entry is a symlink, not a directory");
      if (!is_dir(st)) return std::string("the entry is not a directory");
      dir = e.dirs->entries.child(e.key);
    } else {
      dir = fsu::DirFd::open(e.dir, /*follow=*/false);
    }
  } catch (const Error& err) {
    return err.message();
  }
  if (!dir) return std::string("the entry is missing");
  return verify_dir(*dir, e.version, e.ns, e.key, {}, nullptr, nullptr);
}

VerifyResult DiskCache::verify(bool quarantine_bad) const {
  VerifyResult r;
  for (auto& e : entries_of(maintained_namespaces(quarantine_bad ? Walk::Trusted : Walk::Listing))) {
    ++r.checked;
    auto bad = check_entry(e);
    if (!bad) continue;
    if (quarantine_bad) {
      try {
        const NamespaceDirs& nd = *e.dirs;
        auto lock = fsu::FileLock::acquire_at(writable_dir(nd.locks, "locks"), e.key + ".lock");
        if (check_entry(e)) {  // still bad under the lock
          const fsu::DirFd& q = writable_dir(nd.quarantine, "quarantine");
          const std::string dest = fmt::format("{}.{}.{}", e.key, ::getpid(), fsu::random_suffix());
          if (const int err = nd.entries.rename(e.key, q, dest)) {
            if (err != ENOENT) r.failed.push_back(fmt::format("cannot move {} aside: {}", e.dir.string(), errno_string(err)));
          } else {
            ++r.quarantined;
          }
        }
      } catch (const Error& err) {
        r.failed.push_back(fmt::format("cannot move {} aside: {}", e.dir.string(), err.message()));
      }
    }
    r.bad.push_back({std::move(e), std::move(*bad)});
  }
  return r;
}

uint64_t DiskCache::total_bytes() const {
  try {
    const auto root = fsu::DirFd::open(root_, true);  // a size only: no trust needed, no link followed below
    return root ? root->tree_bytes() : 0;
  } catch (const Error&) {
    return 0;
  }
}

DiskCache::Removal DiskCache::remove_entry_locked(const CacheEntry& e, std::string* why) const {
  const NamespaceDirs& nd = *e.dirs;
  try {
    auto lock = fsu::FileLock::try_acquire_at(writable_dir(nd.locks, "locks"), e.key + ".lock");
    if (!lock.owns()) return Removal::Busy;
    // Rename first so that a reader never sees a half-deleted entry.
    const fsu::DirFd& staging = writable_dir(nd.staging, "staging");
    const std::string trash = fmt::format("{}.{}.trash.{}", e.key, ::getpid(), fsu::random_suffix());
    if (const int err = nd.entries.rename(e.key, staging, trash)) {
      if (err == ENOENT) return Removal::Removed;  // removed by another process meanwhile
      *why = fmt::format("cannot remove {}: {}", e.dir.string(), errno_string(err));
      return Removal::Failed;
    }
    int err = 0;
    if (!staging.remove_tree(trash, &err)) {
      *why = fmt::format("cannot remove {}: {}", (staging / trash).string(), errno_string(err));
      return Removal::Failed;
    }
    return Removal::Removed;
  } catch (const Error& err) {
    *why = fmt::format("cannot remove {}: {}", e.dir.string(), err.message());
    return Removal::Failed;
  }
}

PruneResult DiskCache::prune(uint64_t max_bytes) const {
  if (auto why = not_a_cache()) HCWARM_THROW(ErrorKind::InvalidArgument, "{}; nothing removed", *why);
  PruneResult r;
  r.bytes_before = total_bytes();
  const auto namespaces = maintained_namespaces(Walk::Trusted);
  for (const auto& n : namespaces) {
    if (n.dirs->quarantine) {
      for (const auto& q : n.dirs->quarantine->names()) {
        int err = 0;
        if (n.dirs->quarantine->remove_tree(q, &err)) {
          ++r.removed_other;
        } else {
          r.failed.push_back(fmt::format("cannot remove {}: {}", (*n.dirs->quarantine / q).string(), errno_string(err)));
        }
      }
    }
    sweep_staging(*n.dirs, {}, &r.failed, &r.removed_other);
  }
  auto entries = entries_of(namespaces);  // oldest first
  uint64_t total = 0;
  for (const auto& e : entries) total += e.bytes;
  for (const auto& e : entries) {
    if (total <= max_bytes) break;
    if (!is_sha256_hex(e.key)) continue;  // not a name hcwarm gives an entry: not ours to remove
    std::string why;
    switch (remove_entry_locked(e, &why)) {
      case Removal::Removed:
        ++r.removed;
        total -= e.bytes;
        break;
      case Removal::Busy: ++r.busy; break;
      case Removal::Failed: r.failed.push_back(std::move(why)); break;
    }
  }
  r.bytes_after = total_bytes();
  return r;
}

PruneResult DiskCache::clear() const { return prune(0); }

}  // namespace hcwarm::jit
