#pragma once
// What hc_pre refuses before touching anything, and the kernels' view of a call.
#include <cstddef>

#include "kernels/common/mhc_params.hpp"
#include "mhc/hc_pre_launch_plan.hpp"
#include "mhc/mhc_types.hpp"

namespace hcwarm::mhc {

// A negative T; with T > 0 a null pointer the input kind needs (named) or a new
// residual overlapping the residual without being it (rows of row_bytes).
void check_hc_pre_arguments(const HcPreArgs& args, size_t row_bytes);

// The params of the kernels' ABI for `args`, launched as `plan` says (its
// split count and input kind). num_parts and partials are the backend's and
// the workspace's to set.
hcwarm_mhc_pre_params pack_hc_pre_params(const HcPreArgs& args, const MhcConstants& constants,
                                         const HcPreLaunchPlan& plan);

}  // namespace hcwarm::mhc
