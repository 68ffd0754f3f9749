#!/usr/bin/env bash
# test_sorted_errors.sh — a report of many problems lists them by file, then
# line, then message, whatever order the checks ran in (pools are checked
# before MachineConfigs; a duplicate name only at the end): validate,
# render of a directory, and a refused push's
# remote: lines from the pre-receive hook.
. "$(dirname "$0")/lib.sh"

R=$T/cfg
"$MCGIT" init "$R" >/dev/null 2>&1
cat >"$R/machineconfigs/20-b.yaml" <<'YAML'
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 20-b
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  config:
    ignition:
      version: 3.4.0
    storage:
      files:
      - path: relative/path
        mode: 4755
      - path: /etc/ok
        mode: 9999
YAML
cat >"$R/machineconfigs/10-a.yaml" <<'YAML'
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 10-a
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  config:
    ignition:
      version: 3.4.0
    storage:
      files:
      - path: also/relative
YAML
cat >"$R/pools/infra.yaml" <<'YAML'
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: infra
spec:
  maxUnavailable: 150%
  machineConfigSelector:
    matchLabels:
      machineconfiguration.openshift.io/role: infra
YAML
# sorted FILE: its "mcgit CMD: FILE:LINE: ..." lines are in file, line, message order
sorted() {
  sed -E 's/^(mcgit [a-z]+: |remote: mcgit: refusing [^:]+: )//' "$1" | grep -E '^[^ :]+:[0-9]+:' >"$T/locs"
  [ "$(wc -l <"$T/locs")" -ge 4 ] || return 1
  LC_ALL=C sort -t: -k1,1 -k2,2n -k3 "$T/locs" | cmp -s - "$T/locs"
}
expect_rc 1 "validate a directory with problems in three files" -- "$MCGIT" validate "$R"
sorted "$T/err" && ok "validate lists them by file, then line" || { bad "validate order"; cat "$T/err"; }
head -1 "$T/err" | grep -q "^mcgit validate: machineconfigs/10-a.yaml:13:" && ok "(10-a.yaml first, though pools are checked first)" || bad "first: $(head -1 "$T/err")"
cp "$T/err" "$T/validate.err"
expect_rc 1 "render the same directory" -- "$MCGIT" render "$R"
sorted "$T/err" && ok "render: the same order" || { bad "render order"; cat "$T/err"; }
[ "$(sed 's/^mcgit render: //' "$T/err")" = "$(sed 's/^mcgit validate: //' "$T/validate.err")" ] \
  && ok "(the same lines as validate)" || bad "render and validate differ"
# the same files in another creation order: the same report
R2=$T/cfg2
"$MCGIT" init "$R2" >/dev/null 2>&1
for f in pools/infra.yaml machineconfigs/20-b.yaml machineconfigs/10-a.yaml; do cp "$R/$f" "$R2/$f"; done
expect_rc 1 "validate a copy made in another order" -- "$MCGIT" validate "$R2"
cmp -s "$T/err" "$T/validate.err" && ok "(byte-identical report)" || bad "report differs"

# a push through the pre-receive hook
mkkey op ed25519
signer_line op@example.com op >"$T/trust"
sign_setup "$R" "$T/trust"
scommit "$R" op "broken"
fixture_server "$T/server.git"
git -C "$R" push -q "$T/server.git" main >"$T/out" 2>"$T/push.err" && bad "broken push accepted" || ok "the push is refused"
grep "refusing refs/heads/main: " "$T/push.err" >"$T/refusals" || true
sorted "$T/refusals" && ok "the hook's remote: lines are by file, then line" || { bad "hook order"; cat "$T/push.err"; }
finish
