#include "model/nextn.hpp"

#include "model/safetensors.hpp"

namespace hcwarm::model {

DeepseekV4ForCausalLMNextN::DeepseekV4ForCausalLMNextN(const ModelConfig& config, const ModelBuildOptions& options,
                                                       LayerOps ops, const SublayerFactory& make_sublayer)
    : config_(config), ops_(ops) {
  const int n = std::max(1, options.num_layers > 0 ? options.num_layers : config.num_nextn_predict_layers);
  std::optional<SafetensorsFile> file;
  if (options.weights_file) file.emplace(SafetensorsFile::open(*options.weights_file));
  for (int i = 0; i < n; ++i) {
    const int id = config.num_hidden_layers + i;
    DecoderLayerWeights w = file ? DecoderLayerWeights::load(config, id, *file, ops.device)
                                 : DecoderLayerWeights::random(config, id, options.seed, ops.device);
    layers_.push_back(std::make_unique<DeepseekV4NextnDecoderLayer>(std::make_unique<DeepseekV4DecoderLayer>(
        id, config, std::move(w), make_sublayer(id, "attn"), make_sublayer(id, "ffn"), ops)));
  }
}

void DeepseekV4ForCausalLMNextN::forward(bf16* residual, int64_t num_tokens, void* scratch) {
  for (auto& layer : layers_) layer->forward(residual, num_tokens, scratch);
}

size_t DeepseekV4ForCausalLMNextN::workspace_bytes(int64_t num_tokens) const {
  return layers_.front()->decoder().workspace_bytes(num_tokens);
}

std::vector<int64_t> DeepseekV4ForCausalLMNextN::kernel_warmup(RunnerView& runner) {
  warmed_ = run_mhc_prewarm_hook("DeepSeek V4 NextN", config_, ops_.hc_pre, runner, [this](int64_t m, Device& d) {
    return layers_.front()->prewarm_mhc_token_count_buckets(m, d);
  });
  return warmed_;
}

}  // namespace hcwarm::model
