#pragma once
// What the model runner needs of a model: run the layers on a residual.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/bf16.hpp"
#include "model/model_config.hpp"
#include "model/sublayer.hpp"

namespace hcwarm::model {

class CausalLM {
 public:
  virtual ~CausalLM() = default;
  // residual: (T, hc, D) bf16 on the device, updated in place through every layer.
  // scratch: workspace_bytes(T) bytes on the device. The work may still be queued.
  virtual void forward(bf16* residual, int64_t num_tokens, void* scratch) = 0;
  virtual size_t workspace_bytes(int64_t num_tokens) const = 0;
  virtual const ModelConfig& config() const = 0;
  virtual int num_layers() const = 0;
};

// Builds the sublayer of one path ("attn" or "ffn") of one layer: attention and
// MoE are the host engine's; hcwarm plugs in its dense SwiGLU MLP.
using SublayerFactory = std::function<std::unique_ptr<Sublayer>(int layer, const std::string& path)>;

}  // namespace hcwarm::model
