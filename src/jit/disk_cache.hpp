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

struct CacheEntry {
  std::filesystem::path dir;
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
};

struct PruneResult {
  int removed = 0;             // entries removed
  int busy = 0;                // entries skipped because a process holds their lock
  int removed_other = 0;       // quarantined entries and stale staging dirs removed
  uint64_t bytes_before = 0;   // whole cache
  uint64_t bytes_after = 0;
};

// Whose cache directories the runtime loads code from. Owner: the effective user's
// only. Shared (HCWARM_CACHE_TRUST=shared): any owner's, e.g. a bundle shipped
// read-only, but never one that group/others can write; a foreign one is only read.
enum class CacheTrust { Owner, Shared };

class DiskCache {
 public:
  explicit DiskCache(std::filesystem::path root, CacheTrust trust = CacheTrust::Owner);
  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path version_dir() const;  // <root>/v<HCWARM_VERSION>
  std::filesystem::path namespace_dir(std::string_view ns) const;
  std::filesystem::path entry_dir(std::string_view ns, std::string_view key) const;
  // Why the root is not an hcwarm cache, or nullopt. A cache carries CACHEDIR.TAG
  // (written when its layout is first created); a missing or empty directory, or
  // one holding only version directories, is one too. Anything else (a home
  // directory, "/") is never written into, loaded from, pruned or cleared.
  std::optional<std::string> not_a_cache() const;

  // ---- runtime side: one namespace per compiler identity ----

  // Checks that the root and the namespace's directories can be trusted (else
  // throws Io naming the path and why), creates what is missing and removes stale
  // staging dirs. Returns why nothing can be written there (a read-only bundle,
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

  std::vector<CacheEntry> list() const;  // sorted by last use, oldest first
  // nullopt when the entry is good, else the reason.
  static std::optional<std::string> check_entry(const CacheEntry& e);
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
  void sweep_staging(const std::filesystem::path& ns_dir, std::string_view only_key) const;
  void write_tag() const;
  bool remove_entry_locked(const CacheEntry& e) const;

  std::filesystem::path root_;
  CacheTrust trust_;
  std::function<void(std::string_view)> hook_;
};

}  // namespace hcwarm::jit
