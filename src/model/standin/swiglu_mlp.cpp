// The stand-in SwiGLU MLP sublayer, and its weights in safetensors files.
#include "model/standin/swiglu_mlp.hpp"

#include <fmt/format.h>

#include "model/standin/swiglu_cpu.hpp"
#include "core/error.hpp"
#include "core/thread_pool.hpp"
#include "model/safetensors.hpp"

namespace hcwarm::model {

SwigluWeights load_swiglu_weights(const SafetensorsFile& file, const std::string& prefix, int hidden, int width) {
  HCWARM_CHECK_ARG(hidden > 0 && width > 0, "swiglu_mlp: hidden and width must be > 0, got {} and {}", hidden, width);
  SwigluWeights w;
  w.hidden = hidden;
  w.width = width;
  w.gate = file.get_bf16(prefix + "gate_proj.weight", {width, hidden});
  w.up = file.get_bf16(prefix + "up_proj.weight", {width, hidden});
  w.down = file.get_bf16(prefix + "down_proj.weight", {hidden, width});
  return w;
}

void save_swiglu_weights(const SwigluWeights& w, SafetensorsWriter& writer, const std::string& prefix) {
  w.validate();
  writer.add(prefix + "gate_proj.weight", w.gate);
  writer.add(prefix + "up_proj.weight", w.up);
  writer.add(prefix + "down_proj.weight", w.down);
}

SwigluMlp::SwigluMlp(std::shared_ptr<const SwigluWeights> weights, std::unique_ptr<SwigluBackend> backend)
    : weights_(std::move(weights)), backend_(std::move(backend)) {
  HCWARM_CHECK_ARG(weights_ != nullptr && backend_ != nullptr, "swiglu_mlp: weights and backend are required");
  weights_->validate();
}

std::unique_ptr<SwigluMlp> SwigluMlp::cpu(SwigluWeights weights, int threads) {
  auto w = std::make_shared<const SwigluWeights>(std::move(weights));
  auto backend = cpu::make_cpu_swiglu_backend(w, std::make_shared<ThreadPool>(threads));
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
