#!/usr/bin/env bash
# The kube cluster backend against a real kube-apiserver + etcd on 127.0.0.1
# (RBAC on, deploy/'s CRDs and roles installed), through mcgit-kubetool (the
# cluster interface one operation at a time) and the mcgit CLI:
#   - node desiredConfig compare-and-swap under concurrency: no update lost
#   - rendered configs published, read back byte-identical, tampering seen and
#     repaired, listed, deleted
#   - pools created and updated, status through the status subresource, no
#     write when nothing changed; the MachineConfiguration policy
#   - drain: normal pods evicted, DaemonSet and mirror pods left, a PDB-blocked
#     eviction retried until the bounded timeout and then named in the error
#   - leader election with two processes: never two leaders, hand-over on a
#     clean exit at once and after a crash within one lease duration
#   - watch-driven waiting: no requests at steady state, only changes that
#     matter wake the caller; and it survives injected faults (faultproxy.py)
#   - in-cluster configuration and service account token rotation
#   - the API's error (403 from RBAC) reaches the CLI as one line
#   - `mcgit controller`, `mcgit agent` and `mcgit status` with --cluster kube:...
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/kube/lib.sh"
: "${KUBETOOL:=$(dirname "$MCGIT")/tests/mcgit-kubetool}"
[ -x "$KUBETOOL" ] || { echo "mcgit-kubetool not built ($KUBETOOL)"; exit 1; }
need kubectl
need jq /usr/bin/time
kube_up
kube_deploy
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  "$SRC/tests/kube/stop.sh" "$T/kube" >/dev/null 2>&1
  rm -rf "$T"
}
trap cleanup EXIT
ADMIN=kube:$KUBECONFIG
CTL=kube:$KUBE_DIR/controller.kubeconfig
AGENT=kube:$KUBE_DIR/agent.kubeconfig
NOBODY=kube:$KUBE_DIR/nobody.kubeconfig
kt() { "$KUBETOOL" "$@"; }

# ------------------------------------------------------------------ nodes
kube_node w1 node-role.kubernetes.io/worker= topology.kubernetes.io/zone=a
kube_node w2 node-role.kubernetes.io/worker= topology.kubernetes.io/zone=b
kube_node m1 node-role.kubernetes.io/master=
expect_rc 0 "mcgit node add through the kube backend" -- "$MCGIT" node add --cluster "$ADMIN" x1 --labels a=b,c=d
expect_rc 0 "mcgit node label" -- "$MCGIT" node label --cluster "$ADMIN" x1 a-,e=f
[ "$(kubectl get node x1 -o json | jq -c '[.metadata.labels, (.status.conditions[] | select(.type == "Ready") | .status)]')" = '[{"c":"d","e":"f"},"True"]' ] \
  && ok "Node object with the labels, Ready" || bad "node x1: $(kubectl get node x1 -o json | jq -c .metadata.labels)"
expect_rc 1 "adding it twice is refused" -- "$MCGIT" node add --cluster "$ADMIN" x1
expect_grep "node 'x1' already exists" "$T/err" "(already exists)"
expect_rc 0 "mcgit node remove" -- "$MCGIT" node remove --cluster "$ADMIN" x1
expect_rc 1 "removing it twice is refused" -- "$MCGIT" node remove --cluster "$ADMIN" x1
expect_grep "node 'x1' not found" "$T/err" "(not found)"
expect_rc 0 "status nodes with the admin kubeconfig" -- "$MCGIT" status --cluster "$ADMIN" nodes
expect_grep '^w1 +<none> +<none> +<none>' "$T/out" "status lists the Node objects"
kt "$CTL" get w1 >"$T/out"
expect_grep '^w1 - - - ready schedulable$' "$T/out" "Ready condition read, not cordoned"

expect_rc 0 "desiredConfig set when it is still empty" -- kt "$CTL" patch w1 desired=rendered-worker-1 if=
expect_rc 2 "compare-and-swap refused when desiredConfig moved" -- kt "$CTL" patch w1 desired=rendered-worker-2 if=rendered-worker-0
expect_grep "node 'w1': desiredConfig changed" "$T/err" "the refusal says why"
expect_rc 0 "agent fields, cordon in one patch" -- kt "$AGENT" patch w1 current=rendered-worker-1 state=Done reason=ok unsched=1
ann=$(kubectl get node w1 -o json | jq -c '[.metadata.annotations["machineconfiguration.mcgit.io/desiredConfig","machineconfiguration.mcgit.io/currentConfig","machineconfiguration.mcgit.io/state","machineconfiguration.mcgit.io/reason"], .spec.unschedulable]')
[ "$ann" = '["rendered-worker-1","rendered-worker-1","Done","ok",true]' ] \
  && ok "annotations and spec.unschedulable as kubectl sees them" || bad "node object: $ann"
expect_rc 0 "reason cleared, uncordoned" -- kt "$AGENT" patch w1 reason= unsched=0
[ "$(kubectl get node w1 -o json | jq -c '[.metadata.annotations["machineconfiguration.mcgit.io/reason"], (.spec.unschedulable // false)]')" = '[null,false]' ] \
  && ok "\"\" removes the annotation" || bad "reason/unschedulable not cleared"

