#!/usr/bin/env bash
# test_ssh_keys.sh — core's SSH keys as MCO leaves them: in
# /home/core/.ssh/authorized_keys.d/ignition, where Ignition writes them at
# install and MCO's daemon updates them. A key installed there and dropped
# from the MachineConfigs is gone after the rollout; the other files sshd
# would read keys for core from (.ssh/authorized_keys, an older mcgit's
# authorized_keys.d/mcgit) are removed. When core's keys leave the config the
# keys file is left empty, as MCO's daemon writes it, and nothing that was
# there before mcgit (the install key included) comes back: a key the config
# dropped never logs in. A file put back there later is drift, named.
. "$(dirname "$0")/lib.sh"
need jq

R=$T/cfg
fixture_signed_repo "$R"
keys_mc() { # KEY...: core's sshAuthorizedKeys, for pool worker
  { cat <<'EOF'
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 99-worker-ssh
  labels: {machineconfiguration.openshift.io/role: worker}
spec:
  config:
    ignition: {version: 3.4.0}
    passwd:
      users:
      - name: core
        sshAuthorizedKeys:
EOF
    for k in "$@"; do echo "        - $k"; done; } >"$R/machineconfigs/99-worker-ssh.yaml"
}
CL=local:$T/cl
"$MCGIT" node add --cluster "$CL" w0 --labels node-role.kubernetes.io/worker= >/dev/null
H=$T/cl/roots/w0/home/core/.ssh
mkdir -p "$H/authorized_keys.d"
# as installed: Ignition's keys file, a key an admin added by hand, an older mcgit's file
echo "ssh-ed25519 AAAAinstall install@host" >"$H/authorized_keys.d/ignition"
echo "ssh-ed25519 AAAAbyhand byhand@host" >"$H/authorized_keys"
echo "ssh-ed25519 AAAAold old-mcgit@host" >"$H/authorized_keys.d/mcgit"
ctl() { "$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "$CL" --once >/dev/null 2>&1 || true; }
agent() { "$MCGIT" agent --node w0 --cluster "$CL" --once -q >"$T/agent.out" 2>&1 || true; }
state() { jq -r '.metadata.annotations["machineconfiguration.mcgit.io/state"] + " " + (.metadata.annotations["machineconfiguration.mcgit.io/reason"] // "")' "$T/cl/nodes/w0.json"; }
every_key() { cat "$H/authorized_keys" "$H"/authorized_keys.d/* 2>/dev/null | sort | paste -sd' ' -; }

keys_mc "ssh-ed25519 AAAAkeyA a@example.com" "ssh-ed25519 AAAAkeyB b@example.com"
scommit "$R" op "keys A and B"
ctl; agent
[ "$(state)" = "Done " ] && ok "w0 Done" || bad "w0: $(state)"
[ "$(cat "$H/authorized_keys.d/ignition")" = "$(printf 'ssh-ed25519 AAAAkeyA a@example.com\nssh-ed25519 AAAAkeyB b@example.com')" ] &&
  ok "keys in authorized_keys.d/ignition, the file MCO manages" || bad "ignition: $(cat "$H/authorized_keys.d/ignition")"
[ "$(stat -c %a "$H/authorized_keys.d/ignition")" = 600 ] && ok "mode 0600" || bad "mode"
[ ! -e "$H/authorized_keys" ] && [ ! -e "$H/authorized_keys.d/mcgit" ] &&
  ok "the other files sshd reads for core are gone" || bad "left: $(ls -A "$H" "$H/authorized_keys.d")"
[ "$(every_key)" = "ssh-ed25519 AAAAkeyA a@example.com ssh-ed25519 AAAAkeyB b@example.com" ] &&
  ok "every key sshd can read for core is a rendered one" || bad "keys: $(every_key)"
case "$(every_key)" in *install@host*) bad "the install-time key still works" ;; *) ok "the install-time key no longer works" ;; esac

keys_mc "ssh-ed25519 AAAAkeyA a@example.com"
scommit "$R" op "key B revoked"
ctl; agent
[ "$(every_key)" = "ssh-ed25519 AAAAkeyA a@example.com" ] && ok "a key dropped from the MachineConfig is revoked" ||
  bad "keys after revoking B: $(every_key)"

echo "ssh-ed25519 AAAAsneaky sneaky@host" >"$H/authorized_keys"
"$MCGIT" agent --node w0 --cluster "$CL" --once -q >/dev/null 2>&1 || true
case "$(state)" in "Degraded drift: "*"/home/core/.ssh/authorized_keys: present, want absent"*) ok "a keys file put back is drift, named" ;;
  *) bad "after a sneaky authorized_keys: $(state)" ;; esac
rm "$H/authorized_keys"
agent
[ "$(state)" = "Done " ] && ok "removed again: Done by itself" || bad "w0: $(state)"

# core's password hash: MCO's daemon applies the sshkey rule to it too
cat >"$R/machineconfigs/policy.yaml" <<'EOF'
apiVersion: operator.openshift.io/v1
kind: MachineConfiguration
metadata: {name: cluster}
spec:
  nodeDisruptionPolicy:
    sshkey:
      actions:
      - type: Reload
        reload: {serviceName: sshd.service}
EOF
printf 'root:*:19000::::::\ncore:!!:19000::::::\n' >"$T/cl/roots/w0/etc/shadow"
keys_mc "ssh-ed25519 AAAAkeyA a@example.com"
printf '        passwordHash: $6$x$y\n' >>"$R/machineconfigs/99-worker-ssh.yaml"
scommit "$R" op "core's password"
ctl; "$MCGIT" agent --node w0 --cluster "$CL" --once -v >"$T/agent.out" 2>&1 || true
grep -q 'actions Reload sshd.service' "$T/agent.out" && ok "a password change follows the sshkey rule (Reload sshd.service)" ||
  { bad "password actions"; grep actions "$T/agent.out" | sed 's/^/    /'; }
grep -q '^core:\$6\$x\$y:' "$T/cl/roots/w0/etc/shadow" && ok "and the hash is set" || bad "shadow: $(cat "$T/cl/roots/w0/etc/shadow")"

git -C "$R" rm -q machineconfigs/99-worker-ssh.yaml
scommit "$R" op "core's keys no longer managed"
ctl; agent
[ "$(state)" = "Done " ] && ok "keys leaving the config: w0 Done" || bad "w0: $(state)"
[ -f "$H/authorized_keys.d/ignition" ] && [ ! -s "$H/authorized_keys.d/ignition" ] &&
  [ "$(stat -c %a "$H/authorized_keys.d/ignition")" = 600 ] &&
  ok "keys leaving the config: authorized_keys.d/ignition is empty (0600), as MCO writes it" ||
  bad "ignition after unmanaging: $(ls -l "$H/authorized_keys.d/" 2>&1)"
[ ! -e "$H/authorized_keys" ] && [ ! -e "$H/authorized_keys.d/mcgit" ] &&
  ok "and the other keys files stay absent" || bad "left: $(ls -A "$H" "$H/authorized_keys.d")"
[ -z "$(every_key)" ] && ok "no key the config dropped (the install key, the hand-added one) logs in" ||
  bad "keys sshd would still accept for core: $(every_key)"
# a later pass brings none back
agent
[ -z "$(every_key)" ] && [ "$(state)" = "Done " ] && ok "a later pass keeps them out" || bad "later: $(every_key) / $(state)"
# keys given again and dropped again: still nothing from before mcgit
keys_mc "ssh-ed25519 AAAAkeyC c@example.com"
scommit "$R" op "key C"
ctl; agent
[ "$(every_key)" = "ssh-ed25519 AAAAkeyC c@example.com" ] && ok "keys managed again: only the rendered key" || bad "keys: $(every_key)"
git -C "$R" rm -q machineconfigs/99-worker-ssh.yaml
scommit "$R" op "core's keys dropped again"
ctl; agent
[ -z "$(every_key)" ] && [ "$(state)" = "Done " ] && ok "dropped again: no key logs in" || bad "again: $(every_key) / $(state)"
finish
