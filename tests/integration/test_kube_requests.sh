#!/usr/bin/env bash
# An operator's requests on the kube backend, against a real kube-apiserver
# (RBAC on, deploy/'s CRDs and roles):
#   - the pause is MCO's spec.paused: set with a real `kubectl patch`, never
#     written back from git by the controller; a paused pool renders but no
#     node gets the new config; `mcgit pool pause` sees it, `mcgit pool resume`
#     lifts it and the rollout goes on; what changes nothing says so; a user
#     without rights gets the API's 403 in one line
#   - status.observedGeneration follows metadata.generation (`kubectl wait
#     --for=jsonpath` where kubectl has it); status.configuration.source; the
#     conditions as MCO words them
#   - rendered MachineConfigs: ownerReferences to their pool (its uid), MCO's
#     generated-by-controller-version annotation, the GeneratedByController
#     and IgnitionVersion columns of `kubectl get mc`
#   - a node that refuses an unreconcilable config: state Unreconcilable
#   - mcgit sync: a request before the MachineConfiguration exists creates it;
#     a controller with a 300 s interval answers within seconds; the answer
#     is in the object's annotations, readable with kubectl
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/kube/lib.sh"
need kubectl
need jq
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
NOBODY=kube:$KUBE_DIR/nobody.kubeconfig
A=machineconfiguration.mcgit.io
kube_node w1 node-role.kubernetes.io/worker=
kube_node w2 node-role.kubernetes.io/worker=

