#!/usr/bin/env bash
# A real Kubernetes cluster for mcgit's tests, from Debian's packages only and
# without any registry (docs/development.md, "The real-cluster test bed").
# Run as root.
#
#   tests/kube/cluster.sh up DIR NODE...
#       etcd, kube-apiserver, kube-controller-manager and kube-scheduler on
#       127.0.0.1 (built from Debian's kubernetes source by
#       build-apiserver.sh, cached), a git daemon on 127.0.0.1 serving DIR/git,
#       and one Debian 12 guest per NODE (tests/vm/vm.sh, under QEMU) running
#       Debian's containerd and runc and a kubelet that registers Node NODE
#       (tests/kube/node-setup.sh); mcgit's image (deploy/image/build-image.sh,
#       from this tree's .deb) and the sandbox image (pause.c) imported into
#       each guest's containerd. Each guest's only network is QEMU's user
#       network with restrict=on: it reaches the host's apiserver
#       (10.0.2.100) and git daemon (10.0.2.101:9418), nothing else. Returns
#       when every node is Ready, printing `export KUBECONFIG=PATH`,
#       `image: REF` and `push: URL` (a bare repository on this host, which
#       the controller pod fetches from as git://10.0.2.101/config.git).
#   tests/kube/cluster.sh deploy DIR --trust F
#       deploy/ applied as docs/kubernetes.md tells a user, with trust root F
#       and that repository (its hooks installed with F); nodes labelled
#       workers.
#   tests/kube/cluster.sh exec NODE -- CMD...    CMD as root on NODE's host
#   tests/kube/cluster.sh down DIR               guests and servers stopped
#   tests/kube/cluster.sh load DIR               mcgit's image rebuilt from this
#       tree and imported into every node (pods created after use it)
#
# MCGIT_VM_MEM: each guest's memory in MiB (default 1536). Guests run under
# TCG here (one vCPU each); `up` reports how long it took. Caches:
# MCGIT_CLUSTER_CACHE (default /var/cache/mcgit-cluster: the .deb and the
# images, keyed by their inputs), the guests' image in
# /var/cache/mcgit-vm-kube, the Kubernetes binaries in /var/cache/mcgit-kube.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
VM=$src/tests/vm/vm.sh
cache=${MCGIT_CLUSTER_CACHE:-/var/cache/mcgit-cluster}
export MCGIT_VM_RUN=${MCGIT_VM_RUN:-/var/tmp/mcgit-cluster}
export MCGIT_VM_CACHE=${MCGIT_CLUSTER_VM_CACHE:-/var/cache/mcgit-vm-kube}
export MCGIT_VM_EXTRA_PKGS="containerd runc containernetworking-plugins iptables iproute2 ca-certificates conntrack"
export MCGIT_VM_MEM=${MCGIT_VM_MEM:-1536}
IMG=$MCGIT_VM_CACHE/image
log() { printf 'cluster: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# tree_key: the inputs of the .deb and the image (sources, build, packaging;
# not the manifests, which `deploy` applies as they are)
tree_key() {
  (cd "$src" && find src CMakeLists.txt deploy/debian deploy/systemd deploy/install deploy/image \
    deploy/Containerfile -type f -print0 | sort -z | xargs -0 sha256sum) |
    sha256sum | cut -c1-16
}

# the .deb of this tree, cached by tree_key
deb_path() {
  local key d
  key=$(tree_key)
  d=$cache/deb-$key
  if ! ls "$d"/mcgit_*.deb >/dev/null 2>&1; then
    find "$cache" -maxdepth 1 -name 'deb-*' -exec rm -rf {} +
    log "building the .deb (deploy/debian/build-deb.sh)"
    MCGIT_DEB_NO_LINTIAN=1 "$src/deploy/debian/build-deb.sh" "$d.part" >"$cache/deb.log" 2>&1 ||
      { tail -20 "$cache/deb.log" >&2; die "build-deb.sh failed"; }
    mv "$d.part" "$d"
  fi
  ls "$d"/mcgit_*.deb | head -1
}

# pause_image OUT: mcgit.test/pause:1, pause.c built static, alone in its image
pause_image() {
  local out=$1 w
  w=$(mktemp -d /var/tmp/mcgit-pause.XXXXXX)
  mkdir -p "$w/root"
  gcc -static -O2 -Wall -Wextra -Werror -o "$w/root/pause" "$here/pause.c"
  umoci init --layout "$w/oci"
  umoci new --image "$w/oci:1"
  umoci unpack --image "$w/oci:1" "$w/b" >/dev/null
  cp "$w/root/pause" "$w/b/rootfs/pause"
  umoci repack --image "$w/oci:1" "$w/b"
  umoci config --image "$w/oci:1" --os linux --architecture amd64 --config.entrypoint /pause
  umoci gc --layout "$w/oci"
  python3 - "$w/oci/index.json" mcgit.test/pause:1 <<'PY'
import json, sys
p, ref = sys.argv[1:]
idx = json.load(open(p))
for m in idx["manifests"]:
    m.setdefault("annotations", {}).update({"org.opencontainers.image.ref.name": ref, "io.containerd.image.name": ref})
json.dump(idx, open(p, "w"))
PY
  tar -C "$w/oci" -cf "$out" .
  rm -rf "$w"
}

# pki DIR NODE...: CA, the apiserver's certificate (127.0.0.1, the guests'
# 10.0.2.100, the Service IP 10.0.0.1), admin (system:masters), one kubelet
# client certificate per node (system:node:NODE), the service-account keys
pki() {
  local p=$1 n
  shift
  mkdir -p "$p"
  (
    cd "$p"
    cert() { # NAME SUBJECT [EXT]
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" \
        -out "$1.csr" -subj "$2" 2>/dev/null
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 7 \
        ${3:+-extfile "$3"} -out "$1.crt" 2>/dev/null
      rm -f "$1.csr"
    }
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 7 \
      -keyout ca.key -out ca.crt -subj "/CN=mcgit-cluster-ca" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,IP:10.0.2.100,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\n' >server.ext
    cert server /CN=kube-apiserver server.ext
    cert admin "/O=system:masters/CN=admin"
    for n in "$@"; do cert "node-$n" "/O=system:nodes/CN=system:node:$n"; done
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  )
}

kubeconfig() { # OUT SERVER PKI
  cat >"$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: bed
  cluster: {server: "$2", certificate-authority: $3/ca.crt}
users:
- name: admin
  user: {client-certificate: $3/admin.crt, client-key: $3/admin.key}
contexts:
- name: bed
  context: {cluster: bed, user: admin}
current-context: bed
KC
}

bg() { # NAME CMD...: started in the background, its pid in DIR/NAME.pid
  local name=$1
  shift
  setsid "$@" >"$D/$name.log" 2>&1 </dev/null &
  echo $! >"$D/$name.pid"
}

control_plane() {
  local bins=("$@") etcd_port peer_port p=$D/pki i
  etcd_port=$(freeport); peer_port=$(freeport)
  API_PORT=$(freeport)
  bg etcd etcd --name default --data-dir "$D/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "default=http://127.0.0.1:$peer_port"
  bg apiserver "${bins[0]}" --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 10.0.2.100 --secure-port "$API_PORT" \
    --tls-cert-file "$p/server.crt" --tls-private-key-file "$p/server.key" --client-ca-file "$p/ca.crt" \
    --service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
    --service-account-issuer https://kubernetes.default.svc --service-cluster-ip-range 10.0.0.0/24 \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --allow-privileged=true --cert-dir "$D/cert"
  kubeconfig "$D/admin.kubeconfig" "https://127.0.0.1:$API_PORT" "$p"
  export KUBECONFIG=$D/admin.kubeconfig
  for ((i = 0; i < 240; i++)); do
    kubectl get --raw /readyz >/dev/null 2>&1 && break
    kill -0 "$(cat "$D/apiserver.pid")" 2>/dev/null || { tail -5 "$D/apiserver.log" >&2; die "kube-apiserver exited"; }
    sleep 0.5
  done
  kubectl get --raw /readyz >/dev/null 2>&1 || die "kube-apiserver not ready"
  bg controller-manager "${bins[1]}" --kubeconfig "$D/admin.kubeconfig" \
    --authentication-kubeconfig "$D/admin.kubeconfig" --authorization-kubeconfig "$D/admin.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$(freeport)" --port 0 --leader-elect=false \
    --use-service-account-credentials --service-account-private-key-file "$p/sa.key" \
    --root-ca-file "$p/ca.crt" --cluster-signing-cert-file "$p/ca.crt" --cluster-signing-key-file "$p/ca.key"
  bg scheduler "${bins[2]}" --kubeconfig "$D/admin.kubeconfig" \
    --authentication-kubeconfig "$D/admin.kubeconfig" --authorization-kubeconfig "$D/admin.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$(freeport)" --port 0 --leader-elect=false
  echo "$API_PORT" >"$D/apiport"
}

git_server() {
  GIT_PORT=$(freeport)
  mkdir -p "$D/git"
  git init -q --bare -b main "$D/git/config.git"
  touch "$D/git/config.git/git-daemon-export-ok"
  bg git-daemon git daemon --reuseaddr --listen=127.0.0.1 --port="$GIT_PORT" --base-path="$D/git" "$D/git"
  echo "$GIT_PORT" >"$D/gitport"
}

# node_up NODE INDEX: boot the guest, make it a node (node-setup.sh)
node_up() {
  local n=$1 i=$2
  "$VM" start "$IMG" "$n" --share "$D/share" --fwd "10.0.2.100:$API_PORT=$API_PORT" \
    --fwd "10.0.2.101:9418=$GIT_PORT" >"$D/vm-$n.log" 2>&1 || { tail -5 "$D/vm-$n.log" >&2; return 1; }
  "$VM" exec "$n" -t 900 -- sh -c 'mkdir -p /run/mcgit-share && { mountpoint -q /run/mcgit-share ||
      mount -t virtiofs mcgitshare /run/mcgit-share; } && sh /run/mcgit-share/node-setup.sh "$@"' \
    sh "$n" "$i" "$API_PORT" >>"$D/vm-$n.log" 2>&1 || { tail -5 "$D/vm-$n.log" >&2; return 1; }
}

