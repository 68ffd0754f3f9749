#!/usr/bin/env bash
# run.sh — build every libFuzzer target tests/fuzz/fuzz_*.c with clang
# (-fsanitize=fuzzer,address,undefined) against the project sources it
# names, and run each for SECONDS on its seed corpus.
#
#   tests/fuzz/run.sh SECONDS [TARGET...]      e.g. run.sh 60 fuzz_rawobj
#
# Each target declares what it is built from in its opening comment, one
# field per line (paths relative to the repository root; shell globs
# allowed, written dir/[a-z]*.c since "/" then "*" would open a comment; a
# field may repeat):
#
#   * fuzz-sources: src/pack/rawobj.c src/util/[a-z]*.c
#   * fuzz-pkgs: libgit2 jansson            (pkg-config packages to link)
#   * fuzz-options: -max_len=65536          (extra libFuzzer flags, optional)
#
# Seeds are tests/fuzz/corpus/<target>/ (committed); a run works on a copy
# in $FUZZ_BUILD/corpus/<target>/ (default build-fuzz/), so what libFuzzer
# finds is kept between runs but never lands in the source tree. A crash,
# leak, hang (-timeout, default 10 s) or sanitizer report fails the run, its
# input saved as $FUZZ_BUILD/artifacts/<target>-*. A summary line per
# target gives executions, speed, coverage (cov: edges, ft: features) and
# corpus size. Exit status: 0 all clean, 1 a target failed, 2 usage,
# 77 when clang cannot build fuzzers here (a skip, not a pass).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
ROOT=$PWD

secs=${1:-}
if ! [[ "$secs" =~ ^[0-9]+$ ]]; then
  echo "usage: tests/fuzz/run.sh SECONDS [TARGET...]" >&2
  exit 2
fi
shift
B=${FUZZ_BUILD:-$ROOT/build-fuzz}
CC=${FUZZ_CC:-clang}
TIMEOUT=${FUZZ_TIMEOUT:-10}
mkdir -p "$B/bin" "$B/corpus" "$B/artifacts" "$B/logs"

if ! command -v "$CC" >/dev/null; then
  echo "run.sh: $CC not found (tests/setup.sh installs clang)" >&2
  exit 77
fi
probe=$B/probe.c
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }' >"$probe"
if ! "$CC" -fsanitize=fuzzer,address,undefined "$probe" -o "$B/probe" 2>"$B/probe.log"; then
  echo "run.sh: $CC cannot build libFuzzer targets (libclang-rt-*-dev missing?)" >&2
  cat "$B/probe.log" >&2
  exit 77
fi

# The flags of CMakeLists.txt that clang knows, plus the fuzzer's.
# shellcheck disable=SC2054 # the sanitizer list is one flag
CFLAGS=(-std=c11 -D_GNU_SOURCE '-DMCGIT_VERSION="fuzz"' -g -O1 -fno-omit-frame-pointer
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
  -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wstrict-prototypes -Wmissing-prototypes -Wvla
  -Wno-format-nonliteral -Wno-missing-field-initializers -I"$ROOT/src")

# field FILE NAME: every value of "fuzz-NAME:" in FILE's comments, space-joined.
field() {
  sed -n "s/^[ /*#]*fuzz-$2:[[:space:]]*//p" "$1" | tr '\n' ' '
}

targets=()
if [ $# -gt 0 ]; then
  for t in "$@"; do targets+=("tests/fuzz/${t%.c}.c"); done
else
  for f in tests/fuzz/fuzz_*.c; do targets+=("$f"); done
fi

fail=0
summary=()
for src in "${targets[@]}"; do
  name=$(basename "$src" .c)
  if [ ! -f "$src" ]; then
    echo "run.sh: no target $src" >&2
    exit 2
  fi
  # shellcheck disable=SC2207 # globs are meant to expand here
  sources=($(field "$src" sources))
  pkgs=$(field "$src" pkgs)
  opts=$(field "$src" options)
  if [ ${#sources[@]} -eq 0 ]; then
    echo "run.sh: $src declares no fuzz-sources" >&2
    summary+=("$name: no fuzz-sources")
    fail=1
    continue
  fi
  pkgflags=()
  if [ -n "${pkgs// /}" ]; then
    # shellcheck disable=SC2207,SC2086 # one word per flag, one argument per package
    pkgflags=($(pkg-config --cflags --libs $pkgs)) || { fail=1; continue; }
  fi
  echo "== $name: building from ${#sources[@]} source(s)"
  if ! "$CC" "${CFLAGS[@]}" "$src" "${sources[@]}" "${pkgflags[@]}" -lpthread -lm \
       -o "$B/bin/$name" 2>"$B/logs/$name.build"; then
    cat "$B/logs/$name.build" >&2
    echo "run.sh: $name does not build" >&2
    summary+=("$name: does not build")
    fail=1
    continue
  fi
  work=$B/corpus/$name
  mkdir -p "$work"
  seeds=tests/fuzz/corpus/$name
  [ -d "$seeds" ] || seeds=
  echo "== $name: fuzzing for ${secs}s"
  # shellcheck disable=SC2086 # opts are separate flags
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    "$B/bin/$name" -max_total_time="$secs" -timeout="$TIMEOUT" -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$B/artifacts/$name-" $opts \
      "$work" $seeds >"$B/logs/$name.log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units:[[:space:]]*//p' "$B/logs/$name.log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec:[[:space:]]*//p' "$B/logs/$name.log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$B/logs/$name.log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  units=$(find "$work" -type f | wc -l)
  line="$name: ${execs:-?} execs (${speed:-?}/s), cov ${cov:-?}, ft ${ft:-?}, corpus $units"
  if [ $rc -ne 0 ]; then
    line="$line — FAILED (exit $rc), see $B/logs/$name.log"
    grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$B/logs/$name.log" | head -8 >&2
    fail=1
  fi
  echo "$line"
  summary+=("$line")
done
echo "== summary"
printf '%s\n' "${summary[@]}"
exit $fail
