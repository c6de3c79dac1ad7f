#pragma once
// mbarrier (sm_90): a 64-bit shared-memory barrier with an arrival count set at
// init and a transaction count that TMA copies decrement as their bytes land.
// A phase completes when every expected arrival came and the transaction count
// is back at zero; wait(parity) returns once the phase of that parity is over
// (phase n has parity n & 1). Compiled by NVRTC: no includes but memory.cuh.
#include "cuda/ptx/memory.cuh"

namespace hcwarm_kernels {
namespace cuda {

class MBarrier {
 public:
  __device__ explicit MBarrier(unsigned long long* slot) : addr_(smem_u32(slot)) {}

  // One thread, before any other use; then fence_mbarrier_init() and a block barrier.
  __device__ void init(unsigned arrivals) const {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(addr_), "r"(arrivals) : "memory");
  }
  // An arrival, with release semantics for this thread's earlier writes.
  __device__ void arrive() const { asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(addr_) : "memory"); }
  // An arrival that also expects `bytes` more bytes of TMA transactions this phase.
  __device__ void arrive_expect_tx(unsigned bytes) const {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(addr_), "r"(bytes) : "memory");
  }
  __device__ void wait(unsigned parity) const {
    unsigned done = 0;
    while (!done) {
      asm volatile(
          "{\n\t.reg .pred P;\n\tmbarrier.try_wait.parity.shared::cta.b64 P, [%1], %2;\n\tselp.u32 %0, 1, 0, P;\n\t}"
          : "=r"(done)
          : "r"(addr_), "r"(parity)
          : "memory");
    }
  }
  __device__ unsigned address() const { return addr_; }

 private:
  unsigned addr_;
};

// Makes the inits visible to the async proxy (TMA) and to the other threads.
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

}  // namespace cuda
}  // namespace hcwarm_kernels
