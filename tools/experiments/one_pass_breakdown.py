#!/usr/bin/env python3
"""Writes a copy of the one-pass cluster kernel (src/kernels/cuda/mhc_pre.cuh,
mhc_pre_cluster) with a MODE template parameter that switches parts of it off,
for timing where a tile's time goes (one_pass_breakdown.cu). The copies are
timing-only: with parts off, the outputs are wrong by design.
  MODE & 1: no scalar part (pre = 0.25, rn = 1)   MODE & 4: no GEMM (mma, Gram)
  MODE & 8: no y (computed nor stored)            MODE & 16: no residual loads after the first two tiles
  MODE & 32: no Gram matrix (mma kept)
Usage: one_pass_breakdown.py OUT.cuh"""
import pathlib
import sys

root = pathlib.Path(__file__).resolve().parents[2]
src = (root / "src/kernels/cuda/mhc_pre.cuh").read_text()
sig = "template <int HC, int HIDDEN, bool FUSED_NORM, bool FAST>\n__device__ __forceinline__ void mhc_pre_cluster("
start = src.index(sig)
body = src[start:src.index("}  // namespace cuda\n}  // namespace hcwarm_kernels", start)]
body = body.replace(sig, "template <int HC, int HIDDEN, bool FUSED_NORM, bool FAST, int MODE>\n"
                         "__device__ __forceinline__ void one_pass_variant(")
edits = [
    ("      scalar_sigmoids<HC, FAST>(p, t, t < T, mix_s, base_s, scale_s, pre_tmp, lane, r);",
     "      if (MODE & 1) { if (lane < 4) pre_tmp[lane] = 0.25f + mix_s[lane] * 1e-30f; }\n"
     "      else scalar_sigmoids<HC, FAST>(p, t, t < T, mix_s, base_s, scale_s, pre_tmp, lane, r);"),
    ("      scalar_comb<HC, FAST>(p, t, t < T, mix_s, base_s, scale_s, lane, r);",
     "      if (!(MODE & 1)) scalar_comb<HC, FAST>(p, t, t < T, mix_s, base_s, scale_s, lane, r);"),
    ("      if (FUSED_NORM && lane == 0) {", "      if (MODE & 1) { if (lane == 0) pre_tmp[4] = 1.f; }\n      else if (FUSED_NORM && lane == 0) {"),
    ("      for (int u = 0; u < HC; ++u) mma_step_smem(acc, cur.a[u], cur.b[u], fw + u * 3 * 32 * 8, lane);",
     "      for (int u = 0; u < HC; ++u) if (!(MODE & 4)) mma_step_smem(acc, cur.a[u], cur.b[u], fw + u * 3 * 32 * 8, lane);"),
    ("        add_gram8<FUSED_NORM>(h ? cur.b : cur.a, gr);", "        if (!(MODE & 36)) add_gram8<FUSED_NORM>(h ? cur.b : cur.a, gr);"),
    ("      float unused = 0.f;", "      if (!(MODE & 8)) {\n      float unused = 0.f;"),
    ("      if (r1 < T) stg_u4(p.y + r1 * D + d0 + 8 * q, yb);", "      if (r1 < T) stg_u4(p.y + r1 * D + d0 + 8 * q, yb);\n      }"),
    ("    if (i + 2 < n) load(i + 2, prev);", "    if (!(MODE & 16) && i + 2 < n) load(i + 2, prev);"),
]
for old, new in edits:
    if old not in body:
        sys.exit(f"one_pass_breakdown.py: the kernel changed, cannot find:\n{old}")
    body = body.replace(old, new)
pathlib.Path(sys.argv[1]).write_text(
    "#pragma once\n#include \"cuda/mhc_pre.cuh\"\nnamespace hcwarm_kernels {\nnamespace cuda {\n" + body + "}\n}\n")
