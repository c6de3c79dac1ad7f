#pragma once
// The one real sublayer hcwarm ships: a dense SwiGLU MLP,
//   out = down_proj( silu(gate_proj x) * up_proj x ),
// with bf16 weights and activations and f32 accumulation. It stands in for
// the host engine's attention and MoE so a decoder layer runs end to end; it
// is not DeepSeek V4's MoE. The math runs in a backend chosen per device
// (CPU here; a CUDA backend plugs in through SwigluBackend).
#include <cstdint>
#include <memory>
#include <string>

#include "core/bf16.hpp"
#include "core/device.hpp"
#include "core/thread_pool.hpp"
#include "core/tensor.hpp"
#include "model/sublayer.hpp"

namespace hcwarm::model {

class SafetensorsFile;
class SafetensorsWriter;

// Hugging Face layout: gate_proj and up_proj (width, hidden), down_proj (hidden, width).
struct SwigluWeights {
  int hidden = 0;
  int width = 0;
  HostTensor<bf16> gate;
  HostTensor<bf16> up;
  HostTensor<bf16> down;

  // Uniform in +-sqrt(3 / fan_in) (unit-variance outputs for unit-variance
  // inputs), from mt19937_64 bits: the same weights on every platform.
  static SwigluWeights random(int hidden, int width, uint64_t seed);
  // prefix + "gate_proj.weight", "up_proj.weight", "down_proj.weight" (BF16),
  // shapes checked against hidden and width.
  static SwigluWeights load(const SafetensorsFile& file, const std::string& prefix, int hidden, int width);
  void save(SafetensorsWriter& writer, const std::string& prefix) const;
  // Shapes agree with hidden and width (> 0); ErrorKind::InvalidArgument otherwise.
  void validate() const;
};

// Runs the MLP on one kind of device. A backend keeps what it needs of the
// weights (a GPU backend uploads them once, at construction).
class SwigluBackend {
 public:
  virtual ~SwigluBackend() = default;
  virtual DeviceKind device_kind() const = 0;
  virtual std::string name() const = 0;
  // Same contract as Sublayer::forward.
  virtual void forward(const bf16* x, bf16* out, int64_t T, Device& device) = 0;
};

// Threads over tokens on `pool` (shared, so many layers need not each own
// threads). The intermediate silu(g) * u is rounded to bf16 before down_proj,
// as a bf16 model's activations are.
std::unique_ptr<SwigluBackend> make_cpu_swiglu_backend(std::shared_ptr<const SwigluWeights> weights,
                                                       std::shared_ptr<ThreadPool> pool);

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
