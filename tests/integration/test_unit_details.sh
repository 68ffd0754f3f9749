#!/usr/bin/env bash
# test_unit_details.sh — systemd units as MCO's daemon leaves them:
#   - a unit the OS ships, disabled by a MachineConfig, is enabled again
#     (its [Install] links put back as they were) when that MachineConfig
#     is deleted;
#   - `contents: ""` is unset: no 0-byte unit file (systemd would load it as
#     masked), and a drop-in whose contents become "" is removed;
#   - `enabled: true` for a unit not on the node is skipped with a log line,
#     not Degraded;
#   - `mask: false` unmasks: a /dev/null link at the unit's path goes;
#   - enabling a unit enables the units its Also= names;
#   - an enablement change under a rule that does not reboot adds a
#     daemon-reload;
#   - `touch /run/machine-config-daemon-force` re-applies the config over
#     drift, and the file is removed.
. "$(dirname "$0")/lib.sh"
need jq

R=$T/cfg
fixture_signed_repo "$R"
CL=local:$T/cl
"$MCGIT" node add --cluster "$CL" w0 --labels node-role.kubernetes.io/worker= >/dev/null
N=$T/cl/roots/w0
mkdir -p "$N/usr/lib/systemd/system" "$N/etc/systemd/system/multi-user.target.wants"
printf '[Service]\nExecStart=/usr/sbin/chronyd\n[Install]\nWantedBy=multi-user.target\n' >"$N/usr/lib/systemd/system/chronyd.service"
ln -s /usr/lib/systemd/system/chronyd.service "$N/etc/systemd/system/multi-user.target.wants/chronyd.service"
printf '[Service]\nExecStart=/usr/bin/kubelet\n' >"$N/usr/lib/systemd/system/kubelet.service"
ln -s /dev/null "$N/etc/systemd/system/debug-shell.service"
printf '[Service]\nExecStart=/usr/bin/iscsid\n[Install]\nWantedBy=multi-user.target\nAlso=iscsid.socket\n' >"$N/usr/lib/systemd/system/iscsid.service"
printf '[Socket]\nListenStream=@ISCSIADM_ABSTRACT_NAMESPACE\n[Install]\nWantedBy=sockets.target\n' >"$N/usr/lib/systemd/system/iscsid.socket"
WANTS=$N/etc/systemd/system/multi-user.target.wants/chronyd.service
ctl() { "$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "$CL" --once >/dev/null 2>&1 || true; }
agent() { "$MCGIT" agent --node w0 --cluster "$CL" --once -v >"$T/agent.out" 2>&1 || true; }
state() { jq -r '.metadata.annotations["machineconfiguration.mcgit.io/state"] + " " + (.metadata.annotations["machineconfiguration.mcgit.io/reason"] // "")' "$T/cl/nodes/w0.json"; }
units_mc() { # NAME UNITS-YAML
  printf 'apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: %s\n  labels: {machineconfiguration.openshift.io/role: worker}\nspec:\n  config:\n    ignition: {version: 3.4.0}\n    systemd:\n      units:\n%s\n' "$1" "$2" >"$R/machineconfigs/$1.yaml"
}

units_mc 50-chrony-off '      - {name: chronyd.service, enabled: false}'
units_mc 60-units '      - {name: kubelet.service, contents: "", enabled: true}
      - name: crio.service
        dropins: [{name: 10-x.conf, contents: "[Service]\nEnvironment=X=1\n"}]
      - {name: not-installed.service, enabled: true}
      - {name: debug-shell.service, mask: false}
      - {name: iscsid.service, enabled: true}'
scommit "$R" op "units"
ctl; agent
[ "$(state)" = "Done " ] && ok "w0 Done" || bad "w0: $(state)"
[ ! -e "$WANTS" ] && [ ! -L "$WANTS" ] && ok "chronyd disabled: its link removed" || bad "chronyd still enabled"
[ ! -e "$N/etc/systemd/system/kubelet.service" ] && ok 'contents: "" writes no unit file (no 0-byte unit, which systemd masks)' ||
  bad "kubelet.service written ($(stat -c %s "$N/etc/systemd/system/kubelet.service") bytes)"
[ "$(readlink "$N/etc/systemd/system/multi-user.target.wants/kubelet.service" 2>/dev/null)" = "" ] &&
  ok "kubelet has no [Install]: nothing to enable" || bad "kubelet link"
[ -f "$N/etc/systemd/system/crio.service.d/10-x.conf" ] && ok "the drop-in written" || bad "drop-in missing"
grep -q "unit not-installed.service: not enabled: no unit file" "$T/agent.out" &&
  ok "enabled: true for a unit not on the node: skipped with a log line" || { bad "no log line"; sed 's/^/    /' "$T/agent.out" | head -5; }
[ ! -L "$N/etc/systemd/system/debug-shell.service" ] && ok "mask: false unmasks (the /dev/null link removed)" ||
  bad "debug-shell still masked"
[ "$(readlink "$N/etc/systemd/system/multi-user.target.wants/iscsid.service")" = /usr/lib/systemd/system/iscsid.service ] &&
  [ "$(readlink "$N/etc/systemd/system/sockets.target.wants/iscsid.socket")" = /usr/lib/systemd/system/iscsid.socket ] &&
  ok "enabling iscsid.service enables its Also=iscsid.socket, as systemctl enable does" ||
  bad "Also= not followed: $(ls "$N/etc/systemd/system/"*.wants 2>&1 | tr '\n' ' ')"

units_mc 60-units '      - {name: kubelet.service, contents: "", enabled: true}
      - name: crio.service
        dropins: [{name: 10-x.conf, contents: ""}]'
scommit "$R" op "drop-in emptied"
ctl; agent
[ "$(state)" = "Done " ] && ok "w0 Done" || bad "w0: $(state)"
[ ! -e "$N/etc/systemd/system/crio.service.d/10-x.conf" ] && ok 'a drop-in whose contents become "" is removed' ||
  bad "drop-in still there"

cat >"$R/machineconfigs/policy.yaml" <<'YAML'
apiVersion: operator.openshift.io/v1
kind: MachineConfiguration
metadata: {name: cluster}
spec:
  nodeDisruptionPolicy:
    units:
    - name: chronyd.service
      actions: [{type: None}]
YAML
git -C "$R" rm -q machineconfigs/50-chrony-off.yaml
scommit "$R" op "chrony no longer disabled"
ctl; agent
grep -q "actions DaemonReload" "$T/agent.out" &&
  ok "its enablement changed under a None rule: a daemon-reload, as MCO's daemon does" ||
  { bad "actions"; grep actions "$T/agent.out" | sed 's/^/    /'; }
[ "$(readlink "$WANTS")" = /usr/lib/systemd/system/chronyd.service ] &&
  ok "the MachineConfig that disabled chronyd deleted: enabled again, its link as before" || bad "chronyd left disabled"
[ "$(state)" = "Done " ] && ok "w0 Done" || bad "w0: $(state)"

# MCO's force file: re-apply whatever the disk holds, then remove the file
units_mc 60-units '      - name: crio.service
        dropins: [{name: 20-y.conf, contents: "[Service]\nEnvironment=Y=1\n"}]'
scommit "$R" op "drop-in y"
ctl; agent
echo tampered >"$N/etc/systemd/system/crio.service.d/20-y.conf"
agent
case "$(state)" in "Degraded drift: "*20-y.conf*) ok "a tampered drop-in: Degraded (drift)" ;; *) bad "after tampering: $(state)" ;; esac
mkdir -p "$N/run" && : >"$N/run/machine-config-daemon-force"
agent
[ "$(state)" = "Done " ] && ok "touch /run/machine-config-daemon-force: re-applied, Done" || bad "after force: $(state)"
[ "$(cat "$N/etc/systemd/system/crio.service.d/20-y.conf")" = "$(printf '[Service]\nEnvironment=Y=1')" ] &&
  ok "the drop-in rewritten" || bad "drop-in: $(cat "$N/etc/systemd/system/crio.service.d/20-y.conf")"
[ ! -e "$N/run/machine-config-daemon-force" ] && ok "the force file removed" || bad "force file left"
grep -q "machine-config-daemon-force found (and removed): re-applying" "$T/agent.out" && ok "and logged" || bad "not logged"
finish
