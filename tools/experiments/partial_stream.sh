#!/usr/bin/env bash
# Builds the stage (a) streaming study into .devcarry/ (see partial_stream.cu).
set -eu
cd "$(dirname "$0")"
mkdir -p ../../.devcarry
/usr/local/cuda/bin/nvcc -O3 -std=c++17 -arch=sm_90a -I../../src/kernels -cudart static --resource-usage \
  -o ../../.devcarry/partial_stream partial_stream.cu 2>&1 | grep -E "Function properties|spill|registers" || true
