#!/usr/bin/env bash
# bench_push_to_done.sh — from a signed commit to every node Done, on the
# local cluster, with every interval at 300 s (so only events can move it):
# three worker nodes at maxUnavailable 1 (three waves), non-live roots, a
# one-file config. ROUNDS commits (default 7), each timed from the commit's
# return to the moment `mcgit status` first shows all three Done on the new
# config (polled every 20 ms, so the figure is at most 20 ms late, plus one
# status call). Prints each, the median and the load average. Target: <= 1 s
# (issue 20). Not run by ctest; figures in docs/PERFORMANCE.md.
#
#   tests/bench/bench_push_to_done.sh        BUILD=dir for an existing build
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${ROUNDS:-7}
B=${BUILD:-$SRC/build-release}
[ -n "${BUILD:-}" ] || cmake -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$B" -j"$(nproc)" --target mcgit >/dev/null
M=$B/mcgit
T=$(mktemp -d "${TMPDIR:-/tmp}/mcgit-bench.XXXXXX")
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$T"' EXIT
. "$SRC/tests/bench/lib.sh"
bench_signed_repo "$M" "$T"
bench_mc v0
CL=local:$T/cl
for n in w0 w1 w2; do "$M" node add --cluster "$CL" $n --labels node-role.kubernetes.io/worker= >/dev/null; done
for n in w0 w1 w2; do "$M" agent --node $n --cluster "$CL" --interval 300 -q >/dev/null 2>&1 & pids+=($!); done
"$M" controller --repo "$R" --trust "$T/trust" --cluster "$CL" --interval 300 -q >/dev/null 2>&1 & pids+=($!)
all_done() { "$M" status --cluster "$CL" nodes -o json | jq -e --arg t "$1" \
  '[.items[].metadata.annotations | select(.["machineconfiguration.mcgit.io/state"] == "Done" and (.["machineconfiguration.mcgit.io/currentConfig"] | contains("rendered-worker")) and .["machineconfiguration.mcgit.io/currentConfig"] == .["machineconfiguration.mcgit.io/desiredConfig"])] | length == 3' >/dev/null 2>&1; }
name_of() { "$M" render "$R" -o names 2>/dev/null | awk '$1=="worker"{print $2}'; }
ms() { date +%s%3N; }
sleep 3
times=()
for i in $(seq "$ROUNDS"); do
  bench_mc "v$i"
  want=$(name_of); t0=$(ms)
  until "$M" status --cluster "$CL" nodes -o json | jq -e --arg w "$want" \
      '[.items[].metadata.annotations | select(.["machineconfiguration.mcgit.io/currentConfig"] == $w and .["machineconfiguration.mcgit.io/state"] == "Done")] | length == 3' >/dev/null; do
    sleep 0.02
    [ $(( $(ms) - t0 )) -lt 60000 ] || { echo "round $i: not Done after 60 s" >&2; exit 1; }
  done
  t=$(( $(ms) - t0 )); times+=("$t"); echo "round $i: push -> 3 nodes Done in $t ms"
done
med=$(printf '%s\n' "${times[@]}" | sort -n | awk '{v[NR]=$1} END {print (NR%2)? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}')
echo "median: $med ms over $ROUNDS rounds (3 waves each; intervals 300 s); load $(cut -d' ' -f1-3 /proc/loadavg)"
read -r lo hi < <(printf '%s\n' "${times[@]}" | sort -n | awk '{v[NR]=$1} END {print v[1], v[NR]}')
# one row for tests/bench/run-all.sh (see tests/bench/README.md): the peer is the target
printf 'TABLE|push -> 3 nodes Done (3 waves, local cluster, intervals 300 s)|%s ms|target 1,000 ms|%s|%s–%s|\n' \
  "$med" "$(awk -v m="$med" 'BEGIN {printf "%.2f", m / 1000}')" \
  "$(awk -v m="$lo" 'BEGIN {printf "%.2f", m / 1000}')" "$(awk -v m="$hi" 'BEGIN {printf "%.2f", m / 1000}')"
