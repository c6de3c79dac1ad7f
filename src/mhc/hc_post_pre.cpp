#include "mhc/hc_post_pre.hpp"

#include <limits>

#include "core/error.hpp"
#include "kernels/common/mhc_params.hpp"

namespace hcwarm::mhc {

int64_t fused_boundary_max_tokens(Backend backend) {
  // Two tiles of the split policy (docs/MATH.md, section 4).
  return backend == Backend::Cuda ? 2 * HCWARM_MHC_TOKENS_PER_TILE : std::numeric_limits<int64_t>::max();
}

bool boundary_fuses(Backend backend, int64_t num_tokens) { return num_tokens <= fused_boundary_max_tokens(backend); }

void run_hc_post_pre(HcPreOp& pre, HcPostOp& post, const HcPreArgs& a, const LaunchContext& launch) {
  HCWARM_CHECK_ARG(a.input == HcPreInput::Post, "hc_post_pre: the arguments must have input post, got {}",
                   to_string(a.input));
  if (boundary_fuses(pre.backend(), a.num_tokens)) {
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
