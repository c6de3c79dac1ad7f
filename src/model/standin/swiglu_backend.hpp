#pragma once
// What a backend provides for the stand-in SwiGLU MLP sublayer
// (model/standin/swiglu_mlp.hpp): the weights it is given and the one call it
// must implement. Implemented beside it: swiglu_cpu and swiglu_cuda.
#include <cstdint>
#include <memory>
#include <string>

#include "core/bf16.hpp"
#include "core/device.hpp"
#include "core/tensor.hpp"

namespace hcwarm::backends {

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

}  // namespace hcwarm::backends
