#!/usr/bin/env bash
# Builds the GPU test binary and the CLI in build-kern and copies them, with the
# shared libraries they need beyond the CUDA image's, into .devcarry/ (ignored).
set -eu
cd "$(dirname "$0")/.."
ninja -C build-kern -j2 hcwarm hcwarm_tests_gpu
rm -rf .devcarry && mkdir -p .devcarry/lib .devcarry/lib-fallback
cp build-kern/src/hcwarm build-kern/tests/hcwarm_tests_gpu .devcarry/
for l in libspdlog.so.1.10 libfmt.so.9 libcrypto.so.3; do cp -L /lib/x86_64-linux-gnu/$l .devcarry/lib/; done
cp -L /lib/x86_64-linux-gnu/libstdc++.so.6 .devcarry/lib-fallback/
strip .devcarry/hcwarm .devcarry/hcwarm_tests_gpu
grep -qx '/.devcarry/' .git/info/exclude || echo '/.devcarry/' >> .git/info/exclude
du -sh .devcarry
