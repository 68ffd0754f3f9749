#!/usr/bin/env bash
# Kubernetes benchmark, against the real test kube-apiserver (tests/kube/):
#   1. steady state: a converged cluster of N nodes (default 5,000) with the
#      controller running watch-driven; API requests and bytes per pass and
#      per minute, counted by tests/kube/faultproxy.py (no faults) between
#      the controller and the server;
#   2. rollout: the time to roll a pool of 1,000 nodes with
#      maxUnavailable: 10% when agents finish instantly (tests/kube/fleet.py
#      plays the agents: desired -> current, Done), in interleaved pairs:
#      node writes one at a time (MCGIT_KUBE_INFLIGHT=1) against concurrent
#      (the default); the median of the per-pair ratios, and the load average.
#   tests/bench/bench_kube.sh [BUILD]       (BUILD: a Release build dir)
#   BENCH_NODES=5000 BENCH_POOL=1000 BENCH_STEADY_SECS=60 BENCH_PAIRS=3
#   BENCH_INFLIGHT=48 (the concurrent side's MCGIT_KUBE_INFLIGHT); FLEET_THREADS=24 (the
#   simulated agents' threads, tests/kube/fleet.py)
#   BENCH_BASE=PATH: an older mcgit binary, timed as a third arm of each round
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$SRC/build-release}
MCGIT=$BUILD/mcgit
[ -x "$MCGIT" ] || { echo "no $MCGIT: build a Release tree first" >&2; exit 2; }
NODES=${BENCH_NODES:-5000}
POOL=${BENCH_POOL:-1000}
STEADY=${BENCH_STEADY_SECS:-60}
T=$(mktemp -d "${TMPDIR:-/tmp}/mcgit-bench-kube.XXXXXX")
PIDS=""
cleanup() { kill $PIDS 2>/dev/null || true; wait 2>/dev/null || true
            "$SRC/tests/kube/stop.sh" "$T/kube" >/dev/null 2>&1; [ -n "${BENCH_KEEP:-}" ] || rm -rf "$T"; }
[ -n "${BENCH_KEEP:-}" ] && echo "keeping $T" >&2
trap cleanup EXIT
export HOME="$T/home" GIT_CONFIG_NOSYSTEM=1 LC_ALL=C
mkdir -p "$HOME"
git config --global user.name Bench; git config --global user.email bench@example.com
git config --global init.defaultBranch main

eval "$("$SRC/tests/kube/start.sh" "$T/kube")"
kubectl apply -f "$SRC/deploy/crds/" -f "$SRC/deploy/namespace.yaml" -f "$SRC/deploy/rbac.yaml" >/dev/null
kubectl wait --for condition=established --timeout=30s crd --all >/dev/null

t0=$EPOCHREALTIME
python3 "$SRC/tests/kube/fleet.py" create $((NODES - POOL)) w node-role.kubernetes.io/worker=
python3 "$SRC/tests/kube/fleet.py" create "$POOL" b node-role.kubernetes.io/bench=
echo "created $NODES nodes in $(echo "$EPOCHREALTIME - $t0" | bc) s" >&2

# A signed config repo with a pool `bench` of POOL nodes, maxUnavailable 10%.
ssh-keygen -q -t ed25519 -N '' -f "$T/key"
echo "op@example.com $(cut -d' ' -f1,2 "$T/key.pub")" >"$T/trust"
R=$T/repo
"$MCGIT" init "$R" >/dev/null
cp "$T/trust" "$R/.mcgit/allowed_signers"
cat >"$R/pools/bench.yaml" <<'YAML'
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: bench
spec:
  machineConfigSelector:
    matchLabels:
      machineconfiguration.openshift.io/role: bench
  nodeSelector:
    matchLabels:
      node-role.kubernetes.io/bench: ""
  maxUnavailable: 10%
