#include "model/deepseek_v4.hpp"
#include "core/logging.hpp"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "model/safetensors.hpp"

namespace hcwarm::model {

std::string mhc_prewarm_skip_reason(bool fast_path, const EnvConfig& env) {
  if (!env.mhc_prewarm) return "disabled by HCWARM_MHC_PREWARM=0";
  if (!fast_path) return "hc_pre does not use the fast (JIT-specialized) path";
  return {};
}

std::string mhc_hook_skip_reason(const ModelConfig& config, bool fast_path, const EnvConfig& env) {
  if (std::string why = mhc_prewarm_skip_reason(fast_path, env); !why.empty()) return why;
  if (!config.is_hybrid_swa()) return "the model does not use hybrid sliding-window attention";
  return {};
}

DeepseekV4ForCausalLM::DeepseekV4ForCausalLM(const ModelConfig& config, const ModelBuildOptions& options,
                                             LayerOps ops, const SublayerFactory& make_sublayer)
    : DeepseekV4LayerStack("DeepSeek V4", config, options, ops) {
  const int n = options.num_layers > 0 ? options.num_layers : config.num_hidden_layers;
  HCWARM_CHECK_ARG(n <= config.num_hidden_layers, "--layers {} exceeds the model's num_hidden_layers {}", n,
                   config.num_hidden_layers);
  std::optional<SafetensorsFile> file;
  if (options.weights_file) file.emplace(SafetensorsFile::open(*options.weights_file));
  for (int i = 0; i < n; ++i) {
    DecoderLayerWeights w = file ? DecoderLayerWeights::load(config, i, *file, ops.device)
                                 : DecoderLayerWeights::random(config, i, options.seed, ops.device);
    layers_.push_back(std::make_unique<DeepseekV4DecoderLayer>(i, config, std::move(w), make_sublayer(i, "attn"),
                                                               make_sublayer(i, "ffn"), ops));
  }
  HCWARM_CHECK_ARG(!layers_.empty(), "{}: the model needs at least one decoder layer", config.name);
  head_ = file ? HeadWeights::load(config, *file, main_head_prefix(), ops.device)
               : HeadWeights::random(config, options.seed, /*owner=*/0, ops.device);
}

std::vector<int64_t> run_mhc_prewarm_hook(const std::string& model_name, const ModelConfig& config,
                                          const mhc::HcPreOp& hc_pre, RunnerView& runner,
                                          const std::function<std::vector<int64_t>(int64_t, Device&)>& prewarm) {
  if (const std::string why = mhc_hook_skip_reason(config, hc_pre.uses_fast_path(), runner.env()); !why.empty()) {
    log::info("{} mHC prewarm skipped: {}", model_name, why);
    return {};
  }
  const int64_t max_num_tokens = runner.server_args().max_num_tokens();
  std::vector<int64_t> warmed = prewarm(max_num_tokens, runner.device());
  log::debug("{} mHC prewarm done for max_num_tokens={}: token counts {}", model_name, max_num_tokens,
               fmt::join(warmed, ", "));
  return warmed;
}

}  // namespace hcwarm::model
