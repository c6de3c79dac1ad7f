#!/usr/bin/env python3
"""Writes a copy of the one-pass cluster kernel (src/kernels/cuda/mhc_pre.cuh,
mhc_pre_cluster) with a MODE template parameter that switches parts of it off,
for timing where a tile's time goes (one_pass_breakdown.cu). The copies are
timing-only: with parts off, the outputs are wrong by design.
  MODE & 1: no scalar part (pre = 0.25)    MODE & 2: no cluster exchange (local only)
  MODE & 4: no GEMM                        MODE & 8: no prefetch of the next tile
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
    ("      scalar_part<HC, FAST>(p, t, t < T, mix_s, base_s, scale_s, pre_tmp, lane, (float)K);",
     "      if (MODE & 1) { if (lane < 4) pre_tmp[lane] = 0.25f + mix_s[lane] * 1e-30f; }\n"
     "      else scalar_part<HC, FAST>(p, t, t < T, mix_s, base_s, scale_s, pre_tmp, lane, (float)K);"),
    ("cluster_sync_all();  // B1", "if (MODE & 2) __syncthreads(); else cluster_sync_all();  // B1"),
    ("cluster_sync_all();  // B2", "if (MODE & 2) __syncthreads(); else cluster_sync_all();  // B2"),
    ("cluster_sync_all();  // B3", "if (MODE & 2) __syncthreads(); else cluster_sync_all();  // B3"),
    ("v[r] = ld_peer_f32(peer_addr(cpart_local + lane * 4, r));",
     "v[r] = (MODE & 2) ? cpart_s[rank][lane] : ld_peer_f32(peer_addr(cpart_local + lane * 4, r));"),
    ("if (lane < kCtas) st_peer_f4(peer_addr(pre_local, lane), pre_tmp[0], pre_tmp[1], pre_tmp[2], pre_tmp[3]);",
     "if (MODE & 2) { if (lane < kCtas) for (int i = 0; i < 4; ++i) pre_s[lane][i] = pre_tmp[i]; }\n"
     "      else if (lane < kCtas) st_peer_f4(peer_addr(pre_local, lane), pre_tmp[0], pre_tmp[1], pre_tmp[2], pre_tmp[3]);"),
    ("v[r] = ld_peer_f32(peer_addr(cyss_local, r));", "v[r] = (MODE & 2) ? cyss_s[tid] : ld_peer_f32(peer_addr(cyss_local, r));"),
    ("  cluster_sync_all();  // no block leaves", "  if (!(MODE & 2)) cluster_sync_all();  // no block leaves"),
    ("      mma_step_smem(acc, xa[u], xb[u], fw", "      if (!(MODE & 4)) mma_step_smem(acc, xa[u], xb[u], fw"),
    ("    if (tile + nclusters < tiles) load_tile(tile + nclusters, na, nb);",
     "    if (MODE & 8) load_tile(tile, xa, xb);\n    else if (tile + nclusters < tiles) load_tile(tile + nclusters, na, nb);"),
    ("      xa[u] = na[u];\n      xb[u] = nb[u];", "      if (!(MODE & 8)) {\n        xa[u] = na[u];\n        xb[u] = nb[u];\n      }"),
]
for old, new in edits:
    if old not in body:
        sys.exit(f"one_pass_breakdown.py: the kernel changed, cannot find:\n{old}")
    body = body.replace(old, new)
pathlib.Path(sys.argv[1]).write_text(
    "#pragma once\n#include \"cuda/mhc_pre.cuh\"\nnamespace hcwarm_kernels {\nnamespace cuda {\n" + body + "}\n}\n")
