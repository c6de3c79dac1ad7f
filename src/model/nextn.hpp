#pragma once
// The NextN (MTP draft) model of DeepSeek V4. Its decoder layer wraps an
// ordinary DeepseekV4DecoderLayer and exposes the bucket prewarm by delegating
// to it, so a server running a draft model warms the draft's kernels too.
#include "model/deepseek_v4.hpp"

namespace hcwarm::model {

class DeepseekV4NextnDecoderLayer {
 public:
  explicit DeepseekV4NextnDecoderLayer(std::unique_ptr<DeepseekV4DecoderLayer> decoder)
      : decoder_(std::move(decoder)) {}

  std::vector<int64_t> prewarm_mhc_token_count_buckets(int64_t max_num_tokens, Device& device) {
    return decoder_->prewarm_mhc_token_count_buckets(max_num_tokens, device);
  }
  // The draft's embedding/projection steps are the host engine's; the decoder runs here.
  void forward(bf16* residual, int64_t num_tokens, void* scratch) { decoder_->forward(residual, num_tokens, scratch); }
  std::array<SublayerStep, 2> steps() { return decoder_->steps(); }
  size_t workspace_bytes(int64_t num_tokens) const { return decoder_->workspace_bytes(num_tokens); }
  DeepseekV4DecoderLayer& decoder() { return *decoder_; }

 private:
  std::unique_ptr<DeepseekV4DecoderLayer> decoder_;
};

class DeepseekV4ForCausalLMNextN final : public DeepseekV4LayerStack<DeepseekV4NextnDecoderLayer> {
 public:
  // One draft layer per num_nextn_predict_layers (at least one); its tensors are
  // "model.layers.{num_hidden_layers + i}.*" in a weights file, as upstream numbers
  // them, and so is the draft's own head (nextn_head_prefix()).
  DeepseekV4ForCausalLMNextN(const ModelConfig& config, const ModelBuildOptions& options, LayerOps ops,
                             const SublayerFactory& make_sublayer);
};

}  // namespace hcwarm::model
