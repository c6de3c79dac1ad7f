#pragma once
// The JIT runtime: KernelSpec -> key -> loaded module, compiling each key once.
//
//   memory  : a map key -> module with single flight (one compile per key, other
//             askers wait; distinct keys proceed concurrently);
//   disk    : DiskCache under <cache_dir>/v<version>/<compiler namespace>/, with a
//             per-key flock so N processes cold-starting on one host compile each
//             key once (lock, re-check, compile, publish, unlock);
//   compile : NvrtcCompiler (Cuda) or HostCompiler (Host), created per target.
// Every get/build records a CompileEvent. After mark_ready(), a compile is a "cold
// compile during serving": a warning naming the key, counted, or an Error when
// strict_warmup is set.
//   tiered  : get_or_schedule() never waits for a compile: a miss in memory and
//             on disk goes to a bounded background worker (BackgroundCompiler)
//             that compiles and publishes it as get() would, while the caller
//             runs a generic kernel; the next request after it lands loads it.
// JitRuntime's members are defined across jit_runtime*.cpp, one job a file; its
// private records are in jit_runtime_state.hpp.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/embedded_files.hpp"
#include "core/error.hpp"
#include "core/embedded_kernels.hpp"
#include "core/env_config.hpp"
#include "core/thread_budget.hpp"
#include "jit/compiler.hpp"
#include "jit/background_compiler.hpp"
#include "jit/disk_cache.hpp"
#include "jit/kernel_spec.hpp"
#include "jit/loaded_module.hpp"
#include "jit/progress.hpp"
#include "jit/module_provider.hpp"

namespace hcwarm::jit {

struct JitOptions {
  std::optional<std::filesystem::path> cache_dir;  // nullopt: memory only
  uint64_t cache_max_bytes = 4ull << 30;           // LRU-pruned past this after a publish
  CacheTrust cache_trust = CacheTrust::Owner;      // HCWARM_CACHE_TRUST
  bool strict_warmup = false;                      // HCWARM_STRICT_WARMUP
  bool allow_compile = true;                       // HCWARM_JIT=off: a miss in memory and on disk throws NotWarmed
  // Compile threads at once (build()'s workers and NVRTC parts); 0: hardware threads.
  int jobs = 0;
  // The count those threads are taken from; null: one of `jobs` for this runtime.
  // Runtimes of one process may share one.
  std::shared_ptr<ThreadBudget> compile_budget;
  // > 0: with a writable disk cache, every compile thread also holds one of this
  // many slots shared by all processes on the cache (jit/host_compile_slots.hpp),
  // and the process may then run up to this many; 0: `jobs` alone bounds them.
  int host_compile_slots = 0;
  // HCWARM_TIERED: a request that misses is served by a generic kernel while the
  // specialization compiles in the background (not with strict_warmup or !allow_compile).
  bool tiered = true;
  int background_jobs = 1;  // background compile threads, at most the build job budget
  double lock_timeout_s = 600;                     // HCWARM_LOCK_TIMEOUT_S: wait for a key lock or a host compile slot
  double compile_timeout_s = 600;                  // HCWARM_COMPILE_TIMEOUT_S: one host-compiler run
  std::string host_cxx = "c++";                    // HCWARM_CXX
  std::string nvrtc_library;                       // "" = search (see NvrtcCompiler)
  std::string cuda_home;                           // $CUDA_HOME: one more place that search looks
  // build()'s progress, for the caller to show; empty: a debug log line per key.
  BuildProgressFn progress;
  // The includable kernel headers; must outlive the runtime (the default is static).
  std::span<const EmbeddedFile> headers = kernels::embedded_files();
  std::vector<std::string> host_flags;   // appended to the host compiler's flags (part of the key)
  std::vector<std::string> nvrtc_flags;  // appended to NVRTC's options (part of the key)
  // Extra NVRTC include dirs (e.g. a toolkit's include/). Not part of the key: their
  // content belongs to the toolkit, which the NVRTC version stands for.
  std::vector<std::filesystem::path> nvrtc_include_dirs;
  // Tests only: called at each stage of a compile/publish ("compile-begin",
  // "compile-end", "publish-begin", ...), e.g. to widen windows or to signal.
  std::function<void(std::string_view stage)> test_hook;