# mcgit_image DEB: mcgit's OCI archive of this tree in the cache (build-image.sh)
mcgit_image() {
  local key
  key=$(tree_key)
  if [ ! -s "$cache/mcgit-$key.tar" ]; then
    find "$cache" -maxdepth 1 -name 'mcgit-*.tar' -delete
    "$src/deploy/image/build-image.sh" "$cache/mcgit-$key.tar" --deb "$1" >"$D/build-image.log" 2>&1 ||
      { tail -10 "$D/build-image.log" >&2; die "build-image.sh failed"; }
  fi
}

# load DIR: mcgit's image rebuilt from this tree and imported into every node
# (the pods pick it up when they are next created)
cmd_load() {
  D=${1:?usage: cluster.sh load DIR}
  D=$(cd "$D" && pwd)
  local n
  mcgit_image "$(deb_path)"
  cp "$cache/mcgit-$(tree_key).tar" "$D/share/images/mcgit.tar"
  while read -r n; do
    "$VM" exec "$n" -t 600 -- sh -c 'mkdir -p /run/mcgit-share && { mountpoint -q /run/mcgit-share ||
      mount -t virtiofs mcgitshare /run/mcgit-share; } && ctr -n k8s.io images import /run/mcgit-share/images/mcgit.tar' >&2 ||
      die "$n: import failed"
  done <"$D/nodes"
}

