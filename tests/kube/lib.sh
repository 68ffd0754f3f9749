# Helpers for tests against the real kube-apiserver. Source after
# tests/integration/lib.sh:   . "$SRC/tests/kube/lib.sh"; kube_up
#
# kube_up: start etcd + kube-apiserver on 127.0.0.1 in $T/kube (exports
# KUBECONFIG, KUBE_DIR, KUBE_SERVER, KUBE_CA) and stop them when the test
# exits. When the server cannot be built or started the test is skipped
# (exit 77, ctest's SKIP) — unless MCGIT_REQUIRE_KUBE=1 or MCGIT_REQUIRE_ALL=1
# (CI), where it fails.
kube_up() {
  local out
  if ! out=$("$SRC/tests/kube/start.sh" "$T/kube" 2>"$T/kube-start.err"); then
    echo "kube-apiserver unavailable: $(tail -3 "$T/kube-start.err" | tr '\n' ' ')"
    "$SRC/tests/kube/stop.sh" "$T/kube" >/dev/null 2>&1 || true
    if [ "${MCGIT_REQUIRE_KUBE:-}" = 1 ] || [ "${MCGIT_REQUIRE_ALL:-}" = 1 ]; then exit 1; fi
    exit 77
  fi
  eval "$out"
  trap '"$SRC/tests/kube/stop.sh" "$T/kube" >/dev/null 2>&1; rm -rf "$T"' EXIT
}
# kube_deploy: install deploy/'s CRDs, namespace and RBAC.
kube_deploy() {
  kubectl apply -f "$SRC/deploy/crds/" >/dev/null
  kubectl apply -f "$SRC/deploy/namespace.yaml" -f "$SRC/deploy/rbac.yaml" >/dev/null
  kubectl wait --for condition=established --timeout=30s \
    crd/machineconfigs.machineconfiguration.mcgit.io \
    crd/machineconfigpools.machineconfiguration.mcgit.io \
    crd/machineconfigurations.machineconfiguration.mcgit.io >/dev/null
  # kubectl 1.20 (Debian's) keeps the API discovery it read before the CRDs
  # existed and answers the first `get mcp` "doesn't have a resource type"
  # (docs/kubernetes.md step 2 refreshes it with kubectl api-resources)
  rm -rf "$HOME/.kube/cache"
}
# debian_kubectl: the path of Debian 12's kubectl (1.20): the installed
# kubernetes-client's, else the one tests/setup.sh unpacked into the kube
# cache when another kubectl is on PATH; nothing when there is neither.
debian_kubectl() {
  local c=${MCGIT_KUBE_CACHE:-/var/cache/mcgit-kube}/debian-kubectl/usr/bin/kubectl
  if dpkg -s kubernetes-client >/dev/null 2>&1; then echo /usr/bin/kubectl
  elif [ -x "$c" ]; then echo "$c"; fi
}
# kube_node NAME [k=v ...]: create a Node object with labels, Ready=True.
kube_node() {
  local name=$1; shift
  local labels="" kv
  for kv in "$@"; do labels="$labels    \"${kv%%=*}\": \"${kv#*=}\"
"; done
  kubectl apply -f - >/dev/null <<NODE
apiVersion: v1
kind: Node
metadata:
  name: $name
  labels:
    kubernetes.io/hostname: "$name"
$labels
NODE
  # the status subresource through a raw request: Debian's kubectl 1.20 has
  # no `kubectl patch --subresource`
  kube_api PATCH "/api/v1/nodes/$name/status" \
    '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"test","lastHeartbeatTime":"2026-01-01T00:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}' >/dev/null
}
# kube_api METHOD PATH [JSON]: a raw admin request (merge-patch for PATCH).
kube_api() {
  local ct=application/json
  [ "$1" = PATCH ] && ct=application/merge-patch+json
  curl -sS --cacert "$KUBE_CA" --cert "$KUBE_DIR/pki/admin.crt" --key "$KUBE_DIR/pki/admin.key" \
    -X "$1" -H "Content-Type: $ct" ${3:+--data "$3"} "$KUBE_SERVER$2"
}
