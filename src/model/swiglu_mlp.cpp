// SwigluWeights (random, load, save) and the SwigluMlp sublayer.
#include "model/swiglu_mlp.hpp"

#include <fmt/format.h>

#include <cmath>
#include <random>

#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "model/safetensors.hpp"

namespace hcwarm::model {
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

SwigluWeights SwigluWeights::load(const SafetensorsFile& file, const std::string& prefix, int hidden, int width) {
  HCWARM_CHECK_ARG(hidden > 0 && width > 0, "swiglu_mlp: hidden and width must be > 0, got {} and {}", hidden, width);
  SwigluWeights w;
  w.hidden = hidden;
  w.width = width;
  w.gate = file.get_bf16(prefix + "gate_proj.weight", {width, hidden});
  w.up = file.get_bf16(prefix + "up_proj.weight", {width, hidden});
  w.down = file.get_bf16(prefix + "down_proj.weight", {hidden, width});
  return w;
}

void SwigluWeights::save(SafetensorsWriter& writer, const std::string& prefix) const {
  validate();
  writer.add(prefix + "gate_proj.weight", gate);
  writer.add(prefix + "up_proj.weight", up);
  writer.add(prefix + "down_proj.weight", down);
}

SwigluMlp::SwigluMlp(std::shared_ptr<const SwigluWeights> weights, std::unique_ptr<SwigluBackend> backend)
    : weights_(std::move(weights)), backend_(std::move(backend)) {
  HCWARM_CHECK_ARG(weights_ != nullptr && backend_ != nullptr, "swiglu_mlp: weights and backend are required");
  weights_->validate();
}

std::unique_ptr<SwigluMlp> SwigluMlp::cpu(SwigluWeights weights, int threads) {
  auto w = std::make_shared<const SwigluWeights>(std::move(weights));
  auto backend = make_cpu_swiglu_backend(w, std::make_shared<ThreadPool>(threads));
  return std::make_unique<SwigluMlp>(std::move(w), std::move(backend));
}

void SwigluMlp::forward(const bf16* x, bf16* out, int64_t T, Device& device) {
  HCWARM_CHECK_ARG(T >= 0, "swiglu_mlp: token count must be >= 0, got {}", T);
  HCWARM_CHECK_ARG(device.kind() == backend_->device_kind(), "swiglu_mlp: backend '{}' cannot run on device '{}'",
                   backend_->name(), device.name());
  if (T == 0) return;
  backend_->forward(x, out, T, device);
}

std::string SwigluMlp::describe() const {
  return fmt::format("swiglu_mlp(hidden={}, width={}, backend={})", weights_->hidden, weights_->width,
                     backend_->name());
}

}  // namespace hcwarm::model
