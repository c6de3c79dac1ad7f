#pragma once
// Programmatic dependent launch (sm_90): a kernel launched with the
// programmatic-serialization attribute may start while the previous kernel of
// the stream is still running. The earlier kernel calls launch_dependents once
// the later one may start; the later one calls wait before it reads anything
// the earlier one writes. Both are no-ops without the attribute and below sm_90.
// Compiled by NVRTC: no includes.

namespace hcwarm_kernels {
namespace cuda {

__device__ __forceinline__ void griddep_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void griddep_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

}  // namespace cuda
}  // namespace hcwarm_kernels
