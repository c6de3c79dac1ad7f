#!/usr/bin/env bash
# One run on an H200 machine: the GPU tests (all, or those matching $GPU_TESTS),
# `hcwarm bench op`, and `hcwarm bench serve` (dsv4-pro, 61 layers, 2000
# requests, four start-up configurations), from the binaries and the
# ahead-of-time cache that tools/gpu_pack.sh put in .devcarry/.
# Everything lands in $OUT (at most 8 files); the last lines printed are the tables.
# STEPS picks what runs (default "tests op serve"; all three together can take
# more than 600 s: split them over two runs; "buckets" times every split bucket,
# specialized beside generic). SERVE_TRACE overrides the workload.
set -u
STEPS=${STEPS:-tests op serve}
cd "$(dirname "$0")/../.devcarry" || exit 1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
./hcwarm --version >/dev/null 2>&1 || export LD_LIBRARY_PATH="$PWD/lib-fallback:$LD_LIBRARY_PATH"
export HCWARM_CACHE_DIR=/tmp/hcwarm-cache
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv
  ls -l /usr/local/cuda/lib64/libnvrtc.so* 2>/dev/null; nproc
} >"$OUT/run.log" 2>&1
cat "$OUT/run.log"
case " $STEPS " in *" tests "*)
  timeout 200 ./hcwarm_tests_gpu --gtest_filter="${GPU_TESTS:-*}" >>"$OUT/run.log" 2>&1
  echo "gpu tests rc=$?"
  grep -E "^\[(numerics|nvrtc|gpu)\]|Failure|Expected|actual|FAILED|PASSED|SKIPPED" "$OUT/run.log" | head -60 ;;
esac
case " $STEPS " in *" op "*)
  timeout 200 ./hcwarm bench op --backend cuda --stages --min-seconds 0.1 --json-out "$OUT/bench_op.json" \
    >"$OUT/bench_op.txt" 2>&1
  echo "bench op rc=$?"
  grep -v "^\[" "$OUT/bench_op.txt" | tail -60 ;;
esac
case " $STEPS " in *" buckets "*)
  # Specialized beside generic for every split bucket up to 16384 tokens.
  timeout 200 ./hcwarm bench op --backend cuda --buckets 16384 --min-seconds 0.05 \
    --json-out "$OUT/bench_buckets.json" >"$OUT/bench_buckets.txt" 2>&1
  echo "bench buckets rc=$?"
  grep -v "^\[" "$OUT/bench_buckets.txt" | tail -50 ;;
esac
case " $STEPS " in *" serve "*)
  # Chat-like prompts (lognormal, median 200, long tail to ~60k tokens) at a rate
  # the stand-in model sustains: see docs/BENCHMARKS.md.
  timeout 400 ./hcwarm bench serve --backend cuda --model dsv4-pro --num-sms 132 --chunked-prefill-size 16384 \
    --mlp-width 64 \
    --trace "${SERVE_TRACE:-synthetic:n=2000,rate=45,prompt_median=200,prompt_sigma=1.6,max_prompt_tokens=65536,output_mean=64}" \
    --max-running 256 --aot-cache aot-cache --out /tmp/serve >"$OUT/serve.txt" 2>&1
  echo "bench serve rc=$?"
  # The caches stay behind; the per-forward records travel as one archive.
  cp /tmp/serve/serve.json /tmp/serve/serve.svg "$OUT/" 2>/dev/null
  (cd /tmp/serve && tar -czf "$OUT/serve_configs.tar.gz" config*.json) 2>/dev/null
  grep -v "^\[" "$OUT/serve.txt" | tail -45 ;;
esac
