#!/usr/bin/env bash
# Packs what one run of tools/gpu_run.sh needs into .devcarry/ (git-ignored): the CLI and the
# GPU test binary built here, the shared libraries the CUDA image lacks, and a
# kernel cache for the H200 built here, on a machine with no GPU (bench serve's
# configuration 4). Usage: tools/gpu_pack.sh [build-dir]
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
ninja -C "$build" hcwarm hcwarm_tests_gpu
rm -rf .devcarry && mkdir -p .devcarry/lib .devcarry/lib-fallback
cp "$build/src/hcwarm" "$build/tests/hcwarm_tests_gpu" .devcarry/
for l in libspdlog.so.1.10 libfmt.so.9 libcrypto.so.3; do cp -L /lib/x86_64-linux-gnu/$l .devcarry/lib/; done
cp -L /lib/x86_64-linux-gnu/libstdc++.so.6 .devcarry/lib-fallback/
strip .devcarry/hcwarm .devcarry/hcwarm_tests_gpu
# The ahead-of-time cache for bench serve's configuration 4 (same plan options as tools/gpu_run.sh).
HCWARM_CUDA_LIBRARY=/nonexistent/libcuda.so.1 .devcarry/hcwarm cache build --backend cuda --arch sm_90a \
  --model dsv4-pro --num-sms 132 --chunked-prefill-size 16384 --mlp-width 64 --cache-dir .devcarry/aot-cache
grep -qx '/.devcarry/' .git/info/exclude || echo '/.devcarry/' >> .git/info/exclude
du -sh .devcarry
