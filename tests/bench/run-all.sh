#!/usr/bin/env bash
# run-all.sh — run every benchmark and print one table (tests/bench/README.md).
#
#   tests/bench/run-all.sh [NAME...]     NAME: verify, bundle, ... (bench_NAME.sh);
#                                        default every tests/bench/bench_*.sh
#   BENCH_SKIP="kube push_to_done"       names to leave out
#   BUILD=dir                            a Release build (default build-release,
#                                        configured and built here)
#
# Each bench_NAME.sh runs with BUILD set, its output kept in
# $BUILD/bench-logs/NAME.log; the rows it prints as
#   TABLE|work|mcgit|peer|ratio|min–max|peak RSS
# are collected into one Markdown table, with the load average (1, 5, 15
# minutes) when the benchmark ended. A benchmark that exits 77 is reported
# as skipped; one that fails (a missed target makes some exit 1) keeps the
# rows it printed and is named under the table. Not run by ctest.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$SRC/build-release}
export BUILD
LOGS=$BUILD/bench-logs

cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 2
nice cmake --build "$BUILD" -j2 >/dev/null || { echo "run-all: build failed" >&2; exit 2; }
BUILD=$(cd "$BUILD" && pwd) # absolute: hooks run a benchmark's binary from the server repo
export BUILD
mkdir -p "$LOGS"

names=()
if [ $# -gt 0 ]; then
  names=("$@")
else
  for f in "$SRC"/tests/bench/bench_*.sh; do
    n=${f##*/bench_}; names+=("${n%.sh}")
  done
fi

rows=() notes=()
started=$(date -u +'%Y-%m-%d %H:%M UTC')
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for n in "${names[@]}"; do
  case " ${BENCH_SKIP:-} " in *" $n "*) notes+=("$n: skipped (BENCH_SKIP)"); continue ;; esac
  script=$SRC/tests/bench/bench_$n.sh
  [ -f "$script" ] || { notes+=("$n: no $script"); continue; }
  echo "run-all: $n (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  t0=$EPOCHREALTIME
  bash "$script" >"$LOGS/$n.log" 2>&1
  rc=$?
  secs=$(echo "$EPOCHREALTIME - $t0" | bc)
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  got=0
  while IFS='|' read -r _ work mcgit peer ratio minmax rss; do
    rows+=("| $work | $mcgit | $peer | $ratio | $minmax | $rss | $load |")
    got=$((got + 1))
  done < <(grep '^TABLE|' "$LOGS/$n.log")
  case $rc in
    0) [ "$got" -gt 0 ] || notes+=("$n: printed no TABLE rows (see $LOGS/$n.log)") ;;
    77) notes+=("$n: skipped (exit 77: $(tail -1 "$LOGS/$n.log"))") ;;
    *) notes+=("$n: exit $rc after $(printf '%.0f' "$secs") s ($(grep -v '^TABLE|' "$LOGS/$n.log" | tail -1))") ;;
  esac
  echo "run-all: $n done in $(printf '%.0f' "$secs") s, exit $rc, $got rows" >&2
done

echo "mcgit benchmarks, $started; $(nproc) CPUs ($(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)); load average at the start $load0, at the end $(cut -d' ' -f1-3 /proc/loadavg)"
echo "ratio: mcgit / peer, the median of interleaved per-pair ratios; min–max of those ratios"
echo
echo "| work | mcgit | peer | ratio | min–max | peak RSS | load after |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
printf '%s\n' "${rows[@]}"
if [ ${#notes[@]} -gt 0 ]; then
  echo
  printf -- '* %s\n' "${notes[@]}"
fi
