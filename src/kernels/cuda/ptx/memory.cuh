#pragma once
// Global and shared memory accesses the kernels issue as single vector
// instructions, with the cache behaviour each needs spelled out.
//   ldg_*     read-only global loads (ld.global.nc): data no kernel of the
//             launch writes; L1::no_allocate where a value is used once.
//   stg_*     plain vector stores.
//   ldcg_*    global loads cached in L2 only: data an earlier kernel wrote
//             (ldcg_f32_if: predicated, 0 when off).
//   lds_u4 / sts_u4  16-byte shared accesses at a 32-bit shared address (smem_u32).
//   prefetch_l2_bulk  a 16-byte aligned range into L2 in one instruction (sm_90;
//             nothing below), no value read: legal before griddepcontrol.wait,
//             since L2 is where every kernel's writes meet.
//   *_relaxed / *_acquire / red_release_*: gpu-scope loads and atomics for data
//             that other blocks of the same launch publish (flag + payload).
// Compiled by NVRTC: no includes.

namespace hcwarm_kernels {
namespace cuda {

struct alignas(16) U4 {
  unsigned int x, y, z, w;
};
struct alignas(16) F4 {
  float x, y, z, w;
};

// The 32-bit shared-window address of a shared-memory pointer (what ld.shared,
// cp.async, ldmatrix and mbarrier take).
__device__ __forceinline__ unsigned int smem_u32(const void* ptr) {
  unsigned int a;
  asm("{\n\t.reg .u64 t;\n\tcvta.to.shared.u64 t, %1;\n\tcvt.u32.u64 %0, t;\n\t}" : "=r"(a) : "l"(ptr));
  return a;
}

__device__ __forceinline__ U4 ldg_u4(const void* p) {
  U4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}
__device__ __forceinline__ F4 ldg_f4(const float* p) {
  F4 v;
  asm("ld.global.nc.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
  return v;
}
// With an L2 eviction policy (cache_policy.cuh).
__device__ __forceinline__ U4 ldg_u4_policy(const void* ptr, unsigned long long policy) {
  U4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(ptr), "l"(policy));
  return v;
}
// Cached in L2 only: data written by an earlier kernel of the same stream.
__device__ __forceinline__ float ldcg_f32(const float* p) {
  float v;
  asm("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p));
  return v;
}
// The same as one predicated instruction: 0 when !valid, nothing read. A row
// of these stays straight-line code (a C++ condition around ldcg_f32 becomes a
// branch per load), so all of them are in flight before the first use.
__device__ __forceinline__ float ldcg_f32_if(const float* p, bool valid) {
  float v;
  asm("{\n .reg .pred q;\n setp.ne.b32 q, %2, 0;\n mov.b32 %0, 0;\n @q ld.global.cg.f32 %0, [%1];\n}"
      : "=f"(v)
      : "l"(p), "r"((int)valid));
  return v;
}
// These two are volatile with a memory clobber: each stays after the griddepcontrol.wait that orders it
// after its writer.
__device__ __forceinline__ F4 ldcg_f4(const float* p) {
  F4 v;
  asm volatile("ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(p)
               : "memory");
  return v;
}
__device__ __forceinline__ U4 ldcg_u4(const void* p) {
  U4 v;
  asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}

__device__ __forceinline__ void prefetch_l2_bulk(const void* p, unsigned int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes));
#endif
}

__device__ __forceinline__ void stg_u4(void* p, U4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
__device__ __forceinline__ void stg_f2(float* ptr, float a, float b) {
  asm volatile("st.global.v2.f32 [%0], {%1,%2};" ::"l"(ptr), "f"(a), "f"(b) : "memory");
}

__device__ __forceinline__ U4 lds_u4(unsigned int addr) {
  U4 v;
  asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
  return v;
}

__device__ __forceinline__ void sts_u4(unsigned int addr, U4 v) {
  asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};" ::"r"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

// Payload loads with a memory clobber: the compiler keeps them after the
// acquire that made the payload visible.
__device__ __forceinline__ F4 ld_relaxed_f4(const float* ptr) {
  F4 v;
  asm volatile("ld.relaxed.gpu.global.v4.f32 {%0,%1,%2,%3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(ptr)
               : "memory");
  return v;
}
__device__ __forceinline__ float ld_relaxed_f32(const float* ptr) {
  float v;
  asm volatile("ld.relaxed.gpu.global.f32 %0, [%1];" : "=f"(v) : "l"(ptr) : "memory");
  return v;
}
__device__ __forceinline__ unsigned ld_acquire_u32(const unsigned* ptr) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(ptr) : "memory");
  return v;
}
// Publishes this thread's earlier writes (and those ordered before them) with the count.
__device__ __forceinline__ void red_release_add_u32(unsigned* ptr, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(ptr), "r"(v) : "memory");
}

}  // namespace cuda
}  // namespace hcwarm_kernels