YAML
mc() { # VERSION
  cat >"$R/machineconfigs/50-bench.yaml" <<YAML
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 50-bench
  labels:
    machineconfiguration.openshift.io/role: bench
spec:
  config:
    ignition:
      version: 3.4.0
    storage:
      files:
      - path: /etc/bench
        contents:
          source: data:,v$1
YAML
}
commit() {
  git -C "$R" add -A
  git -C "$R" -c gpg.format=ssh -c user.signingkey="$T/key" commit -q -S -m "$1"
}
mc 1; commit "bench v1"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 "$SRC/tests/kube/faultproxy.py" --port "$port" --upstream "$KUBE_SERVER" --ca "$KUBE_CA" \
  --cert "$KUBE_DIR/pki/server.crt" --key "$KUBE_DIR/pki/server.key" --stats "$T/stats" 2>/dev/null &
PIDS="$PIDS $!"
sed "s#server: $KUBE_SERVER#server: https://127.0.0.1:$port#" "$KUBE_DIR/controller.kubeconfig" >"$T/ctl.kubeconfig"
sleep 0.5
python3 "$SRC/tests/kube/fleet.py" run &
PIDS="$PIDS $!"
# The first rollout (every node new; a node without currentConfig counts
# against its pool's maxUnavailable: worker's NODES-POOL nodes at 1, bench's
# POOL at 10%) runs with the controller talking to the server directly.
"$MCGIT" controller -v --repo "$R" --trust "$T/trust" --cluster "kube:$KUBE_DIR/controller.kubeconfig" \
  --interval 30 >"$T/ctl0.log" 2>&1 &
CTL=$!
PIDS="$PIDS $CTL"

pool_done() { # POOL COUNT TARGET-OR-EMPTY
  local c t
  c=$(kubectl get mcp "$1" -o jsonpath='{.status.updatedMachineCount}' 2>/dev/null || true)
  t=$(kubectl get mcp "$1" -o jsonpath='{.status.configuration.name}' 2>/dev/null || true)
  [ "$c" = "$2" ] && { [ -z "$3" ] || [ "$t" = "$3" ]; }
}
t0=$EPOCHREALTIME
until pool_done worker $((NODES - POOL)) "" && pool_done bench "$POOL" ""; do sleep 0.5; done
echo "first rollout ($((NODES - POOL)) new worker nodes at maxUnavailable 1, $POOL bench nodes at 10%): $(echo "$EPOCHREALTIME - $t0" | bc) s" >&2

# ------------------------------------------------------------ steady state
# Now through the counting proxy (it takes the Lease at once: the first
# controller releases it on a clean exit).
kill -TERM "$CTL"; wait "$CTL" 2>/dev/null || true
"$MCGIT" controller -v --repo "$R" --trust "$T/trust" --cluster "kube:$T/ctl.kubeconfig" \
  --interval 30 >"$T/ctl.log" 2>&1 &
CTL=$!
PIDS="$PIDS $CTL"
sleep 5
n0=$(wc -l <"$T/stats"); p0=$(grep -c 'pass over' "$T/ctl.log" || true)
sleep "$STEADY"
n1=$(wc -l <"$T/stats"); p1=$(grep -c 'pass over' "$T/ctl.log" || true)
tail -n +$((n0 + 1)) "$T/stats" | head -n $((n1 - n0)) >"$T/steady"
passes=$((p1 - p0))
python3 - "$T/steady" "$passes" "$STEADY" <<'PY'
import json, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1])]
passes, secs = int(sys.argv[2]), float(sys.argv[3])
req = len(rows); bin_ = sum(r["in"] for r in rows); bout = sum(r["out"] for r in rows)
kinds = collections.Counter("%s %s" % (r["method"], r["path"].split("?")[0]) for r in rows)
print("steady state over %ds: %d passes, %d requests (%.1f/min), %d bytes sent, %d bytes received"
      % (secs, passes, req, req * 60 / secs, bin_, bout))
if passes:
    print("  per pass: %.1f requests, %.0f bytes" % (req / passes, (bin_ + bout) / passes))
for k, v in kinds.most_common(8):
    print("  %5d  %s" % (v, k))
PY

