#pragma once
// The sublayer boundary hc_post_pre (docs/MATH.md, section 6): the previous
// sublayer's post step into the new residual, then the next sublayer's pre step
// on it. One entry point for the model and the Python package, so that the
// switch from the unfused pair to the fused kernel (hc_pre input Post) is made
// in one place.
#include "mhc/hc_post_op.hpp"
#include "mhc/hc_pre_op.hpp"

namespace hcwarm::model {

// Whether hc_pre's kernels implement input Post. Until they do, the boundary
// runs hc_post then hc_pre (input Residual): the same two bf16 roundings, the
// same results, two passes over the residual instead of one.
inline constexpr bool kHcPreRunsPostInput = false;

// The hc_pre input kind a boundary call runs: Post, or Residual for the unfused pair.
constexpr mhc::HcPreInput boundary_pre_input() {
  return kHcPreRunsPostInput ? mhc::HcPreInput::Post : mhc::HcPreInput::Residual;
}

// args: input Post with x, residual, prev_post, prev_comb, new_residual (may
// alias residual) and the next pre's fn/scale/base/norm_weight/y/post/comb.
// prev_post/prev_comb must not alias post/comb (the step reads the one while
// writing the other). A null boundary pointer is InvalidArgument naming it.
void run_hc_post_pre(mhc::HcPreOp& pre, mhc::HcPostOp& post, const mhc::HcPreArgs& args,
                     const LaunchContext& launch = {});

}  // namespace hcwarm::model
