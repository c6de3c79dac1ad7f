#include "jit/disk_cache.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <mutex>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/logging.hpp"
#include "jit/cache_layout.hpp"
#include "jit/dir_fd.hpp"
#include "jit/sha256.hpp"

namespace hcwarm::jit {
namespace fs = std::filesystem;
using namespace layout;

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
      return parent ? trust_.insecure_parent(parent->fd(), parent->path(), root_) : std::nullopt;
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

}  // namespace hcwarm::jit
