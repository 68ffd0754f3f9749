#!/usr/bin/env bash
# Existing OpenShift MachineConfigs end to end: the corpus in
# tests/fixtures/mco (Ignition 2.2 and 3.5, kernel arguments, extensions, a
# realtime kernel, FIPS, a /var partition, MCO's generated SSH config) is
# rendered by `mcgit render`, published to a local:DIR cluster, and applied
# by `mcgit agent` on simulated nodes of each kind: an rpm-ostree node (the
# exact rpm-ostree commands, recorded through --host-exec), a GRUB node
# (kernel arguments only: the drop-in written, the image refused by name),
# and a master whose /var partition and FIPS mode are taken as installed on
# its first config and cannot change later (Degraded, nothing written).
. "$(dirname "$0")/lib.sh"
need python3
need jq

CL=$T/cl
for n in w1 w2 m1; do "$MCGIT" node add --cluster "local:$CL" "$n" >/dev/null; done
for n in w1 w2 m1; do
  mkdir -p "$CL/roots/$n/etc"
  printf 'root:x:0:0::/root:/bin/sh\ncore:x:1000:1000::/home/core:/bin/sh\n' >"$CL/roots/$n/etc/passwd"
  printf 'root:x:0:\ncore:x:1000:\n' >"$CL/roots/$n/etc/group"
done
# w1: rpm-ostree (RHCOS-like); w2: GRUB (Debian-like); m1: rpm-ostree, FIPS off
for n in w1 m1; do
  mkdir -p "$CL/roots/$n/run" "$CL/roots/$n/usr/bin" "$CL/roots/$n/proc/sys/crypto"
  : >"$CL/roots/$n/run/ostree-booted"; : >"$CL/roots/$n/usr/bin/rpm-ostree"
done
echo 0 >"$CL/roots/m1/proc/sys/crypto/fips_enabled"
mkdir -p "$CL/roots/w2/etc/default" "$CL/roots/w2/usr/sbin"
echo 'GRUB_CMDLINE_LINUX="quiet"' >"$CL/roots/w2/etc/default/grub"; : >"$CL/roots/w2/usr/sbin/update-grub"

# rec: the --host-exec prefix; records each command line, runs nothing
cat >"$T/rec" <<EOF
#!/bin/sh
printf '%s\n' "\$*" >>"$T/cmds.log"
EOF
chmod +x "$T/rec"

