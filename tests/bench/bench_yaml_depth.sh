#!/usr/bin/env bash
# bench_yaml_depth.sh — the cost of deeply nested YAML against its depth.
#
# A config repo whose mcgit.yaml is one flow sequence nested D levels deep
# ("a: [[[...]]]", 2D+4 bytes) is validated with `mcgit validate DIR` for D
# from 1,000 to 1,000,000; the peer is `sha256sum` of the same file (both are
# processes started the same way, so start-up cancels in the ratio). The
# pairs are interleaved, ROUNDS of each; the median per-pair ratio
# mcgit/sha256sum and the median mcgit time are printed per depth, with the
# load average. mcgit must refuse every file ("nesting deeper than 64
# levels") and its time must not grow with D beyond reading the file: before
# the fix, 120,000 levels took more than a minute.
#
#   tests/bench/bench_yaml_depth.sh          ROUNDS=7
#
# Configures and builds a Release build in build-release first (BUILD=dir uses
# an already configured build instead). Not run by ctest. Results go in
# docs/PERFORMANCE.md, "Parsing".
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${ROUNDS:-7}
B=${BUILD:-$SRC/build-release}
[ -n "${BUILD:-}" ] || cmake -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$B" -j"$(nproc)" --target mcgit >/dev/null
MCGIT=$B/mcgit
T=$(mktemp -d "${TMPDIR:-/tmp}/mcgit-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
tables=()

median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

printf '%-10s %10s %14s %14s %12s\n' depth bytes "mcgit ms" "sha256sum ms" "ratio"
for d in 1000 10000 100000 1000000; do
  R=$T/repo-$d
  "$MCGIT" init "$R" >/dev/null 2>&1
  python3 -c "import sys; d=int(sys.argv[1]); sys.stdout.write('a: ' + '['*d + ']'*d + '\n')" "$d" >"$R/mcgit.yaml"
  if "$MCGIT" validate "$R" >/dev/null 2>"$T/err"; then echo "depth $d: accepted" >&2; exit 1; fi
  grep -q "nesting deeper than 64 levels" "$T/err" || { echo "depth $d: $(cat "$T/err")" >&2; exit 1; }
  ms=() ps=() ratios=()
  for i in $(seq "$ROUNDS"); do
    # the shell's clock (µs, no process start-up inside a timing); the order alternates
    if [ $((i % 2)) = 1 ]; then
      t0=${EPOCHREALTIME/./}; "$MCGIT" validate "$R" >/dev/null 2>&1 || true; t1=${EPOCHREALTIME/./}
      sha256sum "$R/mcgit.yaml" >/dev/null; t2=${EPOCHREALTIME/./}
      a=$((t1 - t0)) b=$((t2 - t1))
    else
      t0=${EPOCHREALTIME/./}; sha256sum "$R/mcgit.yaml" >/dev/null; t1=${EPOCHREALTIME/./}
      "$MCGIT" validate "$R" >/dev/null 2>&1 || true; t2=${EPOCHREALTIME/./}
      a=$((t2 - t1)) b=$((t1 - t0))
    fi
    ms+=("$a") ps+=("$b")
    ratios+=("$(echo "$a / $b" | bc -l)")
  done
  printf '%-10s %10s %14.2f %14.2f %12.2f\n' "$d" "$(stat -c %s "$R/mcgit.yaml")" \
    "$(echo "$(median "${ms[@]}") / 1000" | bc -l)" "$(echo "$(median "${ps[@]}") / 1000" | bc -l)" \
    "$(median "${ratios[@]}")"
  tables+=("$(printf 'TABLE|validate YAML nested %s deep (refused)|%.1f ms|sha256sum: %.1f ms|%.2f|%s|' "$d" \
    "$(echo "$(median "${ms[@]}") / 1000" | bc -l)" "$(echo "$(median "${ps[@]}") / 1000" | bc -l)" \
    "$(median "${ratios[@]}")" "$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{v[NR]=$1} END {printf "%.2f–%.2f", v[1], v[NR]}')")")
done
printf 'load average: %s; %s cpus\n' "$(cut -d' ' -f1-3 /proc/loadavg)" "$(nproc)"
printf '%s\n' "${tables[@]}"
