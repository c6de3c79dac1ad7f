#!/usr/bin/env bash
# Builds a relocatable bundle for running hcwarm on a GPU host that has a CUDA
# driver but no build tools: the `hcwarm` CLI, the GPU test program, the shared
# libraries they need that a bare host may lack, an ahead-of-time kernel cache
# built here (NVRTC needs no GPU), and run.sh, which runs the checks there.
#
#   tools/gpu_bundle.sh [--build-dir build] [--out gpu-bundle] [--model dsv4-pro]
#                       [--num-sms 132] [--arch sm_90a] [--chunked-prefill-size 16384]
#   # copy gpu-bundle/ to the GPU host, then there:
#   gpu-bundle/run.sh [tests] [op] [buckets] [serve]     (default: tests op; results in $OUT or gpu-bundle/results)
set -euo pipefail
cd "$(dirname "$0")/.."
build=build out=gpu-bundle model=dsv4-pro num_sms=132 arch=sm_90a chunk=16384
usage() { sed -n 2,10p "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --num-sms) num_sms=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --chunked-prefill-size) chunk=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu_bundle.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -d "$build" ] || { echo "gpu_bundle.sh: no build directory $build (run scripts/setup.sh first)" >&2; exit 2; }
cmake --build "$build" --target hcwarm hcwarm_tests_gpu
rm -rf "$out" && mkdir -p "$out/lib"
cp "$build/src/hcwarm" "$build/tests/hcwarm_tests_gpu" "$out/"
strip "$out/hcwarm" "$out/hcwarm_tests_gpu"
# Every shared library the programs load except the C runtime's own (libc, libm, the loader, ...).
ldd "$out/hcwarm" "$out/hcwarm_tests_gpu" | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*)\.so' | while read -r lib; do cp -L "$lib" "$out/lib/"; done
# The kernels the model's plan needs on this GPU, compiled here (the GPU host then compiles nothing);
# --mlp-width as run.sh's serve step uses it.
HCWARM_CUDA_LIBRARY=/nonexistent "$out/hcwarm" cache build --backend cuda --arch "$arch" --model "$model" \
  --num-sms "$num_sms" --chunked-prefill-size "$chunk" --mlp-width 64 --cache-dir "$out/aot-cache"
sed -e "s/@MODEL@/$model/; s/@NUM_SMS@/$num_sms/; s/@CHUNK@/$chunk/" tools/gpu_bundle_run.sh >"$out/run.sh"
chmod +x "$out/run.sh"
du -sh "$out"
