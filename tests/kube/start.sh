#!/bin/sh
# Start a real etcd and kube-apiserver on 127.0.0.1 for the tests.
#
#   eval "$(tests/kube/start.sh DIR)"     # DIR: state (certs, etcd data, logs)
#   ... KUBECONFIG=$DIR/admin.kubeconfig kubectl get ns ...
#   tests/kube/stop.sh DIR
#
# Prints shell assignments: KUBE_DIR, KUBECONFIG (admin, system:masters),
# KUBE_SERVER, KUBE_CA. Also writes, for RBAC tests, kubeconfigs that
# authenticate as the deploy/ service accounts through static tokens:
# controller.kubeconfig (system:serviceaccount:mcgit:mcgit-controller),
# agent.kubeconfig (system:serviceaccount:mcgit:mcgit-agent) and
# nobody.kubeconfig (an authenticated user with no roles).
# Authorization is RBAC, so deploy/'s roles are what those users may do.
# Exit 1 with a reason if the apiserver binary cannot be built or the
# servers do not come up.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
dir=${1:?usage: start.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

apiserver=${KUBE_APISERVER:-}
if [ -z "$apiserver" ]; then
    apiserver=$("$here/build-apiserver.sh") || { echo "start.sh: cannot build kube-apiserver" >&2; exit 1; }
fi
etcd=${ETCD:-$(command -v etcd || echo /usr/bin/etcd)}
[ -x "$etcd" ] || { echo "start.sh: etcd not found (apt-get install etcd-server)" >&2; exit 1; }

freeport() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
etcd_port=$(freeport); peer_port=$(freeport); api_port=$(freeport)

# Certificates: a CA, the server's (127.0.0.1 / localhost), an admin client.
pki="$dir/pki"
mkdir -p "$pki"
(
    cd "$pki"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -keyout ca.key -out ca.crt -subj "/CN=mcgit-test-ca" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key \
        -out server.csr -subj "/CN=kube-apiserver" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n' > server.ext
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
        -extfile server.ext -out server.crt 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout admin.key \
        -out admin.csr -subj "/O=system:masters/CN=admin" 2>/dev/null
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
        -out admin.crt 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
)
tok() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
ctl_token=$(tok); agent_token=$(tok); nobody_token=$(tok)
cat > "$pki/tokens.csv" <<TOK
$ctl_token,system:serviceaccount:mcgit:mcgit-controller,sa-ctl,"system:serviceaccounts,system:serviceaccounts:mcgit,system:authenticated"
$agent_token,system:serviceaccount:mcgit:mcgit-agent,sa-agent,"system:serviceaccounts,system:serviceaccounts:mcgit,system:authenticated"
$nobody_token,nobody,nobody,"system:authenticated"
TOK

# start_etcd: etcd on fresh ports, serving (its /health answers) before the
# API server dials it; a port another test took meanwhile (freeport's race),
# or an etcd that died, is tried again on new ports, three times in all
start_etcd() {
    local try j
    for try in 1 2 3; do
        [ "$try" = 1 ] || { etcd_port=$(freeport); peer_port=$(freeport); rm -rf "$dir/etcd"; }
        "$etcd" --name default --data-dir "$dir/etcd" \
            --listen-client-urls "http://127.0.0.1:$etcd_port" \
            --advertise-client-urls "http://127.0.0.1:$etcd_port" \
            --listen-peer-urls "http://127.0.0.1:$peer_port" \
            --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
            --initial-cluster "default=http://127.0.0.1:$peer_port" \
            > "$dir/etcd.log" 2>&1 &
        echo $! > "$dir/etcd.pid"
        for j in $(seq 120); do
            curl -fsS "http://127.0.0.1:$etcd_port/health" >/dev/null 2>&1 && return 0
            kill -0 "$(cat "$dir/etcd.pid")" 2>/dev/null || break
            sleep 0.5
        done
        kill "$(cat "$dir/etcd.pid")" 2>/dev/null; wait "$(cat "$dir/etcd.pid")" 2>/dev/null || true
    done
    echo "start.sh: etcd did not start; last log lines:" >&2
    tail -5 "$dir/etcd.log" >&2
    exit 1
}
start_etcd

# start_apiserver: the API server on api_port (a new port on a retry)
start_apiserver() {
"$apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
    --tls-cert-file "$pki/server.crt" --tls-private-key-file "$pki/server.key" \
    --client-ca-file "$pki/ca.crt" --token-auth-file "$pki/tokens.csv" \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc \
    --service-cluster-ip-range 10.0.0.0/24 --authorization-mode RBAC \
    --disable-admission-plugins ServiceAccount --allow-privileged=true --cert-dir "$dir/cert" \
    > "$dir/apiserver.log" 2>&1 &
echo $! > "$dir/apiserver.pid"
}

server="https://127.0.0.1:$api_port"
kc() { # name user-stanza
    cat > "$dir/$1.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: $server
    certificate-authority: $pki/ca.crt
users:
- name: $1
  user:
$2
contexts:
- name: $1
  context:
    cluster: test
    user: $1
current-context: $1
KC
}
kc admin "    client-certificate: $pki/admin.crt
    client-key: $pki/admin.key"
kc controller "    token: $ctl_token"
kc agent "    token: $agent_token"
kc nobody "    token: $nobody_token"

# ready: the API server answers /readyz (1), or died or never did (0)
ready() {
    local i=0
    until curl -fsS --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
            "$server/readyz" >/dev/null 2>&1; do
        i=$((i + 1))
        { [ $i -gt 120 ] || ! kill -0 "$(cat "$dir/apiserver.pid")" 2>/dev/null; } && return 1
        sleep 0.5
    done
}
# an API server that exits at once (its port taken meanwhile) is started
# again on another port, three times in all
for try in 1 2 3; do
    start_apiserver
    ready && break
    if [ "$try" = 3 ] || kill -0 "$(cat "$dir/apiserver.pid")" 2>/dev/null; then
        echo "start.sh: kube-apiserver did not become ready; last log lines:" >&2
        tail -5 "$dir/apiserver.log" >&2
        "$here/stop.sh" "$dir" >/dev/null 2>&1 || true
        exit 1
    fi
    api_port=$(freeport)
    server="https://127.0.0.1:$api_port"
    for u in admin controller agent nobody; do
        sed -i "s|server: https://127.0.0.1:[0-9]*|server: $server|" "$dir/$u.kubeconfig"
    done
done
# The default namespace exists once the bootstrap controllers ran.
i=0
until KUBECONFIG="$dir/admin.kubeconfig" kubectl get namespace default >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 60 ] && break; sleep 0.5
done
cat <<ENV
KUBE_DIR='$dir'
KUBECONFIG='$dir/admin.kubeconfig'
KUBE_SERVER='$server'
KUBE_CA='$pki/ca.crt'
export KUBE_DIR KUBECONFIG KUBE_SERVER KUBE_CA
ENV
