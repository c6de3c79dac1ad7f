#!/usr/bin/env bash
# Installs, builds and runs the whole test suite. GPU tests (label "gpu") skip
# themselves on a machine without a CUDA device.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
ctest --test-dir build -j "$(nproc)" --output-on-failure --timeout 600 "$@"
