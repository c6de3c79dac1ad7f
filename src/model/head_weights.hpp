#pragma once
// The mHC head's parameters (docs/MATH.md, section 6) on the model's device:
// hc_head_fn (hc, hc*D), hc_head_scale (1,), hc_head_base (hc,), all f32;
// random with a seed or loaded from safetensors under their upstream names.
#include <cstdint>
#include <string>

#include "core/device.hpp"
#include "model/model_config.hpp"

namespace hcwarm::model {

class SafetensorsFile;

struct HeadWeights {
  DeviceBuffer fn;     // (hc, hc*D) f32
  DeviceBuffer scale;  // (1,) f32
  DeviceBuffer base;   // (hc,) f32

  // fn ~ 1e-3 N(0,1), scale and base ~ 0.1 N(0,1), as the layers' mHC
  // parameters; deterministic for (seed, owner), owner naming whose head it is.
  static HeadWeights random(const ModelConfig& config, uint64_t seed, int owner, Device& device);
  // prefix + "hc_head_fn", ...; a missing or mis-shaped tensor is an error naming the file and the tensor.
  static HeadWeights load(const ModelConfig& config, const SafetensorsFile& file, const std::string& prefix,
                          Device& device);
};

// Where the heads' tensors live in a checkpoint: "model." for the main model;
// for the NextN draft, under its layer number ("model.layers.{num_hidden_layers}."),
// beside the draft layer's own mHC parameters.
std::string main_head_prefix();
std::string nextn_head_prefix(const ModelConfig& config);

}  // namespace hcwarm::model
