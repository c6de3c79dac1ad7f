#include "model/mhc_forward.hpp"

#include "core/error.hpp"
#include "mhc/hc_post_pre.hpp"
#include "model/decoder_layer.hpp"

namespace hcwarm::model {
namespace {

// Regions of the scratch, each 64-byte aligned (the CUDA kernels need 16).
constexpr size_t kAlign = 64;
constexpr int kRegions = 7;

size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

struct Layout {
  size_t residual, y, out, post, comb;
  Layout(const mhc::MhcDims& d, int64_t t)
      : residual(static_cast<size_t>(t) * d.k() * sizeof(bf16)),
        y(static_cast<size_t>(t) * d.hidden * sizeof(bf16)),
        out(y),
        post(static_cast<size_t>(t) * d.hc_mult * sizeof(float)),
        comb(static_cast<size_t>(t) * d.hc_mult * d.hc_mult * sizeof(float)) {}
  size_t total() const {
    return aligned(residual) + aligned(y) + aligned(out) + 2 * (aligned(post) + aligned(comb));
  }
};

struct Scratch {
  bf16* residual;
  bf16* y;
  bf16* out;
  float* post[2];
  float* comb[2];
  Scratch(const Layout& l, void* scratch) {
    char* p = static_cast<char*>(scratch);
    auto carve = [&p](size_t bytes) {
      char* here = p;
      p += aligned(bytes);
      return here;
    };
    residual = reinterpret_cast<bf16*>(carve(l.residual));
    y = reinterpret_cast<bf16*>(carve(l.y));
    out = reinterpret_cast<bf16*>(carve(l.out));
    for (int i = 0; i < 2; ++i) {
      post[i] = reinterpret_cast<float*>(carve(l.post));
      comb[i] = reinterpret_cast<float*>(carve(l.comb));
    }
  }
};

mhc::HcPreArgs pre_args(int64_t t, const SublayerStep& s, const bf16* input, bf16* y, float* post, float* comb) {
  mhc::HcPreArgs a;
  a.num_tokens = t;
  a.residual = input;
  a.fn = s.weights->fn.as<float>();
  a.scale = s.weights->scale.as<float>();
  a.base = s.weights->base.as<float>();
  a.norm_weight = s.norm;
  a.y = y;
  a.post = post;
  a.comb = comb;
  return a;
}

}  // namespace

MhcForward::MhcForward(mhc::MhcDims dims, const LayerOps& ops)
    : dims_(dims),
      pre_(ops.hc_pre),
      post_(ops.hc_post),
      head_(ops.hc_head),
      device_(ops.device),
      broadcast_(dims, ops.hc_post, ops.device) {}

size_t MhcForward::workspace_bytes(const mhc::MhcDims& dims, int64_t num_tokens) {
  return Layout(dims, num_tokens).total() + kRegions * kAlign;  // room to align the scratch's start
}

void MhcForward::run(std::span<const SublayerStep> steps, const HeadWeights& head, const bf16* embed, bf16* out,
                     int64_t num_tokens, void* scratch, bool fused) {
  HCWARM_CHECK_ARG(!steps.empty(), "forward: the model has no sublayers");
  HCWARM_CHECK_ARG(num_tokens >= 0, "forward: num_tokens must be >= 0, got {}", num_tokens);
  if (num_tokens == 0) return;
  HCWARM_CHECK_ARG(embed != nullptr && out != nullptr && scratch != nullptr,
                   "forward: embed, out and scratch must be device pointers, not null");
  // The caller's scratch from its start rounded up to kAlign (workspace_bytes leaves room).
  const auto base = reinterpret_cast<uintptr_t>(scratch);
  const Scratch s(Layout(dims_, num_tokens), reinterpret_cast<void*>((base + kAlign - 1) / kAlign * kAlign));
  const int64_t t = num_tokens;

  if (!fused) {
    broadcast_.run(embed, s.residual, t);
    for (const SublayerStep& step : steps) {
      pre_.run(pre_args(t, step, s.residual, s.y, s.post[0], s.comb[0]));
      step.sublayer->forward(s.y, s.out, t, device_);
      post_.run(t, s.out, s.residual, s.post[0], s.comb[0], s.residual);
    }
  } else {
    // The first pre from the embedding; the streams it stands for are written
    // meanwhile for the first post step to read.
    mhc::HcPreArgs first = pre_args(t, steps.front(), embed, s.y, s.post[0], s.comb[0]);
    first.input = mhc::HcPreInput::Embed;
    pre_.run(first);
    broadcast_.run(embed, s.residual, t);
    int cur = 0;  // which post/comb set holds the deferred gates
    for (size_t i = 0; i < steps.size(); ++i) {
      steps[i].sublayer->forward(s.y, s.out, t, device_);
      if (i + 1 == steps.size()) {
        post_.run(t, s.out, s.residual, s.post[cur], s.comb[cur], s.residual);
        break;
      }
      mhc::HcPreArgs b = pre_args(t, steps[i + 1], s.residual, s.y, s.post[1 - cur], s.comb[1 - cur]);
      b.input = mhc::HcPreInput::Post;
      b.x = s.out;
      b.prev_post = s.post[cur];
      b.prev_comb = s.comb[cur];
      b.new_residual = s.residual;  // in place
      mhc::run_hc_post_pre(pre_, post_, b);
      cur = 1 - cur;
    }
  }
  head_.run({t, s.residual, head.fn.as<float>(), head.scale.as<float>(), head.base.as<float>(), out});
}

}  // namespace hcwarm::model
