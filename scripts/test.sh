#!/usr/bin/env bash
# Installs, builds and runs the whole test suite: the C++ tests (CTest) and the
# Python package's tests (pytest). GPU tests (CTest label "gpu", pytest marker
# "gpu") skip themselves without a CUDA device (and, in Python, without PyTorch).
set -euo pipefail
cd "$(dirname "$0")/.."
HCWARM_SETUP_TESTS=ON scripts/setup.sh
ctest --test-dir build -j "$(nproc)" --output-on-failure --timeout 600 "$@"
.venv/bin/python -m pytest -q -p no:cacheprovider python/tests