cmd_up() {
  D=${1:?usage: cluster.sh up DIR NODE...}
  shift
  [ $# -gt 0 ] || die "usage: cluster.sh up DIR NODE..."
  [ "$(id -u)" = 0 ] || die "must run as root (QEMU, debootstrap, chroot)"
  local t0 bins deb key n i pids=() rc=0
  t0=$(date +%s)
  mkdir -p "$D" "$cache"
  D=$(cd "$D" && pwd)
  [ ! -s "$D/nodes" ] || die "$D holds a cluster already (cluster.sh down $D)"
  mapfile -t bins < <("$here/build-apiserver.sh" kube-apiserver kube-controller-manager kube-scheduler kubelet)
  [ "${#bins[@]}" = 4 ] || die "could not build the Kubernetes binaries"
  deb=$(deb_path)
  MCGIT_VM_DEB=$deb "$VM" image "$IMG" >"$D/image.log" 2>&1 || { tail -10 "$D/image.log" >&2; die "vm.sh image failed"; }
  mcgit_image "$deb"
  key=$(sha256sum <"$here/pause.c" | cut -c1-16)
  [ -s "$cache/pause-$key.tar" ] || pause_image "$cache/pause-$key.tar"
  mkdir -p "$D/share/images" "$D/share/pki"
  cp "${bins[3]}" "$D/share/kubelet"
  cp "$here/node-setup.sh" "$D/share/"
  cp "$cache/mcgit-$(tree_key).tar" "$D/share/images/mcgit.tar"
  cp "$cache/pause-$key.tar" "$D/share/images/pause.tar"
  pki "$D/pki" "$@"
  cp "$D/pki/ca.crt" "$D/share/pki/"
  for n in "$@"; do cp "$D/pki/node-$n.crt" "$D/pki/node-$n.key" "$D/share/pki/"; done
  log "images and binaries ready in $(($(date +%s) - t0)) s"
  control_plane "${bins[@]}"
  git_server
  printf '%s\n' "$@" >"$D/nodes"
  local tb
  tb=$(date +%s)
  i=0
  for n in "$@"; do
    i=$((i + 1))
    node_up "$n" "$i" &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || rc=1; done
  [ "$rc" = 0 ] || die "a node did not come up (its log: $D/vm-NODE.log)"
  local end=$(($(date +%s) + 900))
  for n in "$@"; do
    # registered first (kubectl wait fails at once on a missing object)
    until kubectl get node "$n" >/dev/null 2>&1 || [ "$(date +%s)" -gt "$end" ]; do sleep 2; done
    kubectl wait --for condition=Ready --timeout=$((end - $(date +%s)))s "node/$n" >/dev/null 2>&1 ||
      die "node $n not Ready ($(kubectl get node "$n" --no-headers 2>&1))"
  done
  log "nodes booted and Ready in $(($(date +%s) - tb)) s; up in $(($(date +%s) - t0)) s"
  echo "export KUBECONFIG=$D/admin.kubeconfig"
  echo "image: docker.io/library/mcgit:latest"
  echo "push: $D/git/config.git"
}

cmd_deploy() {
  D=${1:?usage: cluster.sh deploy DIR --trust F}
  D=$(cd "$D" && pwd)
  [ "${2:-}" = --trust ] && [ -f "${3:-}" ] || die "usage: cluster.sh deploy DIR --trust F"
  local trust
  trust=$(readlink -f "$3")
  export KUBECONFIG=$D/admin.kubeconfig
  command -v mcgit >/dev/null || die "mcgit not on PATH (the hooks of $D/git/config.git run it)"
  mcgit hook install --repo "$D/git/config.git" --trust "$trust" >&2
  (
    cd "$src"
    # docs/kubernetes.md, "Install on Kubernetes", steps 2 to 5 (step 1, the
    # image, is `up`'s: loaded into every node's containerd)
    kubectl apply -f deploy/crds/ -f deploy/namespace.yaml -f deploy/rbac.yaml
    kubectl wait --for condition=established --timeout=60s \
      crd/machineconfigs.machineconfiguration.mcgit.io \
      crd/machineconfigpools.machineconfiguration.mcgit.io \
      crd/machineconfigurations.machineconfiguration.mcgit.io
    w=$(mktemp -d)
    cp "$trust" "$w/allowed_signers"
    cd "$w"
    : >>revoked
    kubectl -n mcgit create configmap mcgit-trust --from-file=allowed_signers --from-file=revoked
    cd "$src"
    rm -rf "$w"
    kubectl apply -f deploy/controller.yaml -f deploy/agent.yaml
    kubectl -n mcgit set env deployment/mcgit-controller MCGIT_REPO_URL=git://10.0.2.101/config.git
    while read -r n; do kubectl label node "$n" node-role.kubernetes.io/worker= --overwrite; done <"$D/nodes"
  ) >&2
}

cmd_exec() {
  local n=${1:?usage: cluster.sh exec NODE -- CMD...}
  shift
  [ "${1:-}" = -- ] && shift
  exec "$VM" exec "$n" -- "$@"
}

cmd_down() {
  D=${1:?usage: cluster.sh down DIR}
  local n p
  if [ -f "$D/nodes" ]; then
    while read -r n; do "$VM" cut "$n" >/dev/null 2>&1 || true; "$VM" stop "$n" >/dev/null 2>&1 || true; done <"$D/nodes"
  fi
  local pid i
  for p in scheduler controller-manager apiserver git-daemon etcd; do
    [ -f "$D/$p.pid" ] || continue
    pid=$(cat "$D/$p.pid")
    kill "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do  # gone, or a zombie no one reaps
      kill -0 "$pid" 2>/dev/null && [ "$(cut -d" " -f3 "/proc/$pid/stat" 2>/dev/null)" != Z ] || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$D/$p.pid"
  done
  rm -f "$D/nodes"
}

case ${1:-} in
  up) shift; cmd_up "$@" ;;
  deploy) shift; cmd_deploy "$@" ;;
  exec) shift; cmd_exec "$@" ;;
  down) shift; cmd_down "$@" ;;
  load) shift; cmd_load "$@" ;;
  *) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