  static JitOptions from_env(const EnvConfig& env);
};

enum class Phase { Warmup, Serving };
const char* to_string(Phase p);

struct CompileEvent {
  std::string key, family, description;
  std::vector<std::pair<std::string, std::string>> params;
  Phase phase = Phase::Warmup;
  ArtifactSource source = ArtifactSource::Memory;
  double seconds = 0;  // wall time of the request (compile/verify + load, or wait)
};

struct CompileStats {
  int64_t compiled = 0;
  int64_t loaded_from_disk = 0;
  int64_t memory_hits = 0;
  // Compiles after mark_ready() in a call's own path: the call waited for (or
  // triggered) the compile. The background worker's are counted apart, below.
  int64_t compiles_after_ready = 0;
  double compile_seconds = 0;  // time inside the compilers
  int64_t failed = 0;          // requests that threw
  int64_t events_dropped = 0;  // events beyond the kept maximum (counters still count them)
  // Requests (get) that blocked on a compile, their own or another thread's or
  // process's, and the seconds they waited in all.
  int64_t waited_for_compile = 0;
  double compile_wait_s = 0;
  int64_t served_by_generic = 0;    // calls served generically while their specialization was pending
  int64_t background_compiled = 0;  // compiles the background worker ran
  int64_t background_failed = 0;    // background compiles that failed (logged once per key)
  // Compiles the background worker ran after mark_ready() (no call waited for them).
  int64_t background_compiles_after_ready = 0;
};

// Turns a verified binary into a LoadedModule. backends/cuda supplies the CUDA one.
class ModuleLoader {
 public:
  virtual ~ModuleLoader() = default;
  virtual std::shared_ptr<LoadedModule> load(const std::string& key, std::span<const std::byte> binary) = 0;
};

// The built-in Host loader: the verified bytes go into a sealed memfd, dlopen'ed
// (RTLD_NOW | RTLD_LOCAL) through /proc/self/fd, so exactly the bytes that were
// checked are loaded. function() is dlsym.
std::shared_ptr<ModuleLoader> make_host_module_loader();

// Where a build's keys came from; warmup and prewarm reports carry the same counts.
struct BuildCounts {
  int keys = 0;  // distinct keys among the specs
  int compiled = 0;
  int loaded_from_disk = 0;
  int memory_hits = 0;
};

struct BuildReport : BuildCounts {
  int failed = 0;
  double seconds = 0;
  std::vector<std::string> errors;  // "<description> (key <key>): <message>"
  ErrorKind first_error_kind = ErrorKind::Internal;  // of errors.front()
};

enum class BuildMode {
  Load,         // like get() for each spec
  CompileOnly,  // fill the disk cache, load nothing (no GPU needed)
};

class JitRuntime final : public ModuleProvider {
 public:
  explicit JitRuntime(JitOptions opts);
  // Stops the background worker: queued compiles are dropped, the one running finishes.
  ~JitRuntime() override;
  JitRuntime(const JitRuntime&) = delete;
  JitRuntime& operator=(const JitRuntime&) = delete;

  // Host has a built-in loader; Cuda has none until backends/cuda sets one.
  void set_module_loader(TargetKind target, std::shared_ptr<ModuleLoader> loader);

  // 64 hex chars: SHA-256 of family, params, source, every included header's
  // path and text, compiler identity, flags and target. Throws Unavailable when
  // the spec's compiler is (e.g. no NVRTC).
  std::string key(const KernelSpec& spec) const;
  // The disk cache's namespace directory of the spec's compiler (where key() is stored).
  std::string cache_namespace(const KernelSpec& spec) const;

  // Thread-safe. Memory, then disk (verified), then compile (single flight).
  // Throws ErrorKind::Compile (with the compiler's log and the key) when the
  // compile fails; ErrorKind::Internal for a compile refused by strict_warmup.
  std::shared_ptr<const LoadedModule> get(const KernelSpec& spec) override;

  // Tiered execution applies: opts.tiered, compiling allowed, not strict_warmup.
  bool tiered() const override {
    return opts_.tiered && opts_.allow_compile && compile_allowed_ && !opts_.strict_warmup;
  }
  // Memory, then disk (verified, loaded now); a miss is queued for the background
  // worker and answered with its ticket, without waiting. Untiered: get().
  TieredModule get_or_schedule(const KernelSpec& spec) override;
  void note_served_by_generic() override { served_by_generic_.fetch_add(1, std::memory_order_relaxed); }
  // Blocks until the background worker has nothing queued or running.
  void drain_background();

  // Compiles/loads specs on at most opts.jobs threads (taken from the compile
  // budget), reporting each key to opts.progress. Never throws for a single
  // spec: failures are counted and listed.
  BuildReport build(std::span<const KernelSpec> specs, BuildMode mode = BuildMode::Load);

  void mark_ready();
  // Back to the warmup phase (prewarming another configuration): compiles are
  // not flagged again until the next mark_ready().
  void mark_warming() { ready_ = false; }
  // Off: every compile is refused with NotWarmed, as under HCWARM_JIT=off (the
  // coverage check runs the ops so); disk and memory still serve.
  void set_compile_allowed(bool allowed) { compile_allowed_ = allowed; }
  bool ready() const { return ready_.load(); }

  CompileStats stats() const;
  std::vector<CompileEvent> events() const;
  void reset_counters();  // clears events and stats; keeps loaded modules

  const DiskCache* disk_cache() const;  // null in memory-only mode (also after a disk failure)
  // False once nothing can be stored in the disk cache (memory-only, or a read-only bundle).
  bool disk_writable() const { return disk_enabled_ && disk_writable_; }
  const JitOptions& options() const { return opts_; }
  // The compiler for a spec's target (created on first use).
  const Compiler& compiler_for(const KernelSpec& spec) const;

