#!/usr/bin/env bash
# bench_push_webhook.sh — from `git push` to the first node Working on it,
# when the controller mirrors a remote (so no local watch can see the push)
# and every interval is 300 s: only the webhook can move it. The server's
# bare repo has mcgit's hooks installed with --webhook-url: pre-receive
# verifies, post-receive renders and POSTs to the controller's
# /hooks/git (Authorization: Bearer); the controller fetches, verifies,
# renders, and writes the first node's desiredConfig; that node's agent
# (inotify on local:DIR) starts the update. Three workers at
# maxUnavailable 1, non-live roots, a one-file config; each agent's Reboot
# is stretched by --reboot-command 'sleep 0.3' so Working lasts long enough
# to be seen. ROUNDS pushes (default 7), each timed from just before
# `git push` to: the controller's mirror holding the new rendered commit;
# the first node given the new desiredConfig; the first node Working on it
# (node files polled every 10 ms). Prints each, the medians and the load
# average. Target: <= 1 s (issues 19 and 20). Not run by ctest; figures in
# docs/PERFORMANCE.md.
#
#   tests/bench/bench_push_webhook.sh        BUILD=dir for an existing build
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${ROUNDS:-7}
B=${BUILD:-$SRC/build-release}
[ -n "${BUILD:-}" ] || cmake -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$B" -j"$(nproc)" --target mcgit >/dev/null
M=$B/mcgit
T=$(mktemp -d "${TMPDIR:-/tmp}/mcgit-bench.XXXXXX")
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$T"' EXIT
. "$SRC/tests/bench/lib.sh"
bench_signed_repo "$M" "$T"
sed -i 's/maxUnavailable: .*/maxUnavailable: 1/' "$R/pools/worker.yaml"
bench_mc v0
git init -q --bare "$T/origin.git"
git -C "$R" push -q "$T/origin.git" main
printf 'bench-token\n' >"$T/token"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$M" hook install --repo "$T/origin.git" --trust "$T/trust" \
  --webhook-url "http://127.0.0.1:$PORT/hooks/git" --webhook-token-file "$T/token" >/dev/null 2>&1
git -C "$T/origin.git" config mcgit.binary "$M" # the hooks run this build, not an mcgit on PATH
CL=local:$T/cl
for n in w0 w1 w2; do "$M" node add --cluster "$CL" $n --labels node-role.kubernetes.io/worker= >/dev/null; done
for n in w0 w1 w2; do
  "$M" agent --node $n --cluster "$CL" --interval 300 --reboot-command 'sleep 0.3' -q >/dev/null 2>&1 & pids+=($!)
done
"$M" controller --repo "file://$T/origin.git" --mirror "$T/mirror" --trust "$T/trust" --cluster "$CL" \
  --interval 300 --metrics-bind-address "127.0.0.1:$PORT" --webhook-token-file "$T/token" -q \
  >"$T/ctl.log" 2>&1 & pids+=($!)
name_of() { "$M" render "$R" -o names 2>/dev/null | awk '$1=="worker"{print $2}'; }
ms() { date +%s%3N; }
sleep 3
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print (NR%2)? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
tr=(); td=(); tw=()
for i in $(seq "$ROUNDS"); do
  # wait for the last round's rollout to settle
  until [ "$(grep -l '/state": *"Done"' "$T"/cl/nodes/*.json 2>/dev/null | wc -l)" = 3 ]; do sleep 0.05; done
  bench_mc "v$i"
  want=$(name_of)
  r0=$(git -C "$T/mirror" rev-parse -q --verify refs/heads/rendered || echo none)
  t0=$(ms)
  git -C "$R" push -q "$T/origin.git" main 2>/dev/null
  rt=""; dt=""; wt=""
  while [ -z "$wt" ]; do
    now=$(( $(ms) - t0 ))
    [ "$now" -lt 60000 ] || { echo "round $i: not Working after 60 s" >&2; exit 1; }
    if [ -z "$rt" ] && [ "$(git -C "$T/mirror" rev-parse -q --verify refs/heads/rendered || echo none)" != "$r0" ]; then rt=$now; fi
    if [ -z "$dt" ] && grep -q "desiredConfig\": *\"$want\"" "$T"/cl/nodes/*.json 2>/dev/null; then dt=$now; fi
    for f in "$T"/cl/nodes/*.json; do
      if grep -q "desiredConfig\": *\"$want\"" "$f" && grep -qE '/state": *"(Working|Done)"' "$f" &&
         { grep -q '/state": *"Working"' "$f" || grep -q "currentConfig\": *\"$want\"" "$f"; }; then
        wt=$now; break
      fi
    done
    [ -n "$wt" ] || sleep 0.01
  done
  [ -n "$rt" ] || rt=$wt; [ -n "$dt" ] || dt=$wt
  tr+=("$rt"); td+=("$dt"); tw+=("$wt")
  echo "round $i: push -> rendered $rt ms, -> first desiredConfig $dt ms, -> first node Working $wt ms"
done
echo "median: rendered $(median "${tr[@]}") ms, first desiredConfig $(median "${td[@]}") ms, first node Working $(median "${tw[@]}") ms over $ROUNDS pushes (controller, agents at --interval 300; push includes pre-receive verify and post-receive render); load $(cut -d' ' -f1-3 /proc/loadavg)"
