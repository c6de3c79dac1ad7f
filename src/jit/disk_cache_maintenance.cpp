// DiskCache's maintenance (`hcwarm cache ls | verify | prune | clear`), across
// every version and namespace of the cache.
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
  HCWARM_ASSERT(e.dirs != nullptr, "check_entry takes an entry from DiskCache::list ({})", e.dir.string());
  std::optional<fsu::DirFd> dir;
  try {
    const auto st = e.dirs->entries.stat_child(e.key);
    if (st && S_ISLNK(st->st_mode)) return std::string("the entry is a symlink, not a directory");
    if (!is_dir(st)) return std::string("the entry is not a directory");
    dir = e.dirs->entries.child(e.key);
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
