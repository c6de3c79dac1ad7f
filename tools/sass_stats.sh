#!/usr/bin/env bash
# Instruction mix of one kernel instantiation, without a GPU: compiles
#   extern "C" __global__ void __launch_bounds__(BOUNDS)
#       k(hcwarm_mhc_pre_params p, const __grid_constant__ hcwarm_tensor_map tmap) { CALL; }
# with nvcc for sm_90a (src/kernels on the include path), then prints ptxas's
# register / spill line and the SASS opcode counts of the whole kernel: what
# to compare between variants of a kernel (registers, spills, and how many
# HMMA, FFMA, LDS, LDG, ... instructions the compiler emitted). The one-pass
# kernel's loop is not unrolled, so its counts are those of one loop step
# plus the set-up around the loop.
#
# Usage: tools/sass_stats.sh BOUNDS CALL
#   tools/sass_stats.sh "448, 1" "hcwarm_kernels::cuda::mhc_pre_one_pass<4, 7168, true, true>(p, &tmap)"
#   tools/sass_stats.sh "256, 2" "hcwarm_kernels::cuda::mhc_pre_partial<1, 4, 7168>(p)"
# Needs cuobjdump, which this toolkit image lacks: set CUOBJDUMP, or install the
# PyPI wheel nvidia-cuda-cuobjdump (pip download --no-deps nvidia-cuda-cuobjdump;
# unzip it; the binary is nvidia/cu13/bin/cuobjdump).
set -eu
[ $# -eq 2 ] || { sed -n 2,17p "$0" | sed 's/^# \{0,1\}//'; exit 2; }
cd "$(dirname "$0")/.."
cuobjdump=${CUOBJDUMP:-$(command -v cuobjdump || true)}
[ -n "$cuobjdump" ] && [ -x "$cuobjdump" ] || { echo "$0: no cuobjdump (set CUOBJDUMP; see --help)" >&2; exit 2; }
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include "cuda/mhc_pre.cuh"\n#include "cuda/mhc_pre_one_pass.cuh"\nextern "C" __global__ void __launch_bounds__(%s) k(hcwarm_mhc_pre_params p, const __grid_constant__ hcwarm_tensor_map tmap) { %s; }\n' \
  "$1" "$2" >"$tmp/k.cu"
"$nvcc" -std=c++17 -arch=sm_90a -cubin -Isrc/kernels -Xptxas -v -o "$tmp/k.cubin" "$tmp/k.cu" 2>&1 | grep -E "registers|spill"
"$cuobjdump" -sass "$tmp/k.cubin" >"$tmp/k.sass"
count() {  # opcode histogram of SASS lines on stdin
  grep -oE '^\s+/\*[0-9a-f]{4,}\*/\s+(@!?U?P[0-9T] )?[A-Z0-9_.]+' | awk '{print $NF}' | sed 's/\..*//' |
    sort | uniq -c | sort -rn | awk '{n += $1; printf "%s %d; ", $2, $1} END {print "\n  total " n}'
}
echo "whole kernel:"
count <"$tmp/k.sass"
