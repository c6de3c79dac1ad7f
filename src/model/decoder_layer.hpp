#pragma once
// DeepseekV4DecoderLayer: two sublayers (attention, FFN), each wrapped in an mHC
// step: hc_pre mixes the hc residual streams into the sublayer's input (with the
// sublayer's RMSNorm fused), hc_post spreads the sublayer's output back.
// The prewarm methods mirror the upstream engine's warmup: one dummy hc_pre
// per representative token count's bucket and path, on one token.
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "mhc/hc_head_op.hpp"
#include "mhc/hc_post_op.hpp"
#include "mhc/hc_pre_op.hpp"
#include "model/layer_weights.hpp"
#include "model/mhc_forward.hpp"
#include "model/model_config.hpp"
#include "model/sublayer.hpp"

namespace hcwarm::model {

// The ops every layer of a model shares (owned by the model runner).
struct LayerOps {
  mhc::HcPreOp& hc_pre;
  mhc::HcPostOp& hc_post;
  mhc::HcHeadOp& hc_head;  // the model's last step, after the last layer
  Device& device;
};

class DeepseekV4DecoderLayer {
 public:
  DeepseekV4DecoderLayer(int layer_id, const ModelConfig& config, DecoderLayerWeights weights,
                         std::unique_ptr<Sublayer> attn, std::unique_ptr<Sublayer> ffn, LayerOps ops);

  // For each count and for the attn and ffn paths: hc_pre with that path's
  // parameters and norm, launched with the kernels of the count's split bucket on
  // one zeroed token, then synchronize; then the op's workspace grown for the
  // largest count. The memory peak is one token's, whatever the counts.
  void prewarm_mhc_token_counts(std::span<const int64_t> token_counts, Device& device);

  // The representatives the dispatch names for [1, max_num_tokens], prewarmed;
  // returns them (empty for max_num_tokens <= 0).
  std::vector<int64_t> prewarm_mhc_token_count_buckets(int64_t max_num_tokens, Device& device);

  // One layer on residual (T, hc, D), in place, hc_pre and hc_post around each
  // sublayer. `scratch` holds at least workspace_bytes(T) bytes on the device.
  void forward(bf16* residual, int64_t num_tokens, void* scratch);
  // The layer's two mHC-wrapped sublayers, attn then ffn, for a model-level
  // forward that carries state across them (mhc_forward.hpp).
  std::array<SublayerStep, 2> steps();
  size_t workspace_bytes(int64_t num_tokens) const;

  int layer_id() const { return layer_id_; }
  const DecoderLayerWeights& weights() const { return weights_; }

 private:
  // splits > 0: the kernels of that split count whatever num_tokens (the prewarm's one-token launches).
  void run_hc_pre(const bf16* residual, int64_t num_tokens, const MhcPathWeights& path, const bf16* norm, bf16* y,
                  float* post, float* comb, int splits = 0);
  void run_path(bf16* residual, int64_t num_tokens, const MhcPathWeights& path, const DeviceBuffer& norm,
                Sublayer& sublayer, void* scratch);

  int layer_id_;
  mhc::MhcDims dims_;
  DecoderLayerWeights weights_;
  std::unique_ptr<Sublayer> attn_;
  std::unique_ptr<Sublayer> ffn_;
  LayerOps ops_;
};

}  // namespace hcwarm::model
