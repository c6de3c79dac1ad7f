#pragma once
// The mHC and norm parameters of one decoder layer, on the model's device,
// random with a seed or loaded from safetensors under their upstream names.
#include <cstdint>
#include <optional>
#include <string>

#include "core/device.hpp"
#include "core/tensor.hpp"
#include "model/model_config.hpp"

namespace hcwarm::model {

class SafetensorsFile;

// One path's hyper-connection parameters: hc_{attn,ffn}_{fn,scale,base}.
struct MhcPathWeights {
  DeviceBuffer fn;     // (hc*(2+hc), hc*D) f32
  DeviceBuffer scale;  // (3,) f32
  DeviceBuffer base;   // (hc*(2+hc),) f32
};

struct DecoderLayerWeights {
  MhcPathWeights attn;
  MhcPathWeights ffn;
  DeviceBuffer input_layernorm;           // (D,) bf16: the attn path's norm, fused into hc_pre
  DeviceBuffer post_attention_layernorm;  // (D,) bf16: the ffn path's norm

  // Weights as a model sees them: fn ~ 1e-3 N(0,1), scale and base ~ 0.1 N(0,1),
  // norm weights ~ 1 + 0.05 N(0,1); deterministic for (seed, layer).
  static DecoderLayerWeights random(const ModelConfig& config, int layer, uint64_t seed, Device& device);
  // "model.layers.{layer}.hc_attn_fn", ..., "model.layers.{layer}.input_layernorm.weight", ...
  // A missing or mis-shaped tensor is an error naming the file and the tensor.
  static DecoderLayerWeights load(const ModelConfig& config, int layer, const SafetensorsFile& file, Device& device);
};

// The upstream tensor name of a layer parameter, e.g. ("hc_attn_fn", 3) -> "model.layers.3.hc_attn_fn".
std::string layer_tensor_name(int layer, const std::string& param);

}  // namespace hcwarm::model
