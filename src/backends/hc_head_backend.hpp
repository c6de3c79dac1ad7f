#pragma once
// What a backend provides for the mHC head (docs/MATH.md, section 6). The op
// (mhc/hc_head_op) owns the kernel key, the argument checks and the capture
// rule; a backend binds the JIT module, if it runs one, and queues the call.
#include <cstddef>
#include <cstdint>
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
  // Scratch bytes a call on T tokens needs in p.workspace (0: none).
  virtual size_t workspace_bytes(int64_t /*num_tokens*/) const { return 0; }
  // The first pointer argument this backend cannot take (e.g. misaligned), or nullptr.
  virtual const char* unsupported_argument(const hcwarm_mhc_head_params&) const { return nullptr; }
  // Queues the call (T >= 1, every pointer set, p.workspace holding
  // workspace_bytes(T)). Throws on a launch error.
  virtual void launch(const hcwarm_mhc_head_params& p, const LaunchContext& launch) = 0;
};

}  // namespace hcwarm::backends
