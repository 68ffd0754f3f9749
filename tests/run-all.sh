#!/usr/bin/env bash
# Builds mcgit three ways and runs the whole test suite on each:
#   Debug (plain), Asan (AddressSanitizer + UBSan), and Valgrind over the unit
#   tests of the Debug build; then a clang build (-Werror) and a brief fuzz
#   run of every tests/fuzz target (both when clang is installed).
# Exits non-zero on the first failure.
#
# MCGIT_REQUIRE_ALL=1 (set by .ci/run): nothing may be skipped. A test that
# reports SKIP (exit 77), a part of a test that cannot run, or a missing
# clang fails the run instead of passing quietly.
# -DMCGIT_TESTS=ON: a build directory configured for the demo (README,
# -DMCGIT_TESTS=OFF) gets its tests back.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
require_all=${MCGIT_REQUIRE_ALL:-}
log=$(mktemp "${TMPDIR:-/tmp}/mcgit-ctest.XXXXXX")
trap 'rm -f "$log"' EXIT

# run_ctest DIR [env...]: the suite in DIR; with MCGIT_REQUIRE_ALL=1 a
# skipped (or not run) test is a failure.
run_ctest() {
  local dir=$1; shift
  env "$@" ctest --test-dir "$dir" --output-on-failure -j"$jobs" 2>&1 | tee "$log"
  [ "${PIPESTATUS[0]}" = 0 ] || return 1
  if [ "$require_all" = 1 ] && grep -qE '\*\*\*Skipped|Not Run|tests did not run' "$log"; then
    echo "MCGIT_REQUIRE_ALL=1: tests were skipped:"; grep -E '\*\*\*Skipped|Not Run' "$log"
    return 1
  fi
}

echo "== Debug build"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Debug -DMCGIT_TESTS=ON >/dev/null
cmake --build build -j"$jobs" >/dev/null
run_ctest build

echo "== Asan build (ASan + UBSan)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Asan -DMCGIT_TESTS=ON >/dev/null
cmake --build build-asan -j"$jobs" >/dev/null
run_ctest build-asan ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

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

if command -v clang >/dev/null; then
  echo "== clang build (-Werror), unit tests"
  CC=clang cmake -S . -B build-clang -DCMAKE_BUILD_TYPE=Release -DMCGIT_TESTS=ON >/dev/null
  cmake --build build-clang -j"$jobs" >/dev/null
  ctest --test-dir build-clang -L unit --output-on-failure -j"$jobs"
  fuzz_secs=${MCGIT_FUZZ_SECONDS:-10}
  echo "== fuzz targets, ${fuzz_secs} s each (tests/fuzz/run.sh)"
  rc=0
  tests/fuzz/run.sh "$fuzz_secs" || rc=$?
  if [ "$rc" = 77 ] && [ "$require_all" != 1 ]; then
    echo "fuzzing skipped: clang cannot build libFuzzer targets here"
  elif [ "$rc" != 0 ]; then
    exit 1
  fi
elif [ "$require_all" = 1 ]; then
  echo "MCGIT_REQUIRE_ALL=1: clang not installed (clang build and fuzzing required)"; exit 1
else
  echo "== clang not installed: clang build and fuzzing skipped"
fi
echo "== all tests passed"
