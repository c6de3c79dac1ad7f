#include "model/layer_weights.hpp"

#include <fmt/format.h>

#include <random>

#include "core/device_upload.hpp"
#include "model/safetensors.hpp"

namespace hcwarm::model {
namespace {

struct LayerShapes {
  Shape fn, scale, base, norm;
  explicit LayerShapes(const ModelConfig& c)
      : fn{c.mhc_dims().mix(), c.hc_hidden_size()}, scale{3}, base{c.mhc_dims().mix()}, norm{c.hidden_size} {}
};

}  // namespace

std::string layer_tensor_name(int layer, const std::string& param) {
  return fmt::format("model.layers.{}.{}", layer, param);
}

DecoderLayerWeights DecoderLayerWeights::random(const ModelConfig& config, int layer, uint64_t seed, Device& device) {
  const LayerShapes s(config);
  std::mt19937_64 rng(seed * 1000003u + static_cast<uint64_t>(layer));
  std::normal_distribution<float> n01(0.0f, 1.0f);
  auto normal = [&](const Shape& shape, float mean, float std) {
    HostTensor<float> t(shape);
    for (auto& v : t.vec()) v = mean + std * n01(rng);
    return t;
  };
  auto norm = [&] {
    const HostTensor<float> f = normal(s.norm, 1.0f, 0.05f);
    HostTensor<bf16> b(s.norm);
    for (int64_t i = 0; i < f.numel(); ++i) b[i] = bf16::from_float(f[i]);
    return upload_to_device(b, device);
  };
  DecoderLayerWeights w;
  for (MhcPathWeights* p : {&w.attn, &w.ffn}) {
    p->fn = upload_to_device(normal(s.fn, 0.0f, 1e-3f), device);
    p->scale = upload_to_device(normal(s.scale, 0.0f, 0.1f), device);
    p->base = upload_to_device(normal(s.base, 0.0f, 0.1f), device);
  }
  w.input_layernorm = norm();
  w.post_attention_layernorm = norm();
  return w;
}

DecoderLayerWeights DecoderLayerWeights::load(const ModelConfig& config, int layer, const SafetensorsFile& file,
                                              Device& device) {
  const LayerShapes s(config);
  auto name = [&](const char* p) { return layer_tensor_name(layer, p); };
  DecoderLayerWeights w;
  for (auto [p, prefix] : {std::pair{&w.attn, "hc_attn_"}, std::pair{&w.ffn, "hc_ffn_"}}) {
    p->fn = upload_to_device(file.get_f32(name((std::string(prefix) + "fn").c_str()), s.fn), device);
    p->scale = upload_to_device(file.get_f32(name((std::string(prefix) + "scale").c_str()), s.scale), device);
    p->base = upload_to_device(file.get_f32(name((std::string(prefix) + "base").c_str()), s.base), device);
  }
  w.input_layernorm = upload_to_device(file.get_bf16(name("input_layernorm.weight"), s.norm), device);
  w.post_attention_layernorm = upload_to_device(file.get_bf16(name("post_attention_layernorm.weight"), s.norm), device);
  return w;
}

}  // namespace hcwarm::model
