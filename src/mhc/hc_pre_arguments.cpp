#include "mhc/hc_pre_arguments.hpp"

#include <cstdint>
#include <utility>

#include "core/error.hpp"

namespace hcwarm::mhc {

namespace {

// Every pointer the input kind needs, each named when null; the new residual
// either is the residual (in place) or does not overlap it.
void check_pointers(const HcPreArgs& a, size_t row_bytes) {
  const std::pair<const void*, const char*> required[] = {
      {a.residual, a.input == HcPreInput::Embed ? "residual (the embedding)" : "residual"},
      {a.fn, "fn"}, {a.scale, "scale"}, {a.base, "base"}, {a.y, "y"}, {a.post, "post"}, {a.comb, "comb"}};
  for (const auto& [ptr, name] : required) {
    HCWARM_CHECK_ARG(ptr != nullptr, "hc_pre (input={}): {} is null", to_string(a.input), name);
  }
  if (a.input != HcPreInput::Post) return;
  const std::pair<const void*, const char*> post_inputs[] = {
      {a.x, "x"}, {a.prev_post, "prev_post"}, {a.prev_comb, "prev_comb"}, {a.new_residual, "new_residual"}};
  for (const auto& [ptr, name] : post_inputs) {
    HCWARM_CHECK_ARG(ptr != nullptr, "hc_post_pre (input=post): {} is null", name);
  }
  const auto in = reinterpret_cast<uintptr_t>(a.residual), out = reinterpret_cast<uintptr_t>(a.new_residual);
  const uintptr_t bytes = static_cast<uintptr_t>(a.num_tokens) * row_bytes;
  HCWARM_CHECK_ARG(in == out || in + bytes <= out || out + bytes <= in,
                   "hc_post_pre (input=post): new_residual overlaps residual without being it (in place needs the "
                   "same pointer)");
}

}  // namespace

void check_hc_pre_arguments(const HcPreArgs& a, size_t row_bytes) {
  HCWARM_CHECK_ARG(a.num_tokens >= 0, "num_tokens must be >= 0, got {}", a.num_tokens);
  if (a.num_tokens > 0) check_pointers(a, row_bytes);
}

hcwarm_mhc_pre_params pack_hc_pre_params(const HcPreArgs& a, const MhcConstants& c, const HcPreLaunchPlan& plan) {
  hcwarm_mhc_pre_params p{};
  p.num_tokens = a.num_tokens;
  p.residual = reinterpret_cast<const unsigned short*>(a.residual);
  p.fn = a.fn;
  p.scale = a.scale;
  p.base = a.base;
  p.norm_weight = reinterpret_cast<const unsigned short*>(a.norm_weight);
  p.y = reinterpret_cast<unsigned short*>(a.y);
  p.post = a.post;
  p.comb = a.comb;
  p.num_splits = plan.kernel_splits;
  p.hc_mult = plan.dims.hc_mult;
  p.hidden = plan.dims.hidden;
  p.sinkhorn_iters = c.sinkhorn_iters;
  p.hc_eps = c.hc_eps;
  p.rms_eps = c.rms_eps;
  p.norm_eps = c.norm_eps;
  p.post_mult = c.post_mult;
  p.input = plan.input_code;
  p.post_x = reinterpret_cast<const unsigned short*>(a.x);
  p.prev_post = a.prev_post;
  p.prev_comb = a.prev_comb;
  p.residual_out = reinterpret_cast<unsigned short*>(a.new_residual);
  return p;
}

}  // namespace hcwarm::mhc
