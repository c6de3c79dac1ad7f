#include "model/head_weights.hpp"

#include <fmt/format.h>

#include <random>

#include "core/tensor.hpp"
#include "core/device_upload.hpp"
#include "model/safetensors.hpp"

namespace hcwarm::model {
namespace {

// Seeds the head apart from every layer's parameters (those use seed * 1000003 + layer).
constexpr uint64_t kHeadSeedSalt = 0x68635f68656164ull;  // "hc_head"

struct HeadShapes {
  Shape fn, scale, base;
  explicit HeadShapes(const ModelConfig& c) : fn{c.hc_mult, c.hc_hidden_size()}, scale{1}, base{c.hc_mult} {}
};

}  // namespace

std::string main_head_prefix() { return "model."; }

std::string nextn_head_prefix(const ModelConfig& config) {
  return fmt::format("model.layers.{}.", config.num_hidden_layers);
}

HeadWeights HeadWeights::random(const ModelConfig& config, uint64_t seed, int owner, Device& device) {
  const HeadShapes s(config);
  std::mt19937_64 rng((seed ^ kHeadSeedSalt) * 1000003u + static_cast<uint64_t>(owner));
  std::normal_distribution<float> n01(0.0f, 1.0f);
  auto normal = [&](const Shape& shape, float std) {
    HostTensor<float> t(shape);
    for (auto& v : t.vec()) v = std * n01(rng);
    return t;
  };
  HeadWeights w;
  w.fn = upload_to_device(normal(s.fn, 1e-3f), device);
  w.scale = upload_to_device(normal(s.scale, 0.1f), device);
  w.base = upload_to_device(normal(s.base, 0.1f), device);
  return w;
}

HeadWeights HeadWeights::load(const ModelConfig& config, const SafetensorsFile& file, const std::string& prefix,
                              Device& device) {
  const HeadShapes s(config);
  HeadWeights w;
  w.fn = upload_to_device(file.get_f32(prefix + "hc_head_fn", s.fn), device);
  w.scale = upload_to_device(file.get_f32(prefix + "hc_head_scale", s.scale), device);
  w.base = upload_to_device(file.get_f32(prefix + "hc_head_base", s.base), device);
  return w;
}

}  // namespace hcwarm::model
