#pragma once
// The persistent kernel cache (HCWARM_CACHE_DIR, default ~/.cache/hcwarm).
//
//   <root>/v<hcwarm version>/<compiler namespace>/
//       entries/<key>/          one published entry: manifest.json + its files
//       locks/<key>.lock        per-key flock(2) file, created once, never unlinked
//       staging/<key>.<pid>.*   private dirs of publishes and compiles in progress
//       quarantine/<key>.*      entries that failed verification, moved aside
//
// An entry appears only by an atomic rename of a complete, fsynced staging dir,
// and is used only after its manifest (key, size and SHA-256 of every file, no
// stray files) checks out, and only from directories and files that this user
// owns and nobody else can write (see CacheTrust). The root carries CACHEDIR.TAG,
// and maintenance removes only what this layout names. Staging dirs whose key lock is free belong to dead
// processes and are removed. Used by the JIT runtime and by `hcwarm cache`; it
// needs no compiler.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <map>
#include <memory>
#include <mutex>

#include "jit/cache_trust.hpp"
#include "jit/dir_fd.hpp"
#include "jit/fs_util.hpp"

namespace hcwarm::jit {

struct ManifestFile {
  std::string name;
  uint64_t size = 0;
  std::string sha256;
};

struct Manifest {
  static constexpr int kFormat = 1;
  std::string key;
  std::string hcwarm_version;
  std::string ns;           // the compiler namespace directory it was published in
  std::string compiler;     // compiler identity
  std::string target;       // sm_90a / x86-64-v3
  std::string family;
  std::string description;  // KernelSpec::describe()
  std::vector<std::pair<std::string, std::string>> params;
  std::vector<ManifestFile> files;  // filled by DiskCache::publish
  std::string created;              // UTC ISO-8601, informational

  std::string to_json() const;
  // Throws ErrorKind::InvalidArgument naming what is wrong.
  static Manifest parse(std::string_view json);
};

// One <version>/<namespace>/ of a cache, opened once, without following links,
// each directory checked against the cache's trust rules. Read-only caches may
// lack locks/, staging/ and quarantine/.
struct NamespaceDirs {
  fsu::DirFd ns;
  fsu::DirFd entries;
  std::optional<fsu::DirFd> locks, staging, quarantine;
};

struct CacheEntry {
  std::filesystem::path dir;                  // for messages
  std::shared_ptr<const NamespaceDirs> dirs;  // what maintenance works through
  std::string version;      // hcwarm version of the namespace ("0.1.0")
  std::string ns;           // compiler namespace
  std::string key;          // directory name
  std::string description;  // from the manifest, "" when unreadable
  uint64_t bytes = 0;
  std::filesystem::file_time_type last_used;  // the entry dir's mtime, touched on every load
};

struct BadEntry {
  CacheEntry entry;
  std::string reason;
};

struct VerifyResult {
  int checked = 0;
  std::vector<BadEntry> bad;
  int quarantined = 0;  // bad entries moved aside (verify(true))
  std::vector<std::string> failed;  // what could not be moved aside, and why
};

struct PruneResult {
  int removed = 0;             // entries removed
  int busy = 0;                // entries skipped because a process holds their lock
  int removed_other = 0;       // quarantined entries and stale staging dirs removed
  uint64_t bytes_before = 0;   // whole cache
  uint64_t bytes_after = 0;
  std::vector<std::string> failed;  // what could not be removed, and why (a read-only mount)
};

class DiskCache {
 public:
  explicit DiskCache(std::filesystem::path root, CacheTrust trust = CacheTrust::Owner);
  ~DiskCache();
  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path version_dir() const;  // <root>/v<HCWARM_VERSION>
  std::filesystem::path namespace_dir(std::string_view ns) const;
  std::filesystem::path entry_dir(std::string_view ns, std::string_view key) const;
  // Why the root is not an hcwarm cache, or nullopt. A cache carries CACHEDIR.TAG
  // (written when its layout is first created); a missing or empty directory, or
  // one holding only version directories, is one too. Anything else (a home
  // directory, "/") is never written into, loaded from, pruned or cleared.
  std::optional<std::string> not_a_cache() const;
  // Why the runtime would not load from this cache (the root, the directories
  // above it and, given ns, the namespace's), checked as prepare() does but
  // creating nothing; nullopt when trusted or absent.
  std::optional<std::string> untrusted(std::string_view ns = {}) const;

  // ---- runtime side: one namespace per compiler identity ----

  // Opens the root once and checks it, the directories above it and the
  // namespace's directories (else throws Io naming the path and why), creates what
  // is missing and removes stale staging dirs. Every later call on ns works
  // through the descriptors opened here. Returns why nothing can be written there (a read-only bundle,
  // still served), or nullopt when the cache is writable. Throws Io.
  std::optional<std::string> prepare(std::string_view ns) const;
  // Waits until this process holds the key's lock; past timeout_s (> 0) throws
  // Timeout naming `what` and the holder. Throws Io.
  fsu::FileLock lock_key(std::string_view ns, std::string_view key, double timeout_s = 0,
                         std::string_view what = {}) const;
  // The key's lock when it is free now; owns() false when another holder has it.
  fsu::FileLock try_lock_key(std::string_view ns, std::string_view key) const;

