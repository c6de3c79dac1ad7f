// SwigluWeights: random initialization and shape checks.
#include <cmath>
#include <random>

#include "model/standin/swiglu_backend.hpp"
#include "core/error.hpp"

namespace hcwarm::backends {
namespace {

void fill_uniform(HostTensor<bf16>& t, double bound, std::mt19937_64& rng) {
  for (auto& v : t.vec()) {
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // [0, 1), platform independent
    v = bf16::from_float(static_cast<float>((2.0 * u - 1.0) * bound));
  }
}

}  // namespace

void SwigluWeights::validate() const {
  HCWARM_CHECK_ARG(hidden > 0 && width > 0, "swiglu_mlp: hidden and width must be > 0, got {} and {}", hidden, width);
  const Shape in{width, hidden}, out{hidden, width};
  HCWARM_CHECK_ARG(gate.shape() == in, "swiglu_mlp: gate_proj has shape {}, expected {}", shape_string(gate.shape()),
                   shape_string(in));
  HCWARM_CHECK_ARG(up.shape() == in, "swiglu_mlp: up_proj has shape {}, expected {}", shape_string(up.shape()),
                   shape_string(in));
  HCWARM_CHECK_ARG(down.shape() == out, "swiglu_mlp: down_proj has shape {}, expected {}",
                   shape_string(down.shape()), shape_string(out));
}

SwigluWeights SwigluWeights::random(int hidden, int width, uint64_t seed) {
  HCWARM_CHECK_ARG(hidden > 0 && width > 0, "swiglu_mlp: hidden and width must be > 0, got {} and {}", hidden, width);
  SwigluWeights w{hidden, width, HostTensor<bf16>({width, hidden}), HostTensor<bf16>({width, hidden}),
                  HostTensor<bf16>({hidden, width})};
  std::mt19937_64 rng(seed);
  fill_uniform(w.gate, std::sqrt(3.0 / hidden), rng);
  fill_uniform(w.up, std::sqrt(3.0 / hidden), rng);
  fill_uniform(w.down, std::sqrt(3.0 / width), rng);
  return w;
}

}  // namespace hcwarm::backends
