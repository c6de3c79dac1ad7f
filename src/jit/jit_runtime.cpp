#include "jit/jit_runtime.hpp"
#include "core/logging.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <set>
#include <thread>

#include "core/bounded_text.hpp"
#include "core/enum_names.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"
#include "core/thread_pool.hpp"
#include "jit/header_deps.hpp"
#include "jit/host_compile_slots.hpp"
#include "jit/sha256.hpp"

namespace hcwarm::jit {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

int hardware_threads() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

// "host-12.2.0-3fa9c1d2e4b5": kind, the first version number in the identity, and
// a digest of the whole identity (so every compiler build gets its own namespace).
std::string namespace_name(const Compiler& c) {
  const std::string id = c.identity();
  std::string ver = "unknown";
  // The first "N.N" or "N.N.N" in the identity.
  for (size_t i = 0; i < id.size(); ++i) {
    auto digits = [&](size_t j) {
      while (j < id.size() && std::isdigit(static_cast<unsigned char>(id[j]))) ++j;
      return j;
    };
    if (!std::isdigit(static_cast<unsigned char>(id[i])) || (i > 0 && std::isdigit(static_cast<unsigned char>(id[i - 1])))) {
      continue;
    }
    size_t j = digits(i);
    if (j + 1 >= id.size() || id[j] != '.' || !std::isdigit(static_cast<unsigned char>(id[j + 1]))) continue;
    j = digits(j + 1);
    if (j + 1 < id.size() && id[j] == '.' && std::isdigit(static_cast<unsigned char>(id[j + 1]))) j = digits(j + 1);
    ver = id.substr(i, j - i);
    break;
  }
  return fmt::format("{}-{}-{}", c.kind() == TargetKind::Cuda ? "nvrtc" : "host", ver, sha256_hex(id).substr(0, 12));
}

}  // namespace

namespace {
constexpr EnumName<Phase> kPhaseNames[] = {{Phase::Warmup, "warmup"}, {Phase::Serving, "serving"}};
}  // namespace

const char* to_string(Phase p) { return enum_name(kPhaseNames, p); }

JitOptions JitOptions::from_env(const EnvConfig& env) {
  JitOptions o;
  o.cache_dir = env.cache_dir;
  o.cache_max_bytes = env.cache_max_bytes;
  o.cache_trust = CacheTrust::from_env(env);
  o.strict_warmup = env.strict_warmup;
  o.allow_compile = env.jit_compile;
  o.jobs = env.compile_jobs;
  o.host_compile_slots = env.host_compile_slots;
  o.tiered = env.tiered;
  o.lock_timeout_s = env.lock_timeout_s;
  o.compile_timeout_s = env.compile_timeout_s;
  o.host_cxx = env.host_cxx;
  o.nvrtc_library = env.nvrtc_library;
  o.cuda_home = env.cuda_home;
  return o;
}

// ---------------------------------------------------------------- internals

struct JitRuntime::CompilerSlot {
  std::shared_ptr<Compiler> compiler;
  std::exception_ptr error;  // creating the compiler failed (e.g. no NVRTC)
  std::string ns;
  std::mutex mu;
  bool prepared = false;
};

struct JitRuntime::Resolved {
  std::shared_ptr<CompilerSlot> cs;
  std::string key;
  std::vector<EmbeddedFile> headers;
};

struct JitRuntime::Slot {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  bool retry = false;       // finished without a module (bytes landed, or a background failure): ask again
  bool background = false;  // queued for or run by the background worker (under slots_mu_)
  ArtifactSource source = ArtifactSource::Memory;
  std::shared_ptr<const LoadedModule> module;
  std::exception_ptr error;
  std::shared_ptr<PendingModule> ticket = std::make_shared<PendingModule>();  // for tiered askers
};