  struct Lookup {
    enum class Status { Missing, Ok, Bad };
    Status status = Status::Missing;
    std::string reason;               // Bad: what failed
    Manifest manifest;                // Ok
    std::vector<std::byte> artifact;  // Ok: the verified bytes of the requested file
  };
  // Verifies the whole entry; Ok touches its mtime (LRU). Never throws for a bad
  // entry; throws Io for one whose directory or files cannot be trusted.
  Lookup lookup(std::string_view ns, std::string_view key, std::string_view artifact_name) const;
  // Moves a (bad) entry into quarantine/; hold the key's lock. Returns the new place.
  std::filesystem::path quarantine(std::string_view ns, std::string_view key) const;
  // Removes staging dirs of this key left by dead processes; hold the key's lock.
  void clean_staging(std::string_view ns, std::string_view key) const;
  // A private scratch dir for compiling key (removed on destruction; swept if we die).
  std::unique_ptr<fsu::ScratchDir> make_work_dir(std::string_view ns, std::string_view key) const;

  enum class Published { Yes, LostRace };
  // Staging dir + write + fsync each file + manifest.json + fsync dir + rename +
  // fsync entries/. LostRace: another publisher's entry was already in place; ours
  // is discarded. manifest.files is filled here. Throws Io (ENOSPC, EROFS, ...).
  Published publish(std::string_view ns, std::string_view key, Manifest manifest,
                    const std::vector<std::pair<std::string, std::span<const std::byte>>>& files) const;

  // Tests only: called with a stage name ("publish-begin", "publish-file-written", ...).
  void set_test_hook(std::function<void(std::string_view)> hook) { hook_ = std::move(hook); }

  // ---- maintenance (`hcwarm cache`), across every version and namespace ----

  // Sorted by last use, oldest first. Reads only: links in the layout are refused
  // (Io), owners are not checked.
  std::vector<CacheEntry> list() const;
  // nullopt when the entry (one of list()'s) is good, else the reason.
  static std::optional<std::string> check_entry(const CacheEntry& e);
  // Maintenance opens every layout directory without following links and applies
  // the runtime's trust rules (throws Io naming what it refuses); what it cannot do
  // is listed in `failed`, never reported as done.
  VerifyResult verify(bool quarantine_bad = false) const;
  // Removes quarantined entries and stale staging, then least-recently-used entries
  // until the cache holds at most max_bytes. Entries whose lock is held are skipped.
  PruneResult prune(uint64_t max_bytes) const;
  // Removes every entry not in use, all quarantine and stale staging. Lock files stay.
  PruneResult clear() const;
  uint64_t total_bytes() const;

 private:
  void hook(std::string_view stage) const {
    if (hook_) hook_(stage);
  }
  struct MaintainedNamespace {
    std::string version, ns;
    std::shared_ptr<const NamespaceDirs> dirs;
  };
  enum class Removal { Removed, Busy, Failed };
  // Trusted: every directory passes the trust rules (the runtime; maintenance that
  // changes anything). Listing: links are still refused, owners and modes not checked.
  enum class Walk { Trusted, Listing };

  void require_trusted(const fsu::DirFd& dir) const;
  std::optional<fsu::DirFd> open_root() const;
  std::optional<fsu::DirFd> trusted_child(const fsu::DirFd& parent, std::string_view name) const;
  std::optional<std::string> not_a_cache_at(const fsu::DirFd& root) const;
  std::optional<fsu::DirFd> layout_child(const fsu::DirFd& parent, std::string_view name, Walk walk) const;
  std::shared_ptr<const NamespaceDirs> walk_namespace(const fsu::DirFd& root, const std::string& vname,
                                                      std::string_view ns, Walk walk) const;
  std::shared_ptr<const NamespaceDirs> dirs(std::string_view ns) const;  // prepared, or opened now (nullptr: none)
  const NamespaceDirs& prepared(std::string_view ns) const;
  const fsu::DirFd& writable_dir(const std::optional<fsu::DirFd>& d, std::string_view what) const;
  std::vector<MaintainedNamespace> maintained_namespaces(Walk walk) const;
  std::vector<CacheEntry> entries_of(const std::vector<MaintainedNamespace>& namespaces) const;
  void sweep_staging(const NamespaceDirs& nd, std::string_view only_key, std::vector<std::string>* failed = nullptr,
                     int* removed = nullptr) const;
  void bound_quarantine(const fsu::DirFd& qdir) const;
  void write_tag(const fsu::DirFd& root) const;
  Removal remove_entry_locked(const CacheEntry& e, std::string* why) const;

  std::filesystem::path root_;
  CacheTrust trust_;
  mutable std::mutex mu_;
  mutable std::map<std::string, std::shared_ptr<const NamespaceDirs>, std::less<>> open_;
  std::function<void(std::string_view)> hook_;
};

}  // namespace hcwarm::jit
