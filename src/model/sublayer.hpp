#pragma once
// What a decoder layer runs between its mHC pre and post steps: attention on
// one path, MoE on the other. Both belong to the host engine and plug in
// here; hcwarm ships one real implementation, a dense SwiGLU MLP (swiglu_mlp.hpp).
#include <cstdint>
#include <string>

#include "core/bf16.hpp"
#include "core/device.hpp"

namespace hcwarm::model {

class Sublayer {
 public:
  virtual ~Sublayer() = default;

  // x: (T, D) bf16 and out: (T, D) bf16, both in `device`'s memory; out must
  // not alias x. T = 0 is a no-op. Work may be queued: callers synchronize.
  virtual void forward(const bf16* x, bf16* out, int64_t T, Device& device) = 0;

  virtual int hidden_size() const = 0;
  // For logs and reports, e.g. "swiglu_mlp(hidden=4096, width=256, backend=cpu)".
  virtual std::string describe() const = 0;
};

}  // namespace hcwarm::model
