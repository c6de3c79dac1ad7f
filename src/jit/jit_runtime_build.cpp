// JitRuntime::build(): warmup's many keys at once, on threads from the compile
// budget, in two passes so that processes warming one cache share the work.
#include "jit/jit_runtime.hpp"

#include <algorithm>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "core/bounded_text.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"
#include "core/logging.hpp"
#include "core/thread_pool.hpp"
#include "jit/jit_runtime_state.hpp"

namespace hcwarm::jit {

BuildReport JitRuntime::build(std::span<const KernelSpec> specs, BuildMode mode) {
  const auto t0 = Clock::now();
  BuildReport rep;
  struct Item {
    const KernelSpec* spec;
    std::shared_ptr<const Resolved> rp;
    const Resolved& r;
  };
  std::vector<Item> items;
  std::set<std::string> keys;
  for (const auto& s : specs) {
    try {
      auto r = resolve(s);
      if (keys.insert(r->key).second) items.push_back({&s, r, *r});
    } catch (const Error& e) {
      ++rep.failed;
      if (rep.errors.empty()) rep.first_error_kind = e.kind();
      rep.errors.push_back(fmt::format("{}: {}", s.describe(), e.message()));
      record_failure();
    }
  }
  rep.keys = static_cast<int>(items.size()) + rep.failed;
  if (mode == BuildMode::CompileOnly && !disk_enabled_ && !items.empty()) {
    log::info("jit build: no usable disk cache, so compile-only keeps nothing (the compiles only check the kernels)");
  }
  std::mutex rep_mu;  // guards rep, deferred and progress calls
  BuildProgressEvent ev;
  ev.total = static_cast<int>(items.size());
  // Under rep_mu: one progress call at a time, done counting up.
  auto report = [&](const Item* it, std::optional<ArtifactSource> src, double secs) {
    if (it != nullptr) {
      ++ev.done;
      ev.description = it->spec->describe();
      ev.key = it->r.key;
    }
    ev.source = src;
    ev.seconds = secs;
    ev.elapsed_s = seconds_since(t0);
    if (opts_.progress) {
      opts_.progress(ev);
    } else if (it != nullptr) {
      log::debug("{}", format_progress_line(ev));
    }
  };
  if (!items.empty()) report(nullptr, std::nullopt, 0);
  // Two passes: the first skips keys another process is compiling right now (their
  // lock is taken) and builds the free ones; the second takes the skipped ones,
  // by then usually a disk hit. So N processes warming one cache share the work.
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<size_t> deferred;
  bool first_pass = true;
  std::atomic<size_t> next{0};
  auto build_one = [&](const Item& it) {
    const auto ti = Clock::now();
    ArtifactSource src = ArtifactSource::Memory;
    try {
      if (mode == BuildMode::Load) {
        get_impl(*it.spec, it.r, &src);
      } else {
        bool in_memory;
        {
          std::lock_guard lock(slots_mu_);
          auto s = slots_.find(it.r.key);
          in_memory = s != slots_.end();
        }
        if (!in_memory) produce(*it.spec, it.r, &src);
      }
      const double secs = seconds_since(ti);
      record(*it.spec, it.r.key, src, secs);
      std::lock_guard lock(rep_mu);
      if (src == ArtifactSource::Compiled) ++rep.compiled;
      else if (src == ArtifactSource::Disk) ++rep.loaded_from_disk;
      else ++rep.memory_hits;
      report(&it, src, secs);
    } catch (const std::exception& e) {
      record_failure();
      const auto* he = dynamic_cast<const Error*>(&e);
      std::string msg = he ? he->message() : e.what();
      if (he && !he->log().empty()) {
        msg += "\n" + clip_middle(he->log(), limits::kMaxEchoedLogHead, limits::kMaxEchoedLogTail);
      }
      log::error("jit build: {} (key {}) failed: {}", it.spec->describe(), it.r.key, msg);
      std::lock_guard lock(rep_mu);
      ++rep.failed;
      if (rep.errors.empty()) rep.first_error_kind = he ? he->kind() : ErrorKind::Internal;
      rep.errors.push_back(fmt::format("{} (key {}): {}", it.spec->describe(), it.r.key, msg));
      report(&it, std::nullopt, seconds_since(ti));
    }
  };
  auto worker = [&] {
    for (size_t n = next++; n < order.size(); n = next++) {
      const auto& it = items[order[n]];
      if (first_pass && key_locked_elsewhere(it.r)) {
        std::lock_guard lock(rep_mu);
        deferred.push_back(order[n]);
        continue;
      }
      build_one(it);
    }
  };
  // Each pass takes its threads from the compile budget (at least one, waiting
  // for it), and a worker that runs out of keys gives its slot back at once, so
  // that the last compiles can split into NVRTC parts.
  auto run_pass = [&] {
    next = 0;
    const int want = static_cast<int>(std::min<size_t>(order.size(), static_cast<size_t>(budget_->capacity())));
    ThreadBudget::Lease lease = budget_->acquire(1, want);
    const int width = lease.count();
    ThreadPool pool(width);
    pool.parallel_for(width, 1, [&](int64_t begin, int64_t end) {
      for (int64_t w = begin; w < end; ++w) {
        worker();
        lease.release(1);
      }
    });
  };
  // The disk first: it attaches the host-wide compile slots before the first lease.
  for (const auto& it : items) disk_ready_for(*it.r.cs);
  if (!order.empty()) run_pass();
  if (!deferred.empty()) {
    log::debug("jit build: {} keys were being built by another process; taking them now", deferred.size());
    std::sort(deferred.begin(), deferred.end());
    order = std::move(deferred);
    first_pass = false;
    run_pass();
  }
  rep.seconds = seconds_since(t0);
  return rep;
}

}  // namespace hcwarm::jit
