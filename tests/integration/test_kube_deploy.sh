#!/usr/bin/env bash
# deploy/ against a real kube-apiserver (RBAC on): the CRDs install, the
# MachineConfigPool columns are exactly `mcgit status`'s, describe shows the
# status, the Deployment and DaemonSet pass server-side validation, and the
# RBAC roles allow what the controller and agent do and nothing much else.
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/kube/lib.sh"
kube_up

# docs/kubernetes.md's step 2, run as written from the source tree on this
# fresh apiserver, with Debian 12's kubectl (1.20) when there is one, else
# the kubectl on PATH, in a new HOME (kubectl's discovery cache is there)
python3 - "$SRC/docs/kubernetes.md" >"$T/step2.sh" <<'PY2'
import re, sys
text = open(sys.argv[1]).read()
part = text.split("**Install the CRDs, namespace and RBAC:**", 1)[1]
print(re.search(r"```sh\n(.*?)```", part, re.S).group(1))
PY2
grep -q 'kubectl get mcp' "$T/step2.sh" && ok "kubernetes.md's step 2 ends with kubectl get mcp" || bad "step 2: $(cat "$T/step2.sh")"
KC=$(debian_kubectl)
[ -n "$KC" ] || { skip_part "Debian's kubectl (kubernetes-client) is not here: step 2 runs with $(command -v kubectl) only"; KC=$(command -v kubectl); }
mkdir -p "$T/kc/bin" "$T/kc/home" "$T/kc/stale" "$T/kc/stale2"
ln -s "$KC" "$T/kc/bin/kubectl"
kc() { PATH="$T/kc/bin:$PATH" "$@"; }
# a kubectl that read the API before the CRDs existed (as the step's own apply does)
HOME=$T/kc/stale kc kubectl get namespaces >/dev/null 2>&1
HOME=$T/kc/stale2 kc kubectl get namespaces >/dev/null 2>&1
if (cd "$SRC" && HOME=$T/kc/home kc bash -euo pipefail "$T/step2.sh") >"$T/step2.out" 2>&1; then
  ok "kubernetes.md step 2 runs as written, kubectl get mcp included ($("$KC" version --client 2>/dev/null | grep -o 'GitVersion:"[^"]*"\|v1\.[0-9.]*' | head -1))"
else bad "kubernetes.md step 2 fails as written"; sed 's/^/    /' "$T/step2.out" | tail -5; fi
expect_grep '^machineconfigpools +mcp,mcgitmcp +machineconfiguration.mcgit.io/v1 ' "$T/step2.out" "its api-resources line lists mcp and mcgitmcp"
# the cache the refresh is for: without it, Debian's kubectl does not know mcp
if HOME=$T/kc/stale kc kubectl get mcp >"$T/stale.out" 2>&1; then
  case $KC in /usr/bin/kubectl|*/debian-kubectl/*) bad "a stale discovery cache did not fail kubectl 1.20's get mcp (the docs' reason is wrong)" ;;
    *) echo "# $KC refreshes its discovery cache by itself" ;; esac
else
  expect_grep "doesn't have a resource type \"mcp\"" "$T/stale.out" "without the refresh, kubectl 1.20's get mcp fails as the docs say"
  HOME=$T/kc/stale kc kubectl get mcp >/dev/null 2>&1 && ok "the failed lookup refreshed the cache: the next get mcp works" ||
    bad "kubectl 1.20's get mcp fails again with a stale cache"
  HOME=$T/kc/stale2 kc kubectl get machineconfigpools >/dev/null 2>&1 && ok "while the full name works with a stale cache (as the docs say)" ||
    bad "kubectl get machineconfigpools with a stale cache fails too"
fi
# the kubectl on PATH (Debian's 1.20 on a Debian 12 root) read the API in this
# HOME before the CRDs existed: it gets mcp after the refresh the docs give
kubectl api-resources >/dev/null 2>&1
kubectl get mcp >"$T/path-mcp.out" 2>&1 && ok "the kubectl on PATH gets mcp too, after the docs' refresh" ||
  { bad "kubectl on PATH: get mcp fails"; sed 's/^/    /' "$T/path-mcp.out" | tail -3; }
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
# the names that stay unambiguous beside MCO's own mc and mcp
kubectl get mcgitmc -o name >"$T/out3" 2>&1 && kubectl get mc -o name >"$T/out4" && cmp -s "$T/out3" "$T/out4" &&
  ok "kubectl get mcgitmc: the same list" || bad "kubectl get mcgitmc: $(head -3 "$T/out3")"
kubectl get mcgitmcp >/dev/null && ok "kubectl get mcgitmcp works" || bad "kubectl get mcgitmcp"
kubectl get mcgit -o name >"$T/cat" 2>&1
grep -q '^machineconfig.machineconfiguration.mcgit.io/rendered-worker-' "$T/cat" &&
  grep -q '^machineconfigpool.machineconfiguration.mcgit.io/worker$' "$T/cat" &&
  ok "kubectl get mcgit (the category) lists mcgit's MachineConfigs and pools" || bad "category: $(head -3 "$T/cat")"

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