JitRuntime::JitRuntime(JitOptions opts)
    : opts_(std::move(opts)),
      budget_(opts_.compile_budget ? opts_.compile_budget
                                   : std::make_shared<ThreadBudget>(opts_.jobs > 0 ? opts_.jobs : hardware_threads())) {
  HCWARM_CHECK_ARG(budget_->capacity() >= 1, "a JIT runtime needs a compile budget of at least one thread, not {}",
                   budget_->capacity());
  loaders_[TargetKind::Host] = make_host_module_loader();
  if (opts_.cache_dir && !opts_.cache_dir->empty()) {
    // Absolute now, so that a later chdir cannot move the cache.
    std::error_code ec;
    fs::path root = fs::absolute(*opts_.cache_dir, ec);
    disk_ = std::make_unique<DiskCache>(ec ? *opts_.cache_dir : root, opts_.cache_trust);
    if (opts_.test_hook) disk_->set_test_hook(opts_.test_hook);
    disk_enabled_ = true;
  }
}

JitRuntime::~JitRuntime() {
  std::unique_ptr<BackgroundCompiler> bg;
  {
    std::lock_guard lock(background_mu_);
    bg = std::move(background_);
  }
  if (bg) bg->stop();  // queued compiles are dropped; the one running finishes first
}

void JitRuntime::set_module_loader(TargetKind target, std::shared_ptr<ModuleLoader> loader) {
  std::lock_guard lock(loaders_mu_);
  loaders_[target] = std::move(loader);
}

std::shared_ptr<JitRuntime::CompilerSlot> JitRuntime::compiler_slot(TargetKind kind, const std::string& arch) const {
  std::lock_guard lock(compilers_mu_);
  auto& slot = compilers_[{kind, arch}];
  if (!slot) {
    slot = std::make_shared<CompilerSlot>();
    try {
      if (kind == TargetKind::Host) {
        slot->compiler = std::make_shared<HostCompiler>(opts_.host_cxx, arch, opts_.host_flags, opts_.compile_timeout_s);
      } else {
        slot->compiler = std::make_shared<NvrtcCompiler>(arch, opts_.nvrtc_library, opts_.nvrtc_flags,
                                                         opts_.nvrtc_include_dirs, opts_.cuda_home, budget_);
      }
      slot->ns = namespace_name(*slot->compiler);
    } catch (...) {
      slot->error = std::current_exception();
    }
  }
  if (slot->error) std::rethrow_exception(slot->error);
  return slot;
}

const Compiler& JitRuntime::compiler_for(const KernelSpec& spec) const {
  return *compiler_slot(spec.target, spec.arch)->compiler;
}

std::shared_ptr<const JitRuntime::Resolved> JitRuntime::resolve(const KernelSpec& spec) const {
  std::string id;
  id.reserve(spec.source.size() + spec.family.size() + spec.arch.size() + 64);
  id += spec.target == TargetKind::Host ? 'h' : 'c';
  for (const std::string* part : {&spec.family, &spec.arch, &spec.source}) {
    id += std::to_string(part->size());
    id += ':';
    id += *part;
  }
  for (const auto& [k, v] : spec.params) {
    id += std::to_string(k.size()) + ":" + k + std::to_string(v.size()) + ":" + v;
  }
  {
    std::lock_guard lock(memo_mu_);
    if (auto it = memo_.find(id); it != memo_.end()) return it->second;
  }
  auto r = std::make_shared<const Resolved>(resolve_uncached(spec));
  std::lock_guard lock(memo_mu_);
  if (memo_.size() >= kMaxMemo) memo_.clear();
  memo_.emplace(std::move(id), r);
  return r;
}

JitRuntime::Resolved JitRuntime::resolve_uncached(const KernelSpec& spec) const {
  HCWARM_CHECK_ARG(!spec.family.empty(), "kernel spec without a family");
  HCWARM_CHECK_ARG(spec.target == TargetKind::Host || !spec.arch.empty(),
                   "CUDA kernel spec {} has no architecture (e.g. sm_90a)", spec.describe());
  Resolved r;
  r.cs = compiler_slot(spec.target, spec.arch);
  const Compiler& c = *r.cs->compiler;
  r.headers = included_headers(spec.source, opts_.headers);
  Sha256 h;
  h.field("hcwarm-kernel-key", "1");
  h.field("kind", to_string(spec.target));
  h.field("family", spec.family);
  for (const auto& [k, v] : spec.params) h.field("param", k, v);
  h.field("source", spec.source);
  for (const auto& f : r.headers) {
    h.field("header", fs::path(std::string(f.path)).lexically_normal().generic_string(), f.content);
  }
  h.field("compiler", c.identity());
  for (const auto& f : c.flags()) h.field("flag", f);
  h.field("target", c.target());
  r.key = h.hex();
  return r;
}

