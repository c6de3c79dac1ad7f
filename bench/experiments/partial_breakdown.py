#!/usr/bin/env python3
"""Writes a copy of the mma_smem partial kernel (src/kernels/cuda/mhc_pre_partial.cuh,
partial_smem_impl) with a MODE template parameter that switches parts of it
off, for timing where stage (a)'s time goes (partial_breakdown.cu). Timing only:
with parts off, the partials are wrong by design.
  MODE & 1: no fn loads (constant fn)     MODE & 2: no mma (the A fragments are still read)
  MODE & 4: no fn split / fragment stores MODE & 8: __syncwarp instead of the block barrier
Usage: partial_breakdown.py OUT.cuh"""
import pathlib
import sys

root = pathlib.Path(__file__).resolve().parents[2]
src = (root / "src/kernels/cuda/mhc_pre_partial.cuh").read_text()
sig = ("template <int HC, int HIDDEN, int WARPS, int STAGES = 2, int INPUT = hcwarm_mhc::kInputResidual>\n"
       "__device__ __forceinline__ void partial_smem_impl(")
start = src.index(sig)
end = src.index("template <int SPLIT_CLASS, int HC, int HIDDEN, int INPUT>\n__device__ __forceinline__ void mhc_pre_partial_smem(")
body = src[start:end].replace(sig, "template <int HC, int HIDDEN, int WARPS, int MODE, int STAGES = 2, int INPUT = hcwarm_mhc::kInputResidual>\n"
                                   "__device__ __forceinline__ void partial_variant(")
edits = [
    ("      } else if (kFnEarly) {\n        f[i] = fold_fn4<HC>(p.fn + n * K + col, D, ok, embed);",
     "      } else if (MODE & 1) {\n        f[i] = F4{(float)kk, 1.f, 2.f, 3.f};\n"
     "      } else if (kFnEarly) {\n        f[i] = fold_fn4<HC>(p.fn + n * K + col, D, ok, embed);"),
    ("          mma_step_smem(acc, xa, xb, &sb[buf][u][0][0][0], lane);",
     "          if (MODE & 2) { acc[0][0] += __uint_as_float((xa.x ^ xb.y) & 0x3fffffffu) + sb[buf][u][0][lane][0]; }\n"
     "          else mma_step_smem(acc, xa, xb, &sb[buf][u][0][0][0], lane);"),
    ("      unsigned int* dst = &sb[buf][u][n >> 3][(n & 7) * 4 + (kk >> 3)][0];",
     "      if (MODE & 4) { if (i == 0 && fr[0].x == 12345.f) sb[buf][0][0][0][0] = h0 ^ l1; continue; }\n"
     "      unsigned int* dst = &sb[buf][u][n >> 3][(n & 7) * 4 + (kk >> 3)][0];"),
    ("    __syncthreads();     // everyone's: the fn fragments and the warp's rows (with POST: the new ones)",
     "    if (MODE & 8) __syncwarp(); else __syncthreads();"),
]
for old, new in edits:
    assert body.count(old) == 1, old
    body = body.replace(old, new)
out = ["#pragma once", '#include "cuda/mhc_pre.cuh"', "namespace hcwarm_kernels {", "namespace cuda {", body,
       "}  // namespace cuda", "}  // namespace hcwarm_kernels", ""]
pathlib.Path(sys.argv[1]).write_text("\n".join(out))
