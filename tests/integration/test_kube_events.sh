#!/usr/bin/env bash
# test_kube_events.sh — Kubernetes Events for pool and node transitions, as
# MCO records them, on a real kube-apiserver with RBAC on: the controller and
# the agents run under their own service accounts (deploy/rbac.yaml must let
# them create events in namespace default, where events about cluster-scoped
# objects live), and real kubectl reads the events back, with `kubectl
# describe` (which matches the involved object's uid).
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/kube/lib.sh"
need kubectl jq
kube_up
kube_deploy
kube_node w1 node-role.kubernetes.io/worker=
kube_node w2 node-role.kubernetes.io/worker=

R=$T/repo
fixture_signed_repo "$R"
scommit "$R" op "initial"

PIDS=""
cleanup() {
  # shellcheck disable=SC2086
  kill $PIDS 2>/dev/null || true
  wait 2>/dev/null || true
  if [ "$FAIL" != 0 ]; then for f in "$T"/*.log; do echo "== $f"; tail -n 15 "$f"; done; fi
  "$SRC/tests/kube/stop.sh" "$KUBE_DIR" >/dev/null 2>&1
  rm -rf "$T"
}
trap cleanup EXIT
"$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "kube:$KUBE_DIR/controller.kubeconfig" \
  --interval 1 >"$T/ctl.log" 2>&1 &
PIDS="$PIDS $!"
for n in w1 w2; do
  mkdir -p "$T/roots/$n"
  "$MCGIT" agent --node $n --cluster "kube:$KUBE_DIR/agent.kubeconfig" --root "$T/roots/$n" \
    --interval 1 --reboot-command true >"$T/agent-$n.log" 2>&1 &
  PIDS="$PIDS $!"
done
target() { kubectl get mcp worker -o jsonpath='{.spec.configuration.name}' 2>/dev/null || true; }
updated() { [ "$(kubectl get mcp worker -o jsonpath='{.status.updatedMachineCount}' 2>/dev/null)" = 2 ] &&
  [ "$(kubectl get mcp worker -o jsonpath='{.status.configuration.name}' 2>/dev/null)" = "$(target)" ]; }
wait_updated() { local i=0; until [ -n "$(target)" ] && updated; do i=$((i + 1)); [ $i -gt 120 ] && return 1; sleep 0.5; done; }
wait_updated && ok "first rollout done" || bad "first rollout did not finish"
W1=$(target)

# a file change: the default policy reboots, so the agents cordon and drain
write_mc "$R" 20-worker-motd worker /etc/motd hello
scommit "$R" op "motd"
i=0; until [ "$(target)" != "$W1" ]; do i=$((i + 1)); [ $i -gt 60 ] && break; sleep 0.5; done
W2=$(target)
wait_updated && ok "second rollout done ($W2)" || bad "second rollout did not finish"
sleep 2 # the last events of the last agent

# events, as the admin reads them
events() { # KIND NAME: "TYPE REASON MESSAGE" lines
  kubectl get events -n default -o json |
    jq -r --arg k "$1" --arg n "$2" '.items[] | select(.involvedObject.kind == $k and .involvedObject.name == $n) | "\(.type) \(.reason) \(.message)"'
}
events MachineConfigPool worker >"$T/pool-events"
events Node w1 >"$T/w1-events"
cat "$T/pool-events" "$T/w1-events" | sed 's/^/    # /'
expect_grep "^Normal RenderedConfigGenerated $W2 successfully generated" "$T/pool-events" "pool: RenderedConfigGenerated names the new config"
expect_grep "^Normal SetDesiredConfig (Targeted node w[12] to config $W2|Set target for 2 nodes to config $W2)" "$T/pool-events" "pool: SetDesiredConfig names the node and config"
expect_grep "^Normal Updated All nodes are updated with MachineConfig $W2" "$T/pool-events" "pool: Updated when the rollout is over"
expect_grep "^Normal Cordon Cordoned node to apply update" "$T/w1-events" "node: Cordon"
expect_grep "^Normal Drain Draining node to update config" "$T/w1-events" "node: Drain"
expect_grep "^Normal Reboot Node will reboot into config $W2" "$T/w1-events" "node: Reboot"
expect_grep "^Normal Uncordon Update completed for config $W2 and node has been uncordoned" "$T/w1-events" "node: Uncordon"
expect_grep "^Normal NodeDone Setting node w1, currentConfig $W2 to Done" "$T/w1-events" "node: NodeDone"
src=$(kubectl get events -n default -o json | jq -r '[.items[] | select(.involvedObject.kind == "Node") | .source.component] | unique | join(",")')
[ "$src" = mcgit-agent ] && ok "node events come from mcgit-agent" || bad "node event sources: $src"
src=$(kubectl get events -n default -o json | jq -r '[.items[] | select(.involvedObject.kind == "MachineConfigPool") | .source.component] | unique | join(",")')
[ "$src" = mcgit-controller ] && ok "pool events come from mcgit-controller" || bad "pool event sources: $src"

# kubectl describe matches by uid: the events carry the objects' uids
kubectl describe node w1 >"$T/describe-node"
expect_grep "NodeDone +.*Setting node w1, currentConfig $W2 to Done" "$T/describe-node" "kubectl describe node lists the node's events"
kubectl describe mcp worker >"$T/describe-mcp"
expect_grep "SetDesiredConfig" "$T/describe-mcp" "kubectl describe mcp lists the pool's events"

# drift: a Warning on the node
echo tampered >"$T/roots/w2/etc/motd"
i=0
until events Node w2 | grep -q '^Warning ConfigDriftDetected drift: '; do i=$((i + 1)); [ $i -gt 40 ] && break; sleep 0.5; done
events Node w2 >"$T/w2-events"
expect_grep "^Warning ConfigDriftDetected drift: .*/etc/motd" "$T/w2-events" "node: drift is a Warning naming the path"
i=0
until events MachineConfigPool worker | grep -q '^Warning Degraded'; do i=$((i + 1)); [ $i -gt 40 ] && break; sleep 0.5; done
events MachineConfigPool worker >"$T/pool-events"
expect_grep "^Warning Degraded .*w2" "$T/pool-events" "pool: Degraded is a Warning naming the node"

# the RBAC grants events in namespace default only (where the API server
# keeps events about cluster-scoped objects)
for who in agent controller; do
  if kubectl --kubeconfig "$KUBE_DIR/$who.kubeconfig" auth can-i create events -n kube-system 2>/dev/null | grep -q yes; then
    bad "the $who may create events in kube-system"
  else ok "$who: no events outside namespace default"; fi
  kubectl --kubeconfig "$KUBE_DIR/$who.kubeconfig" auth can-i create events -n default 2>/dev/null | grep -q yes \
    && ok "$who: may create events in default" || bad "$who: may not create events"
done
if grep -l 'Sanitizer' "$T"/*.log 2>/dev/null; then bad "sanitizer reports"; else ok "no sanitizer reports"; fi
finish
