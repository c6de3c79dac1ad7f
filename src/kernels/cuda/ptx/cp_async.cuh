#pragma once
// cp.async (sm_80+): 16-byte global -> shared copies that bypass registers and
// L1, grouped per thread: commit closes a group, wait<N> blocks until at most N
// of this thread's groups are still in flight (other threads' copies need a
// barrier on top). Compiled by NVRTC: no includes.

namespace hcwarm_kernels {
namespace cuda {

// valid == false fills the 16 bytes with zeros and reads nothing.
__device__ __forceinline__ void cp_async16(unsigned int dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  static_assert(N >= 0 && N <= 7, "cp.async.wait_group takes 0..7 groups in flight");
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

}  // namespace cuda
}  // namespace hcwarm_kernels
