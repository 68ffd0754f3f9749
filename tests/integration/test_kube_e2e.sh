#!/usr/bin/env bash
# The whole loop on a real kube-apiserver (RBAC on), through a proxy that
# injects 5xx/429 bursts, 409 conflicts, slow responses and cut watches:
# two controller replicas (only the Lease holder acts; the leader is killed
# mid-rollout), one agent process per node, a drain that waits on a
# PodDisruptionBudget, and a rollout sampled at every step never updating more
# than maxUnavailable workers at once. Status read with real kubectl matches
# `mcgit status`. No update is lost: every node ends at its pool's target.
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/kube/lib.sh"
kube_up
kube_deploy

# ---------------------------------------------------------------- nodes
kube_node m1 node-role.kubernetes.io/master=
for i in 1 2 3 4; do kube_node w$i node-role.kubernetes.io/worker= topology.kubernetes.io/zone=z$((i % 2)); done
# A pod on w2 guarded by a PodDisruptionBudget that allows no disruption.
kubectl create namespace apps >/dev/null
kubectl apply -f - >/dev/null <<'POD'
apiVersion: v1
kind: Pod
metadata: {name: db-1, namespace: apps, labels: {app: db}}
spec:
  nodeName: w2
  containers: [{name: db, image: db:1}]
---
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata: {name: db, namespace: apps}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: db}}
POD
kube_api PATCH /api/v1/namespaces/apps/pods/db-1/status '{"status":{"phase":"Running"}}' >/dev/null

# ---------------------------------------------------------------- repo
R=$T/repo
fixture_signed_repo "$R"
scommit "$R" op "initial"

# ---------------------------------------------------------------- fault proxy
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 "$SRC/tests/kube/faultproxy.py" --port "$port" --upstream "$KUBE_SERVER" --ca "$KUBE_CA" \
  --cert "$KUBE_DIR/pki/server.crt" --key "$KUBE_DIR/pki/server.key" \
  --error-rate 0.08 --conflict-rate 0.15 --slow-rate 0.03 --slow-ms 800 \
  --watch-drop-secs 4 --seed 7 --stats "$T/proxy.log" 2>"$T/proxy.err" &
PIDS="$!"
for who in controller agent; do
  sed "s#server: $KUBE_SERVER#server: https://127.0.0.1:$port#" "$KUBE_DIR/$who.kubeconfig" >"$T/$who.kubeconfig"
done
cleanup() {
  # shellcheck disable=SC2086
  kill $PIDS 2>/dev/null || true
  wait 2>/dev/null || true
  "$SRC/tests/kube/stop.sh" "$KUBE_DIR" >/dev/null 2>&1
  rm -rf "$T"
}
trap cleanup EXIT
for _ in $(seq 50); do grep -q listening "$T/proxy.err" 2>/dev/null && break; sleep 0.1; done

export MCGIT_KUBE_LEASE_DURATION=4 MCGIT_KUBE_RETRIES=12 MCGIT_KUBE_DRAIN_TIMEOUT=4
start_controller() { # ID
  MCGIT_IDENTITY=$1 "$MCGIT" controller --repo "$R" --trust "$T/trust" \
    --cluster "kube:$T/controller.kubeconfig" --interval 1 >"$T/ctl-$1.log" 2>&1 &
  echo $!
}
C1=$(start_controller c1); C2=$(start_controller c2)
PIDS="$PIDS $C1 $C2"
for n in m1 w1 w2 w3 w4; do
  mkdir -p "$T/roots/$n"
  "$MCGIT" agent --node $n --cluster "kube:$T/agent.kubeconfig" --root "$T/roots/$n" \
    --interval 1 --reboot-command true >"$T/agent-$n.log" 2>&1 &
  PIDS="$PIDS $!"
done

# nodes_json: node name, desired, current, state (admin view, no faults)
nodes() {
  kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.annotations.machineconfiguration\.mcgit\.io/desiredConfig} {.metadata.annotations.machineconfiguration\.mcgit\.io/currentConfig} {.metadata.annotations.machineconfiguration\.mcgit\.io/state}{"\n"}{end}'
}
target() { kubectl get mcp "$1" -o jsonpath='{.spec.configuration.name}' 2>/dev/null || true; }
# converged POOL-TARGET-PAIRS...: every node Done at its pool's target
converged() {
  local w m; w=$(target worker); m=$(target master)
  [ -n "$w" ] && [ -n "$m" ] || return 1
  nodes >"$T/nodes"
  [ "$(grep -cE "^w[0-9] $w $w Done$" "$T/nodes")" = 4 ] && grep -qE "^m1 $m $m Done$" "$T/nodes"
}
wait_converged() { # SECONDS
  local i=0
  until converged; do
    i=$((i + 1)); [ $i -gt $(($1 * 2)) ] && return 1; sleep 0.5
  done
}

