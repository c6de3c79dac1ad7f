#!/usr/bin/env bash
# One device call: GPU tests + `hcwarm bench op --backend cuda`, from binaries
# built on the dev machine and carried in .devcarry/ (see tools/gpu_pack.sh).
# Everything lands in $OUT; the last lines printed are the bench table.
set -u
cd "$(dirname "$0")/../.devcarry" || exit 1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! ./hcwarm --version >/dev/null 2>&1; then
  export LD_LIBRARY_PATH="$PWD/lib-fallback:$LD_LIBRARY_PATH"
fi
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv
  ls /usr/local/cuda/lib64/libnvrtc* 2>/dev/null
} >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
timeout 180 ./hcwarm_tests_gpu --gtest_output=json:"$OUT/gpu_tests.json" >"$OUT/gpu_tests.log" 2>&1
echo "gpu tests rc=$?"
grep -E "^\[(numerics|nvrtc|gpu)\]|Failure|Expected|actual|FAILED|PASSED|SKIPPED" "$OUT/gpu_tests.log" | head -60
timeout 180 ./hcwarm bench op --backend cuda --stages --json-out "$OUT/bench.json" >"$OUT/bench.txt" 2>&1
echo "bench rc=$?"
for gemm in mma ffma; do
  timeout 30 ./hcwarm bench op --backend cuda --gemm $gemm --variant specialized --hidden 7168 \
    --tokens 1,64,512,2048 --min-seconds 0.1 >"$OUT/bench_$gemm.txt" 2>&1
  echo "bench $gemm rc=$?"
  tail -6 "$OUT/bench_$gemm.txt"
done
timeout 60 ./hcwarm bench op --backend cuda --fast-finish --stages --variant specialized --hidden 7168 \
  --tokens 1,64,512,2048,8192 --min-seconds 0.1 >"$OUT/bench_fast_finish.txt" 2>&1
echo "bench fast-finish rc=$?"
tail -6 "$OUT/bench_fast_finish.txt"
cat "$OUT/bench.txt"
