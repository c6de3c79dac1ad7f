#pragma once
// Reciprocals the scalar part of the kernels picks between (FAST template flag).
// Compiled by NVRTC: no includes.

namespace hcwarm_kernels {
namespace cuda {

// IEEE round-to-nearest reciprocal, inline (no division subroutine call).
__device__ __forceinline__ float rcp_rn(float x) {
  float r;
  asm("rcp.rn.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

// Branch-free reciprocal for positive normal x: MUFU.RCP plus one Newton step
// (<= ~1 ulp). rcp.rn expands to a range check and a slow-path call per use,
// which serializes the 20 Sinkhorn iterations.
__device__ __forceinline__ float rcp_fast(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return fmaf(r, fmaf(-x, r, 1.0f), r);
}

template <bool FAST>
__device__ __forceinline__ float rcp_sel(float x) {
  return FAST ? rcp_fast(x) : rcp_rn(x);
}

}  // namespace cuda
}  // namespace hcwarm_kernels
