#!/usr/bin/env bash
# An agent managing a live host (--live, or the root is /) first proves the
# host is its node; otherwise it refuses with one line naming the node and
# this host, before any write, journal, state directory, cordon, drain or
# reboot. Local backend: a fake host root (its own etc/machine-id) bound to
# the node with `mcgit node bind` / `node add --machine-id`. Kube backend
# (real kube-apiserver): the Node's status.nodeInfo (machineID, bootID) as a
# kubelet reports it. The boot id is always the real kernel's. A running
# agent proves it again at every pass: a node moved to other hardware while
# it runs is not managed from the old host any more.
. "$(dirname "$0")/lib.sh"
need python3

BOOT=$(cat /proc/sys/kernel/random/boot_id)
MID=0123456789abcdef0123456789abcdef   # the fake host's machine-id
OTHER=fedcba9876543210fedcba9876543210 # another machine's

CL=$T/cl
"$MCGIT" node add --cluster "local:$CL" n1 >/dev/null
HOST=$T/host # a fake host's root, managed --live
mkdir -p "$HOST/etc"
echo "$MID" >"$HOST/etc/machine-id"
printf 'root:x:0:0::/root:/bin/sh\ncore:x:1000:1000::/home/core:/bin/sh\n' >"$HOST/etc/passwd"
printf 'root:x:0:\nwheel:x:10:core\ncore:x:1000:\n' >"$HOST/etc/group"

# publish a rendered config that needs a reboot (a file no policy covers) and
# make it n1's desiredConfig
python3 - "$CL" <<'EOF'
import hashlib, json, sys
cl = sys.argv[1]
cfg = {"ignition": {"version": "3.4.0"}, "storage": {"files": [
    {"path": "/etc/hello", "contents": {"source": "data:,hi"}}]}}
