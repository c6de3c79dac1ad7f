#!/usr/bin/env bash
# A/B of a patch of this folder (default pdl_chain.patch; pdl_chain_late.patch and pdl_chain_safe.patch are its variants) on a
# GPU host: builds `hcwarm` from the tree as it is (/tmp/pdl_base) and with the patch
# (/tmp/pdl_chain), then times hc_pre and the fused boundary at decode and mid sizes with each,
# twice, interleaved. Needs what tools/gpu_check.sh needs (SYSROOT likewise). Output: one table per
# binary and round, into $OUT (default /tmp/pdl_chain).
#   bench/experiments/pdl_chain.sh [PATCH]
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/pdl_chain}
mkdir -p "$OUT"
export PATH="$PATH:/usr/local/cuda/bin"
[ -n "${SYSROOT:-}" ] && export CMAKE_PREFIX_PATH="$(cd "$SYSROOT" && pwd)/usr" \
  LD_LIBRARY_PATH="$(cd "$SYSROOT" && pwd)/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cfg="-G Ninja -DCMAKE_BUILD_TYPE=Release -DHCWARM_BUILD_TESTS=OFF -DHCWARM_BUILD_BENCH=OFF -DHCWARM_GENERIC_CUDA_ARCHS=90a"
root=$PWD
patch_file="$root/bench/experiments/${1:-pdl_chain.patch}"
[ -f "$patch_file" ] || { echo "$0: no patch $patch_file" >&2; exit 2; }
for tree in base chain; do
  dir=/tmp/pdl_$tree
  rm -rf "$dir" && mkdir -p "$dir"
  git ls-files -z | xargs -0 -I{} cp --parents {} "$dir/"
  if [ $tree = chain ]; then (cd "$dir" && git apply "$patch_file"); fi
  cmake -S "$dir" -B "$dir/build" $cfg >/dev/null && cmake --build "$dir/build" --target hcwarm >"$OUT/build_$tree.log" 2>&1
done
for round in 1 2; do
  for tree in base chain; do
    bin=/tmp/pdl_$tree/build/src/hcwarm
    "$bin" bench op --backend cuda --min-seconds 0.03 --tokens 1,8,64,512,2048 | tee -a "$OUT/pre_$tree.txt"
    "$bin" bench op --backend cuda --min-seconds 0.03 --op post-pre --in-place --tokens 1,8,64 | tee -a "$OUT/post_pre_$tree.txt"
  done
done
