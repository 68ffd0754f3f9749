#!/usr/bin/env bash
# deploy/ against a real kube-apiserver (RBAC on): the CRDs install, the
# MachineConfigPool columns are exactly `mcgit status`'s, describe shows the
# status, the Deployment and DaemonSet pass server-side validation, and the
# RBAC roles allow what the controller and agent do and nothing much else.
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/kube/lib.sh"
kube_up
kube_deploy
ok "CRDs, namespace and RBAC apply"

# The Deployment and DaemonSet as the server validates them (no kubelet runs them).
if kubectl apply -f "$SRC/deploy/controller.yaml" -f "$SRC/deploy/agent.yaml" >"$T/out" 2>&1; then
  ok "controller Deployment and agent DaemonSet accepted"
else bad "Deployment/DaemonSet refused"; cat "$T/out"; fi
[ "$(kubectl -n mcgit get deployment mcgit-controller -o jsonpath='{.spec.replicas}')" = 2 ] \
  && ok "controller runs 2 replicas" || bad "controller replicas"
kubectl -n mcgit get daemonset mcgit-agent -o jsonpath='{.spec.template.spec.containers[0].args}' >"$T/out"
expect_grep '--root.*/rootfs.*--live' "$T/out" "agent manages the host root mounted at /rootfs"

# A pool with status written through the status subresource.
kubectl apply -f - >/dev/null <<'MCP'
apiVersion: machineconfiguration.mcgit.io/v1
kind: MachineConfigPool
metadata: {name: worker}
spec:
  machineConfigSelector: {matchLabels: {machineconfiguration.mcgit.io/role: worker}}
  nodeSelector: {matchLabels: {node-role.kubernetes.io/worker: ""}}
  maxUnavailable: 10%
  paused: false
MCP
status='{"status":{"configuration":{"name":"rendered-worker-0123456789abcdef0123456789abcdef"},"machineCount":3,"readyMachineCount":2,"updatedMachineCount":1,"degradedMachineCount":1,"unavailableMachineCount":1,"conditions":[{"type":"Updated","status":"False","reason":"","message":"","lastTransitionTime":"2026-11-21T09:00:00Z"},{"type":"Updating","status":"True","reason":"","message":"1 of 3 nodes updated","lastTransitionTime":"2026-11-21T09:00:00Z"},{"type":"Degraded","status":"True","reason":"NodeDegraded","message":"node w3: drift","lastTransitionTime":"2026-11-21T09:00:00Z"}]}}'
kube_api PATCH /apis/machineconfiguration.mcgit.io/v1/machineconfigpools/worker/status "$status" >"$T/out"
expect_grep '"updatedMachineCount": ?1' "$T/out" "status subresource accepts mcgit's pool status"
kube_api PATCH /apis/machineconfiguration.mcgit.io/v1/machineconfigpools/worker '{"status":{"machineCount":99}}' >/dev/null
[ "$(kubectl get mcp worker -o jsonpath='{.status.machineCount}')" = 3 ] \
  && ok "the main resource cannot write status" || bad "status written through the main resource"

kubectl get machineconfigpool >"$T/pools"
head -1 "$T/pools" | tr -s ' ' >"$T/hdr"
[ "$(cat "$T/hdr")" = "NAME CONFIG UPDATED UPDATING DEGRADED MACHINECOUNT READYMACHINECOUNT UPDATEDMACHINECOUNT DEGRADEDMACHINECOUNT AGE" ] \
  && ok "kubectl get machineconfigpool prints mcgit status's columns" || { bad "columns: $(cat "$T/hdr")"; }
expect_grep '^worker +rendered-worker-0123456789abcdef0123456789abcdef +False +True +True +3 +2 +1 +1 +[0-9]+s' "$T/pools" "pool row shows config, conditions and counts"
kubectl get mcp >"$T/out2"
cmp -s <(cut -c1-150 "$T/pools") <(cut -c1-150 "$T/out2") && ok "shortName mcp" || bad "kubectl get mcp differs"
kubectl describe mcp worker >"$T/desc"
expect_grep 'Message: +node w3: drift' "$T/desc" "kubectl describe mcp shows condition messages"
expect_grep 'Degraded Machine Count: +1' "$T/desc" "kubectl describe mcp shows counts"

kubectl apply -f - >/dev/null <<'MC'
apiVersion: machineconfiguration.mcgit.io/v1
kind: MachineConfig
metadata: {name: rendered-worker-0123456789abcdef0123456789abcdef}
spec: {config: {ignition: {version: 3.4.0}}}
MC
kubectl get mc >"$T/out"
expect_grep '^rendered-worker-0123456789abcdef0123456789abcdef ' "$T/out" "kubectl get mc lists rendered configs"

# RBAC: what each service account may and may not do.
can() { # KUBECONFIG-NAME VERB RESOURCE [NS] -> yes/no
  local res=$3 sub=()
  case $res in */*) sub=(--subresource "${res#*/}"); res=${res%%/*} ;; esac
  KUBECONFIG="$KUBE_DIR/$1.kubeconfig" kubectl auth can-i "$2" "$res" "${sub[@]}" ${4:+-n "$4"} 2>/dev/null || true
}
check() { # who verb resource ns want
  local got; got=$(can "$1" "$2" "$3" "$4")
  [ "$got" = "$5" ] && ok "$1 $2 $3${4:+ in $4}: $5" || bad "$1 $2 $3${4:+ in $4}: got '$got', want $5"
}
check controller patch nodes "" yes
check controller delete nodes "" no
check controller update machineconfigpools.machineconfiguration.mcgit.io/status "" yes
check controller delete machineconfigs.machineconfiguration.mcgit.io "" yes
check controller update leases.coordination.k8s.io mcgit yes
check controller update leases.coordination.k8s.io kube-system no
check controller create pods/eviction "" no
check controller get secrets mcgit no
check agent patch nodes "" yes
check agent create pods/eviction "" yes
check agent create machineconfigs.machineconfiguration.mcgit.io "" no
check agent update machineconfigpools.machineconfiguration.mcgit.io/status "" no
check agent get secrets "" no
check nobody list nodes "" no
# And through the API, a refusal names the verb and resource.
KUBECONFIG="$KUBE_DIR/agent.kubeconfig" kubectl delete mcp worker >"$T/out" 2>&1 || true
expect_grep 'forbidden.*cannot delete resource "machineconfigpools"' "$T/out" "agent cannot delete pools"
finish
