#!/usr/bin/env bash
# Controller benchmark: one `mcgit controller --once` pass over a local
# cluster of N nodes in 10 pools (master, worker, custom1..8), timed as a
# whole process (start, open the repo, verify, render, read every node, plan,
# write, exit) with its peak RSS:
#   idle     the cluster is converged: nothing to do
#   rollout  a new signed commit changes every pool: the pass verifies and
#            renders it and starts the rollout in all 10 pools — with
#            maxUnavailable 1 (10 desiredConfig writes) and "10%" (N/10)
# for N = 1,000 .. 10,000, plus the planner alone (mcg_rollout_plan_make)
# up to 100,000 nodes. Median of RUNS runs; each rollout run starts from a
# fresh copy of the same cluster and repo.
#   tests/bench/bench_controller.sh [BUILD]     (BUILD: a Release build dir)
#   BENCH_SIZES="1000 10000" BENCH_RUNS=3 tests/bench/bench_controller.sh build-rel
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-${BUILD:-$SRC/build-release}}
MCGIT=$BUILD/mcgit
GEN=$BUILD/tests/bench/bench_controller
[ -x "$GEN" ] && [ -x "$MCGIT" ] || {
  echo "no $GEN: cmake -S $SRC -B $BUILD -DCMAKE_BUILD_TYPE=Release && cmake --build $BUILD" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (GNU time) for peak RSS" >&2; exit 2; }
SIZES=${BENCH_SIZES:-1000 2000 5000 10000}
PLAN_SIZES=${BENCH_PLAN_SIZES:-1000 10000 100000}
RUNS=${BENCH_RUNS:-5}
T=$(mktemp -d "${TMPDIR:-/tmp}/mcgit-bench-ctl.XXXXXX")
trap 'rm -rf "$T"' EXIT
export LC_ALL=C
. "$SRC/tests/bench/lib.sh"
tables=()

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# pass DIR LOG: one timed controller pass; appends "wall cpu rss_kib updates writes" to LOG
pass() {
  local d=$1 t0 t1
  t0=$EPOCHREALTIME
  /usr/bin/time -f "%U %S %M" -o "$T/time" "$MCGIT" controller --once -v --repo "$d/repo" \
    --trust "$d/trust" --cluster "local:$d/cluster" 2>"$T/pass.err" || { cat "$T/pass.err" >&2; exit 1; }
  t1=$EPOCHREALTIME
  read -r u s m <"$T/time"
  local up wr
  up=$(sed -n 's/.*: \([0-9]*\) desiredConfig and \([0-9]*\) other writes/\1/p' "$T/pass.err")
  wr=$(sed -n 's/.*: \([0-9]*\) desiredConfig and \([0-9]*\) other writes/\2/p' "$T/pass.err")
  awk -v a="$t0" -v b="$t1" -v u="$u" -v s="$s" -v m="$m" -v up="$up" -v wr="$wr" \
    'BEGIN {printf "%.4f %.2f %d %s %s\n", b - a, u + s, m, up, wr}' >>"$2"
}
# summary LOG: "wall cpu rss_mib updates writes" (medians)
summary() {
  local w c m
  w=$(awk '{print $1}' "$1" | median); c=$(awk '{print $2}' "$1" | median); m=$(awk '{print $3}' "$1" | median)
  awk -v w="$w" -v c="$c" -v m="$m" 'NR == 1 {printf "%.3f %.2f %.1f %s %s\n", w, c, m / 1024, $4, $5}' "$1"
}

printf '%-7s | %-32s | %-32s | %-32s\n' nodes "idle: wall cpu MiB (writes)" \
  "rollout, maxUnav 1: wall cpu MiB" "rollout, maxUnav 10%: wall cpu MiB"
for n in $SIZES; do
  row=()
  for mu in 1 '"10%"'; do
    w=$T/w
    rm -rf "$w" "$w.base" "$w.change"
    "$GEN" setup "$w" "$n" "$mu"
    pass "$w" "$T/warm.log"             # publishes configs, pool objects, policy
    cp -a "$w" "$w.base"
    "$GEN" change "$w"
    cp -a "$w" "$w.change"
    if [ "$mu" = 1 ]; then
      rm -rf "$w"; cp -a "$w.base" "$w"; sync # the copy's writeback is not the pass's
      : >"$T/idle.log"
      for _ in $(seq "$RUNS"); do pass "$w" "$T/idle.log"; done
      read -r iw ic im iu iwr < <(summary "$T/idle.log")
      [ "$iu" = 0 ] || { echo "idle pass made $iu desiredConfig writes" >&2; exit 1; }
      row+=("$(printf '%.3f s %.2f s %5.1f (%s)' "$iw" "$ic" "$im" "$iwr")")
      read -r _ lo hi < <(awk '{print $1}' "$T/idle.log" | sort -g | awk '{v[NR]=$1} END {print 0, v[1], v[NR]}')
      tables+=("$(bench_table "controller pass, idle, $n nodes (CPU $ic s)" "$(printf '%.3f s' "$iw")" "—" "" \
        "$(printf '%.3f–%.3f s' "$lo" "$hi")" "$(printf '%.1f MiB' "$im")")")
    fi
    : >"$T/roll.log"
    for _ in $(seq "$RUNS"); do rm -rf "$w"; cp -a "$w.change" "$w"; sync; pass "$w" "$T/roll.log"; done
    read -r rw rc rm_ ru _ < <(summary "$T/roll.log")
    row+=("$(printf '%.3f s %.2f s %5.1f (%s nodes)' "$rw" "$rc" "$rm_" "$ru")")
    read -r _ lo hi < <(awk '{print $1}' "$T/roll.log" | sort -g | awk '{v[NR]=$1} END {print 0, v[1], v[NR]}')
    tables+=("$(bench_table "controller pass, rollout start, $n nodes, maxUnavailable ${mu//\"/} (CPU $rc s)" \
      "$(printf '%.3f s' "$rw")" "—" "" "$(printf '%.3f–%.3f s' "$lo" "$hi")" "$(printf '%.1f MiB' "$rm_")")")
  done
  printf '%-7s | %-32s | %-32s | %-32s\n' "$n" "${row[0]}" "${row[1]}" "${row[2]}"
done
printf '%s\n' "${tables[@]}"
echo
echo "planner alone (mcg_rollout_plan_make, 10 pools, half the nodes behind, maxUnavailable 10%; best of 10):"
for n in $PLAN_SIZES; do
  printf '  %7s nodes: %s s\n' "$n" "$("$GEN" plan "$n" | awk '{print $2}')"
done
