#pragma once
// What the model runner needs of a model: a forward from the token embedding
// through every layer and the mHC head.
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
  // embed: the token embedding (T, D) bf16 on the device; out: (T, D) bf16 on
  // the device, the head's output (what the final RMSNorm and LM head take).
  // scratch: workspace_bytes(T) bytes on the device. The work may still be queued.
  virtual void forward(const bf16* embed, bf16* out, int64_t num_tokens, void* scratch) = 0;
  virtual size_t workspace_bytes(int64_t num_tokens) const = 0;
  // Sizes what forward() keeps between calls for T <= max_num_tokens, so that no forward allocates.
  virtual void reserve(int64_t max_num_tokens) = 0;
  virtual const ModelConfig& config() const = 0;
  virtual int num_layers() const = 0;
};

// Builds the sublayer of one path ("attn" or "ffn") of one layer: attention and
// MoE are the host engine's; hcwarm plugs in its dense SwiGLU MLP.
using SublayerFactory = std::function<std::unique_ptr<Sublayer>(int layer, const std::string& path)>;

}  // namespace hcwarm::model
