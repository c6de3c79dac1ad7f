#pragma once
// A forward through the whole mHC family over a model's sublayers, in order
// (layer 0 attn, layer 0 ffn, layer 1 attn, ...), from the token embedding
// (T, D) to the head's output (T, D) (docs/MATH.md, section 6):
//
//   fused (default): the first pre reads the embedding (hc_pre input Embed);
//     each sublayer's output, post and comb are carried to the next pre, which
//     runs as the fused boundary hc_post_pre (hc_pre input Post); the last
//     sublayer's post is hc_post; hc_head collapses the streams.
//   unfused: the embedding's hc copies materialized first, then hc_pre and
//     hc_post around every sublayer (input Residual), then hc_head.
//
// Both compute the same values: the fused steps match their unfused pairs.
#include <cstdint>
#include <span>

#include "core/device.hpp"
#include "mhc/hc_head_op.hpp"
#include "mhc/hc_post_op.hpp"
#include "mhc/hc_pre_op.hpp"
#include "model/head_weights.hpp"
#include "model/layer_weights.hpp"
#include "model/stream_broadcast.hpp"
#include "model/sublayer.hpp"

namespace hcwarm::model {

struct LayerOps;

// One mHC-wrapped sublayer: its path's parameters, its fused RMSNorm weight, the sublayer.
struct SublayerStep {
  const MhcPathWeights* weights = nullptr;
  const bf16* norm = nullptr;  // (D,) bf16, or null: no fused norm
  Sublayer* sublayer = nullptr;
};

class MhcForward {
 public:
  MhcForward(mhc::MhcDims dims, const LayerOps& ops);

  // Scratch bytes of a forward on T tokens: the residual, y, the sublayer
  // output and two sets of post/comb (a boundary reads one while writing the other).
  static size_t workspace_bytes(const mhc::MhcDims& dims, int64_t num_tokens);
  // Sizes what the forward keeps between calls for T <= max_num_tokens.
  void reserve(int64_t max_num_tokens) {
    broadcast_.reserve(max_num_tokens);
    head_.reserve_workspace(max_num_tokens);  // the head's own scratch, so that serving never grows it
  }

  // embed, out: (T, D) bf16 on the device; scratch: workspace_bytes(T) bytes
  // there. steps: at least one. The work may still be queued.
  void run(std::span<const SublayerStep> steps, const HeadWeights& head, const bf16* embed, bf16* out,
           int64_t num_tokens, void* scratch, bool fused);

 private:
  mhc::MhcDims dims_;
  mhc::HcPreOp& pre_;
  mhc::HcPostOp& post_;
  mhc::HcHeadOp& head_;
  Device& device_;
  StreamBroadcast broadcast_;
};

}  // namespace hcwarm::model
