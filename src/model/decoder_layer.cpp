#include "model/decoder_layer.hpp"
#include "core/logging.hpp"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

namespace hcwarm::model {
namespace {

// Byte sizes of one path's intermediates for T tokens.
struct PathBytes {
  size_t y, post, comb, out;
  PathBytes(const mhc::MhcDims& d, int64_t t)
      : y(static_cast<size_t>(t) * d.hidden * sizeof(bf16)),
        post(static_cast<size_t>(t) * d.hc_mult * sizeof(float)),
        comb(static_cast<size_t>(t) * d.hc_mult * d.hc_mult * sizeof(float)),
        out(y) {}
  size_t total() const { return y + post + comb + out; }
};

}  // namespace

DeepseekV4DecoderLayer::DeepseekV4DecoderLayer(int layer_id, const ModelConfig& config, DecoderLayerWeights weights,
                                               std::unique_ptr<Sublayer> attn, std::unique_ptr<Sublayer> ffn,
                                               LayerOps ops)
    : layer_id_(layer_id),
      dims_(config.mhc_dims()),
      weights_(std::move(weights)),
      attn_(std::move(attn)),
      ffn_(std::move(ffn)),
      ops_(ops) {
  HCWARM_CHECK_ARG(attn_ && ffn_, "layer {}: both sublayers are required", layer_id);
  HCWARM_CHECK_ARG(attn_->hidden_size() == dims_.hidden && ffn_->hidden_size() == dims_.hidden,
                   "layer {}: sublayer hidden sizes {} and {} do not match the model's {}", layer_id,
                   attn_->hidden_size(), ffn_->hidden_size(), dims_.hidden);
}

void DeepseekV4DecoderLayer::run_hc_pre(const bf16* residual, int64_t num_tokens, const MhcPathWeights& path,
                                        const bf16* norm, bf16* y, float* post, float* comb, int splits) {
  mhc::HcPreArgs a;
  a.num_tokens = num_tokens;
  a.residual = residual;
  a.fn = path.fn.as<float>();
  a.scale = path.scale.as<float>();
  a.base = path.base.as<float>();
  a.norm_weight = norm;
  a.y = y;
  a.post = post;
  a.comb = comb;
  if (splits > 0) {
    ops_.hc_pre.run_with_splits(a, splits);
  } else {
    ops_.hc_pre.run(a);
  }
}

void DeepseekV4DecoderLayer::prewarm_mhc_token_counts(std::span<const int64_t> token_counts, Device& device) {
  struct Path {
    const char* name;
    const MhcPathWeights& weights;
    const DeviceBuffer& norm;
  };
  const Path paths[] = {{"attn", weights_.attn, weights_.input_layernorm},
                        {"ffn", weights_.ffn, weights_.post_attention_layernorm}};
  int64_t largest = 0;
  for (const int64_t count : token_counts) {
    HCWARM_CHECK_ARG(count >= 0, "mHC prewarm: token counts must be >= 0, got {}", count);
    largest = std::max(largest, count);
  }
  if (largest == 0) return;
  // Each count's bucket runs on one token with the bucket's own kernels: the kernels
  // depend on the token count only through its split count (HcPreOp::kernel_splits),
  // so this loads and launches exactly what the bucket's real calls will, on
  // buffers of one token rather than of the largest count (1.2 GB for dsv4-pro at
  // chunked prefill 16384). Zeroed contents: only the kernels' code paths matter.
  DeviceBuffer residual(device, static_cast<size_t>(dims_.k()) * sizeof(bf16));
  device.fill_zero(residual.get(), residual.bytes());
  const PathBytes b(dims_, 1);
  DeviceBuffer y(device, b.y), post(device, b.post), comb(device, b.comb);
  for (const int64_t count : token_counts) {
    if (count == 0) continue;
    const int splits = ops_.hc_pre.kernel_splits(count);
    for (const Path& p : paths) {
      const auto tic = std::chrono::steady_clock::now();
      run_hc_pre(residual.as<bf16>(), 1, p.weights, p.norm.as<bf16>(), y.as<bf16>(), post.as<float>(),
                 comb.as<float>(), splits);
      device.synchronize();
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - tic).count();
      log::debug("DeepSeek V4 mHC prewarm path={} num_tokens={} ({} splits, on one token) completed in {:.3f}s",
                 p.name, count, splits, secs);
    }
  }
  // The workspace the largest calls need, grown now as the calls at full size did:
  // a first real call (or a capture) then allocates nothing.
  ops_.hc_pre.reserve_workspace(largest);
}

std::vector<int64_t> DeepseekV4DecoderLayer::prewarm_mhc_token_count_buckets(int64_t max_num_tokens, Device& device) {
  std::vector<int64_t> counts = ops_.hc_pre.representatives(max_num_tokens);
  if (counts.empty()) return counts;
  log::debug("DeepSeek V4 mHC prewarm max_num_tokens={} representative token counts: {}", max_num_tokens,
               fmt::join(counts, ", "));
  prewarm_mhc_token_counts(counts, device);
  return counts;
}

size_t DeepseekV4DecoderLayer::workspace_bytes(int64_t num_tokens) const {
  return PathBytes(dims_, num_tokens).total() + 4 * 64;  // four 64-byte aligned regions
}

void DeepseekV4DecoderLayer::run_path(bf16* residual, int64_t num_tokens, const MhcPathWeights& path,
                                      const DeviceBuffer& norm, Sublayer& sublayer, void* scratch) {
  const PathBytes b(dims_, num_tokens);
  auto carve = [p = static_cast<char*>(scratch)](size_t bytes) mutable {
    char* here = p;
    p += (bytes + 63) / 64 * 64;
    return here;
  };
  auto* y = reinterpret_cast<bf16*>(carve(b.y));
  auto* post = reinterpret_cast<float*>(carve(b.post));
  auto* comb = reinterpret_cast<float*>(carve(b.comb));
  auto* out = reinterpret_cast<bf16*>(carve(b.out));
  run_hc_pre(residual, num_tokens, path, norm.as<bf16>(), y, post, comb);
  sublayer.forward(y, out, num_tokens, ops_.device);
  ops_.hc_post.run(num_tokens, out, residual, post, comb, residual);
}

std::array<SublayerStep, 2> DeepseekV4DecoderLayer::steps() {
  return {SublayerStep{&weights_.attn, weights_.input_layernorm.as<bf16>(), attn_.get()},
          SublayerStep{&weights_.ffn, weights_.post_attention_layernorm.as<bf16>(), ffn_.get()}};
}

void DeepseekV4DecoderLayer::forward(bf16* residual, int64_t num_tokens, void* scratch) {
  if (num_tokens == 0) return;
  run_path(residual, num_tokens, weights_.attn, weights_.input_layernorm, *attn_, scratch);
  run_path(residual, num_tokens, weights_.ffn, weights_.post_attention_layernorm, *ffn_, scratch);
}

}  // namespace hcwarm::model
