#pragma once
// What a backend provides for hc_post (docs/MATH.md, section 3). The op
// (mhc/hc_post_op) owns the kernel key and the capture rule; a backend binds the
// JIT module, if it runs one, and queues the call on its device.
#include <cstdint>
#include <memory>

#include "core/bf16.hpp"
#include "core/launch_context.hpp"
#include "jit/loaded_module.hpp"

namespace hcwarm::backends {

// One call: residual_out (T, hc, D) = post (T, hc) * out (T, D) + comb^T (T, hc, hc)
// mixing of residual_in; residual_out may alias residual_in. Device pointers.
struct HcPostParams {
  int64_t num_tokens = 0;
  int hc_mult = 4;
  int64_t hidden = 0;
  const bf16* out = nullptr;
  const bf16* residual_in = nullptr;
  const float* post = nullptr;
  const float* comb = nullptr;
  bf16* residual_out = nullptr;
};

class HcPostBackend {
 public:
  virtual ~HcPostBackend() = default;
  // Whether the backend runs a JIT module (then bind() it before launching).
  virtual bool needs_module() const = 0;
  virtual void bind(std::shared_ptr<const jit::LoadedModule> module) = 0;
  // A kernel built into the library that serves any hidden size (hc_mult 4)
  // while the JIT one compiles: whether there is one, and loading it.
  virtual bool has_generic() const { return false; }
  virtual void bind_generic() {}
  // Whether `launch`'s stream is being captured into a CUDA graph.
  virtual bool capturing(const LaunchContext&) const { return false; }
  // Queues the call (T >= 1) on the bound kernel, or the generic one. Throws on a launch error.
  virtual void launch(const HcPostParams& p, const LaunchContext& launch, bool generic) = 0;
};

}  // namespace hcwarm::backends