std::string JitRuntime::key(const KernelSpec& spec) const { return resolve(spec)->key; }
std::string JitRuntime::cache_namespace(const KernelSpec& spec) const { return resolve(spec)->cs->ns; }

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

void JitRuntime::mark_ready() { ready_ = true; }

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
    out = r.cs->compiler->compile(spec.source, r.headers, *workdir);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Compile && e.kind() != ErrorKind::Timeout) throw;
    throw Error(e.kind(),
                fmt::format("compiling {} (key {}) failed: {}", spec.describe(), r.key, e.message()), __FILE__,
                __LINE__, e.log());
  }
  const double secs = since(t0);
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

std::shared_ptr<const LoadedModule> JitRuntime::load(TargetKind kind, const std::string& key,
                                                     std::span<const std::byte> bin) {
  std::shared_ptr<ModuleLoader> loader;
  {
    std::lock_guard lock(loaders_mu_);
    if (auto it = loaders_.find(kind); it != loaders_.end()) loader = it->second;
  }
  if (!loader) {
    HCWARM_THROW(ErrorKind::Unavailable,
                 "no {} module loader is set (the CUDA backend is not active); kernel {} cannot be loaded",
                 to_string(kind), key);
  }
  auto m = loader->load(key, bin);
  HCWARM_ASSERT(m != nullptr, "module loader returned null for {}", key);
  return m;
}

void JitRuntime::finish_slot(Slot& slot, std::shared_ptr<const LoadedModule> module, ArtifactSource src,
                             std::exception_ptr error, bool retry) {
  {
    std::lock_guard lock(slot.mu);
    slot.module = std::move(module);
    slot.source = src;
    slot.error = std::move(error);
    slot.retry = retry;
    slot.done = true;
  }
  slot.cv.notify_all();
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
        if (auto it = landed_.find(r.key); it != landed_.end()) {
          landed = std::move(it->second);
          landed_.erase(it);
        }
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
      {
        std::lock_guard lock(loaders_mu_);
        if (!loaders_.count(spec.target)) {
          HCWARM_THROW(ErrorKind::Unavailable,
                       "no {} module loader is set (the CUDA backend is not active); {} cannot be loaded",
                       to_string(spec.target), spec.describe());
        }
      }
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
      slot->ticket->state.store(PendingModule::Landed, std::memory_order_release);
      return module;
    } catch (...) {
      {
        std::lock_guard lock(slots_mu_);
        if (auto it = slots_.find(r.key); it != slots_.end() && it->second == slot) slots_.erase(it);  // retry later
      }
      finish_slot(*slot, nullptr, *src, std::current_exception(), false);
      slot->ticket->state.store(PendingModule::Landed, std::memory_order_release);
      throw;
    }
  }
}

