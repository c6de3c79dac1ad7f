#pragma once
// What a backend provides for hc_pre. The op (mhc/hc_pre_op) decides the split
// count, the kernel key and the workspace, and holds the loaded kernels; a
// backend turns a module into launchable kernels, says how much scratch a call
// needs, and queues the call on its device. Each backend implements it once,
// under backends/<name>/; its options are fixed at construction (the op makes a
// new one when they change).
#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/launch_context.hpp"
#include "jit/kernel_spec.hpp"
#include "jit/loaded_module.hpp"
#include "kernels/common/mhc_params.hpp"

namespace hcwarm::backends {

// One split bucket's entry points, bound from a module (which they keep alive).
class HcPreKernels {
 public:
  virtual ~HcPreKernels() = default;
  std::shared_ptr<const jit::LoadedModule> module;
};

class HcPreBackend {
 public:
  virtual ~HcPreBackend() = default;
  // Held while binding and launching: makes the backend's device current on this
  // thread (CUDA: its context, the caller's restored after), or nothing.
  struct Scope {
    virtual ~Scope() = default;
  };
  virtual std::unique_ptr<Scope> enter() const { return nullptr; }
  // The entry points of a specialized module compiled from `spec` (one split bucket).
  virtual std::unique_ptr<HcPreKernels> bind(std::shared_ptr<const jit::LoadedModule> module,
                                             const jit::KernelSpec& spec, int num_splits) = 0;
  // The generic kernels built into the library (every split count); Unavailable if none.
  virtual std::unique_ptr<HcPreKernels> bind_generic(bool fused_norm) = 0;
  // Whether bind_generic() can succeed for this backend's shapes (tiered execution needs it).
  virtual bool has_generic() const = 0;
  // Scratch bytes a call on T tokens with num_splits may need (the largest of the
  // paths it can take), 16-byte aligned memory on the backend's device.
  virtual size_t workspace_bytes(int64_t num_tokens, int num_splits) const = 0;
  // The first argument this backend cannot take (e.g. misaligned), or nullptr.
  virtual const char* unsupported_argument(const hcwarm_mhc_pre_params&) const { return nullptr; }
  // Whether launches on `launch`'s stream are being captured into a CUDA graph:
  // then a call may only launch (no compile, load, allocation or synchronization).
  virtual bool capturing(const LaunchContext&) const { return false; }
  // Queues the call. p is complete but for num_parts, which the backend sets;
  // p.partials holds workspace_bytes(T, p.num_splits). stages: bit 0 = partial,
  // bit 1 = finish. Throws on a launch error.
  virtual void launch(const HcPreKernels& kernels, hcwarm_mhc_pre_params p, const LaunchContext& launch,
                      int stages) = 0;
};

}  // namespace hcwarm::backends
