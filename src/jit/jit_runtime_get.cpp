// JitRuntime's blocking load path, get(): memory with single flight (one slot a
// key; the first asker produces and loads it, the others wait on the slot).
#include "jit/jit_runtime.hpp"

#include <optional>

#include "jit/jit_runtime_state.hpp"

namespace hcwarm::jit {

void JitRuntime::finish_slot(Slot& slot, std::shared_ptr<const LoadedModule> module, ArtifactSource src,
                             std::exception_ptr error, bool retry, int ticket) {
  {
    std::lock_guard lock(slot.mu);
    slot.module = std::move(module);
    slot.source = src;
    slot.error = std::move(error);
    slot.retry = retry;
    slot.done = true;
  }
  slot.cv.notify_all();
  slot.ticket->state.store(ticket, std::memory_order_release);
}

void JitRuntime::forget_slot_locked(const std::string& key, const Slot* slot) {
  if (auto it = slots_.find(key); it != slots_.end() && it->second.get() == slot) slots_.erase(it);
}

void JitRuntime::abandon_slot(const std::string& key, Slot& slot, ArtifactSource src) {
  {
    std::lock_guard lock(slots_mu_);
    forget_slot_locked(key, &slot);  // retry later
  }
  finish_slot(slot, nullptr, src, std::current_exception(), false);
}

std::shared_ptr<const LoadedModule> JitRuntime::get_impl(const KernelSpec& spec, const Resolved& r,
                                                         ArtifactSource* src, bool* waited) {
  for (;;) {
    std::shared_ptr<Slot> slot;
    bool owner = false;
    bool queued = false;
    std::optional<std::vector<std::byte>> landed;
    {
      std::lock_guard lock(slots_mu_);
      auto& s = slots_[r.key];
      if (!s) {
        s = std::make_shared<Slot>();
        owner = true;
        landed = take_landed_locked(r.key);
      }
      slot = s;
      queued = !owner && slot->background;
    }
    if (queued) {
      // Queued for the background worker but not started: this caller compiles it now.
      std::lock_guard lock(background_mu_);
      owner = background_ != nullptr && background_->take(r.key).has_value();
    }
    if (!owner) {
      std::unique_lock lock(slot->mu);
      const bool was_done = slot->done;
      slot->cv.wait(lock, [&] { return slot->done; });
      if (!was_done && waited != nullptr && slot->source == ArtifactSource::Compiled) *waited = true;
      if (slot->retry) continue;  // its bytes landed (or its background compile failed): ask again
      if (slot->error) std::rethrow_exception(slot->error);
      *src = ArtifactSource::Memory;
      return slot->module;
    }
    try {
      require_loader(spec);
      std::vector<std::byte> bytes;
      bool lock_waited = false;
      if (landed) {
        bytes = std::move(*landed);
        *src = ArtifactSource::Memory;  // compiled by the background worker, counted there
      } else {
        bytes = produce(spec, r, src, /*background=*/false, &lock_waited);
      }
      if (waited != nullptr && (*src == ArtifactSource::Compiled || lock_waited)) *waited = true;
      auto module = load(spec.target, r.key, bytes);
      finish_slot(*slot, module, *src, nullptr, false);
      return module;
    } catch (...) {
      abandon_slot(r.key, *slot, *src);
      throw;
    }
  }
}

std::shared_ptr<const LoadedModule> JitRuntime::get(const KernelSpec& spec) {
  const auto t0 = Clock::now();
  try {
    const auto r = resolve(spec);
    ArtifactSource src = ArtifactSource::Memory;
    bool waited = false;
    auto m = get_impl(spec, *r, &src, &waited);
    const double secs = seconds_since(t0);
    record(spec, r->key, src, secs);
    if (waited) {
      std::lock_guard lock(stats_mu_);
      ++stats_.waited_for_compile;
      stats_.compile_wait_s += secs;
    }
    return m;
  } catch (...) {
    record_failure();
    throw;
  }
}

}  // namespace hcwarm::jit