  static constexpr size_t kMaxEvents = 100000;

 private:
  struct Resolved;
  struct Slot;
  struct CompilerSlot;

  std::shared_ptr<const Resolved> resolve(const KernelSpec& spec) const;
  Resolved resolve_uncached(const KernelSpec& spec) const;
  std::shared_ptr<CompilerSlot> compiler_slot(TargetKind kind, const std::string& arch) const;
  // waited: set when the call blocked on a compile (its own, another thread's, another process's).
  std::shared_ptr<const LoadedModule> get_impl(const KernelSpec& spec, const Resolved& r, ArtifactSource* src,
                                               bool* waited = nullptr);
  // Produces the verified artifact bytes (disk or compile); *src says which.
  // background: the worker's compile (counted and logged as such).
  std::vector<std::byte> produce(const KernelSpec& spec, const Resolved& r, ArtifactSource* src,
                                 bool background = false, bool* lock_waited = nullptr);
  std::vector<std::byte> compile_now(const KernelSpec& spec, const Resolved& r,
                                     const std::filesystem::path* workdir_parent);
  void guard_serving_compile(const KernelSpec& spec, const std::string& key, bool background = false);
  // Ends a key's slot, waking its waiters; the tiered ticket then reads `ticket`.
  void finish_slot(Slot& slot, std::shared_ptr<const LoadedModule> module, ArtifactSource src,
                   std::exception_ptr error, bool retry, int ticket = PendingModule::Landed);
  // Under slots_mu_: drops the key's slot when it is still `slot` (the next request starts a new one).
  void forget_slot_locked(const std::string& key, const Slot* slot);
  // The owner's request failed: the slot is dropped and ends with the exception in flight.
  void abandon_slot(const std::string& key, Slot& slot, ArtifactSource src);
  void run_background(const KernelSpec& spec, std::shared_ptr<const Resolved> r, std::shared_ptr<Slot> slot);
  void cancel_background(const std::string& key, std::shared_ptr<Slot> slot);
  // Under slots_mu_: the bytes the background worker landed for the key, taken (or none).
  std::optional<std::vector<std::byte>> take_landed_locked(const std::string& key);
  BackgroundCompiler& background();
  bool disk_ready_for(CompilerSlot& cs);
  // Another process (or thread) holds the key's disk lock right now (it is compiling it).
  bool key_locked_elsewhere(const Resolved& r);
  void disable_disk(const std::string& why);
  void disable_disk_writes(const std::string& why);
  void record(const KernelSpec& spec, const std::string& key, ArtifactSource src, double seconds);
  void record_failure();
  // Throws Unavailable when the spec's target has no module loader.
  void require_loader(const KernelSpec& spec);
  std::shared_ptr<const LoadedModule> load(TargetKind kind, const std::string& key, std::span<const std::byte> bin);
  void maybe_prune();
  void hook(std::string_view stage) const {
    if (opts_.test_hook) opts_.test_hook(stage);
  }

  JitOptions opts_;
  std::shared_ptr<ThreadBudget> budget_;  // opts_.compile_budget, or this runtime's own
  std::unique_ptr<DiskCache> disk_;
  std::atomic<bool> disk_enabled_{false};
  std::once_flag disk_warned_;
  std::atomic<bool> disk_writable_{true};  // false: loads only (the prepare probe or a later write failed)
  std::once_flag disk_ro_warned_;
  std::once_flag host_slots_attached_;

  // resolve() memo: spec text -> key. Headers and compilers are fixed for the
  // runtime's life, so the key is a function of the spec alone; get() on a loaded
  // key then costs a string hash instead of a SHA-256 over source and headers.
  mutable std::mutex memo_mu_;
  mutable std::unordered_map<std::string, std::shared_ptr<const Resolved>> memo_;
  static constexpr size_t kMaxMemo = 4096;

  mutable std::mutex compilers_mu_;
  mutable std::map<std::pair<TargetKind, std::string>, std::shared_ptr<CompilerSlot>> compilers_;

  std::mutex loaders_mu_;
  std::map<TargetKind, std::shared_ptr<ModuleLoader>> loaders_;

  std::mutex slots_mu_;
  std::map<std::string, std::shared_ptr<Slot>> slots_;
  // Under slots_mu_: verified bytes the background worker produced, loaded (and
  // dropped) by the next request of the key; keys whose background compile failed.
  std::unordered_map<std::string, std::vector<std::byte>> landed_;
  std::unordered_map<std::string, std::shared_ptr<PendingModule>> failed_background_;

  std::atomic<int64_t> served_by_generic_{0};
  std::mutex background_mu_;
  std::unique_ptr<BackgroundCompiler> background_;  // created on the first background compile

  mutable std::mutex stats_mu_;
  CompileStats stats_;
  std::vector<CompileEvent> events_;

  std::atomic<bool> ready_{false};
  std::atomic<bool> compile_allowed_{true};
  std::mutex prune_mu_;
};

}  // namespace hcwarm::jit
