#!/usr/bin/env bash
# test_mco_node.sh — a simulated node where MCO's daemon and mcgit's agent
# must agree: an update over drift is refused (MCO's preflight drift check),
# Degraded naming the drift, until the file is put back or a re-apply is
# forced; MCO's force file re-applies and always reboots, and a
# MachineConfig that writes it is refused at validation with its file and
# line. A node MCO's daemon managed is taken over with its orig/ backups and
# noorig/ stamps honoured.
. "$(dirname "$0")/lib.sh"
need python3
need jq

CL=$T/cl
"$MCGIT" node add --cluster "local:$CL" n1 >/dev/null
ROOT=$CL/roots/n1
mkdir -p "$ROOT/etc" "$ROOT/run"
printf 'root:x:0:0::/root:/bin/sh\ncore:x:1000:1000::/home/core:/bin/sh\n' >"$ROOT/etc/passwd"
printf 'root:x:0:\ncore:x:1000:\n' >"$ROOT/etc/group"
node_cfg_helpers "$CL"
cat >"$T/reboot" <<EOF
#!/bin/sh
echo reboot >>"$T/reboots"
EOF
chmod +x "$T/reboot"
agent() { "$MCGIT" agent --node n1 --cluster "local:$CL" --once -q --reboot-command "$T/reboot" "$@"; }
reboots() { [ -f "$T/reboots" ] && grep -c . "$T/reboots" || echo 0; }
IGN='"ignition":{"version":"3.4.0"}'
file() { printf '{"path":"%s","mode":420,"contents":{"source":"data:,%s"}}' "$1" "$2"; }

# ------------------------------------------------------------ preflight drift
# a file under /etc/nmstate/openshift: the built-in rule is None, so neither
# update reboots by itself
C1=$(publish '{'"$IGN"',"storage":{"files":['"$(file /etc/app.conf one)"','"$(file /etc/nmstate/openshift/a.yml a)"']}}')
C2=$(publish '{'"$IGN"',"storage":{"files":['"$(file /etc/app.conf one)"','"$(file /etc/nmstate/openshift/a.yml b)"']}}')
desire "$C1"
expect_rc 0 "n1 takes its first config" -- agent
rm -f "$T/reboots" # a first config's new file reboots: count from here
echo tampered >"$ROOT/etc/app.conf"
desire "$C2"
expect_rc 1 "an update over a tampered file is refused" -- agent
expect_grep "^n1 Degraded $C1 not updating to $C2: the disk no longer holds $C1: drift: /etc/app.conf: content differs" "$T/out" \
  "Degraded, at the current config, naming the drift"
[ "$(field state)" = Degraded ] && [ "$(field currentConfig)" = "$C1" ] && ok "the node reports Degraded at $C1" ||
  bad "node: $(field state) $(field currentConfig)"
[ "$(cat "$ROOT/etc/nmstate/openshift/a.yml")" = a ] && [ "$(cat "$ROOT/etc/app.conf")" = tampered ] &&
  ok "nothing of the update written, the drifted file left as found" || bad "written over drift"
case "$(field reason)" in *"/etc/app.conf: content differs"*) ok "the node's reason names the drifted path" ;;
  *) bad "reason: $(field reason)" ;; esac
jq -r 'select(.name == "n1") | .reason' "$CL/events.jsonl" | grep -qx PreflightConfigDriftCheckFailed &&
  ok "a Warning event PreflightConfigDriftCheckFailed, as MCO's daemon records" || bad "events: $(jq -r .reason "$CL/events.jsonl" | sort -u | paste -sd, -)"
printf one >"$ROOT/etc/app.conf"
expect_rc 0 "the file put back: the update goes ahead" -- agent
expect_grep "^n1 Done $C2\$" "$T/out" "Done at $C2"
[ "$(cat "$ROOT/etc/nmstate/openshift/a.yml")" = b ] && ok "the update is on disk" || bad "update not applied"
[ "$(reboots)" = 0 ] && ok "no reboot so far (the /etc/nmstate/openshift rule is None)" || bad "reboots: $(reboots)"

