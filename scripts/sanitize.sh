#!/usr/bin/env bash
# Builds the C++ library, CLI and tests with sanitizers and runs CTest on them.
#   scripts/sanitize.sh address,undefined|thread [ctest args...]
# address,undefined: build-asan/ (AddressSanitizer, LeakSanitizer, UBSan);
# thread: build-tsan/ (ThreadSanitizer). Configured as scripts/setup.sh configures
# build/, plus -DHCWARM_SANITIZE. Extra arguments go to ctest, e.g. -L jit or
# -R thread_pool. Reports fail the test that meets them. The few suppressions, each
# for code hcwarm does not build, live in tests/sanitizers/ with their reasons.
# Environment: HCWARM_BUILD_JOBS, HCWARM_TEST_JOBS (default: all cores), HCWARM_BUILD_TARGETS.
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
  address,undefined) build=build-asan ;;
  thread) build=build-tsan ;;
  -h | --help)
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
    exit 0 ;;
  *)
    echo "usage: scripts/sanitize.sh address,undefined|thread [ctest args...]" >&2
    exit 2 ;;
esac
sanitize=$1
shift

export PATH="$PATH:/usr/local/cuda/bin"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHCWARM_SANITIZE="$sanitize" >/dev/null
# HCWARM_BUILD_TARGETS: only these targets (e.g. "hcwarm hcwarm_tests_jit"), for a run limited to their tests.
read -r -a targets <<<"${HCWARM_BUILD_TARGETS:-all}"
cmake --build "$build" -j "${HCWARM_BUILD_JOBS:-$(nproc)}" --target "${targets[@]}"

supp=$PWD/tests/sanitizers
# halt_on_error / abort: the first report ends the test with a failure and a stack.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
ctest --test-dir "$build" -j "${HCWARM_TEST_JOBS:-$(nproc)}" --output-on-failure --timeout 1800 "$@"