# ------------------------------------------------------------ rollout of the pool
# Timed with the controller talking to the server directly (the counting
# proxy is Python and adds its own latency); each controller takes over the
# Lease at once because the one before releases it on a clean exit.
# Rounds, interleaved: the wave's node writes one at a time
# (MCGIT_KUBE_INFLIGHT=1) and concurrent (the default, 16 in flight), and
# with BENCH_BASE an older binary too (e.g. one built before concurrent
# writes); each ratio is the median of the per-round ratios.
kill -TERM "$CTL"; wait "$CTL" 2>/dev/null || true
ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
version=1
rollout() { # BINARY INFLIGHT: "SECONDS PASSES CPU-SECONDS PEAK-RSS-KIB" into $T/r
  version=$((version + 1))
  local log="$T/ctl-r$version.log"
  MCGIT_KUBE_INFLIGHT=$2 "$1" controller -v --repo "$R" --trust "$T/trust" \
    --cluster "kube:$KUBE_DIR/controller.kubeconfig" --interval 30 >"$log" 2>&1 &
  CTL=$!
  PIDS="$PIDS $CTL"
  sleep 3
  local c0; c0=$(cpu_ticks "$CTL")
  mc "$version"; commit "bench v$version"
  local t0=$EPOCHREALTIME target="" old
  until [ -n "$target" ] && [ "$target" != "$old" ]; do
    target=$(kubectl get mcp bench -o jsonpath='{.spec.configuration.name}')
    old=$(kubectl get mcp bench -o jsonpath='{.status.configuration.name}')
    sleep 0.1
  done
  until pool_done bench "$POOL" "$target"; do sleep 0.1; done
  local dt; dt=$(echo "$EPOCHREALTIME - $t0" | bc)
  local c1; c1=$(cpu_ticks "$CTL")
  local hwm; hwm=$(awk '/^VmHWM:/{print $2}' "/proc/$CTL/status")
  kill -TERM "$CTL"; wait "$CTL" 2>/dev/null || true
  echo "$dt $(grep -c 'pass over' "$log" || true) $(echo "scale=2; ($c1 - $c0) / $ticks" | bc) $hwm" >"$T/r"
}
PAIRS=${BENCH_PAIRS:-3}
INFLIGHT=${BENCH_INFLIGHT:-48}
BASE=${BENCH_BASE:-}
load0=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$T/pairs"
for p in $(seq "$PAIRS"); do
  b="- - - -"
  if [ -n "$BASE" ]; then rollout "$BASE" ""; b=$(cat "$T/r"); fi
  rollout "$MCGIT" 1; s=$(cat "$T/r")
  rollout "$MCGIT" "$INFLIGHT"; c=$(cat "$T/r")
  echo "round $p: ${BASE:+before $b; }one at a time $s; concurrent $c   (seconds, controller passes, controller CPU s, controller peak RSS KiB)" >&2
  echo "$s $c $b" >>"$T/pairs"
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$T/pairs" "$POOL" "$load0" "$load1" "$INFLIGHT" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
def col(i): return [float(r[i]) for r in rows]
def line(name, i):
    t = col(i)
    print("  %-28s median %5.1f s (%.1f-%.1f), %d passes, controller CPU %.1f s, peak RSS %.1f MiB (max)"
          % (name, st.median(t), min(t), max(t), st.median(col(i + 1)), st.median(col(i + 2)),
             max(col(i + 3)) / 1024))
def ratio(name, a, b):
    r = [x / y for x, y in zip(col(a), col(b))]
    print("  %-28s median %.2f (%.2f-%.2f)" % (name, st.median(r), min(r), max(r)))
print("rollout of pool bench (%s nodes, maxUnavailable 10%%, agents instant), %d interleaved rounds:"
      % (sys.argv[2], len(rows)))
base = rows[0][8] != "-"
if base:
    line("before (BENCH_BASE):", 8)
line("node writes one at a time:", 0)
line("concurrent (%s in flight):" % sys.argv[5], 4)
ratio("concurrent / one at a time:", 4, 0)
if base:
    ratio("concurrent / before:", 4, 8)
print("  load average before: %s, after: %s" % (sys.argv[3], sys.argv[4]))
PY
