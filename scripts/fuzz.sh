#!/usr/bin/env bash
# Fuzzes hcwarm's input parsers with libFuzzer (tests/fuzz/fuzz_*.cpp).
#   scripts/fuzz.sh [SECONDS_PER_HARNESS] [HARNESS...]
# Configures build-fuzz/ with clang and -DHCWARM_FUZZ=ON (libFuzzer, AddressSanitizer,
# UndefinedBehaviorSanitizer), builds the harnesses, and runs each for SECONDS (default
# 60) over a scratch copy of its seeds, tests/fuzz/corpus/<harness>/ (left unchanged).
# Exits 1 when any harness finds something: a crash, a sanitizer report, an exception
# other than the parser's documented error, a hang (-timeout) or a memory blow-up
# (-rss_limit_mb). The reproducing input is written to build-fuzz/findings/<harness>/;
# replay it with build-fuzz/tests/fuzz/<harness> FILE.
# Environment: CXX (default clang++), HCWARM_BUILD_JOBS (default: all cores).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"  # the comment block above
  exit 0
fi
seconds=60
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then
  ((${1} > 0)) || { echo "fuzz.sh: SECONDS must be at least 1 (libFuzzer reads 0 as no limit)" >&2; exit 2; }
  seconds=$1
  shift
fi
harnesses=("$@")
if ((${#harnesses[@]} == 0)); then
  for f in tests/fuzz/fuzz_*.cpp; do harnesses+=("$(basename "$f" .cpp)"); done
fi
for h in "${harnesses[@]}"; do
  [[ -f tests/fuzz/$h.cpp ]] || { echo "fuzz.sh: no harness tests/fuzz/$h.cpp" >&2; exit 2; }
done

cxx=${CXX:-clang++}
command -v "$cxx" >/dev/null || { echo "fuzz.sh: $cxx not found (apt-get install clang)" >&2; exit 2; }
build=build-fuzz
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" -DHCWARM_FUZZ=ON \
  -DHCWARM_BUILD_TESTS=OFF -DHCWARM_BUILD_BENCH=OFF -DHCWARM_WITH_NVCC=OFF >/dev/null
cmake --build "$build" -j "${HCWARM_BUILD_JOBS:-$(nproc)}" --target "${harnesses[@]}"

# Sanitizer reports end the run with a stack; a leak is a finding too.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for h in "${harnesses[@]}"; do
  work=$build/corpus/$h
  findings=$build/findings/$h
  rm -rf "$work"
  mkdir -p "$work" "$findings"
  cp tests/fuzz/corpus/"$h"/* "$work"/
  dict=()
  [[ -f tests/fuzz/dict/$h.dict ]] && dict=(-dict="tests/fuzz/dict/$h.dict")
  echo "== $h: ${seconds}s"
  # -timeout: one input may take 10 s; -rss_limit_mb: the process may hold 2 GiB.
  if "$build/tests/fuzz/$h" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$findings/" "${dict[@]}" "$work" >"$build/$h.log" 2>&1; then
    grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+.*DONE)" "$build/$h.log" || true
  else
    failed+=("$h")
    tail -n 40 "$build/$h.log"
    echo "== $h: FINDING (log $build/$h.log, input in $findings/)"
  fi
done

if ((${#failed[@]})); then
  echo "fuzz.sh: findings in ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: no findings in ${harnesses[*]} (${seconds}s each)"
