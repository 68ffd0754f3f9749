#!/usr/bin/env bash
# test_unreconcilable.sh — the sections MCO makes at install only (disks,
# filesystems, RAID, LUKS, users other than core, groups, Ignition's own
# kernelArguments, fips):
#   - in a pool's first config they are taken as installed: a node checks
#     what it can (users and groups in its passwd and group) and says in its
#     status what it took as installed; a node that lacks a user is Degraded,
#     naming it;
#   - a later change to them is refused before any node is touched: by the
#     pre-receive hook (the push is refused, naming the MachineConfig and the
#     field), by the controller for commits that reach the repo another way
#     (RenderDegraded with the same message, the rendered branch and every
#     node's desiredConfig unmoved), and `mcgit plan` shows it. MCO's e2e
#     test 72136 (Ignition kernelArguments in a MachineConfig) is one case.
. "$(dirname "$0")/lib.sh"
need jq

TR=$T/trust
C=$T/client
fixture_signed_repo "$C"
S=$T/server.git
fixture_server "$S" "$TR"
git -C "$C" remote add origin "file://$S"
write_mc "$C" 10-worker worker /etc/demo.conf v1
cat >"$C/machineconfigs/98-worker-var-partition.yaml" <<'EOF'
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 98-worker-var-partition
  labels: {machineconfiguration.openshift.io/role: worker}
spec:
  config:
    ignition: {version: 3.2.0}
    storage:
      disks:
      - device: /dev/disk/by-id/nvme-example
        partitions: [{label: var, startMiB: 25000, sizeMiB: 0}]
      filesystems:
      - {device: /dev/disk/by-partlabel/var, format: xfs, path: /var, mountOptions: [defaults, prjquota]}
    systemd:
      units:
      - name: var.mount
        enabled: true
        contents: "[Mount]\nWhat=/dev/disk/by-partlabel/var\nWhere=/var\n[Install]\nWantedBy=local-fs.target\n"
EOF
cat >"$C/machineconfigs/50-worker-users.yaml" <<'EOF'
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 50-worker-users
  labels: {machineconfiguration.openshift.io/role: worker}
spec:
  config:
    ignition: {version: 3.4.0}
    passwd:
      users: [{name: backup, uid: 1500}]
      groups: [{name: backup, gid: 1500}]
EOF
scommit "$C" op "first config: a /var partition and a user, made at install"
push() { git -C "$C" push origin main >"$T/push.out" 2>&1; }
push && ok "the first config, with install-time sections, is accepted" || { bad "first push refused"; sed 's/^/    /' "$T/push.out"; }
grep -q "taken as installed (the pool's first config)" "$T/push.out" &&
  ok "its plan says they are taken as installed" || bad "plan: $(grep plan: "$T/push.out" | head -3)"

# the controller runs on a clone of the server (as a mirror would)
R=$T/ctl
git clone -q "$S" "$R"
git -C "$R" remote remove origin # fed by hand below: a local repo
CL=local:$T/cl
for n in w0 w1; do "$MCGIT" node add --cluster "$CL" "$n" --labels node-role.kubernetes.io/worker= >/dev/null; done
# w0 was installed with the user and group; w1 was not
printf 'root:x:0:0::/root:/bin/sh\ncore:x:1000:1000::/home/core:/bin/sh\nbackup:x:1500:1500::/var/backup:/bin/sh\n' >"$T/cl/roots/w0/etc/passwd"
printf 'root:x:0:\ncore:x:1000:\nbackup:x:1500:\n' >"$T/cl/roots/w0/etc/group"
ctl() { "$MCGIT" controller --repo "$R" --trust "$TR" --cluster "$CL" --once >"$T/ctl.out" 2>&1 || true; }
agent() { "$MCGIT" agent --node "$1" --cluster "$CL" --once -q >/dev/null 2>&1 || true; }
ann() { jq -r --arg k "machineconfiguration.mcgit.io/$2" '.metadata.annotations[$k] // ""' "$T/cl/nodes/$1.json"; }
cond() { "$MCGIT" status --cluster "$CL" -o json | jq -r --arg t "$1" \
  '.items[] | select(.metadata.name == "worker") | .status.conditions[] | select(.type == $t) | "\(.status) \(.reason) \(.message)"'; }

ctl; agent w0; ctl; agent w1; ctl
[ "$(ann w0 state)" = Done ] && ok "w0 (installed with the user) Done" || bad "w0: $(ann w0 state) $(ann w0 reason)"
[ "$(ann w0 reason)" = "taken as installed: storage.disks (not checked), storage.filesystems (not checked), passwd.users (checked), passwd.groups (checked)" ] &&
  ok "w0's status says what it took as installed, and what it checked" || bad "w0 reason: $(ann w0 reason)"
