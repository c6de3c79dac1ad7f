#pragma once
// TMA (sm_90): bulk tensor copies global -> shared described by a CUtensorMap
// the host encoded (cuTensorMapEncodeTiled). Completion is counted in bytes on
// an mbarrier (MBarrier::arrive_expect_tx before the copy, wait after).
// Compiled by NVRTC: no includes but mbarrier.cuh.
#include "cuda/ptx/mbarrier.cuh"

namespace hcwarm_kernels {
namespace cuda {

// The box at (col, row) of a 2-D map into shared address dst, with an L2 policy.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const void* tmap, int col, int row, const MBarrier& bar,
                                            unsigned long long policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
      "l"(tmap), "r"(col), "r"(row), "r"(bar.address()), "l"(policy)
      : "memory");
}

}  // namespace cuda
}  // namespace hcwarm_kernels
