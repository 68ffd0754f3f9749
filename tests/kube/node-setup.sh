#!/bin/sh
# Run as root in a guest of tests/kube/cluster.sh (once, on its first boot):
# make it a Kubernetes node. The host's share (virtiofs, tag mcgitshare)
# holds the kubelet, the images, the CA and this node's client certificate.
#
#   node-setup.sh NODE INDEX APIPORT
#
# Network: eth at 10.0.2.15 on QEMU's restricted user network (the host's
# apiserver at 10.0.2.100:APIPORT, its git daemon at 10.0.2.101:9418, nothing
# else); pods on the bridge cni0, 10.244.INDEX.0/24 (Debian's CNI plugins:
# bridge, host-local, portmap), masqueraded out. No kube-proxy: the one
# Service pods use, `kubernetes` (10.0.0.1:443), is a DNAT rule to the
# apiserver (the unit mcgit-bed-net). containerd's CRI with runc (systemd
# cgroups) and the sandbox image mcgit.test/pause:1; the kubelet (built from
# Debian's kubernetes source) registers Node NODE. Everything is a systemd
# unit: the node comes back by itself after a reboot.
set -eu
node=$1 index=$2 apiport=$3
share=/run/mcgit-share
log() { echo "node-setup $node: $*" >&2; }
mkdir -p "$share"
mountpoint -q "$share" || mount -t virtiofs mcgitshare "$share"

hostnamectl set-hostname "$node"
printf '127.0.0.1 localhost\n127.0.1.1 %s\n' "$node" >/etc/hosts

# ---- network: static, systemd-networkd
mkdir -p /etc/systemd/network
cat >/etc/systemd/network/10-bed.network <<NET
[Match]
Name=en* eth*
[Network]
Address=10.0.2.15/24
Gateway=10.0.2.2
IPForward=yes
NET
cat >/etc/sysctl.d/90-bed.conf <<SYS
net.ipv4.ip_forward=1
net.bridge.bridge-nf-call-iptables=1
SYS
printf 'br_netfilter\noverlay\n' >/etc/modules-load.d/bed.conf
modprobe br_netfilter || true
modprobe overlay || true
sysctl -q -p /etc/sysctl.d/90-bed.conf || true
systemctl enable --now systemd-networkd >/dev/null 2>&1
# the kubernetes Service without kube-proxy
cat >/etc/systemd/system/mcgit-bed-net.service <<UNIT
[Unit]
Description=test bed: Service kubernetes (10.0.0.1:443) to the host's apiserver
After=network.target
Before=containerd.service kubelet.service
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/sbin/iptables -t nat -A PREROUTING -d 10.0.0.1/32 -p tcp --dport 443 -j DNAT --to-destination 10.0.2.100:$apiport
ExecStart=/usr/sbin/iptables -t nat -A OUTPUT -d 10.0.0.1/32 -p tcp --dport 443 -j DNAT --to-destination 10.0.2.100:$apiport
[Install]
WantedBy=multi-user.target
UNIT

# ---- CNI
mkdir -p /etc/cni/net.d
cat >/etc/cni/net.d/10-bed.conflist <<CNI
{"cniVersion": "0.4.0", "name": "bed", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.$index.0/24"}]],
            "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
CNI

# ---- containerd
mkdir -p /etc/containerd
cat >/etc/containerd/config.toml <<'TOML'
version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "mcgit.test/pause:1"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/cni/net.d"
TOML

# ---- kubelet
install -m 0755 "$share/kubelet" /usr/local/bin/kubelet
mkdir -p /etc/kubernetes /var/lib/kubelet
cp "$share/pki/ca.crt" /etc/kubernetes/ca.crt
cp "$share/pki/node-$node.crt" /etc/kubernetes/kubelet.crt
cp "$share/pki/node-$node.key" /etc/kubernetes/kubelet.key
chmod 0600 /etc/kubernetes/kubelet.key
# no DNS on this network: pods get an empty resolv.conf (containerd copies
# the host's /etc/resolv.conf into each sandbox: it must exist)
: >/etc/kubernetes/resolv.conf
[ -e /etc/resolv.conf ] || echo '# no DNS: tests/kube/cluster.sh' >/etc/resolv.conf
cat >/etc/kubernetes/kubelet.kubeconfig <<KC
apiVersion: v1
kind: Config
clusters:
- name: bed
  cluster: {server: "https://10.0.2.100:$apiport", certificate-authority: /etc/kubernetes/ca.crt}
users:
- name: kubelet
  user: {client-certificate: /etc/kubernetes/kubelet.crt, client-key: /etc/kubernetes/kubelet.key}
contexts:
- name: bed
  context: {cluster: bed, user: kubelet}
current-context: bed
KC
cat >/etc/kubernetes/kubelet.yaml <<CFG
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: /etc/kubernetes/ca.crt}
authorization: {mode: AlwaysAllow}
cgroupDriver: systemd
failSwapOn: false
resolvConf: /etc/kubernetes/resolv.conf
readOnlyPort: 0
podCIDR: 10.244.$index.0/24
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%"}
nodeStatusUpdateFrequency: 10s
CFG
cat >/etc/systemd/system/kubelet.service <<UNIT
[Unit]
Description=kubelet (tests/kube/cluster.sh)
After=containerd.service mcgit-bed-net.service network-online.target
Requires=containerd.service
[Service]
ExecStart=/usr/local/bin/kubelet --config /etc/kubernetes/kubelet.yaml \\
  --kubeconfig /etc/kubernetes/kubelet.kubeconfig --container-runtime remote \\
  --container-runtime-endpoint unix:///run/containerd/containerd.sock \\
  --hostname-override $node --node-ip 10.0.2.15 --v 1
Restart=always
RestartSec=2
[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl restart systemd-networkd
systemctl enable --now mcgit-bed-net.service >/dev/null 2>&1
systemctl enable containerd.service >/dev/null 2>&1
systemctl restart containerd.service
i=0
until ctr version >/dev/null 2>&1; do i=$((i + 1)); [ $i -lt 120 ] || { log "containerd not up"; exit 1; }; sleep 1; done
for a in "$share"/images/*.tar; do
  ctr -n k8s.io images import "$a" >/dev/null || { log "ctr images import $a failed"; exit 1; }
done
ctr -n k8s.io images ls -q >&2
systemctl enable --now kubelet.service >/dev/null 2>&1
log "kubelet started"
