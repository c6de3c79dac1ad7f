#pragma once
// The sublayer boundary hc_post_pre (docs/MATH.md, section 6): the previous
// sublayer's post step into the new residual, then the next sublayer's pre on
// it. Where the fused kernel (hc_pre input Post) is faster it runs; elsewhere
// the pair hc_post + hc_pre (input Residual), with the same two bf16 roundings.
// The warmup plan asks boundary_fuses() too (hc_pre_planned_specs with input
// Post covers only the token counts that fuse), so plan and dispatch agree.
#include <cstdint>

#include "mhc/hc_post_op.hpp"
#include "mhc/hc_pre_op.hpp"

namespace hcwarm::mhc {

// Largest T the fused boundary runs at on `backend`: on CUDA the token counts
// whose split bucket cuts K into as many parts as the split policy allows (its
// cap: one 64-token tile at hidden 7168 on 132 SMs, two at 4096), where one pass
// saves a launch and a residual round trip; with fewer, longer K-parts the
// fused partial kernel's post step costs more than it saves, and further on it
// streams the residual at a quarter of the pair's bandwidth (docs/BENCHMARKS.md,
// "The rest of the family"). At least one tile. The CPU fuses at every T.
int64_t fused_boundary_max_tokens(Backend backend, MhcDims dims, int num_sms);
bool boundary_fuses(Backend backend, MhcDims dims, int num_sms, int64_t num_tokens);

// args: input Post (x, residual, prev_post, prev_comb, new_residual, which may
// be residual, and the next pre's fn/scale/base/norm_weight/y/post/comb).
void run_hc_post_pre(HcPreOp& pre, HcPostOp& post, const HcPreArgs& args, const LaunchContext& launch = {});

}  // namespace hcwarm::mhc
