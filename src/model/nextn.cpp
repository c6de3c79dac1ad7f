#include "model/nextn.hpp"

#include "model/safetensors.hpp"

namespace hcwarm::model {

DeepseekV4ForCausalLMNextN::DeepseekV4ForCausalLMNextN(const ModelConfig& config, const ModelBuildOptions& options,
                                                       LayerOps ops, const SublayerFactory& make_sublayer)
    : DeepseekV4LayerStack("DeepSeek V4 NextN", config, options, ops) {
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
  head_ = file ? HeadWeights::load(config, *file, nextn_head_prefix(config), ops.device)
               : HeadWeights::random(config, options.seed, /*owner=*/config.num_hidden_layers, ops.device);
}

}  // namespace hcwarm::model
