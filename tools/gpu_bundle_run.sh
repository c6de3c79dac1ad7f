#!/usr/bin/env bash
# run.sh of a bundle made by tools/gpu_bundle.sh, run on the GPU host:
#   run.sh [tests] [op] [buckets] [serve]   (default: tests op)
#     tests    the C++ GPU tests (GPU_TESTS=<gtest filter> picks some)
#     op       hcwarm bench op: every hidden size and token count, eager and under CUDA-graph replay
#     buckets  hcwarm bench op --buckets: one token count per split bucket, specialized beside generic
#     serve    hcwarm bench serve: the four start-up configurations on a synthetic chat workload
# Results (logs, JSON) go to $OUT, default <bundle>/results.
set -u
here=$(cd "$(dirname "$0")" && pwd)
steps=${*:-tests op}
OUT=${OUT:-$here/results}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export HCWARM_CACHE_DIR=${HCWARM_CACHE_DIR:-$OUT/cache}
cd "$here"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv 2>&1; nproc; } \
  >"$OUT/host.txt"
cat "$OUT/host.txt"
rc=0
for step in $steps; do
  echo "== $step ($(date -u +%H:%M:%S))"
  case "$step" in
    tests) ./hcwarm_tests_gpu --gtest_filter="${GPU_TESTS:-*}" >"$OUT/gpu_tests.txt" 2>&1 || rc=1
           grep -E "^\[(numerics|nvrtc|gpu)\]|Failure|FAILED|PASSED|SKIPPED" "$OUT/gpu_tests.txt" | tail -40 ;;
    op) ./hcwarm bench op --backend cuda --stages --json-out "$OUT/bench_op.json" >"$OUT/bench_op.txt" 2>&1 || rc=1
        grep -v "^\[" "$OUT/bench_op.txt" | tail -60 ;;
    buckets) ./hcwarm bench op --backend cuda --buckets 16384 --json-out "$OUT/bench_buckets.json" \
               >"$OUT/bench_buckets.txt" 2>&1 || rc=1
             grep -v "^\[" "$OUT/bench_buckets.txt" | tail -50 ;;
    serve) ./hcwarm bench serve --backend cuda --model @MODEL@ --num-sms @NUM_SMS@ --chunked-prefill-size @CHUNK@ \
             --mlp-width 64 --max-running 256 --aot-cache aot-cache --out "$OUT/serve" \
             --trace "${SERVE_TRACE:-synthetic:n=2000,rate=45,prompt_median=200,prompt_sigma=1.6,max_prompt_tokens=65536,output_mean=64}" \
             >"$OUT/serve.txt" 2>&1 || rc=1
           grep -v "^\[" "$OUT/serve.txt" | tail -45 ;;
    *) echo "run.sh: unknown step $step (tests, op, buckets, serve)" >&2; exit 2 ;;
  esac
done
exit $rc