# ------------------------------------------- first rollout: no drain
# New nodes (no current config) take their first config at once and without
# a drain: there is nothing on them to disrupt yet, so the PDB over db-1 on
# w2 does not hold anything up and db-1 stays.
wait_converged 90 && ok "first rollout converges on all 5 nodes" || { bad "first rollout did not converge"; cat "$T/nodes"; }
kubectl -n apps get pod db-1 >/dev/null 2>&1 && ok "no drain for a node's first config (db-1 still there)" \
  || bad "db-1 evicted by a first config"
W1=$(target worker)

# Only one replica acts: the Lease has one holder, one of ours.
holder=$(kubectl -n mcgit get lease mcgit-controller -o jsonpath='{.spec.holderIdentity}')
case $holder in c1|c2) ok "Lease held by one replica ($holder)" ;; *) bad "lease holder '$holder'" ;; esac

# ------------------------------------------- second rollout, sampled
# The PDB over db-1 on w2 (zone z0, the oldest worker: updated first): this
# time the change needs a drain, and the drain must wait.
# No kubelet runs: play its part in deleting evicted pods (they stay
# Terminating otherwise, and a drain rightly waits for them to be gone).
( while :; do
    kubectl get pods -A -o jsonpath='{range .items[?(@.metadata.deletionTimestamp)]}{.metadata.namespace} {.metadata.name}{"\n"}{end}' 2>/dev/null |
      while read -r ns pod; do kubectl -n "$ns" delete pod "$pod" --grace-period=0 --force >/dev/null 2>&1; done
    sleep 0.5
  done ) &
PIDS="$PIDS $!"
( max=0
  while :; do
    w=$(target worker)
    n=$(nodes | awk -v w="$w" '/^w/ && ($2 != $3 || $4 != "Done") {c++} END {print c+0}')
    [ "$n" -gt "$max" ] && max=$n && echo "$max" >"$T/max-updating"
    sleep 0.1
  done ) &
SAMPLER=$!
PIDS="$PIDS $SAMPLER"
cat >"$R/machineconfigs/20-worker-motd.yaml" <<'YAML'
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 20-worker-motd
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  config:
    ignition:
      version: 3.4.0
    storage:
      files:
      - path: /etc/motd
        mode: 420
        contents:
          source: data:,rolled%20out%20by%20mcgit%0A
YAML
scommit "$R" op "worker motd"
i=0
until [ "$(target worker)" != "$W1" ]; do i=$((i + 1)); [ $i -gt 60 ] && break; sleep 0.5; done
W2=$(target worker)
[ "$W2" != "$W1" ] && ok "new worker target $W2" || bad "worker target did not move"
# Kill the leader mid-rollout: the standby takes over after the lease expires.
leader=$(kubectl -n mcgit get lease mcgit-controller -o jsonpath='{.spec.holderIdentity}')
case $leader in c1) kill -9 "$C1" ;; c2) kill -9 "$C2" ;; esac
# The drain of w2 waits on the PDB (Degraded, naming db-1); lifting it lets it go on.
i=0
until kubectl get node w2 -o jsonpath='{.metadata.annotations.machineconfiguration\.mcgit\.io/reason}' | grep -q 'apps/db-1'; do
  i=$((i + 1)); [ $i -gt 240 ] && break; sleep 0.5
done
kubectl get node w2 -o jsonpath='{.metadata.annotations.machineconfiguration\.mcgit\.io/reason}' >"$T/out"
cat "$T/out"; echo; expect_grep 'drain: .*apps/db-1' "$T/out" "a drain blocked by the PDB names the pod in the node's reason"
# The agent retries every second (cordon, drain, fail, uncordon), so the
# node is uncordoned only between two retries, a window a poll can miss on a
# loaded machine. A watch (kubectl talks to the server directly, not through
# the fault proxy) sees every change of the node: one that a failed drain
# leaves cordoned shows unschedulable at every version for a minute. (One
# retry's cycle, Working, cordon, 4 s of evictions through the fault proxy,
# Degraded, uncordon, took over fifteen seconds under ASan on a loaded
# machine: the watch may start just after an uncordon.)
kubectl get node w2 -w -o jsonpath='{.spec.unschedulable}{"\n"}' >"$T/unsched" 2>/dev/null &
WATCHER=$!
uncordoned=no
wstart=$(date +%s)
for _ in $(seq 240); do
  grep -qvx true "$T/unsched" && { uncordoned=yes; break; }
  sleep 0.25
