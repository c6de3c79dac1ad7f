#pragma once
// L2 eviction policies (sm_80+) for loads and TMA copies that take a cache
// hint: evict_last for data read again soon (kept over other lines),
// evict_first for data read for the last time. Compiled by NVRTC: no includes.

namespace hcwarm_kernels {
namespace cuda {

__device__ __forceinline__ unsigned long long policy_evict_last() {
  unsigned long long p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ unsigned long long policy_evict_first() {
  unsigned long long p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}

}  // namespace cuda
}  // namespace hcwarm_kernels