# Concurrent compare-and-swap increments of desiredConfig: every one lands.
kt "$CTL" patch w2 desired=0
for i in 1 2 3 4; do "$KUBETOOL" "$CTL" incr w2 20 >"$T/incr.$i" 2>&1 & done
wait
final=$(kt "$CTL" get w2 | cut -d' ' -f2)
conflicts=$(cat "$T"/incr.* | awk '/^conflicts/ {s += $2} END {print s + 0}')
[ "$final" = 80 ] && ok "4 writers x 20 CAS increments: 80, no update lost ($conflicts conflicts retried)" \
  || { bad "CAS lost updates: $final (want 80)"; cat "$T"/incr.*; }
[ "$conflicts" -gt 0 ] && ok "the writers did collide (409 → re-read → retry)" || bad "no collision seen"

# A wave of node writes (mcg_cluster_patch_nodes: concurrent, bounded in
# flight, compare-and-swap each): every node gets its own result.
wave=()
for i in $(seq -w 1 30); do wave+=("v$i"); done
for n in "${wave[@]}"; do
  printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"%s","labels":{"wave":"yes"}}}\n' "$n"
done | kubectl apply -f - >/dev/null
MCGIT_KUBE_INFLIGHT=8 expect_rc 0 "a wave of 30 node writes and one missing node" -- \
  kt "$CTL" patch-many rendered-worker-5 "${wave[@]}" nosuch
[ "$(grep -c ' ok$' "$T/out")" = 30 ] && ok "each node written" || bad "wave: $(sort "$T/out" | uniq -c -f1)"
expect_grep '^nosuch notfound$' "$T/out" "(the missing node reported by name, the others unaffected)"
[ "$(kubectl get nodes -l wave=yes -o json | jq '[.items[] | select(.metadata.annotations["machineconfiguration.mcgit.io/desiredConfig"] == "rendered-worker-5")] | length')" = 30 ] \
  && ok "kubectl sees the 30 writes" || bad "wave not written"
# Two waves racing over the same nodes: per node, a write that lost its
# compare-and-swap race says so (conflict) and never overwrites the winner.
kt "$CTL" patch-many rendered-worker-6 "${wave[@]}" >"$T/wa" 2>&1 & pa=$!
kt "$CTL" patch-many rendered-worker-7 "${wave[@]}" >"$T/wb" 2>&1 & pb=$!
wait $pa $pb
lost=0
for n in "${wave[@]}"; do
  a=$(awk -v n="$n" '$1 == n {print $2}' "$T/wa"); b=$(awk -v n="$n" '$1 == n {print $2}' "$T/wb")
  got=$(kubectl get node "$n" -o jsonpath='{.metadata.annotations.machineconfiguration\.mcgit\.io/desiredConfig}')
  case "$a/$b/$got" in
    ok/conflict/rendered-worker-6|conflict/ok/rendered-worker-7|ok/ok/rendered-worker-[67]) ;;
    *) lost=$((lost + 1)); echo "  $n: $a $b -> $got" ;;
  esac
done
[ "$lost" = 0 ] && ok "racing waves: every node holds the write of a wave that said ok ($(grep -c conflict "$T/wa" "$T/wb" | paste -sd' '))" \
  || bad "racing waves: $lost nodes wrong"
kubectl delete nodes -l wave=yes >/dev/null

# ---------------------------------------------------------------- configs
python3 - "$T" <<'PY'
import hashlib, json, sys
spec = {"config": {"ignition": {"version": "3.4.0"},
        "storage": {"files": [{"path": "/etc/motd", "mode": 420, "overwrite": True,
                               "contents": {"source": "data:,h%C3%A9llo%0A"}}]},
        "systemd": {"units": [{"name": "x.service", "enabled": True,
                               "contents": "[Unit]\nDescription=caf\u00e9 \"q\"\n"}]}}}
