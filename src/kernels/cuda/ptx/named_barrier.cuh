#pragma once
// Named barriers: 16 hardware barriers per block (id 0 is __syncthreads'), each
// used by a subset of the block's warps. sync() waits for `threads` arrivals
// including this one; arrive() counts this warp in and goes on (a producer
// handing data to warps that sync). Writes before arrive() are visible to the
// threads that return from sync(). Compiled by NVRTC: no includes.

namespace hcwarm_kernels {
namespace cuda {

// A barrier whose thread count is known at compile time.
template <int THREADS>
struct NamedBarrier {
  static_assert(THREADS > 0 && THREADS % 32 == 0 && THREADS <= 1024,
                "a named barrier counts whole warps of one block");
  int id;  // 1..15
  __device__ void sync() const { asm volatile("bar.sync %0, %1;" ::"r"(id), "n"(THREADS) : "memory"); }
  __device__ void arrive() const { asm volatile("bar.arrive %0, %1;" ::"r"(id), "n"(THREADS) : "memory"); }
};

// A barrier whose thread count is a run-time value (a warp count from the params).
struct DynamicNamedBarrier {
  int id;       // 1..15
  int threads;  // a multiple of 32
  __device__ void sync() const { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory"); }
  __device__ void arrive() const { asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory"); }
};

}  // namespace cuda
}  // namespace hcwarm_kernels