# --force clears it: the update is applied over drift (mcgit's --force: no reboot)
echo tampered >"$ROOT/etc/app.conf"
desire "$C1"
expect_rc 1 "drift again: refused" -- agent
expect_rc 0 "--force applies the update over drift" -- agent --force
[ "$(cat "$ROOT/etc/app.conf")" = one ] && [ "$(cat "$ROOT/etc/nmstate/openshift/a.yml")" = a ] && [ "$(field state)" = Done ] &&
  ok "--force: the whole config re-applied, Done" || bad "--force: $(field state) $(cat "$ROOT/etc/app.conf")"
[ "$(reboots)" = 0 ] && ok "--force does not reboot" || bad "reboots after --force: $(reboots)"

# ------------------------------------------------------------ the force file
echo tampered >"$ROOT/etc/app.conf"
desire "$C2"
expect_rc 1 "drift again: refused" -- agent
: >"$ROOT/run/machine-config-daemon-force"
expect_rc 0 "the force file: the update is applied over drift" -- agent
expect_grep "^n1 Done $C2\$" "$T/out" "Done at $C2"
[ "$(cat "$ROOT/etc/app.conf")" = one ] && [ "$(cat "$ROOT/etc/nmstate/openshift/a.yml")" = b ] &&
  ok "the whole config written" || bad "force file: not applied"
[ "$(reboots)" = 1 ] && ok "and the node rebooted, as MCO's daemon does with the force file" || bad "reboots: $(reboots)"
[ ! -e "$ROOT/run/machine-config-daemon-force" ] && ok "the force file is removed" || bad "force file left"
expect_rc 0 "the next pass: nothing to do" -- agent
[ "$(reboots)" = 1 ] && ok "no second reboot" || bad "reboots: $(reboots)"
# the force file with the config current: re-applied, and a reboot
echo tampered >"$ROOT/etc/app.conf"
: >"$ROOT/run/machine-config-daemon-force"
expect_rc 0 "the force file at the current config: re-applied" -- agent
[ "$(cat "$ROOT/etc/app.conf")" = one ] && [ "$(reboots)" = 2 ] && ok "drift repaired, and a reboot" ||
  bad "current + force file: $(cat "$ROOT/etc/app.conf"), reboots $(reboots)"

# ------------------------------------------------------------ a MachineConfig writing the force file
R=$T/repo
"$MCGIT" init "$R" >/dev/null 2>&1
cat >"$R/machineconfigs/50-worker-force.yaml" <<'EOF'
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 50-worker-force
  labels: {machineconfiguration.openshift.io/role: worker}
spec:
  config:
    ignition: {version: 3.4.0}
    storage:
      files:
      - path: /etc/harmless.conf
        contents: {source: "data:,x"}
      - path: /run/machine-config-daemon-force
        contents: {source: "data:,"}
EOF
expect_rc 1 "mcgit validate refuses a MachineConfig that writes the force file" -- "$MCGIT" validate "$R"
expect_grep "machineconfigs/50-worker-force.yaml:13:.*/run/machine-config-daemon-force cannot be written by a MachineConfig" "$T/err" \
  "with its file and line"
expect_rc 1 "and so does mcgit render" -- "$MCGIT" render "$R"
expect_grep "50-worker-force.yaml:13:" "$T/err" "render names the file and line too"
# the agent's second line: a rendered config holding it is refused, nothing written
CF=$(publish '{'"$IGN"',"storage":{"files":['"$(file /etc/app.conf one)"','"$(file /run/machine-config-daemon-force x)"']}}')
desire "$CF"
expect_rc 1 "the agent refuses a rendered config that writes the force file" -- agent
expect_grep "^n1 Degraded .*/run/machine-config-daemon-force cannot be written by a MachineConfig" "$T/out" "Degraded, naming it"
[ ! -e "$ROOT/run/machine-config-daemon-force" ] && [ "$(reboots)" = 2 ] && ok "nothing written, no reboot" ||
  bad "force file written by a config"

