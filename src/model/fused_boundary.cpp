#include "model/fused_boundary.hpp"

#include "core/error.hpp"

namespace hcwarm::model {

void run_hc_post_pre(mhc::HcPreOp& pre, mhc::HcPostOp& post, const mhc::HcPreArgs& args,
                     const LaunchContext& launch) {
  HCWARM_CHECK_ARG(args.input == mhc::HcPreInput::Post, "hc_post_pre: the arguments must have input post, got {}",
                   mhc::to_string(args.input));
  HCWARM_CHECK_ARG(args.num_tokens >= 0, "hc_post_pre: num_tokens must be >= 0, got {}", args.num_tokens);
  if (args.num_tokens == 0) return;
  for (const auto& [p, name] : {std::pair<const void*, const char*>{args.x, "x"}, {args.residual, "residual"},
                                {args.prev_post, "prev_post"}, {args.prev_comb, "prev_comb"},
                                {args.new_residual, "new_residual"}}) {
    HCWARM_CHECK_ARG(p != nullptr, "hc_post_pre: {} is null", name);
  }
  HCWARM_CHECK_ARG(args.prev_post != args.post && args.prev_comb != args.comb,
                   "hc_post_pre: prev_post/prev_comb must not be the buffers post/comb are written to");
  if constexpr (kHcPreRunsPostInput) {
    pre.run(args, launch);
  } else {
    post.run(args.num_tokens, args.x, args.residual, args.prev_post, args.prev_comb, args.new_residual, launch);
    mhc::HcPreArgs next = args;
    next.input = mhc::HcPreInput::Residual;
    next.residual = args.new_residual;
    next.x = nullptr;
    next.prev_post = nullptr;
    next.prev_comb = nullptr;
    next.new_residual = nullptr;
    pre.run(next, launch);
  }
}

}  // namespace hcwarm::model