done
echo "# uncordon seen after $(($(date +%s) - wstart)) s of watching"
kill "$WATCHER" 2>/dev/null || true
wait "$WATCHER" 2>/dev/null || true
[ "$uncordoned" = yes ] && ok "a failed drain uncordons the node" || bad "w2 left cordoned after a failed drain"
kubectl -n apps delete pdb db >/dev/null
wait_converged 90 && ok "second rollout converges after the leader was killed" \
  || { bad "second rollout did not converge"; cat "$T/nodes"; for f in "$T"/ctl-*.log "$T"/agent-w2.log; do tail -n 5 "$f"; done; }
kubectl -n apps get pod db-1 >/dev/null 2>&1 && bad "db-1 not evicted" || ok "the drain evicted db-1 once the PDB allowed it"
kill "$SAMPLER" 2>/dev/null || true
max=$(cat "$T/max-updating" 2>/dev/null || echo 0)
[ "$max" -le 1 ] && ok "sampled throughout: at most maxUnavailable=1 worker updating (max $max)" \
  || bad "$max workers updating at once (maxUnavailable 1)"
new=$(kubectl -n mcgit get lease mcgit-controller -o jsonpath='{.spec.holderIdentity}')
[ -n "$new" ] && [ "$new" != "$leader" ] && ok "the standby replica took the Lease ($leader → $new)" \
  || bad "lease holder after kill: '$new' (was $leader)"
missing=0
for n in w1 w2 w3 w4; do
  [ "$(cat "$T/roots/$n/etc/motd" 2>/dev/null)" = "rolled out by mcgit" ] || { bad "motd on $n"; missing=$((missing + 1)); }
done
[ "$missing" = 0 ] && ok "every worker has the new file"
[ ! -e "$T/roots/m1/etc/motd" ] && ok "master untouched" || bad "motd on the master"
kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name}={.spec.unschedulable}{" "}{end}' >"$T/out"
grep -q true "$T/out" && bad "a node left cordoned: $(cat "$T/out")" || ok "every node uncordoned"
faults=$(grep -cE '"fault": "(error|conflict|slow|watch-drop)"' "$T/proxy.log" || true)
[ "$faults" -gt 10 ] && ok "faults were injected throughout ($faults)" || bad "only $faults faults injected"

# ------------------------------------------- kubectl shows what mcgit status shows
stop_faults() { pkill -USR1 -f "faultproxy.py --port $port" 2>/dev/null || true; }
stop_faults
# Pool status follows the nodes on the controller's next pass (a node change wakes it).
i=0
until [ "$(kubectl get mcp worker -o jsonpath='{.status.updatedMachineCount}')" = 4 ] &&
      [ "$(kubectl get mcp worker -o jsonpath='{.status.configuration.name}')" = "$W2" ]; do
  i=$((i + 1)); [ $i -gt 40 ] && break; sleep 0.5
done
[ $i -le 40 ] && ok "pool status caught up within $((i / 2))s of the last node" || bad "pool status did not catch up"
"$MCGIT" status --cluster "kube:$KUBECONFIG" pools >"$T/mcgit-pools"
kubectl get machineconfigpool >"$T/kubectl-pools"
norm() { awk '{NF--; print}' "$1" | sort; } # drop AGE, which may tick between the two
if diff <(norm "$T/mcgit-pools") <(norm "$T/kubectl-pools") >"$T/diff"; then
  ok "kubectl get machineconfigpool = mcgit status pools"
else bad "pool tables differ"; cat "$T/diff"; fi
expect_grep "^worker +$W2 +True +False +False +4 +4 +4 +0 " "$T/kubectl-pools" "worker pool Updated, 4/4"
"$MCGIT" status --cluster "kube:$KUBECONFIG" nodes >"$T/mcgit-nodes"
kubectl get nodes -o custom-columns='NODE:.metadata.name,DESIRED:.metadata.annotations.machineconfiguration\.mcgit\.io/desiredConfig,CURRENT:.metadata.annotations.machineconfiguration\.mcgit\.io/currentConfig,STATE:.metadata.annotations.machineconfiguration\.mcgit\.io/state' >"$T/kubectl-nodes"
if diff <(tr -s ' ' <"$T/mcgit-nodes" | sort) <(tr -s ' ' <"$T/kubectl-nodes" | sort) >"$T/diff"; then
  ok "kubectl custom-columns = mcgit status nodes"
else bad "node tables differ"; cat "$T/diff"; fi
kubectl get machineconfig >"$T/out"
expect_grep "^$W2 " "$T/out" "kubectl get machineconfig lists the published target"
kubectl describe mcp worker >"$T/out"
expect_grep "All nodes are updated with MachineConfig $W2" "$T/out" "kubectl describe mcp says all nodes are updated"

if grep -l 'Sanitizer' "$T"/*.log 2>/dev/null; then bad "sanitizer reports"; else ok "no sanitizer reports"; fi
finish
