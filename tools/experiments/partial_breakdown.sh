#!/usr/bin/env bash
# Builds the stage (a) breakdown experiment into .devcarry/ (see partial_breakdown.cu).
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d)
python3 partial_breakdown.py "$tmp/partial_variants.cuh"
mkdir -p ../../.devcarry
/usr/local/cuda/bin/nvcc -O3 -std=c++17 -arch=sm_90a -I../../src/kernels -I"$tmp" -cudart static \
  -o ../../.devcarry/partial_breakdown partial_breakdown.cu
rm -rf "$tmp"
