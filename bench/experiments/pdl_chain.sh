#!/usr/bin/env bash
# A/B of hc_pre's programmatic-dependent launch on a GPU host: builds `hcwarm` from a base revision
# (default a156b1b~1, the last without that launch) and from the tree as it is, then times
# hc_pre and the fused boundary at decode and mid sizes three ways: base, the tree as it ships (fn
# read after the wait) and the tree with HCWARM_MHC_EARLY_FN=1 (first fn chunk read before it),
# twice, interleaved, each with its own cache directory. Needs what tools/gpu_check.sh needs
# (SYSROOT likewise). Output: one table per binary, mode and round, into $OUT (default /tmp/pdl_chain).
#   bench/experiments/pdl_chain.sh [BASE_REV]
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/pdl_chain}
base_rev=${1:-a156b1b~1}
git rev-parse --verify -q "$base_rev^{commit}" >/dev/null || { echo "$0: no revision $base_rev" >&2; exit 2; }
mkdir -p "$OUT"
export PATH="$PATH:/usr/local/cuda/bin"
[ -n "${SYSROOT:-}" ] && export CMAKE_PREFIX_PATH="$(cd "$SYSROOT" && pwd)/usr" \
  LD_LIBRARY_PATH="$(cd "$SYSROOT" && pwd)/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cfg="-G Ninja -DCMAKE_BUILD_TYPE=Release -DHCWARM_BUILD_TESTS=OFF -DHCWARM_BUILD_BENCH=OFF -DHCWARM_GENERIC_CUDA_ARCHS=90a"
for tree in base tree; do
  dir=/tmp/pdl_$tree
  rm -rf "$dir" && mkdir -p "$dir"
  if [ $tree = base ]; then git archive "$base_rev" | tar -x -C "$dir"
  else git ls-files -z | xargs -0 -I{} cp --parents {} "$dir/"; fi
  echo "building $tree" >&2
  cmake -S "$dir" -B "$dir/build" $cfg >/dev/null && cmake --build "$dir/build" --target hcwarm >"$OUT/build_$tree.log" 2>&1
done
for round in 1 2; do
  for mode in base safe late; do
    bin=/tmp/pdl_tree/build/src/hcwarm; early=0
    [ $mode = base ] && bin=/tmp/pdl_base/build/src/hcwarm
    [ $mode = late ] && early=1
    export HCWARM_MHC_EARLY_FN=$early HCWARM_CACHE_DIR=/tmp/pdl_cache_$mode
    "$bin" bench op --backend cuda --min-seconds 0.03 --tokens 1,8,64,512 | tee -a "$OUT/pre_$mode.txt"
    "$bin" bench op --backend cuda --min-seconds 0.03 --op post-pre --in-place --tokens 1,8,64 | tee -a "$OUT/post_pre_$mode.txt"
  done
done