# ------------------------------------------------------------ taking over a node MCO managed
# MCO's daemon left its records: orig/<path>.mcdorig (what was there before
# it) and noorig/<path>.mcdnoorig (a file it created). Deleting the
# MachineConfig under mcgit puts MCO's original back, or removes MCO's file.
CL2=$T/cl2
"$MCGIT" node add --cluster "local:$CL2" n1 >/dev/null
N=$CL2/roots/n1
mkdir -p "$N/etc/systemd/system" "$N/etc/machine-config-daemon/orig/etc/systemd/system" \
  "$N/etc/machine-config-daemon/noorig/etc/systemd/system"
printf 'root:x:0:0::/root:/bin/sh\n' >"$N/etc/passwd"; printf 'root:x:0:\n' >"$N/etc/group"
printf 'from MCO\n' >"$N/etc/chrony.conf"
printf 'os default\n' >"$N/etc/machine-config-daemon/orig/etc/chrony.conf.mcdorig"
printf 'made by MCO\n' >"$N/etc/mco-made.conf"
: >"$N/etc/machine-config-daemon/noorig/etc/mco-made.conf.mcdnoorig"
printf '[Service]\nExecStart=/bin/mco\n' >"$N/etc/systemd/system/mco.service"
: >"$N/etc/machine-config-daemon/noorig/etc/systemd/system/mco.service.mcdnoorig"
printf 'before mcgit\n' >"$N/etc/plain.conf"
node_cfg_helpers "$CL2"
a2() { "$MCGIT" agent --node n1 --cluster "local:$CL2" --once -q "$@"; }
unit='{"name":"mco.service","contents":"[Service]\nExecStart=/bin/mco\n"}'
T1=$(publish '{'"$IGN"',"storage":{"files":['"$(file /etc/chrony.conf from%20MCO%0A)"','"$(file /etc/mco-made.conf made%20by%20MCO%0A)"','"$(file /etc/plain.conf mcgit%0A)"']},"systemd":{"units":['"$unit"']}}')
T0=$(publish '{'"$IGN"'}')
desire "$T1"
expect_rc 0 "mcgit takes over the node with MCO's MachineConfigs" -- a2
desire "$T0"
expect_rc 0 "the MachineConfigs deleted" -- a2
[ "$(cat "$N/etc/chrony.conf")" = "os default" ] && ok "a file MCO had replaced: MCO's orig/ backup is put back" ||
  bad "chrony.conf: $(cat "$N/etc/chrony.conf" 2>&1)"
[ ! -e "$N/etc/mco-made.conf" ] && ok "a file MCO created (its noorig/ stamp): removed" || bad "mco-made.conf left: $(cat "$N/etc/mco-made.conf")"
[ ! -e "$N/etc/systemd/system/mco.service" ] && ok "a unit MCO created: removed" || bad "mco.service left"
[ "$(cat "$N/etc/plain.conf")" = "before mcgit" ] && ok "a file with no MCO record: what was there before mcgit is back" ||
  bad "plain.conf: $(cat "$N/etc/plain.conf" 2>&1)"

# ------------------------------------------------------------ presets
# MCO's writeUnits: a unit whose `enabled` is unset gets `systemctl preset`
# (on a live host: a fake root bound to the node, systemctl recorded)
CL3=$T/cl3
H=$T/host
mkdir -p "$H/etc"
echo 0123456789abcdef0123456789abcdef >"$H/etc/machine-id"
printf 'root:x:0:0::/root:/bin/sh\n' >"$H/etc/passwd"; printf 'root:x:0:\n' >"$H/etc/group"
"$MCGIT" node add --cluster "local:$CL3" n1 >/dev/null
"$MCGIT" node bind --cluster "local:$CL3" n1 --root "$H" >/dev/null
node_cfg_helpers "$CL3"
U='"[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"'
P1=$(publish '{'"$IGN"',"systemd":{"units":[{"name":"unset.service","contents":'"$U"'},{"name":"on.service","enabled":true,"contents":'"$U"'},{"name":"off.service","enabled":false,"contents":'"$U"'},{"name":"masked.service","mask":true},{"name":"crio.service","dropins":[{"name":"10-x.conf","contents":"[Service]\nEnvironment=X=1\n"}]}]}}')
desire "$P1"
"$MCGIT" agent --node n1 --cluster "local:$CL3" --root "$H" --live --once -q \
  --systemctl "echo >>$T/systemctl.log" --reboot-command true >"$T/out" 2>&1 || true
