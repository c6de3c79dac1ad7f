// JitRuntime's tiered path, get_or_schedule(): a miss in memory and on disk is
// handed to the background worker, whose bytes land for the key's next request.
#include "jit/jit_runtime.hpp"

#include <algorithm>
#include <optional>

#include "core/logging.hpp"
#include "jit/jit_runtime_state.hpp"

namespace hcwarm::jit {

BackgroundCompiler& JitRuntime::background() {
  std::lock_guard lock(background_mu_);
  if (!background_) {
    const int budget = opts_.jobs > 0 ? opts_.jobs : hardware_threads();
    background_ = std::make_unique<BackgroundCompiler>(std::clamp(opts_.background_jobs, 1, budget));
  }
  return *background_;
}

void JitRuntime::drain_background() {
  BackgroundCompiler* bg = nullptr;
  {
    std::lock_guard lock(background_mu_);
    bg = background_.get();
  }
  if (bg != nullptr) bg->drain();
}

TieredModule JitRuntime::get_or_schedule(const KernelSpec& spec) {
  if (!tiered()) return {get(spec), nullptr};
  const auto t0 = Clock::now();
  try {
    const std::shared_ptr<const Resolved> rp = resolve(spec);
    const Resolved& r = *rp;
    std::shared_ptr<Slot> slot;
    bool owner = false;
    std::optional<std::vector<std::byte>> bytes;
    {
      std::lock_guard lock(slots_mu_);
      if (auto it = slots_.find(r.key); it != slots_.end()) {
        slot = it->second;
      } else if (auto f = failed_background_.find(r.key); f != failed_background_.end()) {
        return {nullptr, f->second};  // its background compile failed: the generic kernel keeps serving
      } else {
        slot = slots_[r.key] = std::make_shared<Slot>();
        owner = true;
        bytes = take_landed_locked(r.key);
      }
    }
    if (!owner) {
      // Loaded already, or in flight elsewhere (never waited for here).
      std::lock_guard lock(slot->mu);
      if (slot->done && slot->module) {
        record(spec, r.key, ArtifactSource::Memory, seconds_since(t0));
        return {slot->module, nullptr};
      }
      return {nullptr, slot->ticket};
    }
    ArtifactSource src = bytes ? ArtifactSource::Memory : ArtifactSource::Disk;
    try {
      require_loader(spec);
      if (!bytes && disk_ready_for(*r.cs)) {
        try {
          auto lk = disk_->lookup(r.cs->ns, r.key, r.cs->compiler->artifact_name());
          if (lk.status == DiskCache::Lookup::Status::Ok) bytes = std::move(lk.artifact);
        } catch (const Error& e) {
          if (e.kind() != ErrorKind::Io) throw;
          disable_disk(e.message());
        }
      }
      if (bytes) {
        // A disk hit (or the worker's landed bytes) is loaded now: no compile, no wait.
        auto module = load(spec.target, r.key, *bytes);
        finish_slot(*slot, module, src, nullptr, false);
        record(spec, r.key, src, seconds_since(t0));
        return {module, nullptr};
      }
    } catch (...) {
      abandon_slot(r.key, *slot, src);
      throw;
    }
    {
      std::lock_guard lock(slots_mu_);
      slot->background = true;
    }
    background().submit({r.key, [this, spec, rp, slot] { run_background(spec, rp, slot); },
                         [this, key = r.key, slot] { cancel_background(key, slot); }});
    return {nullptr, slot->ticket};
  } catch (...) {
    record_failure();
    throw;
  }
}

std::optional<std::vector<std::byte>> JitRuntime::take_landed_locked(const std::string& key) {
  auto it = landed_.find(key);
  if (it == landed_.end()) return std::nullopt;
  std::vector<std::byte> bytes = std::move(it->second);
  landed_.erase(it);
  return bytes;
}

void JitRuntime::run_background(const KernelSpec& spec, std::shared_ptr<const Resolved> r,
                                std::shared_ptr<Slot> slot) {
  const auto t0 = Clock::now();
  ArtifactSource src = ArtifactSource::Compiled;
  std::string failure;
  try {
    std::vector<std::byte> bytes = produce(spec, *r, &src, /*background=*/true);
    const double secs = seconds_since(t0);
    if (src == ArtifactSource::Compiled) {
      std::lock_guard lock(stats_mu_);
      ++stats_.background_compiled;
    }
    record(spec, r->key, src, secs);
    {
      // The bytes wait for the next request of the key, which loads them in its
      // own thread (a CUDA module is never loaded while another thread captures).
      std::lock_guard lock(slots_mu_);
      landed_[r->key] = std::move(bytes);
      forget_slot_locked(r->key, slot.get());
    }
    finish_slot(*slot, nullptr, src, nullptr, /*retry=*/true);
    log::debug("jit: background {} of {} (key {}) landed after {:.3f} s", to_string(src), spec.describe(), r->key,
               secs);
    return;
  } catch (const Error& e) {
    failure = e.message();
  } catch (const std::exception& e) {
    failure = e.what();
  } catch (...) {
    failure = "unknown error";
  }
  bool first = false;
  {
    std::lock_guard lock(slots_mu_);
    forget_slot_locked(r->key, slot.get());
    first = failed_background_.emplace(r->key, slot->ticket).second;
  }
  {
    std::lock_guard lock(stats_mu_);
    ++stats_.background_failed;
  }
  if (first) {
    log::error("jit: background compile of {} (key {}) failed: {}; its calls stay on the generic kernel",
               spec.describe(), r->key, failure);
  }
  finish_slot(*slot, nullptr, ArtifactSource::Memory, nullptr, /*retry=*/true, PendingModule::Failed);
}

void JitRuntime::cancel_background(const std::string& key, std::shared_ptr<Slot> slot) {
  {
    std::lock_guard lock(slots_mu_);
    forget_slot_locked(key, slot.get());
  }
  finish_slot(*slot, nullptr, ArtifactSource::Memory, nullptr, /*retry=*/true);
}

}  // namespace hcwarm::jit