# Render the corpus and publish each pool's spec under its name (canonical
# bytes, as the controller publishes them).
expect_rc 0 "render the MCO corpus" -- "$MCGIT" render "$FIXTURES/mco" -o json
cp "$T/out" "$T/render.json"
python3 - "$T/render.json" "$CL" >"$T/names" <<'PY'
import hashlib, json, sys
doc = json.load(open(sys.argv[1], encoding="utf-8"))
for pool, r in sorted(doc["pools"].items()):
    b = (json.dumps(r["spec"], sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()
    assert r["name"].endswith(hashlib.sha256(b).hexdigest()[:32])
    open("%s/configs/%s.json" % (sys.argv[2], r["name"]), "wb").write(b)
    print(pool, r["name"])
PY
WORKER=$(awk '$1=="worker"{print $2}' "$T/names")
MASTER=$(awk '$1=="master"{print $2}' "$T/names")
desire() {
  python3 - "$CL/nodes/$1.json" "$2" <<'PY'
import json, os, sys
n = json.load(open(sys.argv[1]))
n["metadata"].setdefault("annotations", {})["machineconfiguration.mcgit.io/desiredConfig"] = sys.argv[2]
open(sys.argv[1] + ".tmp", "w").write(json.dumps(n, indent=2))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
PY
}
agent() { "$MCGIT" agent --node "$1" --cluster "local:$CL" --once -q --host-exec "$T/rec" "${@:2}"; }

# ---------------------------------------------------------------- rpm-ostree
desire w1 "$WORKER"
expect_rc 0 "w1 (rpm-ostree) applies the worker config" -- agent w1
expect_grep "^w1 Done $WORKER\$" "$T/out" "w1 Done at the worker config"
cat >"$T/want" <<'EOF'
rpm-ostree override remove kernel kernel-core kernel-modules kernel-modules-core kernel-modules-extra --install kernel-rt-core --install kernel-rt-modules --install kernel-rt-modules-extra --install kernel-rt-kvm
rpm-ostree update --install usbguard --install krb5-workstation --install libkadm5
rpm-ostree kargs --delete-if-present=enforcing=0 --delete-if-present=nosmt --delete-if-present=systemd.unified_cgroup_hierarchy=1 --append=enforcing=0 --append=nosmt --append=enforcing=0 --append=systemd.unified_cgroup_hierarchy=1
EOF
if cmp -s "$T/want" "$T/cmds.log"; then ok "the exact rpm-ostree commands: kernel, extensions, kernel arguments"
else bad "rpm-ostree commands differ"; diff -u "$T/want" "$T/cmds.log" | sed 's/^/    /'; fi
R=$CL/roots/w1
[ "$(cat "$R/etc/legacy-motd")" = new ] && ok "Ignition 2.2: the last of two files with one path" || bad "legacy-motd"
[ "$(stat -c %a "$R/etc/sysctl.d/99-elasticsearch.conf")" = 644 ] && ok "Ignition 2.2: a file on the root filesystem, mode 420" || bad "sysctl file"
[ "$(readlink "$R/etc/systemd/system/multi-user.target.wants/legacy-tuning.service")" = /etc/systemd/system/legacy-tuning.service ] \
  && ok "Ignition 2.2: enable: true enables the unit" || bad "legacy unit not enabled"
grep -q '^server clock.corp.example.com iburst$' "$R/etc/chrony.conf" && ok "the chrony docs example (filesystem: root) applied" || bad "chrony.conf"
grep -q '^Storage=volatile$' "$R/etc/systemd/journald.conf" && ok "the journald docs example (Ignition 3.5) applied" || bad "journald.conf"
[ -f "$R/etc/systemd/system/crio.service.d/10-mco-default-madv.conf" ] && ok "a drop-in for a unit the OS ships" || bad "crio drop-in"
grep -q 'admin@example.com' "$R/home/core/.ssh/authorized_keys.d/ignition" && ok "MCO's 99-worker-ssh (empty tls) applied" || bad "ssh key"
# the same config again: nothing more is issued
expect_rc 0 "w1 again: nothing to do" -- agent w1
[ "$(grep -c . "$T/cmds.log")" = 3 ] && ok "no command issued twice" || bad "commands repeated"

# ---------------------------------------------------------------- GRUB
: >"$T/cmds.log"
desire w2 "$WORKER"
expect_rc 1 "w2 (GRUB, no rpm-ostree) cannot take the realtime kernel" -- agent w2
expect_grep "^w2 Degraded - rendered config $WORKER: kernelType: node w2 cannot switch to the realtime kernel \(no rpm-ostree\)\$" "$T/out" "Degraded, naming the field and the node"
[ ! -e "$CL/roots/w2/etc/chrony.conf" ] && [ ! -s "$T/cmds.log" ] && ok "nothing written, nothing run" || bad "w2 half-applied"
# custom POOL FILE...: render the corpus's base configs and the given MCs of
# tests/fixtures/mco/machineconfigs, publish POOL's config, print its name
custom() {
  local pool=$1 d; shift; d=$(mktemp -d "$T/custom.XXXXXX")
  mkdir -p "$d/machineconfigs"; cp -r "$FIXTURES/mco/pools" "$d/"
  cp "$FIXTURES"/mco/machineconfigs/00-*.yaml "$d/machineconfigs/"
  for f in "$@"; do case $f in */*) cp "$FIXTURES/$f" "$d/machineconfigs/" ;;
    *) cp "$FIXTURES/mco/machineconfigs/$f" "$d/machineconfigs/" ;; esac; done
  "$MCGIT" render "$d" -o json >"$d/r.json" || return 1
  python3 - "$d/r.json" "$CL" "$pool" <<'PY'
import json, sys
r = json.load(open(sys.argv[1], encoding="utf-8"))["pools"][sys.argv[3]]
b = (json.dumps(r["spec"], sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()
open("%s/configs/%s.json" % (sys.argv[2], r["name"]), "wb").write(b)
print(r["name"])
PY
}
# the kernel arguments of two corpus MCs only
KA=$(custom worker 05-worker-kernelarg-selinuxpermissive.yaml 90-worker-kernelargs-more.yaml)
desire w2 "$KA"
expect_rc 0 "w2 applies the kernel arguments through GRUB" -- agent w2
[ "$(cat "$CL/roots/w2/etc/default/grub.d/50-mcgit.cfg")" = '# written by mcgit: the MachineConfig kernelArguments
GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX enforcing=0 nosmt enforcing=0 systemd.unified_cgroup_hierarchy=1"' ] \
  && ok "the GRUB drop-in holds the merged arguments" || { bad "GRUB drop-in"; cat "$CL/roots/w2/etc/default/grub.d/50-mcgit.cfg"; }
[ "$(cat "$T/cmds.log")" = update-grub ] && ok "then update-grub" || bad "commands: $(cat "$T/cmds.log")"

# MCO's e2e test 67825: repeated kernel arguments kept, in MachineConfig order
: >"$T/cmds.log"
K2=$(custom worker mco-e2e/67825-worker-kargs-1.yaml mco-e2e/67825-worker-kargs-2.yaml)
desire w2 "$K2"
expect_rc 0 "w2 takes MCO test 67825's kernel arguments" -- agent w2
grep -q '^GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX y=0 z=4 y=1 z=4"$' "$CL/roots/w2/etc/default/grub.d/50-mcgit.cfg" &&
  ok "test 67825: y=0 z=4 y=1 z=4, as MCO expects" || { bad "67825 kernel arguments"; cat "$CL/roots/w2/etc/default/grub.d/50-mcgit.cfg"; }

# MCO's e2e test 72136: Ignition kernelArguments are install-time only (a later
# change is refused at render: test_unreconcilable), so in a first config
# they are taken as installed
IK=$(custom worker mco-e2e/72136-worker-ignition-kargs.yaml)
mkdir -p "$CL/roots/w3/etc"; "$MCGIT" node add --cluster "local:$CL" w3 >/dev/null
desire w3 "$IK"
expect_rc 0 "test 72136's MachineConfig in a first config" -- agent w3 -v
expect_grep "taken as installed: Ignition kernelArguments \(not checked\)" "$T/err" "taken as installed, said so"

# ---------------------------------------------------------------- master
# The master config holds OpenShift's documented 98-var-partition (disks,
# filesystems, a mount unit) and fips: true. Both are made at install: on a
# node's first config they are taken as installed (fips checked against the
# node's FIPS mode), and a later change to them is refused.
: >"$T/cmds.log"
desire m1 "$MASTER"
expect_rc 1 "m1: fips: true on a node without FIPS mode" -- agent m1
expect_grep "^m1 Unreconcilable - rendered config $MASTER: unreconcilable: fips is true but node m1 runs with FIPS mode off" "$T/out" "Unreconcilable (MCO's state), naming fips and the node"
[ "$("$MCGIT" status --cluster "local:$CL" nodes -o json | jq -r '.items[] | select(.metadata.name == "m1") | .metadata.annotations["machineconfiguration.mcgit.io/state"]')" = Unreconcilable ] \
  && ok "the node's state is Unreconcilable, as MCO writes it" || bad "m1's state: $("$MCGIT" status --cluster "local:$CL" nodes | grep '^m1 ')"
[ ! -e "$CL/roots/m1/etc/systemd/system/var.mount" ] && [ ! -e "$CL/roots/m1/home/core" ] && [ ! -s "$T/cmds.log" ] &&
  ok "nothing written, nothing run" || bad "m1 half-applied (fips)"
echo 1 >"$CL/roots/m1/proc/sys/crypto/fips_enabled"
printf 'root:*:19000::::::\ncore:!!:19000::::::\n' >"$CL/roots/m1/etc/shadow"
expect_rc 0 "m1 in FIPS mode takes its first config, 98-var-partition included" -- agent m1 -v
expect_grep "^m1 Done $MASTER\$" "$T/out" "m1 Done"
expect_grep "taken as installed: storage.disks \(not checked\), storage.filesystems \(not checked\)" "$T/err" \
  "the agent says the install-time sections were taken as installed"
reason=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"]["annotations"].get("machineconfiguration.mcgit.io/reason",""))' "$CL/nodes/m1.json")
[ "$reason" = "taken as installed: storage.disks (not checked), storage.filesystems (not checked)" ] &&
  ok "and so does the node's status (reason, beside Done)" || bad "m1 reason: '$reason'"
[ -f "$CL/roots/m1/etc/systemd/system/var.mount" ] && ok "the mount unit written" || bad "var.mount missing"
grep -q '^core:\$6\$rounds=4096\$saltsalt\$' "$CL/roots/m1/etc/shadow" && ok "core's passwordHash set in /etc/shadow" || bad "shadow: $(cat "$CL/roots/m1/etc/shadow")"
[ ! -s "$T/cmds.log" ] && ok "no command for FIPS, the partition or the password hash" || bad "commands: $(cat "$T/cmds.log")"
# the partition's MachineConfig removed: a change to an install-time section,
# which the agent refuses too (the render, hook and controller refuse it first)
NOVAR=$(custom master 99-master-fips.yaml 99-master-ssh.yaml)
desire m1 "$NOVAR"
expect_rc 1 "m1: dropping 98-var-partition later is refused" -- agent m1
expect_grep "^m1 Unreconcilable $MASTER rendered config $NOVAR: unreconcilable: storage.disks changed on node m1" "$T/out" "Unreconcilable, naming the section and node"
[ -f "$CL/roots/m1/etc/systemd/system/var.mount" ] && ok "nothing removed" || bad "m1 half-applied (var)"

finish