presets=$(grep '^preset ' "$T/systemctl.log" 2>/dev/null | sort | paste -sd' ' -)
[ "$presets" = "preset crio.service preset unset.service" ] &&
  ok "systemctl preset for each unit whose enabled is unset (a drop-in's unit too), none for enabled, disabled or masked" ||
  bad "presets: '$presets' ($(cat "$T/systemctl.log" 2>&1))"
# a simulated node runs nothing, and says so
node_cfg_helpers "$CL2"
T2=$(publish '{'"$IGN"',"systemd":{"units":[{"name":"unset.service","contents":'"$U"'}]}}')
desire "$T2"
"$MCGIT" agent --node n1 --cluster "local:$CL2" --once -v >"$T/out" 2>&1 || true
grep -q "skipped (not live): systemctl preset 'unset.service'" "$T/out" && ok "a simulated node logs the preset as skipped" ||
  bad "no skipped preset logged: $(grep -i preset "$T/out")"

# ------------------------------------------------------------ one refused MachineConfig, every pool
# MCO renders each pool alone: a bad worker MachineConfig leaves master's
# render alone. In mcgit a commit is one verified unit: a commit holding a
# refused worker MachineConfig is refused whole, so master's change in the
# same commit waits too (docs/mco-migration.md says why).
fixture_signed_repo "$T/pr"
PR=$T/pr
mc() { # NAME ROLE PATH DATA
  cat >"$PR/machineconfigs/$1.yaml" <<EOF
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: $1
  labels: {machineconfiguration.openshift.io/role: $2}
spec:
  config:
    ignition: {version: 3.4.0}
    storage:
      files:
      - path: $3
        contents: {source: "data:,$4"}
EOF
}
PCL=local:$T/pcl
"$MCGIT" node add --cluster "$PCL" m0 --labels node-role.kubernetes.io/master= >/dev/null
pctl() { "$MCGIT" controller --repo "$PR" --trust "$T/trust" --cluster "$PCL" --once >"$T/pctl.out" 2>&1 || true; }
pstatus() { "$MCGIT" status --cluster "$PCL" -o json | jq --arg p "$1" '.items[] | select(.metadata.name == $p)'; }
ptarget() { pstatus "$1" | jq -r '.spec.configuration.name // empty'; }
mc 50-master-a master /etc/a one
scommit "$PR" op "master a=one"
pctl
M1=$(ptarget master)
[ -n "$M1" ] && ok "master renders ($M1)" || bad "master did not render: $(tail -3 "$T/pctl.out")"
mc 50-master-a master /etc/a two
mc 60-worker-force worker /run/machine-config-daemon-force x
scommit "$PR" op "master a=two, and a refused worker MachineConfig"
pctl
[ "$(ptarget master)" = "$M1" ] && ok "the commit with a refused worker MachineConfig moves no pool, master included" ||
  bad "master moved to $(ptarget master)"
pstatus master | jq -r '.status.conditions[] | select(.type == "RenderDegraded") | "\(.status) \(.message)"' >"$T/cond"
expect_grep "^True .*60-worker-force.yaml:[0-9]+:.*machine-config-daemon-force" "$T/cond" \
  "master's RenderDegraded names the worker MachineConfig, file and line"
git -C "$PR" rm -q machineconfigs/60-worker-force.yaml
scommit "$PR" op "the refused MachineConfig removed"
pctl
[ -n "$(ptarget master)" ] && [ "$(ptarget master)" != "$M1" ] && ok "once it is removed, master's change renders" ||
  bad "master: $(ptarget master)"

finish
