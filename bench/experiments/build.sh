#!/usr/bin/env bash
# Builds experiments into build/experiments/ (standalone binaries, CUDA runtime linked
# statically, sm_90a), to copy to a GPU host: bench/experiments/build.sh NAME...
# NAME.cu is compiled with src/kernels on the include path; where NAME.py
# exists, it first writes the kernel copies NAME.cu includes as "variants.cuh".
set -eu
cd "$(dirname "$0")"
[ $# -gt 0 ] || { echo "usage: $0 NAME... (embed_cluster, embed_fold, head_cluster, launch_floor, one_pass_l2, pair_parts, partial_breakdown, partial_stream; pdl_chain.sh is a script of its own)" >&2; exit 2; }
mkdir -p ../../build/experiments
for name in "$@"; do
  [ -f "$name.cu" ] || { echo "$0: no experiment $name ($name.cu)" >&2; exit 2; }
  tmp=$(mktemp -d)
  if [ -f "$name.py" ]; then python3 "$name.py" "$tmp/variants.cuh"; fi
  /usr/local/cuda/bin/nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -I../../src/kernels -I"$tmp" -cudart static \
    -o "../../build/experiments/$name" "$name.cu"
  rm -rf "$tmp"
  echo "built build/experiments/$name"
done
