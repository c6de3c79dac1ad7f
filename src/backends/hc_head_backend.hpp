#pragma once
// What a backend provides for the mHC head (docs/MATH.md, section 6). The op
// (mhc/hc_head_op) owns the kernel key, the argument checks and the capture
// rule; a backend binds the JIT module, if it runs one, and queues the call.
#include <memory>

#include "core/launch_context.hpp"
#include "jit/loaded_module.hpp"
#include "kernels/common/mhc_head_params.hpp"

namespace hcwarm::backends {

class HcHeadBackend {
 public:
  virtual ~HcHeadBackend() = default;
  // Whether the backend runs a JIT module (then bind() it before launching).
  virtual bool needs_module() const = 0;
  virtual void bind(std::shared_ptr<const jit::LoadedModule> module) = 0;
  // Whether `launch`'s stream is being captured into a CUDA graph.
  virtual bool capturing(const LaunchContext&) const { return false; }
  // The first pointer argument this backend cannot take (e.g. misaligned), or nullptr.
  virtual const char* unsupported_argument(const hcwarm_mhc_head_params&) const { return nullptr; }
  // Queues the call (T >= 1, every pointer set). Throws on a launch error.
  virtual void launch(const hcwarm_mhc_head_params& p, const LaunchContext& launch) = 0;
};

}  // namespace hcwarm::backends