b = (json.dumps({"config": cfg}, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()
name = "rendered-worker-" + hashlib.sha256(b).hexdigest()[:32]
open("%s/configs/%s.json" % (cl, name), "wb").write(b)
p = "%s/nodes/n1.json" % cl
n = json.load(open(p))
n["metadata"].setdefault("annotations", {})["machineconfiguration.mcgit.io/desiredConfig"] = name
json.dump(n, open(p, "w"))
EOF
live() {
  "$MCGIT" agent --node n1 --cluster "local:$CL" --root "$HOST" --live --once -q \
    --systemctl "echo >>$T/systemctl.log" --reboot-command "touch $T/rebooted" "$@"
}
node_json() { cp "$CL/nodes/n1.json" "$T/node.before"; }
# untouched DESC: nothing on the host, no state, no reboot, the node unchanged
untouched() {
  local what=()
  [ ! -e "$HOST/var" ] || what+=("state directory $HOST/var")
  [ ! -e "$HOST/etc/hello" ] || what+=("file written")
  [ ! -e "$T/rebooted" ] || what+=("reboot run")
  [ ! -e "$T/systemctl.log" ] || what+=("systemctl run")
  [ ! -e "$T/state" ] || what+=("--state-dir created")
  cmp -s "$CL/nodes/n1.json" "$T/node.before" || what+=("node changed (cordon/state)")
  if [ ${#what[@]} = 0 ]; then ok "$1: nothing touched"; else bad "$1: ${what[*]}"; fi
}

# ------------------------------------------------------------ local: refusals
node_json
expect_rc 1 "unbound node: agent --live refuses" -- live
expect_grep "refusing to manage this host: node n1 has no machine-id .*mcgit node bind.*$(hostname).*$MID" "$T/err" \
  "refusal names the node, this host and how to bind"
[ "$(wc -l <"$T/err")" = 1 ] && ok "refusal is one line" || bad "refusal is $(wc -l <"$T/err") lines"
untouched "unbound node"
expect_rc 1 "unbound node: refused with --state-dir too" -- live --state-dir "$T/state"
untouched "unbound node, --state-dir"

expect_rc 0 "node bind --machine-id another machine" -- "$MCGIT" node bind --cluster "local:$CL" n1 --machine-id "$OTHER"
node_json
expect_rc 1 "node bound to another machine: refused" -- live
expect_grep "node n1 has bound machine-id $OTHER, this host \\(.*\\) has $MID" "$T/err" "mismatch names both machine-ids"
untouched "bound to another machine"
expect_rc 1 "bind refuses a node bound to another machine" -- "$MCGIT" node bind --cluster "local:$CL" n1 --root "$HOST"
expect_grep "bound to machine-id $OTHER.*unbind" "$T/err" "bind conflict names the bound machine"
untouched "bind conflict"
expect_rc 2 "bind: bad --machine-id is a usage error" -- "$MCGIT" node bind --cluster "local:$CL" n1 --machine-id XYZ
expect_rc 1 "bind: unknown node" -- "$MCGIT" node bind --cluster "local:$CL" nope --machine-id "$MID"

# machine-id that cannot be trusted: a symlink, garbage, missing
expect_rc 0 "unbind" -- "$MCGIT" node unbind --cluster "local:$CL" n1
expect_rc 0 "bind to the fake host's machine-id" -- "$MCGIT" node bind --cluster "local:$CL" n1 --machine-id "$MID"
node_json
mv "$HOST/etc/machine-id" "$T/mid"
echo "$MID" >"$T/elsewhere"; ln -s "$T/elsewhere" "$HOST/etc/machine-id"
expect_rc 1 "machine-id symlink refused" -- live
expect_grep "cannot read this host's machine-id .*etc/machine-id" "$T/err" "symlinked machine-id named"
untouched "symlinked machine-id"
rm "$HOST/etc/machine-id"; echo uninitialized >"$HOST/etc/machine-id"
expect_rc 1 "garbage machine-id refused" -- live
expect_grep "not 32 hex digits" "$T/err" "garbage machine-id named"
rm "$HOST/etc/machine-id"
expect_rc 1 "missing machine-id refused" -- live
untouched "missing machine-id"
mv "$T/mid" "$HOST/etc/machine-id"

# ------------------------------------------------------------- local: bound
expect_rc 0 "bound node: agent --live applies" -- live
[ "$(cat "$HOST/etc/hello" 2>/dev/null)" = hi ] && ok "file written on the proven host" || bad "file not written"
[ -e "$T/rebooted" ] && ok "reboot command run on the proven host" || bad "no reboot"
expect_rc 0 "bind again with the same machine-id is idempotent" -- "$MCGIT" node bind --cluster "local:$CL" n1 --root "$HOST"
expect_grep "^node n1 is already bound to machine-id $MID; nothing changed$" "$T/out" "bind says the binding is already there"

# node add --machine-id binds at creation
expect_rc 0 "node add --machine-id" -- "$MCGIT" node add --cluster "local:$CL" n2 --machine-id "$OTHER"
expect_grep "\"machineconfiguration.mcgit.io/machineID\": *\"$OTHER\"" "$CL/nodes/n2.json" "node add records the machine-id"
expect_rc 2 "--machine-id with label is a usage error" -- "$MCGIT" node label --cluster "local:$CL" n2 a=b --machine-id "$OTHER"

# --root DIR without --live is a directory: no identity needed
expect_rc 0 "unbound node with a plain --root: no check" -- "$MCGIT" agent --node n2 --cluster "local:$CL" --once -q

# a node reported by a kubelet (status.nodeInfo) must match too
python3 - "$CL/nodes/n1.json" "$OTHER" <<'EOF'
import json, sys
n = json.load(open(sys.argv[1]))
n.setdefault("status", {})["nodeInfo"] = {"machineID": sys.argv[2]}
json.dump(n, open(sys.argv[1], "w"))
EOF
rm -f "$T/rebooted"; rm -rf "$T/host-var"; mv "$HOST/var" "$T/host-var"; rm "$HOST/etc/hello"
node_json
expect_rc 1 "nodeInfo.machineID of another machine: refused though bound" -- live
expect_grep "node n1 has machine-id $OTHER" "$T/err" "nodeInfo mismatch named"
untouched "nodeInfo mismatch"

# --------------------------------------- local: re-proven at every pass
# A running agent (--live, a pass a second) manages n3 from host H3. Then n3
# moves to new hardware (`node unbind`, `node bind` another machine-id) and
# gets a new desiredConfig: the agent on the old host must stop at its next
# pass with one line, before writing the new file or reporting anything.
H3=$T/host3
mkdir -p "$H3/etc"
echo "$MID" >"$H3/etc/machine-id"
cp "$HOST/etc/passwd" "$HOST/etc/group" "$H3/etc/"
"$MCGIT" node add --cluster "local:$CL" n3 --machine-id "$MID" >/dev/null
desire3() { # desire3 WORD: publish a config giving core an SSH key with comment WORD (no
  # reboot needed), make it n3's desiredConfig
  python3 - "$CL" "$1" <<'EOF'
import hashlib, json, sys
cl, word = sys.argv[1], sys.argv[2]
key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGVxYW1wbGVrZXlleGFtcGxla2V5ZXhhbXBsZWtleTE " + word
cfg = {"ignition": {"version": "3.4.0"}, "passwd": {"users": [
    {"name": "core", "sshAuthorizedKeys": [key]}]}}
b = (json.dumps({"config": cfg}, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()
name = "rendered-worker-" + hashlib.sha256(b).hexdigest()[:32]
open("%s/configs/%s.json" % (cl, name), "wb").write(b)
p = "%s/nodes/n3.json" % cl
n = json.load(open(p))
n["metadata"].setdefault("annotations", {})["machineconfiguration.mcgit.io/desiredConfig"] = name
json.dump(n, open(p, "w"))
EOF
}
n3state() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"].get("annotations",{}).get("machineconfiguration.mcgit.io/state",""))' "$CL/nodes/n3.json"; }
desire3 before-move
keys3() { cat "$H3/home/core/.ssh/authorized_keys.d/ignition" 2>/dev/null || true; }
"$MCGIT" agent --node n3 --cluster "local:$CL" --root "$H3" --live --interval 1 -q \
  --systemctl "echo >>$T/systemctl3.log" --reboot-command true >"$T/a3.out" 2>"$T/a3.err" &
A3=$!
for _ in $(seq 100); do [ "$(n3state)" = Done ] && break; sleep 0.1; done
[ "$(n3state)" = Done ] && keys3 | grep -q before-move && ok "running agent manages its proven node (Done)" \
  || bad "set-up: n3 is '$(n3state)'"
"$MCGIT" node unbind --cluster "local:$CL" n3 >/dev/null
"$MCGIT" node bind --cluster "local:$CL" n3 --machine-id "$OTHER" >/dev/null
desire3 after-move
cp "$CL/nodes/n3.json" "$T/n3.moved"
rc=running
for _ in $(seq 100); do kill -0 "$A3" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$A3" 2>/dev/null; then kill "$A3"; wait "$A3" || true; else rc=0; wait "$A3" || rc=$?; fi
[ "$rc" = 1 ] && ok "the agent on the old host stopped (exit 1) once the node moved" \
  || bad "the agent on the old host did not stop (exit '$rc')"
[ "$(grep -c . "$T/a3.err")" = 1 ] && ok "with one line" || bad "stop message is $(grep -c . "$T/a3.err") lines"
expect_grep "refusing to manage this host.*node n3 has (bound machine-id $OTHER|no machine-id)" "$T/a3.err" \
  "the line names the node and the mismatch"
keys3 | grep -q after-move && bad "the old host applied the moved node's config" \
  || ok "the moved node's new config was not written on the old host"
cmp -s "$CL/nodes/n3.json" "$T/n3.moved" && ok "nothing reported on the moved node (status, cordon)" \
  || bad "the old host wrote to the moved node: $(diff "$T/n3.moved" "$CL/nodes/n3.json" | head -3)"

# --------------------------------------------------------------------- kube
[ "$FAIL" = 0 ] || { finish; exit 1; } # a kube skip must not hide these
. "$SRC/tests/kube/lib.sh"
need kubectl
kube_up
kube_deploy
KCL=kube:$KUBECONFIG
kube_node w1 node-role.kubernetes.io/worker=
kinfo() { # kinfo MACHINEID BOOTID: set w1's status.nodeInfo as a kubelet would
  kube_api PATCH /api/v1/nodes/w1/status "{\"status\":{\"nodeInfo\":{\"machineID\":\"$1\",\"bootID\":\"$2\",\"systemUUID\":\"\",\"kernelVersion\":\"\",\"osImage\":\"\",\"containerRuntimeVersion\":\"\",\"kubeletVersion\":\"\",\"kubeProxyVersion\":\"\",\"operatingSystem\":\"linux\",\"architecture\":\"amd64\"}}}" >/dev/null
}
KHOST=$T/khost
mkdir -p "$KHOST/etc"
echo "$MID" >"$KHOST/etc/machine-id"
cp "$HOST/etc/passwd" "$HOST/etc/group" "$KHOST/etc/"
# a desiredConfig that needs a drain and a reboot, and a pod a drain would evict
: "${KUBETOOL:=$(dirname "$MCGIT")/tests/mcgit-kubetool}"
KNAME=$(python3 - "$T/kspec" <<'EOF'
import hashlib, json, sys
cfg = {"ignition": {"version": "3.4.0"}, "storage": {"files": [
    {"path": "/etc/hello", "contents": {"source": "data:,hi"}}]}}
b = (json.dumps({"config": cfg}, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()
open(sys.argv[1], "wb").write(b)
print("rendered-worker-" + hashlib.sha256(b).hexdigest()[:32])
EOF
)
"$KUBETOOL" "$KCL" put-config "$KNAME" "$T/kspec" >/dev/null
"$KUBETOOL" "$KCL" patch w1 desired="$KNAME" >/dev/null
kubectl create namespace apps >/dev/null
kubectl apply -f - >/dev/null <<'POD'
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: apps}
spec:
  nodeName: w1
  terminationGracePeriodSeconds: 0
  containers: [{name: c, image: busybox}]
POD
kagent() {
  "$MCGIT" agent --node w1 --cluster "$KCL" --root "$KHOST" --live --once -q \
    --systemctl "echo >>$T/systemctl.log" --reboot-command "touch $T/rebooted" "$@"
}
kuntouched() {
  local what=()
  [ ! -e "$KHOST/var" ] || what+=("state directory")
  [ ! -e "$T/rebooted" ] || what+=("reboot run")
  [ "$(kubectl get node w1 -o jsonpath='{.spec.unschedulable}')" = "" ] || what+=("cordoned")
  [ -z "$(kubectl get node w1 -o jsonpath='{.metadata.annotations.machineconfiguration\.mcgit\.io/state}')" ] || what+=("state reported")
  [ ! -e "$KHOST/etc/hello" ] || what+=("file written")
  [ -n "$(kubectl -n apps get pod web-1 -o name 2>/dev/null)" ] || what+=("pod evicted (drain)")
  [ -z "$(kubectl -n apps get pod web-1 -o jsonpath='{.metadata.deletionTimestamp}' 2>/dev/null)" ] || what+=("pod being deleted (drain)")
  if [ ${#what[@]} = 0 ]; then ok "$1: nothing touched"; else bad "$1: ${what[*]}"; fi
}
expect_rc 1 "kube: node without nodeInfo refused" -- kagent
expect_grep "node w1 has no machine-id" "$T/err" "kube: unknown identity named"
kuntouched "kube: no nodeInfo"
kinfo "$OTHER" "$BOOT"
expect_rc 1 "kube: another machine's machineID refused" -- kagent
expect_grep "node w1 has machine-id $OTHER, this host \\(.*\\) has $MID" "$T/err" "kube: machine-id mismatch named"
kuntouched "kube: machine-id mismatch"
kinfo "$MID" "00000000-0000-0000-0000-000000000000"
expect_rc 1 "kube: same machine, another boot refused" -- kagent
expect_grep "node w1 has boot id 00000000-0000-0000-0000-000000000000, this host \\(.*\\) has $BOOT" "$T/err" "kube: boot id mismatch named"
kuntouched "kube: boot id mismatch"
# the DaemonSet's way: --root /rootfs --live, machine-id under the root, the
# kernel's boot id, identity from the kubelet's nodeInfo
kinfo "$MID" "$BOOT"
expect_rc 0 "kube: matching nodeInfo: agent runs" -- kagent
expect_grep "^w1 Working " "$T/out" "kube: update applied, waiting for its reboot"
[ "$(cat "$KHOST/etc/hello" 2>/dev/null)" = hi ] && ok "kube: file written on the proven host" || bad "kube: file not written"
[ -e "$T/rebooted" ] && ok "kube: reboot command run on the proven host" || bad "kube: no reboot"
[ -z "$(kubectl -n apps get pod web-1 -o name 2>/dev/null)" ] && ok "kube: the proven node was drained" || bad "kube: pod not evicted"
# a kubelet-reported node cannot be bound to another machine
expect_rc 1 "kube: bind to another machine refused" -- "$MCGIT" node bind --cluster "$KCL" w1 --machine-id "$OTHER"
expect_grep "reported by its kubelet" "$T/err" "kube: bind conflict named"
expect_rc 0 "kube: bind to the kubelet's machine-id" -- "$MCGIT" node bind --cluster "$KCL" w1 --root "$KHOST"
[ "$(kubectl get node w1 -o jsonpath='{.metadata.annotations.machineconfiguration\.mcgit\.io/machineID}')" = "$MID" ] \
  && ok "kube: binding recorded as an annotation" || bad "kube: binding not recorded"
finish
