#!/usr/bin/env python3
"""Writes a copy of the one-pass cluster kernel (src/kernels/cuda/mhc_pre.cuh,
mhc_pre_cluster) with a MODE template parameter that switches parts of it off,
for timing where a tile's time goes (one_pass_breakdown.cu). The copies are
timing-only: with parts off, the outputs are wrong by design.
  MODE & 1: no scalar part (pre = 0.25, rn = 1)   MODE & 4: no GEMM (mma, Gram)
  MODE & 8: no y (computed nor stored)            MODE & 16: no residual loads after the first two tiles
  MODE & 32: no Gram matrix (mma kept)            MODE & 128: GEMM warps of 32 columns (14 + 1 warps)
  MODE & 256: residual loads as asm volatile (issued where written, not sunk to their use)
  MODE & 512 / 1024: the block's rows of tile i + 3 / i + 4 prefetched into L2 (cp.async.bulk.prefetch) at step i
Usage: one_pass_breakdown.py OUT.cuh"""
import pathlib
import sys

root = pathlib.Path(__file__).resolve().parents[2]
src = (root / "src/kernels/cuda/mhc_pre.cuh").read_text()
sig = ("template <int HC, int HIDDEN, bool FUSED_NORM, bool FAST, int WARP_D = HCWARM_MHC_CLUSTER_WARP_D>\n"
       "__device__ __forceinline__ void mhc_pre_cluster(")
start = src.index(sig)
body = src[start:src.index("}  // namespace cuda\n}  // namespace hcwarm_kernels", start)]
body = body.replace(sig, "template <int HC, int HIDDEN, bool FUSED_NORM, bool FAST, int MODE>\n"
                         "__device__ __forceinline__ void one_pass_variant(")
body = body.replace("const hcwarm_mhc_pre_params& p) {\n",
                    "const hcwarm_mhc_pre_params& p) {\n  constexpr int WARP_D = (MODE & 128) ? 32 : 64;\n", 1)
edits = [
    ("      scalar_sigmoids<HC, FAST>(p, t, t < T, mix_s, base_s, scale_s, pre_tmp, lane, r);",
     "      if (MODE & 1) { if (lane < 4) pre_tmp[lane] = 0.25f + mix_s[lane] * 1e-30f; }\n"
     "      else scalar_sigmoids<HC, FAST>(p, t, t < T, mix_s, base_s, scale_s, pre_tmp, lane, r);"),
    ("      scalar_comb<HC, FAST>(p, t, t < T, mix_s, base_s, scale_s, lane, r);",
     "      if (!(MODE & 1)) scalar_comb<HC, FAST>(p, t, t < T, mix_s, base_s, scale_s, lane, r);"),
    ("      if (FUSED_NORM && lane == 0) {", "      if (MODE & 1) { if (lane == 0) pre_tmp[4] = 1.f; }\n      else if (FUSED_NORM && lane == 0) {"),
    ("      for (int u = 0; u < kSteps; ++u) mma_step_t(",
     "      for (int u = 0; u < kSteps; ++u) if (!(MODE & 4)) mma_step_t("),
    ("          add_gram8<FUSED_NORM>(s4, gr);", "          if (!(MODE & 36)) add_gram8<FUSED_NORM>(s4, gr);"),
    ("      for (int h2 = 0; h2 < kSub; ++h2) {\n        float unused", "      for (int h2 = 0; h2 < ((MODE & 8) ? 0 : kSub); ++h2) {\n        float unused"),
    ("    if (i + 2 < n) load(i + 2, prev);", "    if (!(MODE & 16) && i + 2 < n) load(i + 2, prev);"),
    ("  auto step = [&](long long i, Rows& cur, Rows& prev) {\n",
     "  auto step = [&](long long i, Rows& cur, Rows& prev) {\n"
     "    if constexpr ((MODE & 1536) != 0) {\n"
     "      constexpr int kPf = (MODE & 512) ? 3 : 4;\n"
     "      if (warp == 0 && i + kPf < n) {\n"
     "        for (int e = lane; e < kTile * HC; e += 32) {\n"
     "          const long long t = (cid + (i + kPf) * ncl) * kTile + e / HC;\n"
     "          if (t < T) prefetch_l2_bulk(p.residual + t * K + (long long)(e % HC) * D + (long long)rank * (D / kCtas),\n"
     "                                      (unsigned int)(D / kCtas) * 2u);\n"
     "        }\n"
     "      }\n"
     "    }\n"),
    ("      x.a[u] = ldg_u4(x0 + step_k(u));\n      x.b[u] = ldg_u4(x1 + step_k(u));",
     "      x.a[u] = (MODE & 256) ? ldg_u4_volatile(x0 + step_k(u)) : ldg_u4(x0 + step_k(u));\n"
     "      x.b[u] = (MODE & 256) ? ldg_u4_volatile(x1 + step_k(u)) : ldg_u4(x1 + step_k(u));"),
]
for old, new in edits:
    if old not in body:
        sys.exit(f"one_pass_breakdown.py: the kernel changed, cannot find:\n{old}")
    body = body.replace(old, new)
pathlib.Path(sys.argv[1]).write_text(
    "#pragma once\n#include \"cuda/mhc_pre.cuh\"\nnamespace hcwarm_kernels {\nnamespace cuda {\n"
    "__device__ __forceinline__ void prefetch_l2_bulk(const void* p, unsigned int bytes) {\n"
    "  asm volatile(\"cp.async.bulk.prefetch.L2.global [%0], %1;\" :: \"l\"(p), \"r\"(bytes) : \"memory\");\n}\n"
    "__device__ __forceinline__ U4 ldg_u4_volatile(const void* p) {\n  U4 v;\n"
    "  asm volatile(\"ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\"\n"
    "               : \"=r\"(v.x), \"=r\"(v.y), \"=r\"(v.z), \"=r\"(v.w) : \"l\"(p));\n  return v;\n}\n"
    + body + "}\n}\n")
