// JitRuntime's module loaders: which one a target has, and turning verified
// bytes into a LoadedModule through it.
#include "jit/jit_runtime.hpp"

#include "core/error.hpp"

namespace hcwarm::jit {

void JitRuntime::set_module_loader(TargetKind target, std::shared_ptr<ModuleLoader> loader) {
  std::lock_guard lock(loaders_mu_);
  loaders_[target] = std::move(loader);
}

void JitRuntime::require_loader(const KernelSpec& spec) {
  std::lock_guard lock(loaders_mu_);
  if (!loaders_.count(spec.target)) {
    HCWARM_THROW(ErrorKind::Unavailable,
                 "no {} module loader is set (the CUDA backend is not active); {} cannot be loaded",
                 to_string(spec.target), spec.describe());
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

}  // namespace hcwarm::jit
