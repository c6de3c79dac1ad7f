// JitRuntime's production of a key's verified bytes: the disk cache's entry, or
// a compile (under the key's lock, published to the cache), refused or flagged
// when it comes during serving.
#include "jit/jit_runtime.hpp"

#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/logging.hpp"
#include "jit/fs_util.hpp"
#include "jit/jit_runtime_state.hpp"

namespace hcwarm::jit {
namespace fs = std::filesystem;

void JitRuntime::guard_serving_compile(const KernelSpec& spec, const std::string& key, bool background) {
  if (!opts_.allow_compile || !compile_allowed_) {
    HCWARM_THROW(ErrorKind::NotWarmed,
                 "{} (key {}) is neither loaded nor in the kernel cache, and {} forbids compiling it: "
                 "build it ahead of time (hcwarm cache build) into the cache directory",
                 spec.describe(), key, opts_.allow_compile ? "the coverage check" : "HCWARM_JIT=off");
  }
  if (!ready_) return;
  {
    std::lock_guard lock(stats_mu_);
    ++(background ? stats_.background_compiles_after_ready : stats_.compiles_after_ready);
  }
  if (opts_.strict_warmup) {
    HCWARM_THROW(ErrorKind::Internal,
                 "cold compile during serving of {} (key {}) refused: HCWARM_STRICT_WARMUP=1 and warmup did not "
                 "build this kernel",
                 spec.describe(), key);
  }
  if (background) {
    log::warn("compile during serving, in the background: {} (key {}); warmup did not build this kernel, a "
              "generic kernel serves its calls until it lands",
              spec.describe(), key);
    return;
  }
  log::warn("cold compile during serving: {} (key {}); warmup did not build this kernel", spec.describe(), key);
}

std::vector<std::byte> JitRuntime::compile_now(const KernelSpec& spec, const Resolved& r, const fs::path* workdir) {
  std::unique_ptr<fsu::ScratchDir> scratch;
  if (workdir == nullptr) {
    scratch = std::make_unique<fsu::ScratchDir>(fs::temp_directory_path(), "hcwarm-jit-");
    workdir = &scratch->path();
  }
  hook("compile-begin");
  const auto t0 = Clock::now();
  CompileOutput out;
  try {
    out = r.cs->compiler->compile(spec.kernel_source(), r.headers, *workdir);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Compile && e.kind() != ErrorKind::Timeout) throw;
    throw Error(e.kind(),
                fmt::format("compiling {} (key {}) failed: {}", spec.describe(), r.key, e.message()), __FILE__,
                __LINE__, e.log());
  }
  const double secs = seconds_since(t0);
  {
    std::lock_guard lock(stats_mu_);
    stats_.compile_seconds += secs;
  }
  if (!out.log.empty()) log::debug("jit: compiler messages for {}:\n{}", spec.describe(), out.log);
  log::debug("jit: compiled {} (key {}) in {:.3f} s", spec.describe(), r.key, secs);
  hook("compile-end");
  return std::move(out.binary);
}

std::vector<std::byte> JitRuntime::produce(const KernelSpec& spec, const Resolved& r, ArtifactSource* src,
                                           bool background, bool* lock_waited) {
  CompilerSlot& cs = *r.cs;
  const std::string artifact = cs.compiler->artifact_name();
  bool guarded = false;
  if (disk_ready_for(cs)) {
    std::optional<std::vector<std::byte>> compiled;
    // Whether an Io error now comes from a write under the key's lock (staging,
    // publish, quarantine): that leaves the entries readable, where a failed lookup
    // or an untrusted lock file (a planted link) does not.
    bool writing = false;
    try {
      auto lk = disk_->lookup(cs.ns, r.key, artifact);
      if (lk.status == DiskCache::Lookup::Status::Ok) {
        *src = ArtifactSource::Disk;
        return std::move(lk.artifact);
      }
      if (!disk_writable_) {
        // Nothing can be stored (nor quarantined): compile in memory below.
        if (lk.status == DiskCache::Lookup::Status::Bad) {
          log::warn("jit cache: entry {} ({}) is bad: {}; the cache is read-only, compiling in memory", r.key,
                       spec.describe(), lk.reason);
        }
      } else {
        // Missing or bad: take the key's lock (other processes may be compiling it) and look again.
        auto lock = disk_->try_lock_key(cs.ns, r.key);
        if (!lock.owns()) {
          if (lock_waited != nullptr) *lock_waited = true;  // another process is compiling it: a wait
          lock = disk_->lock_key(cs.ns, r.key, opts_.lock_timeout_s,
                                 fmt::format("kernel {} (key {})", spec.describe(), r.key));
        }
        hook("locked");
        lk = disk_->lookup(cs.ns, r.key, artifact);
        writing = true;
        if (lk.status == DiskCache::Lookup::Status::Ok) {
          *src = ArtifactSource::Disk;
          return std::move(lk.artifact);
        }
        if (lk.status == DiskCache::Lookup::Status::Bad) {
          const auto moved = disk_->quarantine(cs.ns, r.key);
          log::warn("jit cache: entry {} ({}) is bad: {}; moved to {} and rebuilding", r.key, spec.describe(),
                       lk.reason, moved.string());
        }
        disk_->clean_staging(cs.ns, r.key);
        guard_serving_compile(spec, r.key, background);
        guarded = true;
        auto work = disk_->make_work_dir(cs.ns, r.key);
        compiled = compile_now(spec, r, &work->path());
        work.reset();

        Manifest m;
        m.compiler = cs.compiler->identity();
        m.target = cs.compiler->target();
        m.family = spec.family;
        m.description = spec.describe();
        m.params = spec.params;
        const auto res = disk_->publish(cs.ns, r.key, std::move(m), {{artifact, std::span<const std::byte>(*compiled)}});
        if (res == DiskCache::Published::LostRace) {
          // Only without working locks (e.g. a file system ignoring flock): use the winner's entry.
          auto w = disk_->lookup(cs.ns, r.key, artifact);
          if (w.status == DiskCache::Lookup::Status::Ok) compiled = std::move(w.artifact);
        }
        lock.release();
        maybe_prune();
        *src = ArtifactSource::Compiled;
        return std::move(*compiled);
      }
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Io) throw;
      // A failed write (ENOSPC, EROFS, staging gone) degrades the cache to loads only:
      // the valid entries stay served, and this and later compiles stay in memory.
      if (writing) {
        disable_disk_writes(e.message());
      } else {
        disable_disk(e.message());
      }
      if (compiled) {
        *src = ArtifactSource::Compiled;
        return std::move(*compiled);
      }
    }
  }
  if (!guarded) guard_serving_compile(spec, r.key, background);
  auto bytes = compile_now(spec, r, nullptr);
  *src = ArtifactSource::Compiled;
  return bytes;
}

}  // namespace hcwarm::jit
