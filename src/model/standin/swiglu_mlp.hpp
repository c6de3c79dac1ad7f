#pragma once
// A stand-in sublayer: the one real sublayer hcwarm ships, a dense SwiGLU MLP,
//   out = down_proj( silu(gate_proj x) * up_proj x ),
// with bf16 weights and activations and f32 accumulation. It stands in for
// the host engine's attention and MoE so a decoder layer runs end to end; it
// is not DeepSeek V4's MoE. The math runs in a backend chosen per device
// (swiglu_backend.hpp beside it: swiglu_cpu and swiglu_cuda, with the GEMM kernel
// in kernels/standin/gemm_nt.cuh).
#include <cstdint>
#include <memory>
#include <string>

#include "model/standin/swiglu_backend.hpp"
#include "core/bf16.hpp"
#include "core/device.hpp"
#include "core/thread_pool.hpp"
#include "model/sublayer.hpp"

namespace hcwarm::model {

class SafetensorsFile;
class SafetensorsWriter;

using backends::SwigluBackend;
using backends::SwigluWeights;

// prefix + "gate_proj.weight", "up_proj.weight", "down_proj.weight" (BF16),
// shapes checked against hidden and width.
SwigluWeights load_swiglu_weights(const SafetensorsFile& file, const std::string& prefix, int hidden, int width);
void save_swiglu_weights(const SwigluWeights& weights, SafetensorsWriter& writer, const std::string& prefix);

class SwigluMlp final : public Sublayer {
 public:
  SwigluMlp(std::shared_ptr<const SwigluWeights> weights, std::unique_ptr<SwigluBackend> backend);
  // A CPU MLP with its own pool of `threads` (<= 0: the hardware's count).
  static std::unique_ptr<SwigluMlp> cpu(SwigluWeights weights, int threads = 0);

  // Checks that `device` is the backend's kind, then runs it.
  void forward(const bf16* x, bf16* out, int64_t T, Device& device) override;
  int hidden_size() const override { return weights_->hidden; }
  int width() const { return weights_->width; }
  std::string describe() const override;
  const SwigluWeights& weights() const { return *weights_; }

 private:
  std::shared_ptr<const SwigluWeights> weights_;
  std::unique_ptr<SwigluBackend> backend_;
};

}  // namespace hcwarm::model
