#pragma once
// DeepseekV4ForCausalLM: the decoder layers and the model-level kernel warmup
// hook of the upstream change. Embeddings, attention, MoE and the LM head are
// the host engine's; what is here is what the mHC warmup story needs, end to end.
#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

#include "model/causal_lm.hpp"
#include "model/decoder_layer.hpp"
#include "model/head_weights.hpp"
#include "model/mhc_forward.hpp"
#include "model/runner_view.hpp"

namespace hcwarm::model {

struct ModelBuildOptions {
  int num_layers = 0;  // 0: the config's num_hidden_layers
  uint64_t seed = 0;   // random weights, deterministic per (seed, layer)
  // Load the mHC and norm tensors from this safetensors file instead (upstream names).
  std::optional<std::filesystem::path> weights_file;
  // The whole mHC family (mhc_forward.hpp): the first pre from the embedding and
  // fused sublayer boundaries. false: hc_pre / hc_post around every sublayer
  // on materialized streams (the same values, more passes over the residual).
  bool fused_boundaries = true;
};

// Why an mHC prewarm would not run: HCWARM_MHC_PREWARM=0 (an explicit opt-out),
// or hc_pre not on the fast path (no JIT keys to warm). Empty when it should run.
// fast_path: HcPreOp::uses_fast_path() of the op hc_pre runs on. The library's
// prewarm (runtime::OpContext) asks this alone: every DeepSeek V4 layer has mHC,
// whatever its attention.
std::string mhc_prewarm_skip_reason(bool fast_path, const EnvConfig& env);
// The model hook's reason: upstream's three conditions, the two above and the
// config's hybrid sliding-window attention (the model runner and `cache build` plan by it).
std::string mhc_hook_skip_reason(const ModelConfig& config, bool fast_path, const EnvConfig& env);

// The body of both models' kernel_warmup(): the conditions above, then
// prewarm(max_num_tokens, device) with max_num_tokens from the server arguments
// (chunked_prefill_size, already per DP rank), and a log line of what it warmed.
std::vector<int64_t> run_mhc_prewarm_hook(const std::string& model_name, const ModelConfig& config,
                                          const mhc::HcPreOp& hc_pre, RunnerView& runner,
                                          const std::function<std::vector<int64_t>(int64_t, Device&)>& prewarm);

// What the main model and the NextN draft model share: a stack of decoder
// layers (Layer: DeepseekV4DecoderLayer or the NextN wrapper) with the mHC head
// after them, the forward through the whole family, and the model-level kernel
// warmup hook, which prewarms every mHC split bucket up to the server's
// max_num_tokens through the first layer (every layer shares the kernels), when
// mhc_hook_skip_reason() is empty.
template <class Layer>
class DeepseekV4LayerStack : public CausalLM, public KernelWarmupHook {
 public:
  void forward(const bf16* embed, bf16* out, int64_t num_tokens, void* scratch) override {
    if (steps_.empty()) {  // the layers are built by the derived constructor: listed on first use
      for (auto& layer : layers_) {
        for (const SublayerStep& s : layer->steps()) steps_.push_back(s);
      }
    }
    forward_.run(steps_, head_, embed, out, num_tokens, scratch, fused_);
  }
  size_t workspace_bytes(int64_t num_tokens) const override {
    return MhcForward::workspace_bytes(config_.mhc_dims(), num_tokens);
  }
  void reserve(int64_t max_num_tokens) override { forward_.reserve(max_num_tokens); }
  const ModelConfig& config() const override { return config_; }
  int num_layers() const override { return static_cast<int>(layers_.size()); }

  std::vector<int64_t> kernel_warmup(RunnerView& runner) override {
    warmed_ = run_mhc_prewarm_hook(name_, config_, ops_.hc_pre, runner, [this](int64_t m, Device& d) {
      return prewarm_mhc_token_count_buckets(m, d);
    });
    return warmed_;
  }
  std::vector<int64_t> prewarm_mhc_token_count_buckets(int64_t max_num_tokens, Device& device) {
    return layers_.front()->prewarm_mhc_token_count_buckets(max_num_tokens, device);
  }

  Layer& layer(int i) { return *layers_.at(static_cast<size_t>(i)); }
  const HeadWeights& head_weights() const { return head_; }
  bool fused_boundaries() const { return fused_; }
  // What the last kernel_warmup prewarmed (empty if it skipped).
  const std::vector<int64_t>& warmed_token_counts() const { return warmed_; }

 protected:
  DeepseekV4LayerStack(std::string name, const ModelConfig& config, const ModelBuildOptions& options, LayerOps ops)
      : name_(std::move(name)),
        config_(config),
        ops_(ops),
        fused_(options.fused_boundaries),
        forward_(config.mhc_dims(), ops) {}

  std::string name_;  // for logs
  ModelConfig config_;
  LayerOps ops_;
  bool fused_;
  std::vector<std::unique_ptr<Layer>> layers_;
  HeadWeights head_;  // set by the derived constructor
  std::vector<int64_t> warmed_;

 private:
  MhcForward forward_;
  std::vector<SublayerStep> steps_;
};

class DeepseekV4ForCausalLM final : public DeepseekV4LayerStack<DeepseekV4DecoderLayer> {
 public:
  // options.num_layers of the config's layers (all by default).
  DeepseekV4ForCausalLM(const ModelConfig& config, const ModelBuildOptions& options, LayerOps ops,
                        const SublayerFactory& make_sublayer);
};

}  // namespace hcwarm::model
