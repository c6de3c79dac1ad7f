#pragma once
// bf16 <-> f32 for the CUDA kernel headers: one element, or a 32-bit word
// holding two bf16 values (the low half is the element with the lower index).
// Compiled by NVRTC: no includes.

namespace hcwarm_bf16 {

// One element: the bf16 bits widened, and f rounded to nearest even.
__device__ __forceinline__ float bf16_to_f32(unsigned short h) { return __uint_as_float((unsigned int)h << 16); }
__device__ __forceinline__ unsigned short f32_to_bf16(float f) {
  unsigned short r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
  return r;
}

__device__ __forceinline__ float bf16_lo(unsigned int w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_hi(unsigned int w) { return __uint_as_float(w & 0xffff0000u); }
// Packs (lo, hi), each rounded to nearest even (NaN stays NaN).
__device__ __forceinline__ unsigned int pack_bf16x2(float lo, float hi) {
  unsigned int r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

}  // namespace hcwarm_bf16
