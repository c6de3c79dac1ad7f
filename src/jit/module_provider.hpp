#pragma once
// Where an op's specialized kernels come from: normally the JIT runtime; tests
// inject their own. Beyond get(), a provider may serve tiered execution: a miss
// is then compiled in the background while the op runs its generic kernel, and
// a ticket tells the op when to ask again.
#include <atomic>
#include <functional>
#include <memory>
#include <utility>

#include "jit/kernel_spec.hpp"
#include "jit/loaded_module.hpp"

namespace hcwarm::jit {

// The state of a specialization being compiled in the background, polled by
// the ops that serve it generically meanwhile (one atomic load per call).
struct PendingModule {
  enum State : int { Pending = 0, Landed = 1, Failed = 2 };
  std::atomic<int> state{Pending};  // Landed: ask the provider again; Failed: keep the generic kernel
};

struct TieredModule {
  std::shared_ptr<const LoadedModule> module;    // ready now (memory, or loaded from disk now)
  std::shared_ptr<const PendingModule> pending;  // else: compiling in the background
};

class ModuleProvider {
 public:
  virtual ~ModuleProvider() = default;
  // The module, compiling it in this thread if needed. Throws as JitRuntime::get.
  virtual std::shared_ptr<const LoadedModule> get(const KernelSpec& spec) = 0;
  // Whether get_or_schedule() may answer with a pending compile instead of waiting.
  virtual bool tiered() const { return false; }
  // Never waits for a compile when tiered(): the module when it is loaded or on
  // disk, else a ticket for a background compile. Untiered: get().
  virtual TieredModule get_or_schedule(const KernelSpec& spec) { return {get(spec), nullptr}; }
  // A call was served by a generic kernel while its specialization was pending.
  virtual void note_served_by_generic() {}
};

// A provider over a function (tests): never tiered.
class FunctionModuleProvider final : public ModuleProvider {
 public:
  using Fn = std::function<std::shared_ptr<const LoadedModule>(const KernelSpec&)>;
  explicit FunctionModuleProvider(Fn fn) : fn_(std::move(fn)) {}
  std::shared_ptr<const LoadedModule> get(const KernelSpec& spec) override { return fn_(spec); }

 private:
  Fn fn_;
};

}  // namespace hcwarm::jit
