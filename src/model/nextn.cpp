#include "model/nextn.hpp"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

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

void DeepseekV4ForCausalLMNextN::kernel_warmup(RunnerView& runner) {
  warmed_.clear();
  if (const std::string why = mhc_prewarm_skip_reason(config_, ops_.hc_pre.uses_fast_path(), runner.env()); !why.empty()) {
    spdlog::info("DeepSeek V4 NextN mHC prewarm skipped: {}", why);
    return;
  }
  const int64_t max_num_tokens = runner.server_args().max_num_tokens();
  warmed_ = layers_.front()->prewarm_mhc_token_count_buckets(max_num_tokens, runner.device());
  spdlog::info("DeepSeek V4 NextN mHC prewarm done for max_num_tokens={}: token counts {}", max_num_tokens,
               fmt::join(warmed_, ", "));
}

}  // namespace hcwarm::model
