#!/usr/bin/env bash
# The compiler memo (c++ beside this script): a second build of the same kernel is served
# byte for byte without compiling, a changed header compiles again, a failed compile is
# not memoized, and calls that are not kernel builds reach the real compiler.
set -euo pipefail
memo_cxx="$(cd "$(dirname "$0")" && pwd)/c++"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
export HCWARM_TEST_CXX_MEMO="$work/memo"
mkdir -p "$work/k/include" && cd "$work/k"
echo 'inline int f() { return 7; }' > include/f.hpp
printf '#include "f.hpp"\nextern "C" int g() { return f(); }\n' > kernel.cpp
build() { "$memo_cxx" -O2 -std=c++20 -shared -fPIC -Iinclude kernel.cpp -o kernel.so; }
fail() { echo "compiler_memo check: $*" >&2; exit 1; }

build; cp kernel.so first.so
[ "$(ls "$HCWARM_TEST_CXX_MEMO" | wc -l)" = 1 ] || fail "the first build left no memo entry"
build; cmp -s kernel.so first.so || fail "the memoized object differs from the compiled one"
# A hit does not compile: an entry changed in the memo is what the build gets.
entry=$(ls "$HCWARM_TEST_CXX_MEMO"/*.so); echo marker > "$entry"
build; [ "$(cat kernel.so)" = marker ] || fail "a second build of the same kernel compiled again"
echo 'inline int f() { return 8; }' > include/f.hpp
build; [ "$(ls "$HCWARM_TEST_CXX_MEMO" | wc -l)" = 2 ] || fail "a changed header did not compile again"
echo 'broken' > kernel.cpp
if build 2>/dev/null; then fail "a broken source compiled"; fi
[ "$(ls "$HCWARM_TEST_CXX_MEMO" | wc -l)" = 2 ] || fail "a failed compile was memoized"
"$memo_cxx" --version | head -1 | grep -q . || fail "--version did not reach the real compiler"
echo "compiler_memo: ok"
