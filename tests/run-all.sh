#!/usr/bin/env bash
# Builds mcgit three ways and runs the whole test suite on each:
#   Debug (plain), Asan (AddressSanitizer + UBSan), and Valgrind over the unit
#   tests of the Debug build. Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

echo "== Debug build"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build -j"$jobs" >/dev/null
ctest --test-dir build --output-on-failure -j"$jobs"

echo "== Asan build (ASan + UBSan)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Asan >/dev/null
cmake --build build-asan -j"$jobs" >/dev/null
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs"

echo "== Valgrind (unit tests, Debug build)"
fail=0
for t in build/tests/test_*; do
  [ -x "$t" ] || continue
  if ! valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
       "$t" >/tmp/mcgit-valgrind.log 2>&1; then
    echo "valgrind: $t failed"; tail -30 /tmp/mcgit-valgrind.log; fail=1
  fi
done
[ "$fail" = 0 ]
echo "== all tests passed"
