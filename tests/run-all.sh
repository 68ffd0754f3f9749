#!/usr/bin/env bash
# Builds mcgit several ways and runs the whole test suite on each, phase by
# phase:
#   debug     the Debug build and its whole ctest suite
#   libgit2-old  the Debug build's tests labelled libgit2 (fetch, redirects,
#             credentials, packs) again, against Debian's libgit2 WITHOUT
#             the security update (1.5.1+ds-1+deb12u1, unpacked by
#             tests/setup.sh into MCGIT_OLD_LIBGIT2) through LD_LIBRARY_PATH;
#             it fails unless ldd shows that build loaded
#   asan      AddressSanitizer + UBSan build, whole suite (LeakSanitizer on)
#   valgrind  Valgrind over the unit tests of the Debug build (nproc at a
#             time; a case too slow under it says so and is left to the
#             Debug and ASan phases)
#   clang     a clang build (-Werror) and its unit tests
#   fuzz      every tests/fuzz target, MCGIT_FUZZ_SECONDS each (default 10)
#   vm        the agent on a real Debian 12 guest under QEMU
#             (tests/vm/test_real_node.sh, scenarios 1, 2 and 5)
# Every phase runs even when an earlier one failed (a build that fails fails
# only its own phase and those that need it). At the end one line per phase:
# passed, failed, skipped, seconds. Exit status 1 if any phase failed.
#
# A skipped test prints its reason on its own ctest line. With
# MCGIT_REQUIRE_ALL=1 (set by .ci/run) nothing may be skipped: a skipped
# test, a part of a test that cannot run, or a missing clang fails the run.
# -DMCGIT_TESTS=ON: a build directory configured for the demo (README,
# -DMCGIT_TESTS=OFF) gets its tests back.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
jobs=$(nproc 2>/dev/null || echo 2)
require_all=${MCGIT_REQUIRE_ALL:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/mcgit-run-all.XXXXXX")
trap 'rm -rf "$work"' EXIT
summary=()
any_failed=0

# phase_end NAME STATUS PASSED FAILED SKIPPED START: record a phase's line.
phase_end() {
  local name=$1 status=$2 secs=$(($(date +%s) - $6))
  summary+=("$(printf '%-9s %-6s passed %4s  failed %3s  skipped %3s  %5s s' \
    "$name" "$status" "$3" "$4" "$5" "$secs")")
  [ "$status" = ok ] || any_failed=1
}

# build NAME DIR [cmake args...]: configure and build; the log on failure.
build() {
  local name=$1 dir=$2; shift 2
  echo "== $name: building $dir"
  if ! { cmake -S . -B "$dir" "$@" && cmake --build "$dir" -j"$jobs"; } >"$work/build-$name.log" 2>&1; then
    echo "$name: the build failed:"; tail -40 "$work/build-$name.log"
    return 1
  fi
}

# skip_reasons: ctest's output with each skipped test's reason (the
# "skipped: ..." line tests/integration/lib.sh records) on the same line.
skip_reasons() {
  local line name reason
  while IFS= read -r line; do
    if [[ $line == *"***Skipped"* ]]; then
      name=$(sed -nE 's/.*Test +#[0-9]+: ([^ ]+) .*/\1/p' <<<"$line")
      name=${name##*/}
      reason="no reason recorded"
      [ -n "$name" ] && [ -s "$MCGIT_SKIP_DIR/$name" ] && reason=$(head -1 "$MCGIT_SKIP_DIR/$name")
      line="$line  ($reason)"
    fi
    printf '%s\n' "$line"
  done
}

# run_ctest NAME DIR START [ctest args...]: the suite in DIR; counts into the
# phase's summary line. With MCGIT_REQUIRE_ALL=1 a skipped test fails.
run_ctest() {
  local name=$1 dir=$2 start=$3; shift 3
  local log="$work/ctest-$name.log" rc=0 total failed skipped
  export MCGIT_SKIP_DIR="$work/skips-$name"
  mkdir -p "$MCGIT_SKIP_DIR"
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" "$@" 2>&1 | skip_reasons | tee "$log"
  rc=${PIPESTATUS[0]}
  total=$(sed -nE 's/.*tests passed, [0-9]+ tests? failed out of ([0-9]+).*/\1/p' "$log" | tail -1)
  failed=$(sed -nE 's/.*tests passed, ([0-9]+) tests? failed out of.*/\1/p' "$log" | tail -1)
  skipped=$(grep -c '\*\*\*Skipped' "$log")
  : "${total:=0}" "${failed:=0}"
  if [ "$skipped" -gt 0 ] && [ "$require_all" = 1 ]; then
    echo "MCGIT_REQUIRE_ALL=1: tests were skipped:"; grep '\*\*\*Skipped' "$log"; rc=1
  fi
  [ "$total" -gt 0 ] || rc=1
  local status=ok
  [ "$rc" = 0 ] || status=FAILED
  phase_end "$name" "$status" $((total - failed - skipped)) "$failed" "$skipped" "$start"
}

# -------------------------------------------------------------------- debug
start=$(date +%s)
debug_built=0
if build debug build -DCMAKE_BUILD_TYPE=Debug -DMCGIT_TESTS=ON; then
  debug_built=1
  run_ctest debug build "$start"
else
  phase_end debug FAILED 0 0 0 "$start"
fi

# -------------------------------------------------------------- libgit2-old
# The libgit2-labelled tests against Debian's libgit2 without the security
# update: what a root debootstrapped without bookworm-security runs. The
# phase fails when that build is not the one mcgit loads (ldd), and each
# test checks it again (MCGIT_EXPECT_LIBGIT2, tests/integration/lib.sh).
start=$(date +%s)
oldlib=${MCGIT_OLD_LIBGIT2:-/var/cache/mcgit-libgit2-deb12u1}/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
echo "== libgit2-old: the libgit2 tests against $oldlib/libgit2.so.1.5"
if [ "$debug_built" != 1 ]; then
  phase_end libgit2-old FAILED 0 0 0 "$start"
elif [ ! -e "$oldlib/libgit2.so.1.5" ]; then
  echo "libgit2-old: $oldlib/libgit2.so.1.5 not found (tests/setup.sh unpacks it)"
  st=ok
  [ "$require_all" = 1 ] && st=FAILED && echo "MCGIT_REQUIRE_ALL=1: the libgit2-old phase is required"
  phase_end libgit2-old "$st" 0 0 1 "$start"
else
  want=$(readlink -f "$oldlib/libgit2.so.1.5")
  loaded=$(LD_LIBRARY_PATH=$oldlib ldd build/mcgit | awk '$1 ~ /^libgit2\.so/ { print $3 }')
  installed=$(ldd build/mcgit | awk '$1 ~ /^libgit2\.so/ { print $3 }')
  echo "libgit2-old: mcgit loads $(readlink -f "$loaded") (installed: $(readlink -f "$installed"))"
  if [ "$(readlink -f "$loaded")" != "$want" ]; then
    echo "libgit2-old: FAILED: mcgit does not load $want"
    phase_end libgit2-old FAILED 0 1 0 "$start"
  else
    cmp -s "$want" "$(readlink -f "$installed")" &&
      echo "libgit2-old: note: the installed libgit2 is this same build (no security update here)"
    LD_LIBRARY_PATH=$oldlib MCGIT_EXPECT_LIBGIT2=$want run_ctest libgit2-old build "$start" -L libgit2
  fi
fi

# --------------------------------------------------------------------- asan
start=$(date +%s)
if build asan build-asan -DCMAKE_BUILD_TYPE=Asan -DMCGIT_TESTS=ON; then
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_ctest asan build-asan "$start"
else
  phase_end asan FAILED 0 0 0 "$start"
fi

# ----------------------------------------------------------------- valgrind
start=$(date +%s)
echo "== valgrind: unit tests of the Debug build, $jobs at a time"
vpass=0 vfail=0
# valgrind_one TEST: TEST under Valgrind, its log in $work/valgrind-NAME.log;
# prints "pass NAME" or "fail NAME". MCGIT_VALGRIND=1: a case too slow under
# Valgrind returns early and prints "not under Valgrind: ...", or does less
# and prints "under Valgrind: ..." (the Debug and ASan phases run it whole),
# listed below so that nothing is silently left out.
valgrind_one() {
  local log="$work/valgrind-${1##*/}.log"
  if MCGIT_VALGRIND=1 valgrind -q --error-exitcode=99 --leak-check=full \
    --errors-for-leak-kinds=definite "$1" >"$log" 2>&1; then
    echo "pass $1"
  else echo "fail $1"; fi
}
export -f valgrind_one
export work
if [ "$debug_built" = 1 ]; then
  while read -r verdict t; do
    if [ "$verdict" = pass ]; then vpass=$((vpass + 1))
    else echo "valgrind: $t failed"; tail -30 "$work/valgrind-${t##*/}.log"; vfail=$((vfail + 1)); fi
  done < <(for t in build/tests/test_*; do [ -x "$t" ] && printf '%s\0' "$t"; done |
    xargs -0 -r -n1 -P"$jobs" bash -c 'valgrind_one "$1"' _)
  grep -h 'under Valgrind' "$work"/valgrind-*.log 2>/dev/null | sed 's/^/valgrind: /'
fi
vstatus=ok
{ [ "$vfail" = 0 ] && [ "$vpass" -gt 0 ]; } || vstatus=FAILED
phase_end valgrind "$vstatus" "$vpass" "$vfail" 0 "$start"

# ------------------------------------------------------------- clang + fuzz
start=$(date +%s)
if command -v clang >/dev/null; then
  if CC=clang build clang build-clang -DCMAKE_BUILD_TYPE=Release -DMCGIT_TESTS=ON; then
    run_ctest clang build-clang "$start" -L unit
  else
    phase_end clang FAILED 0 0 0 "$start"
  fi
  start=$(date +%s)
  fuzz_secs=${MCGIT_FUZZ_SECONDS:-10}
  echo "== fuzz: every target, ${fuzz_secs} s each (tests/fuzz/run.sh)"
  rc=0
  tests/fuzz/run.sh "$fuzz_secs" | tee "$work/fuzz.log" || rc=${PIPESTATUS[0]}
  # run.sh's summary: one "NAME: N execs ..." line a target, FAILED on a failure
  fpass=$(sed -n '/^== summary/,$p' "$work/fuzz.log" | grep -E '^fuzz_[a-z_]+: ' | grep -vc 'FAILED')
  ffail=$(sed -n '/^== summary/,$p' "$work/fuzz.log" | grep -c 'FAILED')
  if [ "$rc" = 77 ] && [ "$require_all" != 1 ]; then
    echo "fuzzing skipped: clang cannot build libFuzzer targets here"
    phase_end fuzz ok 0 0 1 "$start"
  elif [ "$rc" != 0 ]; then
    phase_end fuzz FAILED "$fpass" "$((ffail > 0 ? ffail : 1))" 0 "$start"
  else
    phase_end fuzz ok "$fpass" 0 0 "$start"
  fi
else
  echo "== clang not installed: clang build and fuzzing skipped"
  st=ok
  [ "$require_all" = 1 ] && st=FAILED && echo "MCGIT_REQUIRE_ALL=1: clang is required"
  phase_end clang "$st" 0 0 1 "$start"
  phase_end fuzz "$st" 0 0 1 "$start"
fi

# ----------------------------------------------------------------------- vm
# The agent on a real Debian 12 guest under QEMU (tests/vm/test_real_node.sh:
# scenarios 1, 2 and 5; `--all` runs the others too, outside CI). Skipped
# with its reason where QEMU cannot run (not root, QEMU not installed): a
# failure with MCGIT_REQUIRE_ALL=1.
start=$(date +%s)
echo "== vm: tests/vm/test_real_node.sh (a real guest under QEMU)"
vm_skip=
if [ "$(id -u)" != 0 ]; then vm_skip="not root (debootstrap, chroot)"
elif ! command -v qemu-system-x86_64 >/dev/null || ! command -v qemu-img >/dev/null; then
  vm_skip="QEMU not installed (tests/setup.sh installs it)"
elif [ "$debug_built" != 1 ]; then vm_skip="no Debug build"
fi
if [ -n "$vm_skip" ]; then
  echo "vm: skipped: $vm_skip"
  st=ok
  [ "$require_all" = 1 ] && st=FAILED && echo "MCGIT_REQUIRE_ALL=1: the VM tests are required"
  phase_end vm "$st" 0 0 1 "$start"
else
  rc=0
  MCGIT=$PWD/build/mcgit SRC=$PWD bash tests/vm/test_real_node.sh 2>&1 | tee "$work/vm.log" || rc=${PIPESTATUS[0]}
  vpass=$(sed -nE 's/^([0-9]+) passed, [0-9]+ failed$/\1/p' "$work/vm.log" | tail -1)
  vfail=$(sed -nE 's/^[0-9]+ passed, ([0-9]+) failed$/\1/p' "$work/vm.log" | tail -1)
  : "${vpass:=0}" "${vfail:=0}"
  if [ "$rc" = 77 ] && [ "$require_all" != 1 ]; then
    phase_end vm ok 0 0 1 "$start"
  elif [ "$rc" != 0 ] || [ "$vpass" = 0 ]; then
    phase_end vm FAILED "$vpass" "$((vfail > 0 ? vfail : 1))" 0 "$start"
  else
    phase_end vm ok "$vpass" 0 0 "$start"
  fi
fi

echo "== run-all: one line per phase"
printf '%s\n' "${summary[@]}"
if [ "$any_failed" = 0 ]; then echo "== all phases passed"; else echo "== some phases FAILED"; fi
exit "$any_failed"
