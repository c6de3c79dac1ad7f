#!/usr/bin/env bash
# Builds the one-pass breakdown experiment into .devcarry/ (see one_pass_breakdown.cu).
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d)
python3 one_pass_breakdown.py "$tmp/one_pass_variants.cuh"
mkdir -p ../../.devcarry
/usr/local/cuda/bin/nvcc -O3 -std=c++17 -arch=sm_90a -I../../src/kernels -I"$tmp" -cudart static \
  -o ../../.devcarry/one_pass_breakdown one_pass_breakdown.cu
rm -rf "$tmp"