b = (json.dumps(spec, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()
open(sys.argv[1] + "/spec.json", "wb").write(b)
open(sys.argv[1] + "/name", "w").write("rendered-worker-" + hashlib.sha256(b).hexdigest()[:32])
PY
MC=$(cat "$T/name")
expect_rc 0 "publish a rendered config" -- kt "$CTL" put-config "$MC" "$T/spec.json"
expect_rc 0 "publishing again is a no-op" -- kt "$CTL" put-config "$MC" "$T/spec.json"
kt "$AGENT" get-config "$MC" >"$T/got.json"
cmp -s "$T/spec.json" "$T/got.json" && ok "get_config returns the canonical bytes exactly" || bad "spec bytes differ"
[ "$(kubectl get mc "$MC" -o jsonpath='{.spec.config.ignition.version}')" = 3.4.0 ] \
  && ok "stored as MachineConfig spec.config" || bad "MachineConfig spec.config"
kubectl get mc "$MC" -o json | jq -r '.metadata.annotations["machineconfiguration.mcgit.io/spec-sha256"]' >"$T/out"
[ "$(cat "$T/out")" = "$(sha256sum <"$T/spec.json" | cut -d' ' -f1)" ] && ok "spec-sha256 annotation" || bad "hash annotation"
kt "$CTL" list-configs >"$T/out"
expect_grep "^$MC\$" "$T/out" "list_configs lists it"
kubectl patch mc "$MC" --type merge -p '{"spec":{"config":{"storage":{"files":[{"path":"/etc/motd","contents":{"source":"data:,evil"}}]}}}}' >/dev/null
expect_rc 1 "a spec altered in the cluster is refused" -- kt "$AGENT" get-config "$MC"
expect_grep "spec does not match its machineconfiguration.mcgit.io/spec-sha256 annotation" "$T/err" "and says so"
expect_rc 0 "publishing again repairs it" -- kt "$CTL" put-config "$MC" "$T/spec.json"
kt "$AGENT" get-config "$MC" | cmp -s - "$T/spec.json" && ok "repaired bytes" || bad "not repaired"
expect_rc 0 "delete" -- kt "$CTL" delete-config "$MC"
expect_rc 3 "deleted config is not published" -- kt "$AGENT" get-config "$MC"
expect_grep "is not published" "$T/err" "not-published message"
expect_rc 0 "deleting twice is fine" -- kt "$CTL" delete-config "$MC"
expect_rc 1 "the agent may not publish (RBAC)" -- kt "$AGENT" put-config "$MC" "$T/spec.json"
expect_grep '403 Forbidden: .*cannot create resource "machineconfigs"' "$T/err" "403 with the API's message"

# ------------------------------------------------------------------ pools
cat >"$T/pool.json" <<'EOF'
{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfigPool",
 "metadata":{"name":"worker","creationTimestamp":"2026-01-01T00:00:00Z"},
 "spec":{"machineConfigSelector":{"matchLabels":{"machineconfiguration.openshift.io/role":"worker"}},
         "nodeSelector":{"matchLabels":{"node-role.kubernetes.io/worker":""}},
         "maxUnavailable":1,"paused":false,"configuration":{"name":"rendered-worker-1"}},
 "status":{"configuration":{"name":"rendered-worker-1"},"machineCount":2,"readyMachineCount":2,
           "updatedMachineCount":2,"unavailableMachineCount":0,"degradedMachineCount":0,
           "conditions":[{"type":"Updated","status":"True","reason":"","message":"All nodes are updated","lastTransitionTime":"2026-01-01T00:00:00Z"},
                         {"type":"Updating","status":"False","reason":"","message":"","lastTransitionTime":"2026-01-01T00:00:00Z"},
                         {"type":"Degraded","status":"False","reason":"","message":"","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}
EOF
expect_rc 0 "put_pool creates the MachineConfigPool" -- kt "$CTL" put-pool worker "$T/pool.json"
kubectl get mcp worker --no-headers >"$T/out"
expect_grep '^worker +rendered-worker-1 +True +False +False +2 +2 +2 +0 ' "$T/out" "kubectl get mcp shows the status written through /status"
rv1=$(kubectl get mcp worker -o jsonpath='{.metadata.resourceVersion}')
kt "$CTL" put-pool worker "$T/pool.json"
rv2=$(kubectl get mcp worker -o jsonpath='{.metadata.resourceVersion}')
[ "$rv1" = "$rv2" ] && ok "an unchanged pool is not written" || bad "unchanged pool written ($rv1 → $rv2)"
jq '.spec.maxUnavailable = "50%" | .status.updatedMachineCount = 1 | .spec.configuration = null' "$T/pool.json" >"$T/pool2.json"
expect_rc 0 "spec and status change" -- kt "$CTL" put-pool worker "$T/pool2.json"
[ "$(kubectl get mcp worker -o json | jq -c '[.spec.maxUnavailable, .status.updatedMachineCount, .spec.configuration]')" = '["50%",1,null]' ] \
  && ok "merge patches applied (null removes spec.configuration)" || bad "pool update"
# spec.paused is the operator's: put_pool never writes it, whatever it is given
kubectl patch mcp worker --type merge -p '{"spec":{"paused":true}}' >/dev/null
jq '.status.observedGeneration = 0' "$T/pool2.json" >"$T/pool3.json"
expect_rc 0 "put_pool over an operator's pause" -- kt "$CTL" put-pool worker "$T/pool3.json"
[ "$(kubectl get mcp worker -o jsonpath='{.spec.paused}')" = true ] && ok "spec.paused set by kubectl patch is kept" \
  || bad "spec.paused: $(kubectl get mcp worker -o jsonpath='{.spec.paused}')"
[ "$(kubectl get mcp worker -o jsonpath='{.status.observedGeneration}')" = "$(kubectl get mcp worker -o jsonpath='{.metadata.generation}')" ] \
  && ok "status.observedGeneration written as the generation put_pool saw" \
  || bad "observedGeneration $(kubectl get mcp worker -o jsonpath='{.status.observedGeneration}'), generation $(kubectl get mcp worker -o jsonpath='{.metadata.generation}')"
kubectl patch mcp worker --type merge -p '{"spec":{"paused":false}}' >/dev/null
expect_rc 0 "status pools through the CLI" -- "$MCGIT" status --cluster "$CTL"
expect_grep '^worker +rendered-worker-1 +True +False +False +2 +2 +1 +0 ' "$T/out" "mcgit status shows the kube pool"
kt "$CTL" list-pools >"$T/out"
jq -e 'length == 1 and .[0].metadata.name == "worker" and (.[0].metadata.managedFields == null)' "$T/out" >/dev/null \
  && ok "list_pools: the objects, without managedFields" || bad "list_pools: $(head -c 300 "$T/out")"
expect_rc 0 "delete_pool" -- kt "$CTL" delete-pool worker
kubectl get mcp 2>&1 | grep -q "No resources" && ok "pool gone" || bad "pool still there"

echo '{"nodeDisruptionPolicy":{"files":[{"path":"/etc/motd","actions":[{"type":"None"}]}]}}' >"$T/pol.json"
expect_rc 3 "no MachineConfiguration yet: not found" -- kt "$AGENT" get-policy
expect_rc 0 "put_policy creates MachineConfiguration/cluster" -- kt "$CTL" put-policy "$T/pol.json"
kt "$AGENT" get-policy >"$T/out"
expect_grep '"path":"/etc/motd"' "$T/out" "get_policy reads its spec"

# ------------------------------------------------------------------ drain
kubectl create namespace apps >/dev/null
pod() { # NAME APP [METADATA-LINES]
  kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: apps
  labels: {app: $2}
${3:-}
spec:
  nodeName: w1
  terminationGracePeriodSeconds: 0
  containers: [{name: c, image: busybox}]
EOF
  # Running, so a PDB applies to its eviction (a Pending pod is evicted unchecked)
  kube_api PATCH "/api/v1/namespaces/apps/pods/$1/status" '{"status":{"phase":"Running"}}' >/dev/null
}
pod web-1 web
pod web-2 web
pod ds-1 ds "  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: ds, uid: 6c1b1f0e-0000-4000-8000-000000000001, controller: true}]"
pod static-1 static "  annotations: {kubernetes.io/config.mirror: mirror}"
pod db-1 db
kubectl apply -f - >/dev/null 2>&1 <<'EOF'
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata: {name: db, namespace: apps}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: db}}
EOF
start=$SECONDS
MCGIT_KUBE_DRAIN_TIMEOUT=3 expect_rc 1 "drain blocked by a PodDisruptionBudget fails" -- kt "$AGENT" drain w1
[ $((SECONDS - start)) -ge 3 ] && [ $((SECONDS - start)) -le 15 ] && ok "after the bounded timeout (3s)" \
  || bad "drain took $((SECONDS - start))s"
expect_grep "node w1 not drained after 3s: pod apps/db-1: Cannot evict pod as it would violate the pod's disruption budget" "$T/err" "the reason names the blocking pod"
[ "$(wc -l <"$T/err")" = 1 ] && ok "one line" || bad "multi-line drain error"
kubectl get pods -n apps -o name | sort >"$T/out"
[ "$(tr '\n' ' ' <"$T/out")" = "pod/db-1 pod/ds-1 pod/static-1 " ] \
  && ok "normal pods evicted; DaemonSet, mirror and PDB-protected pods stay" || bad "pods left: $(tr '\n' ' ' <"$T/out")"
kubectl delete pdb -n apps db >/dev/null 2>&1
MCGIT_KUBE_DRAIN_TIMEOUT=20 expect_rc 0 "drain succeeds once the PDB allows it" -- kt "$AGENT" drain w1
[ "$(kubectl get pods -n apps -o name | sort | tr '\n' ' ')" = "pod/ds-1 pod/static-1 " ] \
  && ok "only DaemonSet and mirror pods remain" || bad "pods after drain"
expect_rc 1 "a user without RBAC cannot drain" -- kt "$NOBODY" drain w1
expect_grep '403 Forbidden: pods is forbidden: User "nobody" cannot list resource "pods"' "$T/err" "403 message"

# -------------------------------------------------------- leader election
export MCGIT_KUBE_LEASE_DURATION=3
"$KUBETOOL" "$CTL" lead a 60 >"$T/a.log" 2>"$T/a.err" & PA=$!; PIDS+=($PA)
sleep 1
"$KUBETOOL" "$CTL" lead b 60 >"$T/b.log" 2>"$T/b.err" & PB=$!; PIDS+=($PB)
sleep 2
grep -q ' a leader$' "$T/a.log" && ok "first replica leads" || bad "a: $(cat "$T/a.log" "$T/a.err")"
grep -q ' b follower$' "$T/b.log" && ! grep -q ' b leader$' "$T/b.log" && ok "second replica follows" \
  || bad "b: $(cat "$T/b.log")"
kill -TERM $PA; wait $PA
sleep 1.5
a_stop=$(awk '/ a releasing$/ {print $1}' "$T/a.log")   # before the Lease is given up
b_lead=$(awk '/ b leader$/ {print $1; exit}' "$T/b.log")
[ -n "$b_lead" ] && [ -n "$a_stop" ] && [ "$b_lead" -ge "$a_stop" ] \
  && ok "clean exit releases the Lease: the other takes over after, $((b_lead - a_stop)) ms later" \
  || bad "hand-over: a released at $a_stop, b leader $b_lead"
"$KUBETOOL" "$CTL" lead a 60 >"$T/a2.log" 2>"$T/a2.err" & PA=$!; PIDS+=($PA)
sleep 1.5
grep -q ' a follower$' "$T/a2.log" && ! grep -q ' a leader$' "$T/a2.log" && ok "a restarted replica follows the leader" \
  || bad "a2: $(cat "$T/a2.log")"
{ kill -KILL $PB; killed=$(date +%s%3N); wait $PB; } 2>/dev/null || true
sleep 5
a_lead=$(awk '/ a leader$/ {print $1; exit}' "$T/a2.log")
[ -n "$a_lead" ] && [ "$a_lead" -gt "$killed" ] && [ $((a_lead - killed)) -le 4500 ] \
  && ok "a crashed leader is replaced after the lease runs out ($((a_lead - killed)) ms)" \
  || bad "take-over after crash: killed $killed, a leader ${a_lead:-never}"
# Fencing: a replica in leader election writes only while its Lease is surely its own.
expect_rc 2 "a follower's writes are refused" -- kt "$CTL" fenced c w1 0
expect_grep '^follower$' "$T/out" "(it is a follower)"
expect_grep "not the leader: Lease mcgit/mcgit-controller is not held by 'c'" "$T/err" "refusal names the Lease"
kill -TERM $PA; wait $PA 2>/dev/null
expect_rc 0 "the leader writes" -- kt "$CTL" fenced c w1 0
# A leader that stalls past its lease while another replica takes over must
# not write when it wakes (it tries to renew first, and cannot).
"$KUBETOOL" "$CTL" fenced d w1 6 >"$T/d.out" 2>"$T/d.err" & PD=$!
sleep 0.5
"$KUBETOOL" "$CTL" lead e 8 >"$T/e.log" 2>"$T/e.err" & PE=$!; PIDS+=($PE)
rc=0; wait $PD || rc=$?
[ "$rc" = 2 ] && ok "a leader that stalled past its Lease does not write once another took over" \
  || bad "stalled leader: exit $rc ($(cat "$T/d.out" "$T/d.err"))"
expect_grep '^leader$' "$T/d.out" "(it was the leader before it stalled)"
expect_grep "not the leader: Lease mcgit/mcgit-controller is not held by 'd'" "$T/d.err" "(the refusal names the Lease)"
grep -q ' e leader$' "$T/e.log" && ok "the standby took the Lease meanwhile" || bad "e: $(cat "$T/e.log")"
kill -TERM $PE; wait $PE 2>/dev/null
expect_rc 0 "a leader busy past a third of its lease renews on the way and writes" -- kt "$CTL" fenced f w1 2
[ "$(kubectl -n mcgit get lease mcgit-controller -o jsonpath='{.spec.holderIdentity}')" = "" ] \
  && ok "Lease released on exit" || bad "Lease not released"
kubectl -n mcgit get lease mcgit-controller -o jsonpath='{.spec.leaseTransitions}' >"$T/out"
[ "$(cat "$T/out")" -ge 2 ] && ok "leaseTransitions counted" || bad "leaseTransitions $(cat "$T/out")"
kt "$AGENT" lead x 1 >"$T/out" 2>"$T/err"
unset MCGIT_KUBE_LEASE_DURATION
grep -q ' x follower$' "$T/out" && ! grep -q ' x leader$' "$T/out" \
  && ok "the agent account never leads" || bad "agent account: $(cat "$T/out")"
expect_grep 'leader election \(Lease mcgit/mcgit-controller\): GET .*403 Forbidden: leases.coordination.k8s.io "mcgit-controller" is forbidden' \
  "$T/err" "its 403 is reported"

# ------------------------------------------------------------ watch / wait
"$KUBETOOL" "$CTL" steady 5 1500 >"$T/steady" 2>&1 & PS=$!; PIDS+=($PS)
sleep 2.2
kt "$AGENT" patch w2 state=Working          # matters: wakes the waiter
sleep 1.5
kubectl annotate node m1 unrelated=1 >/dev/null # does not matter
wait $PS
sed 's/^/    /' "$T/steady"
awk 'NR > 1 && $3 != 0 {bad = 1} END {exit bad}' "$T/steady" \
  && ok "steady state: no requests per round once the watch runs" || bad "requests at steady state"
grep -q 'changed 1' "$T/steady" && ok "a node change wakes wait_change" || bad "no wake-up"
[ "$(grep -c 'changed 1' "$T/steady")" = 1 ] && ok "an unrelated annotation does not" || bad "spurious wake-ups"
kt "$AGENT" wait w1 300 >"$T/out"
[ "$(cat "$T/out")" = 0 ] && ok "an agent waits on its own node (quiet: 0)" || bad "agent wait: $(cat "$T/out")"

# -------------------------------------------- faults between mcgit and the API
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 "$SRC/tests/kube/faultproxy.py" --port "$port" --upstream "$KUBE_SERVER" --ca "$KUBE_CA" \
  --cert "$KUBE_DIR/pki/server.crt" --key "$KUBE_DIR/pki/server.key" --error-rate 0.25 \
  --conflict-rate 0.25 --watch-drop-secs 0.5 --stats "$T/proxy.stats" 2>"$T/proxy.err" & PP=$!; PIDS+=($PP)
sed "s#server: $KUBE_SERVER#server: https://127.0.0.1:$port#" "$KUBE_DIR/controller.kubeconfig" >"$T/faulty.kubeconfig"
for _ in $(seq 50); do grep -q listening "$T/proxy.err" && break; sleep 0.1; done
export MCGIT_KUBE_RETRIES=10
kt "$CTL" patch w2 desired=0
fp=()
for i in 1 2 3; do "$KUBETOOL" "kube:$T/faulty.kubeconfig" incr w2 10 >"$T/fincr.$i" 2>&1 & fp+=($!); done
for p in "${fp[@]}"; do wait "$p" || true; done
final=$(kt "$CTL" get w2 | cut -d' ' -f2)
[ "$final" = 30 ] && ok "CAS under 25% injected 5xx/429 and 25% injected 409s: 30 of 30" \
  || { bad "faulty CAS: $final"; cat "$T"/fincr.*; }
faults=$(grep -c '"fault": "error"' "$T/proxy.stats" || true)
[ "$faults" -gt 0 ] && ok "the proxy did inject faults ($faults), the client retried them" || bad "no faults injected"
kt "kube:$T/faulty.kubeconfig" list-configs >/dev/null && ok "paged list through the faulty proxy" || bad "list through proxy"
# wait_change through 5xx answers and watch streams cut after half a second:
# a node changes every second, so watches are cut while they wait, and every
# round of waiting still sees changes.
( for i in $(seq 8); do sleep 1; kt "$CTL" patch w1 reason=r$i; done ) & PC=$!
"$KUBETOOL" "kube:$T/faulty.kubeconfig" steady 4 2500 >"$T/fsteady" 2>&1 || true
wait $PC
sed 's/^/    /' "$T/fsteady"
[ "$(grep -c 'changed 1' "$T/fsteady")" -ge 3 ] && ok "changes are seen through faults and cut watches" \
  || bad "faulty watch: $(cat "$T/fsteady")"
# (whether a watch is cut here depends on where the injected 5xx fall; the
# restarts from a resourceVersion below are what must happen)
[ "$(grep -c 'watch=1.*resourceVersion=' "$T/proxy.stats")" -ge 2 ] && ok "(and resumed from their resourceVersion)" \
  || bad "watch never resumed"
unset MCGIT_KUBE_RETRIES

# Watch streams cut every half second, and nothing else injected: the waits
# above may lose every watch to a 5xx before it can be cut; here each one
# is cut while it waits, and the next resumes from its resourceVersion.
cport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 "$SRC/tests/kube/faultproxy.py" --port "$cport" --upstream "$KUBE_SERVER" --ca "$KUBE_CA" \
  --cert "$KUBE_DIR/pki/server.crt" --key "$KUBE_DIR/pki/server.key" --watch-drop-secs 0.5 \
  --stats "$T/cut.stats" 2>"$T/cut.err" & PIDS+=($!)
sed "s#server: $KUBE_SERVER#server: https://127.0.0.1:$cport#" "$KUBE_DIR/controller.kubeconfig" >"$T/cut.kubeconfig"
for _ in $(seq 50); do grep -q listening "$T/cut.err" && break; sleep 0.1; done
( for i in $(seq 8); do sleep 1; kt "$CTL" patch w1 reason=c$i; done ) & PC=$!
"$KUBETOOL" "kube:$T/cut.kubeconfig" steady 4 2500 >"$T/csteady" 2>&1 || true
wait $PC
sed 's/^/    /' "$T/csteady"
[ "$(grep -c 'changed 1' "$T/csteady")" -ge 3 ] && ok "changes are seen through cut watches" \
  || bad "cut watches: $(cat "$T/csteady")"
cuts=$(grep -c '"fault": "watch-drop"' "$T/cut.stats" || true)
[ "$cuts" -ge 2 ] && ok "watches were cut ($cuts)" || bad "no watch was cut: $(cat "$T/cut.stats")"
[ "$(grep -c 'watch=1.*resourceVersion=' "$T/cut.stats")" -ge 2 ] \
  && ok "(and each resumed from its resourceVersion)" || bad "cut watches never resumed"

# ------------------------------- malformed and huge answers from the "API server"
# Every GET through this proxy gets a bad answer, each kind in turn (huge
# bodies, a terabyte Content-Length, truncated JSON, HTML, an array, 200,000
# nested arrays, bad UTF-8, a NUL, a Status for a Node, a 1 MiB header; and
# for watches a 20 MiB line, junk, a non-event). Each request must fail with
# one line, exit 1..3 (never a crash), in bounded memory; then, with the
# faults off, the same client works again.
gport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 "$SRC/tests/kube/faultproxy.py" --port "$gport" --upstream "$KUBE_SERVER" --ca "$KUBE_CA" \
  --cert "$KUBE_DIR/pki/server.crt" --key "$KUBE_DIR/pki/server.key" --garbage-rate 1 \
  --stats "$T/garbage.stats" 2>"$T/gproxy.err" & GP=$!; PIDS+=($GP)
sed "s#server: $KUBE_SERVER#server: https://127.0.0.1:$gport#" "$KUBE_DIR/controller.kubeconfig" >"$T/garbage.kubeconfig"
for _ in $(seq 50); do grep -q listening "$T/gproxy.err" && break; sleep 0.1; done
GK="kube:$T/garbage.kubeconfig"
odd=0 maxrss=0
for i in $(seq 1 10); do
  for op in "get w1" "list-configs"; do
    st=0
    # shellcheck disable=SC2086 # op is two words on purpose
    /usr/bin/time -f %M -o "$T/g.rss" "$KUBETOOL" "$GK" $op >"$T/g.out" 2>"$T/g.err" || st=$?
    rss=$(tail -1 "$T/g.rss")
    [ "$rss" -gt "$maxrss" ] && maxrss=$rss
    lines=$(grep -cv '^Command exited' "$T/g.err" || true)
    if [ "$st" -lt 1 ] || [ "$st" -gt 3 ] || [ "$lines" != 1 ]; then
      odd=$((odd + 1)); echo "    $op: exit $st, $lines lines:"; head -3 "$T/g.err" | sed 's/^/      /'
    fi
    cat "$T/g.err" >>"$T/g.all"
  done
done
[ "$odd" = 0 ] && ok "20 GETs answered with garbage: each refused with one line, exit 1..3" || bad "$odd bad answers not refused cleanly"
sed 's/^/    /' "$T/g.all" | sort | uniq -c | sort -rn | head -12
unsent=0
for k in huge huge-length truncated html array deep badutf8 nul wrongkind header; do
  grep -q "\"fault\": \"$k\"" "$T/garbage.stats" || { bad "garbage kind $k was never sent"; unsent=$((unsent + 1)); }
done
[ "$unsent" = 0 ] && ok "every kind of bad answer was sent"
[ "$maxrss" -lt 204800 ] && ok "peak RSS through 80 MiB bodies: $((maxrss / 1024)) MiB (< 200)" || bad "peak RSS $((maxrss / 1024)) MiB"
grep -q 'larger than' "$T/g.all" && ok "a huge body is cut off at the size limit and says so" || bad "no size-limit message"
grep -q 'response refused (curl' "$T/g.all" && ok "a 1 MiB header line is refused and named" || bad "no header message"
kill -USR1 "$GP"   # faults off
kt "$GK" get w1 >/dev/null && ok "with the faults off the same client works again" || bad "no recovery after garbage"
kill "$GP" 2>/dev/null || true
# Watches: every watch stream is bad (a 20 MiB line, junk, a non-event);
# other requests pass. A waiter must neither crash nor lose a change: a
# change made while it waits is still reported, through re-lists.
python3 "$SRC/tests/kube/faultproxy.py" --port "$gport" --upstream "$KUBE_SERVER" --ca "$KUBE_CA" \
  --cert "$KUBE_DIR/pki/server.crt" --key "$KUBE_DIR/pki/server.key" --garbage-rate 1 \
  --garbage watch-huge,watch-junk,watch-notevent --stats "$T/wgarbage.stats" 2>"$T/wproxy.err" & GP=$!; PIDS+=($GP)
for _ in $(seq 50); do grep -q listening "$T/wproxy.err" && break; sleep 0.1; done
( sleep 1.5; kt "$CTL" patch w1 reason=through-garbage ) & PC=$!
st=0; start=$(date +%s%N)
/usr/bin/time -f %M -o "$T/gw.rss" "$KUBETOOL" "$GK" wait w1 6000 >"$T/gw.out" 2>"$T/gw.err" || st=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
wait $PC || true
{ [ "$st" = 0 ] && [ "$(cat "$T/gw.out")" = 1 ]; } && ok "a change is seen through bad watch streams (in $ms ms)" \
  || bad "wait through bad watches: exit $st, printed '$(cat "$T/gw.out")' after $ms ms: $(cat "$T/gw.err")"
[ "$(tail -1 "$T/gw.rss")" -lt 204800 ] && ok "peak RSS through a 20 MiB watch line: $(( $(tail -1 "$T/gw.rss") / 1024 )) MiB" \
  || bad "watch peak RSS $(tail -1 "$T/gw.rss") KiB"
# more waits until every kind of bad stream has been met: never a crash
for _ in 1 2 3 4 5 6; do
  sent=0
  for k in watch-huge watch-junk watch-notevent; do grep -q "\"fault\": \"$k\"" "$T/wgarbage.stats" && sent=$((sent + 1)); done
  [ "$sent" = 3 ] && break
  st=0; "$KUBETOOL" "$GK" wait w1 1000 >/dev/null 2>"$T/gw2.err" || st=$?
  [ "$st" -le 3 ] || bad "wait through a bad watch stream: exit $st: $(cat "$T/gw2.err")"
done
[ "$sent" = 3 ] && ok "every kind of bad watch stream was met (a 20 MiB line, junk, a non-event)" \
  || bad "only $sent of 3 kinds of bad watch stream were sent"
kill "$GP" 2>/dev/null || true

# ------------------------------------------------- in-cluster configuration
sa=$T/sa
mkdir -p "$sa/..v1"
cp "$KUBE_CA" "$sa/..v1/ca.crt"
grep -o 'token: .*' "$KUBE_DIR/nobody.kubeconfig" | cut -d' ' -f2 >"$sa/..v1/token"
echo mcgit >"$sa/..v1/namespace"
ln -s ..v1 "$sa/..data"
for f in ca.crt token namespace; do ln -s "..data/$f" "$sa/$f"; done
host=${KUBE_SERVER#https://}
export MCGIT_KUBE_SA_DIR=$sa KUBERNETES_SERVICE_HOST=${host%:*} KUBERNETES_SERVICE_PORT=${host##*:}
expect_rc 1 "in-cluster with a token RBAC gives nothing: refused" -- "$MCGIT" status --cluster kube
expect_grep '403 Forbidden' "$T/err" "403 from the in-cluster token"
# A long-running process whose token is rotated the kubelet's way (new dir, symlink swap).
export MCGIT_KUBE_LEASE_DURATION=3
"$KUBETOOL" kube lead rot 20 >"$T/rot.log" 2>"$T/rot.err" & PR=$!; PIDS+=($PR)
sleep 1.5
mkdir -p "$sa/..v2"
cp "$sa/..v1/ca.crt" "$sa/..v1/namespace" "$sa/..v2/"
grep -o 'token: .*' "$KUBE_DIR/controller.kubeconfig" | cut -d' ' -f2 >"$sa/..v2/token"
ln -sfn ..v2 "$sa/..data.tmp" && mv -T "$sa/..data.tmp" "$sa/..data"
for _ in $(seq 40); do grep -q ' rot leader$' "$T/rot.log" && break; sleep 0.25; done
grep -q ' rot leader$' "$T/rot.log" && ok "a rotated service account token is picked up without a restart" \
  || bad "token rotation: $(cat "$T/rot.log") $(tail -2 "$T/rot.err")"
grep -q 'forbidden' "$T/rot.err" && ok "(before the rotation it was refused)" || bad "old token was never refused"
kill -TERM $PR; wait $PR 2>/dev/null
unset MCGIT_KUBE_LEASE_DURATION
expect_rc 0 "in-cluster status with the rotated token" -- "$MCGIT" status --cluster kube nodes
unset MCGIT_KUBE_SA_DIR KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT

# ------------------------------------------------------- errors to the CLI
expect_rc 1 "status as a user without roles fails" -- "$MCGIT" status --cluster "$NOBODY"
[ "$(wc -l <"$T/err")" = 1 ] && ok "with one line on stderr" || bad "stderr: $(cat "$T/err")"
expect_grep '^mcgit status: GET /apis/machineconfiguration.mcgit.io/v1/machineconfigpools: 403 Forbidden: machineconfigpools.machineconfiguration.mcgit.io is forbidden: User "nobody" cannot list resource "machineconfigpools"' \
  "$T/err" "carrying the API server's Status.message"
sed 's#certificate-authority: .*#insecure-skip-tls-verify: false#' "$KUBE_DIR/admin.kubeconfig" >"$T/noca.kubeconfig"
expect_rc 1 "a server certificate from an unknown CA is refused" -- "$MCGIT" status --cluster "kube:$T/noca.kubeconfig"
expect_grep 'SSL certificate|certificate' "$T/err" "and the TLS failure is named"
printf 'kind: Config\ncurrent-context: x\n' >"$T/bad.kubeconfig"
expect_rc 1 "a broken kubeconfig is refused" -- "$MCGIT" status --cluster "kube:$T/bad.kubeconfig"
expect_grep "^mcgit status: kubeconfig $T/bad.kubeconfig: context 'x' not found\$" "$T/err" "naming the file"

# ------------------------------------- controller, agent and status end to end
R=$T/repo
fixture_signed_repo "$R"
write_mc "$R" 10-worker worker /etc/mcgit-kube-test 'hello%20kube%0A'
scommit "$R" op "worker file"
kt "$CTL" patch w1 desired= current= state= reason=
kt "$CTL" patch w2 desired= current= state= reason=
expect_rc 0 "mcgit controller --once --cluster kube:" -- "$MCGIT" controller --once --repo "$R" --trust "$T/trust" --cluster "$CTL"
want=$(kubectl get mcp worker -o jsonpath='{.spec.configuration.name}')
case $want in rendered-worker-*) ok "controller published pool worker → $want" ;; *) bad "no worker target: '$want'" ;; esac
kubectl get mc "$want" >/dev/null 2>&1 && ok "its rendered config is a MachineConfig" || bad "rendered config not published"
d=$(kt "$CTL" get w1 | cut -d' ' -f2)$(kt "$CTL" get w2 | cut -d' ' -f2)
case $d in *"$want"*) ok "a worker node was given desiredConfig" ;; *) bad "desired: $d" ;; esac
# the pool is rolling out: kubectl describe shows when it began as a time, not seconds since the epoch
kubectl describe mcp worker | grep -A2 '^  Rollout Since:' >"$T/since" || true
expect_grep '^    Since: +20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-5][0-9]Z$' "$T/since" \
  "kubectl describe mcp: Rollout Since is a timestamp"
for n in w1 w2; do
  mkdir -p "$T/root-$n"
  kt "$CTL" get $n | grep -q "$want" || continue
  expect_rc 0 "mcgit agent --once --cluster kube: on $n" -- "$MCGIT" agent --once --node $n --root "$T/root-$n" --cluster "$AGENT"
  expect_grep "^$n Done $want" "$T/out" "agent applied it"
  [ "$(cat "$T/root-$n/etc/mcgit-kube-test" 2>/dev/null)" = "hello kube" ] && ok "file written under --root" || bad "file on $n"
  kt "$CTL" get $n >"$T/out"
  expect_grep "^$n $want $want Done " "$T/out" "node reports Done at the target"
done
"$MCGIT" controller --once --repo "$R" --trust "$T/trust" --cluster "$CTL" >/dev/null 2>&1
expect_rc 0 "status pools after a second pass" -- "$MCGIT" status --cluster "$CTL" pools
expect_grep '^worker ' "$T/out" "pool row"
expect_rc 0 "status nodes" -- "$MCGIT" status --cluster "$CTL" nodes
expect_grep "^w[12] +$want +$want +Done" "$T/out" "nodes row"
# background processes' stderr: no sanitizer reports (ASan builds)
if grep -l 'Sanitizer' "$T"/*.err "$T"/*.log "$T/steady" "$T/fsteady" 2>/dev/null; then
  bad "sanitizer reports in background processes"
else ok "no sanitizer reports from background processes"; fi
finish
