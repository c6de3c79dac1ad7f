#pragma once
// Warp-level tensor-core operations (sm_80+).
//   mma_bf16_16816: D (16x8 f32) += A (16x16 bf16, row) * B (16x8 bf16, col).
//     Thread (g = lane / 4, q = lane % 4) holds A rows g and g + 8 at columns
//     2q, 2q+1 (a0, a1) and 2q+8, 2q+9 (a2, a3); B column g at rows 2q.. (b0)
//     and 2q+8.. (b1); c[0..1] row g, c[2..3] row g + 8, columns 2q, 2q+1.
//   ldmatrix_x4: four 8x8 b16 tiles from shared memory into that A layout;
//     lane l gives the address of row l % 8 of tile l / 8.
// Compiled by NVRTC: no includes.

namespace hcwarm_kernels {
namespace cuda {

__device__ __forceinline__ void mma_bf16_16816(float (&c)[4], unsigned int a0, unsigned int a1, unsigned int a2,
                                               unsigned int a3, unsigned int b0, unsigned int b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned addr, unsigned& a0, unsigned& a1, unsigned& a2, unsigned& a3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3)
               : "r"(addr));
}

}  // namespace cuda
}  // namespace hcwarm_kernels
