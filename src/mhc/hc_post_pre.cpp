#include "mhc/hc_post_pre.hpp"

#include <algorithm>
#include <limits>

#include "core/error.hpp"
#include "kernels/common/mhc_params.hpp"
#include "mhc/split_policy.hpp"

namespace hcwarm::mhc {

int64_t fused_boundary_max_tokens(Backend backend, MhcDims dims, int num_sms) {
  if (backend != Backend::Cuda) return std::numeric_limits<int64_t>::max();
  // The tiles whose bucket has the split policy's cap (docs/MATH.md, section 4):
  // g tiles get sms / g splits, so the cap holds for g <= sms / cap; at least one.
  const int64_t cap = num_splits(1, dims.k(), std::numeric_limits<int>::max());
  const int64_t tiles = cap > 1 ? std::max<int64_t>(1, num_sms / cap) : 1;
  return tiles * hcwarm_mhc::kTokensPerTile;
}

bool boundary_fuses(Backend backend, MhcDims dims, int num_sms, int64_t num_tokens) {
  return num_tokens <= fused_boundary_max_tokens(backend, dims, num_sms);
}

void run_hc_post_pre(HcPreOp& pre, HcPostOp& post, const HcPreArgs& a, const LaunchContext& launch) {
  HCWARM_CHECK_ARG(a.input == HcPreInput::Post, "hc_post_pre: the arguments must have input post, got {}",
                   to_string(a.input));
  if (boundary_fuses(pre.backend(), pre.dims(), pre.num_sms(), a.num_tokens)) {
    pre.run(a, launch);
    return;
  }
  pre.check_arguments(a);  // before the post step writes the new residual
  post.run(a.num_tokens, a.x, a.residual, a.prev_post, a.prev_comb, a.new_residual, launch);
  HcPreArgs next = a;
  next.input = HcPreInput::Residual;
  next.residual = a.new_residual;
  next.x = nullptr;
  next.prev_post = nullptr;
  next.prev_comb = nullptr;
  next.new_residual = nullptr;
  pre.run(next, launch);
}

}  // namespace hcwarm::mhc
