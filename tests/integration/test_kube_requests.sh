#!/usr/bin/env bash
# An operator's requests on the kube backend, against a real kube-apiserver
# (RBAC on, deploy/'s CRDs and roles):
#   - mcgit pool pause|resume: the annotation on the MachineConfigPool
#     object, kept by the controller's writes; a paused pool renders but no
#     node gets the new config; resume lets the rollout go on; what changes
#     nothing says so; a user without rights gets the API's 403 in one line
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
expect_rc 0 "pool pause worker" -- "$MCGIT" pool pause worker --cluster "$ADMIN"
expect_grep "^pool worker paused by an operator" "$T/out" "(says so)"
[ "$(kubectl get mcp.$A worker -o json | jq -r --arg k "$A/paused" '.metadata.annotations[$k]')" = true ] \
  && ok "the pause is the annotation on the MachineConfigPool" || bad "no annotation"
expect_rc 0 "pause again" -- "$MCGIT" pool pause worker --cluster "$ADMIN"
expect_grep "already paused by an operator; nothing changed" "$T/out" "(changes nothing, says so)"
write_mc "$R" 10-worker worker /etc/demo.conf v2
scommit "$R" op "v2"
ctl_once && ok "controller pass" || bad "controller pass failed"
V2=$(target)
[ "$V2" != "$V1" ] && [ "$(desired w1)" = "$V1" ] && [ "$(desired w2)" = "$V1" ] \
  && ok "paused: the target moved to $V2, no node got it" || bad "paused: target $V2, nodes $(desired w1) $(desired w2)"
[ "$(kubectl get mcp.$A worker -o json | jq -r --arg k "$A/paused" '.metadata.annotations[$k]')" = true ] \
  && ok "the controller's writes keep the pause" || bad "annotation lost"
kubectl get mcp.$A worker -o json | jq -r '.status.conditions[] | select(.type == "Updating") | .message' >"$T/cond"
expect_grep "^Pool is paused \(by an operator\); will not update to $V2$" "$T/cond" "Updating says who paused it"
expect_rc 0 "status" -- "$MCGIT" status --cluster "$ADMIN"
expect_grep "^worker: paused by an operator" "$T/out" "status names the paused pool"
expect_rc 0 "pool resume worker" -- "$MCGIT" pool resume worker --cluster "$ADMIN"
expect_grep "^pool worker resumed" "$T/out" "(says so)"
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
finish
