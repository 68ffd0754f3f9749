#!/usr/bin/env bash
# Safe rollouts on the real kube-apiserver: two controller replicas (the
# Lease holder acts), one agent process per node whose health check is a
# command through --host-exec. A check failing on a node halts the pool
# (RolloutHalted, seen with real kubectl, and a Warning Event about the
# MachineConfigPool); the halt holds across a failover (the leader killed,
# the other replica takes the Lease), and so does maxConcurrentDisruptions:
# sampled throughout, no two nodes update at once.
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/kube/lib.sh"
kube_up
kube_deploy

for n in w1 w2 w3; do kube_node "$n" node-role.kubernetes.io/worker=; done
R=$T/repo
fixture_signed_repo "$R"
cat >"$R/pools/worker.yaml" <<'EOF'
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata: {name: worker}
spec:
  machineConfigSelector:
    matchLabels: {machineconfiguration.openshift.io/role: worker}
  nodeSelector:
    matchLabels: {node-role.kubernetes.io/worker: ""}
  maxUnavailable: 3
  rollout:
    healthChecks:
    - name: api
      command: [/usr/local/bin/check-api]
    healthTimeout: 2s
EOF
printf 'maxConcurrentDisruptions: 1\n' >"$R/mcgit.yaml"
write_mc "$R" 10-app worker /etc/app.conf v1
scommit "$R" op "v1"

PIDS=""
cleanup() {
  # shellcheck disable=SC2086
  kill $PIDS 2>/dev/null || true
  wait 2>/dev/null || true
  "$SRC/tests/kube/stop.sh" "$KUBE_DIR" >/dev/null 2>&1
  rm -rf "$T"
}
trap cleanup EXIT
export MCGIT_KUBE_LEASE_DURATION=4
start_controller() { # ID
  MCGIT_IDENTITY=$1 "$MCGIT" controller --repo "$R" --trust "$T/trust" \
    --cluster "kube:$KUBE_DIR/controller.kubeconfig" --interval 1 >"$T/ctl-$1.log" 2>&1 &
  echo $!
}
C1=$(start_controller c1); C2=$(start_controller c2)
PIDS="$PIDS $C1 $C2"
for n in w1 w2 w3; do
  mkdir -p "$T/roots/$n"
  printf '#!/bin/sh\nif [ "$1" = /usr/local/bin/check-api ]; then exit "$(cat %s/health-%s 2>/dev/null || echo 0)"; fi\nexec "$@"\n' \
    "$T" "$n" >"$T/hx-$n"
  chmod +x "$T/hx-$n"
  "$MCGIT" agent --node $n --cluster "kube:$KUBE_DIR/agent.kubeconfig" --root "$T/roots/$n" \
    --interval 1 --host-exec "$T/hx-$n" >"$T/agent-$n.log" 2>&1 &
  PIDS="$PIDS $!"
done
ann() { kubectl get node "$1" -o jsonpath="{.metadata.annotations.machineconfiguration\.mcgit\.io/$2}"; }
target() { kubectl get mcp worker -o jsonpath='{.spec.configuration.name}' 2>/dev/null || true; }
halted() { kubectl get mcp worker -o jsonpath='{.status.conditions[?(@.type=="RolloutHalted")].status}' 2>/dev/null || true; }
wait_for() { # SECONDS CMD...: until CMD succeeds
  local s=$1 i=0; shift
  until "$@"; do i=$((i + 1)); [ $i -gt $((s * 2)) ] && return 1; sleep 0.5; done
}
all_done() {
  local t; t=$(target); [ -n "$t" ] || return 1
  for n in w1 w2 w3; do [ "$(ann $n currentConfig)" = "$t" ] && [ "$(ann $n state)" = Done ] || return 1; done
}
wait_for 120 all_done && ok "v1 rolls out to the three workers" || bad "v1 did not converge"

# a sampler: how many nodes update at once (desired set, not current, not Degraded)
( max=0
  while :; do
    n=$(kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.annotations.machineconfiguration\.mcgit\.io/desiredConfig} {.metadata.annotations.machineconfiguration\.mcgit\.io/currentConfig} {.metadata.annotations.machineconfiguration\.mcgit\.io/state}{"\n"}{end}' |
      awk '$1 != $2 && $3 != "Degraded" {c++} END {print c+0}')
    [ "$n" -gt "$max" ] && max=$n && echo "$max" >"$T/max-updating"
    sleep 0.1
  done ) 2>/dev/null &
PIDS="$PIDS $!"

# v2: the check fails on w2; the budget of 1 makes the rollout go one node at a time
echo 1 >"$T/health-w2"
write_mc "$R" 10-app worker /etc/app.conf v2
scommit "$R" op "v2"
holder=$(kubectl -n mcgit get lease mcgit-controller -o jsonpath='{.spec.holderIdentity}')
v2_on() { [ "$(ann "$1" desiredConfig)" = "$(target)" ] && [ "$(target)" != "" ]; }
one_moved() { for n in w1 w2 w3; do v2_on $n && return 0; done; return 1; }
wait_for 60 one_moved && ok "v2: the first node gets it" || bad "v2 not started"
# the leader dies mid-rollout: the other replica takes the Lease
case $holder in c1) kill "$C1" ;; c2) kill "$C2" ;; esac
is_halted() { [ "$(halted)" = True ]; }
wait_for 90 is_halted && ok "w2's failed check halts the pool (RolloutHalted True, read with kubectl)" ||
  { bad "no halt"; kubectl get mcp worker -o jsonpath='{.status.conditions}'; }
msg=$(kubectl get mcp worker -o jsonpath='{.status.conditions[?(@.type=="RolloutHalted")].message}')
case $msg in "node w2: health check api failed on source commit "*) ok "it names the node, the check and the source commit" ;;
  *) bad "message: $msg" ;; esac
kubectl get events -A --field-selector reason=RolloutHalted -o jsonpath='{range .items[*]}{.involvedObject.kind} {.involvedObject.name} {.type}{"\n"}{end}' >"$T/events"
grep -q "^MachineConfigPool worker Warning$" "$T/events" && ok "a RolloutHalted Warning event about the pool (kubectl get events)" ||
  { bad "events"; cat "$T/events"; }
# the halt holds: a few more passes of the (new) leader move no further node
moved() { local c=0 n; for n in w1 w2 w3; do v2_on $n && c=$((c + 1)); done; echo $c; }
moved_before=$(moved)
sleep 5
moved_after=$(moved)
[ "$moved_after" = "$moved_before" ] && [ "$moved_after" -lt 3 ] &&
  ok "after the failover the halt holds: no further node gets v2 ($moved_after of 3)" ||
  bad "moved on: $moved_before -> $moved_after"
[ "$(cat "$T/max-updating" 2>/dev/null || echo 0)" -le 1 ] &&
  ok "maxConcurrentDisruptions 1 held across the failover (at most $(cat "$T/max-updating" 2>/dev/null || echo 0) updating)" ||
  bad "$(cat "$T/max-updating") nodes updated at once"
expect_rc 0 "mcgit pool resume lifts the halt" -- "$MCGIT" pool resume worker --cluster "kube:$KUBECONFIG"
all_v2_or_failed() { [ "$(moved)" = 3 ]; }
wait_for 60 all_v2_or_failed && ok "after resume every node is given v2" || bad "not resumed"
finish
