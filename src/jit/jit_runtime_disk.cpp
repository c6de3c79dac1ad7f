// JitRuntime's hold on the disk cache: preparing a compiler's namespace (and the
// host-wide compile slots), degrading to loads only or to memory only on
// failures, LRU pruning past the cap, and probing a key's lock.
#include "jit/jit_runtime.hpp"

#include "core/error.hpp"
#include "core/logging.hpp"
#include "jit/host_compile_slots.hpp"
#include "jit/jit_runtime_state.hpp"

namespace hcwarm::jit {

const DiskCache* JitRuntime::disk_cache() const { return disk_enabled_ ? disk_.get() : nullptr; }

void JitRuntime::disable_disk(const std::string& why) {
  disk_enabled_ = false;
  std::call_once(disk_warned_, [&] {
    log::warn("jit cache: {} is not usable ({}); kernels are kept in memory only for this process",
                 disk_ ? disk_->root().string() : std::string("?"), why);
  });
}

void JitRuntime::disable_disk_writes(const std::string& why) {
  disk_writable_ = false;
  std::call_once(disk_ro_warned_, [&] {
    log::warn("jit cache: {} is read-only ({}); kernels are loaded from it, new ones are kept in memory only",
                 disk_->root().string(), why);
  });
}

bool JitRuntime::disk_ready_for(CompilerSlot& cs) {
  if (!disk_enabled_) return false;
  std::lock_guard lock(cs.mu);
  if (!cs.prepared) {
    try {
      if (auto read_only = disk_->prepare(cs.ns)) disable_disk_writes(*read_only);
      cs.prepared = true;
    } catch (const Error& e) {
      disable_disk(e.message());
      return false;
    }
    if (disk_enabled_ && disk_writable_ && opts_.host_compile_slots > 0) {
      // The version directory exists and is trusted now (prepare checked it).
      std::call_once(host_slots_attached_, [&] {
        if (budget_->gated()) return;  // a shared budget another runtime gated first
        budget_->attach_gate(std::make_shared<HostCompileSlots>(disk_->version_dir(), opts_.host_compile_slots,
                                                                opts_.lock_timeout_s),
                             opts_.host_compile_slots);
        log::debug("jit: compile threads share {} host slots in {}", opts_.host_compile_slots,
                   disk_->version_dir().string());
      });
    }
  }
  return disk_enabled_;
}

void JitRuntime::maybe_prune() {
  if (!disk_enabled_ || !disk_writable_ || opts_.cache_max_bytes == 0) return;
  std::unique_lock lock(prune_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  if (disk_->total_bytes() <= opts_.cache_max_bytes) return;
  try {
    const auto r = disk_->prune(opts_.cache_max_bytes);
    log::info("jit cache: pruned {} least-recently-used entries ({} -> {} bytes, cap {})", r.removed,
              r.bytes_before, r.bytes_after, opts_.cache_max_bytes);
    if (!r.failed.empty()) log::warn("jit cache: pruning left {} entries: {}", r.failed.size(), r.failed.front());
  } catch (const Error& e) {
    // The cap is kept by `hcwarm cache prune` then; serving goes on.
    log::warn("jit cache: cannot prune {}: {}", disk_->root().string(), e.message());
  }
}

bool JitRuntime::key_locked_elsewhere(const Resolved& r) {
  try {
    if (!disk_ready_for(*r.cs) || !disk_writable_) return false;
    return !disk_->try_lock_key(r.cs->ns, r.key).owns();
  } catch (const Error&) {
    return false;  // the build itself reports what is wrong with the cache
  }
}

}  // namespace hcwarm::jit
