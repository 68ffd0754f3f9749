#!/usr/bin/env bash
# bench_soak.sh — the daemons over a long run. A controller mirroring a
# remote (webhook on, metrics scraped) and three agents on a local cluster
# (non-live roots, each scraped) are driven for SECONDS (default 3600)
# through, in turn: a signed push to the remote with the hooks' webhook
# call, a rollout to the three nodes, drift (a managed file tampered with
# on one node, repaired by `agent --once --force`), a `mcgit rollback` to
# the previous commit pushed the same way, and `mcgit sync`; Prometheus-style
# scrapes every 5 s throughout. Every minute it records each process's
# VmRSS, open descriptors and CPU seconds (from /proc), and at the end
# prints the growth per hour of each, measured from the first minute on
# (the warm-up excluded), as TABLE rows. Target (issue 27): RSS growth
# <= 1 MiB per hour for each daemon, descriptors flat.
#
#   tests/bench/bench_soak.sh [SECONDS]      BUILD=dir for an existing build;
#                                            MCGIT=cmd to run instead (e.g. a
#                                            wrapper running the controller
#                                            under valgrind)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
SECS=${1:-3600}
B=${BUILD:-$SRC/build-release}
if [ -z "${MCGIT:-}" ]; then
  [ -n "${BUILD:-}" ] || cmake -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$B" -j"$(nproc)" --target mcgit >/dev/null
fi
M=${MCGIT:-$B/mcgit}
T=$(mktemp -d "${TMPDIR:-/tmp}/mcgit-bench.XXXXXX")
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$T"' EXIT
. "$SRC/tests/bench/lib.sh"
bench_signed_repo "$M" "$T"
bench_mc v0
git init -q --bare "$T/origin.git"
git -C "$R" push -q "$T/origin.git" main
printf 'bench-token\n' >"$T/token"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
CP=$(port)
"$M" hook install --repo "$T/origin.git" --trust "$T/trust" \
  --webhook-url "http://127.0.0.1:$CP/hooks/git" --webhook-token-file "$T/token" >/dev/null 2>&1
CL=local:$T/cl
names=(controller)
ports=("$CP")
for n in w0 w1 w2; do "$M" node add --cluster "$CL" $n --labels node-role.kubernetes.io/worker= >/dev/null; done
"$M" controller --repo "file://$T/origin.git" --mirror "$T/mirror" --trust "$T/trust" --cluster "$CL" \
  --interval 30 --metrics-bind-address "127.0.0.1:$CP" --webhook-token-file "$T/token" -q \
  >"$T/controller.log" 2>&1 &
pids+=($!)
procs=($!)
for n in w0 w1 w2; do
  p=$(port)
  "$M" agent --node $n --cluster "$CL" --interval 30 --metrics-bind-address "127.0.0.1:$p" -q \
    >"$T/$n.log" 2>&1 &
  pids+=($!)
  procs+=($!)
  names+=("$n")
  ports+=("$p")
done

sample() { # sample MINUTE: one line per process into $T/samples
  local i p rss fds cpu
  for i in "${!procs[@]}"; do
    p=${procs[$i]}
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
    fds=$(ls "/proc/$p/fd" 2>/dev/null | wc -l)
    cpu=$(awk -v t="$(getconf CLK_TCK)" '{sub(/.*\) /, ""); split($0, f, " "); printf "%.2f", (f[12] + f[13]) / t}' "/proc/$p/stat" 2>/dev/null || echo 0)
    echo "$1 ${names[$i]} $rss $fds $cpu" >>"$T/samples"
  done
}
step=0
drive() { # one step of the cycle
  case $((step % 5)) in
    0) bench_mc "step$step"; git -C "$R" push -q "$T/origin.git" main 2>/dev/null || true ;;
    1) f=$T/cl/roots/w1/etc/bench.conf; [ -e "$f" ] && echo tampered >"$f"
       "$M" agent --node w1 --cluster "$CL" --once --force -q >/dev/null 2>&1 || true ;;
    2) "$M" rollback --repo "$R" HEAD~1 --key "$T/key" >/dev/null 2>&1 || true
       git -C "$R" push -q "$T/origin.git" main 2>/dev/null || true ;;
    3) "$M" sync --cluster "$CL" >/dev/null 2>&1 || true ;;
    4) curl -s -m 2 -o /dev/null -X POST -H 'Authorization: Bearer bench-token' "http://127.0.0.1:$CP/hooks/git" || true ;;
  esac
  step=$((step + 1))
}
start=$(date +%s)
next_sample=$start
minute=0
while [ $(($(date +%s) - start)) -lt "$SECS" ]; do
  if [ "$(date +%s)" -ge "$next_sample" ]; then
    sample "$minute"
    minute=$((minute + 1))
    next_sample=$((start + minute * 60))
  fi
  for p in "${ports[@]}"; do curl -s -m 2 -o /dev/null "http://127.0.0.1:$p/metrics" || true; done
  [ $(( $(date +%s) % 15 )) -lt 5 ] && drive
  sleep 5
done
sample "$minute"
echo "# minute process VmRSS(KiB) fds cpu(s)"
cat "$T/samples"
for n in "${names[@]}"; do
  # growth from minute 1 to the last sample, scaled to an hour
  read -r m0 r0 f0 c0 m1 r1 f1 c1 < <(awk -v n="$n" '$2 == n && $1 >= 1 {if (!s) {m0=$1; r0=$3; f0=$4; c0=$5; s=1} m1=$1; r1=$3; f1=$4; c1=$5}
    END {print m0, r0, f0, c0, m1, r1, f1, c1}' "$T/samples")
  mins=$((m1 - m0))
  [ "$mins" -gt 0 ] || { echo "# $n: run too short to measure growth"; continue; }
  perh=$(awk -v a="$r0" -v b="$r1" -v m="$mins" 'BEGIN {printf "%.0f", (b - a) * 60 / m}')
  cpuh=$(awk -v a="$c0" -v b="$c1" -v m="$mins" 'BEGIN {printf "%.1f", (b - a) * 60 / m}')
  bench_table "soak $n, ${mins} min" "RSS ${r0}->${r1} KiB: ${perh} KiB/h; fds ${f0}->${f1}; CPU ${cpuh} s/h" "target <= 1024 KiB/h" "" "" "${r1} KiB"
done
echo "load: $(bench_load)"