BackgroundCompiler& JitRuntime::background() {
  std::lock_guard lock(background_mu_);
  if (!background_) {
    const int budget = opts_.jobs > 0 ? opts_.jobs : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
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
        if (auto l = landed_.find(r.key); l != landed_.end()) {
          bytes = std::move(l->second);
          landed_.erase(l);
        }
      }
    }
    if (!owner) {
      // Loaded already, or in flight elsewhere (never waited for here).
      std::lock_guard lock(slot->mu);
      if (slot->done && slot->module) {
        record(spec, r.key, ArtifactSource::Memory, since(t0));
        return {slot->module, nullptr};
      }
      return {nullptr, slot->ticket};
    }
    ArtifactSource src = bytes ? ArtifactSource::Memory : ArtifactSource::Disk;
    try {
      {
        std::lock_guard lock(loaders_mu_);
        if (!loaders_.count(spec.target)) {
          HCWARM_THROW(ErrorKind::Unavailable,
                       "no {} module loader is set (the CUDA backend is not active); {} cannot be loaded",
                       to_string(spec.target), spec.describe());
        }
      }
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
        slot->ticket->state.store(PendingModule::Landed, std::memory_order_release);
        record(spec, r.key, src, since(t0));
        return {module, nullptr};
      }
    } catch (...) {
      {
        std::lock_guard lock(slots_mu_);
        if (auto it = slots_.find(r.key); it != slots_.end() && it->second == slot) slots_.erase(it);
      }
      finish_slot(*slot, nullptr, src, std::current_exception(), false);
      slot->ticket->state.store(PendingModule::Landed, std::memory_order_release);
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

void JitRuntime::run_background(const KernelSpec& spec, std::shared_ptr<const Resolved> r,
                                std::shared_ptr<Slot> slot) {
  const auto t0 = Clock::now();
  ArtifactSource src = ArtifactSource::Compiled;
  std::string failure;
  try {
    std::vector<std::byte> bytes = produce(spec, *r, &src, /*background=*/true);
    const double secs = since(t0);
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
      if (auto it = slots_.find(r->key); it != slots_.end() && it->second == slot) slots_.erase(it);
    }
    finish_slot(*slot, nullptr, src, nullptr, /*retry=*/true);
    slot->ticket->state.store(PendingModule::Landed, std::memory_order_release);
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
    if (auto it = slots_.find(r->key); it != slots_.end() && it->second == slot) slots_.erase(it);
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
  finish_slot(*slot, nullptr, ArtifactSource::Memory, nullptr, /*retry=*/true);
  slot->ticket->state.store(PendingModule::Failed, std::memory_order_release);
}

void JitRuntime::cancel_background(const std::string& key, std::shared_ptr<Slot> slot) {
  {
    std::lock_guard lock(slots_mu_);
    if (auto it = slots_.find(key); it != slots_.end() && it->second == slot) slots_.erase(it);
  }
  finish_slot(*slot, nullptr, ArtifactSource::Memory, nullptr, /*retry=*/true);
  slot->ticket->state.store(PendingModule::Landed, std::memory_order_release);
}

void JitRuntime::record(const KernelSpec& spec, const std::string& key, ArtifactSource src, double seconds) {
  std::lock_guard lock(stats_mu_);
  switch (src) {
    case ArtifactSource::Compiled: ++stats_.compiled; break;
    case ArtifactSource::Disk: ++stats_.loaded_from_disk; break;
    case ArtifactSource::Memory: ++stats_.memory_hits; break;
  }
  if (events_.size() >= kMaxEvents) {
    ++stats_.events_dropped;
    return;
  }
  events_.push_back({key, spec.family, spec.describe(), spec.params, ready_ ? Phase::Serving : Phase::Warmup, src,
                     seconds});
}

void JitRuntime::record_failure() {
  std::lock_guard lock(stats_mu_);
  ++stats_.failed;
}

std::shared_ptr<const LoadedModule> JitRuntime::get(const KernelSpec& spec) {
  const auto t0 = Clock::now();
  try {
    const auto r = resolve(spec);
    ArtifactSource src = ArtifactSource::Memory;
    bool waited = false;
    auto m = get_impl(spec, *r, &src, &waited);
    const double secs = since(t0);
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
    ev.elapsed_s = since(t0);
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
      const double secs = since(ti);
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
      report(&it, std::nullopt, since(ti));
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
  rep.seconds = since(t0);
  return rep;
}

bool JitRuntime::key_locked_elsewhere(const Resolved& r) {
  try {
    if (!disk_ready_for(*r.cs) || !disk_writable_) return false;
    return !disk_->try_lock_key(r.cs->ns, r.key).owns();
  } catch (const Error&) {
    return false;  // the build itself reports what is wrong with the cache
  }
}

CompileStats JitRuntime::stats() const {
  std::lock_guard lock(stats_mu_);
  CompileStats s = stats_;
  s.served_by_generic = served_by_generic_.load(std::memory_order_relaxed);
  return s;
}

std::vector<CompileEvent> JitRuntime::events() const {
  std::lock_guard lock(stats_mu_);
  return events_;
}

void JitRuntime::reset_counters() {
  std::lock_guard lock(stats_mu_);
  stats_ = {};
  events_.clear();
  served_by_generic_.store(0, std::memory_order_relaxed);
}

}  // namespace hcwarm::jit