[ -f "$T/cl/roots/w0/etc/systemd/system/var.mount" ] && ok "w0: the mount unit written" || bad "w0: var.mount missing"
[ "$(ann w1 state)" = Degraded ] && case "$(ann w1 reason)" in
  *"passwd.users: entry backup is not on node w1"*) true ;; *) false ;; esac &&
  ok "w1 (installed without it) Degraded, naming the user" || bad "w1: $(ann w1 state) $(ann w1 reason)"
[ ! -e "$T/cl/roots/w1/etc/demo.conf" ] && ok "w1: nothing written" || bad "w1 half-applied"
TARGET=$(ann w0 desiredConfig)
RTIP=$(git -C "$R" rev-parse rendered)

# --- a later change: MCO's test 72136, Ignition's own kernelArguments --------
cat >"$C/machineconfigs/99-worker-72136.yaml" <<'EOF'
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 99-worker-72136
  labels: {machineconfiguration.openshift.io/role: worker}
spec:
  config:
    ignition: {version: 3.4.0}
    kernelArguments:
      shouldExist: [enforcing=0]
EOF
scommit "$C" op "Ignition kernelArguments (MCO test 72136)"
before=$(git -C "$S" rev-parse main)
push && bad "the push was accepted" || ok "pre-receive refuses the push"
grep -q "refusing refs/heads/main: pool worker: MachineConfig 99-worker-72136: spec.config.kernelArguments (Ignition's own) added" "$T/push.out" &&
  ok "naming the pool, the MachineConfig and the field" || { bad "refusal"; sed 's/^/    /' "$T/push.out" | head -5; }
[ "$(git -C "$S" rev-parse main)" = "$before" ] && ok "the server's branch did not move" || bad "main moved"
# the same commit reaching the controller's repo another way (a fetch, a
# bundle, a local commit): the controller refuses it too
git -C "$R" fetch -q "$C" main && git -C "$R" update-ref refs/heads/main FETCH_HEAD
expect_rc 0 "mcgit plan of the change" -- "$MCGIT" plan --repo "$R" --trust "$TR"
expect_grep "added unreconcilable kernelArguments: refused: unreconcilable" "$T/out" "plan shows it refused"
ctl
expect_grep "^True RenderFailed Failed to render configuration for pool worker: MachineConfig 99-worker-72136: spec.config.kernelArguments \(Ignition's own\) added" <(cond RenderDegraded) \
  "controller: RenderDegraded names the MachineConfig and the field, as MCO words it"
[ "$(git -C "$R" rev-parse rendered)" = "$RTIP" ] && ok "the rendered branch did not move" || bad "rendered moved"
[ "$(ann w0 desiredConfig)" = "$TARGET" ] && [ "$(ann w1 desiredConfig)" = "$TARGET" ] &&
  ok "no node's desiredConfig moved" || bad "desired: $(ann w0 desiredConfig) $(ann w1 desiredConfig)"

# reverted by a signed commit: rendering resumes
git -C "$C" reset -q --hard "$before"
write_mc "$C" 10-worker worker /etc/demo.conf v2
scommit "$C" op "v2"
push && ok "a reconcilable change is accepted" || { bad "v2 refused"; sed 's/^/    /' "$T/push.out"; }
git -C "$R" fetch -q "$S" main && git -C "$R" update-ref refs/heads/main FETCH_HEAD
ctl
expect_grep "^False " <(cond RenderDegraded) "RenderDegraded cleared"
[ "$(git -C "$R" rev-parse rendered)" != "$RTIP" ] && ok "and the new config is rendered" || bad "rendered branch not moved"

# --- fips flipped, and the partition dropped ---------------------------------
cat >"$C/machineconfigs/99-worker-fips.yaml" <<'EOF'
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 99-worker-fips
  labels: {machineconfiguration.openshift.io/role: worker}
spec:
  fips: true
EOF
scommit "$C" op "fips"
push && bad "fips accepted" || ok "a fips flip is refused"
grep -q "MachineConfig 99-worker-fips: spec.fips changed" "$T/push.out" && ok "naming fips and its MachineConfig" ||
  { bad "fips refusal"; sed 's/^/    /' "$T/push.out" | head -3; }
git -C "$C" reset -q --hard HEAD~1
git -C "$C" rm -q machineconfigs/98-worker-var-partition.yaml
scommit "$C" op "drop the partition"
push && bad "dropping the partition accepted" || ok "dropping 98-var-partition later is refused"
grep -q "pool worker: spec.config.storage.disks removed" "$T/push.out" && ok "naming the field removed" ||
  { bad "disks refusal"; sed 's/^/    /' "$T/push.out" | head -3; }
finish