R=$T/cfg
fixture_signed_repo "$R"
fixture_v1 "$R"
ctl_once() { "$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "$CTL" --once >"$T/ctl.out" 2>&1 || { cat "$T/ctl.out"; return 1; }; }
desired() { kubectl get node "$1" -o json | jq -r --arg a "$A/desiredConfig" '.metadata.annotations[$a] // ""'; }
target() { kubectl get machineconfigpool.$A worker -o jsonpath='{.spec.configuration.name}'; }
# converge: every node reports Done on its desiredConfig (as its agent would)
converge() {
  for n in w1 w2; do
    kubectl annotate --overwrite node "$n" "$A/currentConfig=$(desired "$n")" "$A/state=Done" >/dev/null
  done
}

# a sync asked before any controller ran: the MachineConfiguration is made for it
expect_rc 0 "sync before the first pass" -- "$MCGIT" sync --cluster "$ADMIN"
expect_grep "^sync #1 requested" "$T/out" "(request #1)"
[ "$(kubectl get machineconfiguration.$A cluster -o jsonpath="{.metadata.annotations.$(echo $A | sed 's/\./\\./g')/sync-requested}")" = 1 ] \
  && ok "the request is an annotation of the MachineConfiguration cluster" || bad "no sync-requested annotation"
expect_rc 1 "pause before the controller made the pools" -- "$MCGIT" pool pause worker --cluster "$ADMIN"
expect_grep "has no pool 'worker'" "$T/err" "(refused, named)"
ctl_once && ok "controller pass" || bad "controller pass failed"
ann() { kubectl get machineconfiguration.$A cluster -o json | jq -r --arg k "$A/$1" '.metadata.annotations[$k] // ""'; }
[ "$(ann sync-handled)" = 1 ] && [ "$(ann sync-failed)" = false ] && ok "the pass answered request #1" \
  || bad "answer: handled '$(ann sync-handled)' failed '$(ann sync-failed)'"
expect_grep "pass done over 2 nodes: 1 given a new desiredConfig" <(ann sync-result) "(its result: $(ann sync-result); maxUnavailable 1: one new node at a time)"
kubectl get machineconfiguration.$A cluster -o json | jq -e '.spec.nodeDisruptionPolicy != null' >/dev/null \
  && ok "the controller filled the spec of the object the request made" || bad "policy spec missing"
V1=$(target)
converge
ctl_once >/dev/null # the second new node's turn
converge

# ------------------------------------------------------------ pause
expect_rc 1 "a user without rights cannot pause" -- "$MCGIT" pool pause worker --cluster "$NOBODY"
[ "$(wc -l <"$T/err")" = 1 ] && grep -q "403 Forbidden" "$T/err" && ok "(the API's 403, one line)" || bad "nobody: $(cat "$T/err")"
ctl_once >/dev/null # both nodes Done on $V1: the pool is Updated
mcp() { kubectl get mcp.$A worker -o jsonpath="{$1}"; }
# rendered MachineConfigs: owned by their pool, MCO's annotation and columns
kubectl get mc.$A "$V1" -o json >"$T/mc.json"
[ "$(jq -r '.metadata.ownerReferences[0] | "\(.kind) \(.name) \(.uid) \(.controller)"' "$T/mc.json")" = "MachineConfigPool worker $(mcp .metadata.uid) true" ] \
  && ok "$V1 is owned by pool worker (its uid)" || bad "ownerReferences: $(jq -c .metadata.ownerReferences "$T/mc.json")"
VER=$("$MCGIT" --version | head -1 | awk '{print $2}')
[ "$(jq -r '.metadata.annotations["machineconfiguration.openshift.io/generated-by-controller-version"]' "$T/mc.json")" = "$VER" ] \
  && ok "generated-by-controller-version: $VER" || bad "annotations: $(jq -c .metadata.annotations "$T/mc.json")"
kubectl get mc.$A "$V1" >"$T/mc.txt"
expect_grep "^NAME +GENERATEDBYCONTROLLER +IGNITIONVERSION +AGE$" "$T/mc.txt" "kubectl get mc: MCO's columns"
expect_grep "^$V1 +$VER +3\.4\.0 " "$T/mc.txt" "(the version and Ignition's)"
# the pool's status as MCO's
[ "$(mcp '.status.configuration.name')" = "$V1" ] && [ "$(mcp '.status.configuration.source[*].name')" = "00-worker 10-worker" ] \
  && ok "status.configuration.source: the MachineConfigs of $V1" || bad "status.configuration: $(mcp .status.configuration)"
[ "$(mcp .spec.paused)" = false ] && [ "$(mcp .status.pausedInGit)" = false ] \
  && ok "spec.paused false (the CRD's default), status.pausedInGit false" || bad "paused: spec $(mcp .spec.paused), git $(mcp .status.pausedInGit)"
G=$(mcp .metadata.generation)
[ -n "$G" ] && [ "$(mcp .status.observedGeneration)" = "$G" ] && ok "observedGeneration = generation = $G" \
  || bad "generation $G, observed $(mcp .status.observedGeneration)"

# MCO's habit: kubectl patch spec.paused
kubectl patch mcp.$A worker --type merge -p '{"spec":{"paused":true}}' >/dev/null \
  && ok "kubectl patch mcp worker spec.paused=true" || bad "kubectl patch failed"
G2=$(mcp .metadata.generation)
[ "$G2" -gt "$G" ] && [ "$(mcp .status.observedGeneration)" = "$G" ] && ok "generation $G2, not yet observed" \
  || bad "generation $G2, observed $(mcp .status.observedGeneration)"
expect_rc 0 "pool pause worker" -- "$MCGIT" pool pause worker --cluster "$ADMIN"
expect_grep "^pool worker is already paused by an operator; nothing changed" "$T/out" "mcgit pool pause sees the kubectl pause"
ctl_once & CP=$!
if [[ $(kubectl wait --help 2>/dev/null) == *--for=jsonpath* ]]; then
  kubectl wait mcp.$A/worker --for=jsonpath='{.status.observedGeneration}'="$G2" --timeout=60s >/dev/null \
    && ok "kubectl wait --for=jsonpath observedGeneration=$G2" || bad "kubectl wait timed out: observed $(mcp .status.observedGeneration)"
else # kubectl 1.20 has no --for=jsonpath: the same wait by hand
  for _ in $(seq 120); do [ "$(mcp .status.observedGeneration)" = "$G2" ] && break; sleep 0.5; done
  [ "$(mcp .status.observedGeneration)" = "$G2" ] && ok "observedGeneration reaches $G2 (this kubectl has no wait --for=jsonpath)" \
    || bad "observedGeneration $(mcp .status.observedGeneration), want $G2"
fi
wait "$CP" && ok "controller pass" || bad "controller pass failed"
write_mc "$R" 10-worker worker /etc/demo.conf v2
scommit "$R" op "v2"
ctl_once && ok "controller pass" || bad "controller pass failed"
V2=$(target)
[ "$V2" != "$V1" ] && [ "$(desired w1)" = "$V1" ] && [ "$(desired w2)" = "$V1" ] \
  && ok "paused by kubectl patch: the target moved to $V2, no node got it" || bad "paused: target $V2, nodes $(desired w1) $(desired w2)"
[ "$(mcp .spec.paused)" = true ] && ok "the controller's writes never undo spec.paused from git" || bad "spec.paused: $(mcp .spec.paused)"
[ "$(mcp .status.observedGeneration)" = "$(mcp .metadata.generation)" ] && ok "(observedGeneration = generation after the pass)" \
  || bad "generation $(mcp .metadata.generation), observed $(mcp .status.observedGeneration)"
kubectl get mcp.$A worker -o json | jq -r '.status.conditions[] | select(.type == "Updating") | .message' >"$T/cond"
expect_grep "^Pool is paused; will not update to MachineConfig $V2 \(paused by an operator\)$" "$T/cond" "Updating: MCO's message, and who paused it"
expect_rc 0 "pool pause again" -- "$MCGIT" pool pause worker --cluster "$ADMIN"
expect_grep "already paused by an operator; nothing changed" "$T/out" "(changes nothing, says so)"
expect_rc 0 "status" -- "$MCGIT" status --cluster "$ADMIN"
expect_grep "^worker: paused by an operator" "$T/out" "status names the paused pool"
expect_rc 0 "pool resume worker" -- "$MCGIT" pool resume worker --cluster "$ADMIN"
expect_grep "^pool worker resumed" "$T/out" "(says so)"
[ "$(mcp .spec.paused)" = false ] && ok "(spec.paused false)" || bad "spec.paused: $(mcp .spec.paused)"
ctl_once && ok "controller pass" || bad "controller pass failed"
n=0; for x in w1 w2; do [ "$(desired $x)" = "$V2" ] && n=$((n+1)); done
[ "$n" = 1 ] && ok "resumed: one node (maxUnavailable 1) gets $V2" || bad "$n nodes on $V2"
converge

# ------------------------------------------------------------ sync against a running controller
"$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "$CTL" --interval 300 >"$T/ctl.log" 2>&1 & PIDS+=($!)
sleep 3 # its first pass is over
s=$(date +%s%N)
expect_rc 0 "sync --wait against a controller with a 300 s interval" -- timeout 40 "$MCGIT" sync --cluster "$ADMIN" --wait --timeout 30
ms=$(( ($(date +%s%N) - s) / 1000000 ))
expect_grep "^sync #[0-9]+ answered at .*: pass done over 2 nodes: [0-9]+ given a new desiredConfig$" "$T/out" "the answer is the pass's result"
[ "$ms" -lt 10000 ] && ok "answered in ${ms} ms (within a 4 s wait slice and a pass)" || bad "sync took ${ms} ms"
converge
sleep 6 # quiet: the controller waits on its 300 s interval
s=$(date +%s%N)
expect_rc 0 "sync --wait on a quiet controller" -- timeout 40 "$MCGIT" sync --cluster "$ADMIN" --wait --timeout 30
ms=$(( ($(date +%s%N) - s) / 1000000 ))
expect_grep "^sync #[0-9]+ answered at .*: pass done over 2 nodes: 0 given a new desiredConfig$" "$T/out" "(nothing left to do)"
[ "$ms" -lt 10000 ] && ok "answered in ${ms} ms" || bad "sync took ${ms} ms"
h=$(ann sync-handled); r=$(ann sync-requested)
[ -n "$h" ] && [ "$h" = "$r" ] && ok "every request answered ($r)" || bad "requested $r, handled $h"
if grep -qE "Sanitizer|runtime error" "$T/ctl.log"; then bad "sanitizer report in the controller's log"; fi
for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
PIDS=()

# ------------------------------------------------------------ Unreconcilable
# a pool whose config asks for FIPS mode, on a node installed without it: the
# agent refuses (MCO's isConfigReconcilable) and the node says Unreconcilable
cat >"$R/pools/fips.yaml" <<'POOL'
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: fips
spec:
  machineConfigSelector:
    matchLabels:
      machineconfiguration.openshift.io/role: fips
  nodeSelector:
    matchLabels:
      node-role.kubernetes.io/fips: ""
POOL
cat >"$R/machineconfigs/50-fips.yaml" <<'MC'
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 50-fips
  labels:
    machineconfiguration.openshift.io/role: fips
spec:
  fips: true
  config:
    ignition:
      version: 3.4.0
MC
scommit "$R" op "a FIPS pool"
kube_node f1 node-role.kubernetes.io/fips=
mkdir -p "$T/roots/f1/etc" "$T/roots/f1/proc/sys/crypto"
printf 'root:x:0:0::/root:/bin/sh\ncore:x:1000:1000::/home/core:/bin/sh\n' >"$T/roots/f1/etc/passwd"
printf 'root:x:0:\ncore:x:1000:\n' >"$T/roots/f1/etc/group"
echo 0 >"$T/roots/f1/proc/sys/crypto/fips_enabled"
ctl_once && ok "controller pass" || bad "controller pass failed"
F=$(kubectl get mcp.$A fips -o jsonpath='{.spec.configuration.name}')
[ -n "$F" ] && [ "$(desired f1)" = "$F" ] && ok "f1 is given $F" || bad "f1: desired '$(desired f1)', target '$F'"
expect_rc 1 "the agent refuses fips: true on a node without FIPS mode" -- \
  "$MCGIT" agent --node f1 --cluster "kube:$KUBE_DIR/agent.kubeconfig" --root "$T/roots/f1" --once -q
expect_grep "^f1 Unreconcilable - rendered config $F: unreconcilable: fips is true but node f1 runs with FIPS mode off" "$T/out" "(it says Unreconcilable, naming fips)"
nstate() { kubectl get node f1 -o json | jq -r --arg k "$A/$1" '.metadata.annotations[$k] // ""'; }
[ "$(nstate state)" = Unreconcilable ] && ok "the node's state annotation is Unreconcilable, as MCO writes it" \
  || bad "f1's state: $(nstate state)"
expect_grep "unreconcilable: fips" <(nstate reason) "(its reason names fips)"
# docs/kubernetes.md's line for MCO's state key, as written there
kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.annotations.machineconfiguration\.mcgit\.io/state}{"\n"}{end}' >"$T/states"
expect_grep "^f1 Unreconcilable$" "$T/states" "the documented jsonpath reads it"
ctl_once && ok "controller pass" || bad "controller pass failed"
kubectl get mcp.$A fips -o json | jq -r '.status.conditions[] | select(.type == "NodeDegraded") | "\(.status) \(.message)"' >"$T/cond"
expect_grep "^True Node f1 is reporting: \"rendered config $F: unreconcilable: fips is true" "$T/cond" "NodeDegraded: MCO's message"
[ "$(kubectl get mcp.$A fips -o jsonpath='{.status.degradedMachineCount}')" = 1 ] && ok "(counted degraded)" || bad "degradedMachineCount"
# a pass with nothing new writes nothing: owners, versions, generations and
# sources all settled (and nothing asked again of a config already whole)
"$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "$CTL" --once -v -v >"$T/ctl.out" 2>&1
"$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "$CTL" --once -v -v >"$T/ctl.out" 2>&1
expect_grep "pass over 3 nodes: 0 desiredConfig and 0 other writes" "$T/ctl.out" "a quiet pass writes nothing"
finish
