#!/usr/bin/env bash
# test_owners.sh — file owners on simulated nodes. `mcgit node add` gives a
# local node's root an etc/passwd and etc/group naming root and core, so the
# documented MachineConfig (a file owned by root) applies on the documented
# local cluster instead of leaving every node Degraded; and `mcgit plan`
# warns, before anything rolls out, about an owner a node lacks.
. "$(dirname "$0")/lib.sh"

CL=$T/cl
R=$T/repo
fixture_signed_repo "$R"
scommit "$R" op "initial"

# ---------------------------------------------------------------- node add
for n in w0 w1; do
  expect_rc 0 "node add $n" -- "$MCGIT" node add --cluster "local:$CL" "$n" --labels node-role.kubernetes.io/worker=
done
grep -qx 'root:x:0:0:root:/root:/bin/bash' "$CL/roots/w0/etc/passwd" &&
  grep -q '^core:x:1000:1000:' "$CL/roots/w0/etc/passwd" && ok "node add seeds etc/passwd with root and core" ||
  { bad "etc/passwd of a new node"; cat "$CL/roots/w0/etc/passwd" 2>&1 | sed "s/^/    /" || true; }
[ "$(cat "$CL/roots/w0/etc/group")" = "$(printf 'root:x:0:\ncore:x:1000:')" ] &&
  ok "node add seeds etc/group with root and core" || bad "etc/group of a new node"
mkdir -p "$CL/roots/w2/etc" && echo 'root:x:0:0::/root:/bin/sh' >"$CL/roots/w2/etc/passwd"
expect_rc 0 "node add over a root that has its own passwd" -- "$MCGIT" node add --cluster "local:$CL" w2
[ "$(cat "$CL/roots/w2/etc/passwd")" = 'root:x:0:0::/root:/bin/sh' ] && [ -f "$CL/roots/w2/etc/group" ] &&
  ok "an existing etc/passwd is kept, a missing etc/group seeded" || bad "node add changed an existing passwd"
"$MCGIT" node remove --cluster "local:$CL" w2

# ---------------------------------------------------------------- the docs' example applies
# docs/config-repo.md's MachineConfig: a file owned by root, a directory.
cat >"$R/machineconfigs/50-worker-chrony.yaml" <<'EOF'
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 50-worker-chrony
  labels: {machineconfiguration.openshift.io/role: worker}
spec:
  config:
    ignition: {version: 3.4.0}
    storage:
      files:
      - path: /etc/chrony.conf
        mode: 0644
        user: {name: root}
        contents:
          source: data:,pool%200.pool.ntp.org%0A
      directories: [{path: /etc/myapp, mode: 0750}]
EOF
scommit "$R" op "chrony, owned by root"
expect_rc 0 "plan of a root-owned file" -- "$MCGIT" plan --repo "$R" --trust "$T/trust" --cluster "local:$CL"
! grep -q "warning" "$T/err" && ok "no owner warning: every node has root" || { bad "plan warned"; sed 's/^/    /' "$T/err"; }
expect_rc 0 "controller pass" -- "$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "local:$CL" --once -q
expect_rc 0 "agent w0 applies it" -- "$MCGIT" agent --node w0 --cluster "local:$CL" --once -q
expect_rc 0 "status nodes" -- "$MCGIT" status --cluster "local:$CL" nodes
expect_grep "^w0 +rendered-worker-[0-9a-f]+ +rendered-worker-[0-9a-f]+ +Done" "$T/out" "w0 is Done, not Degraded"
[ "$(cat "$CL/roots/w0/etc/chrony.conf")" = "pool 0.pool.ntp.org" ] && ok "the root-owned file is written" ||
  bad "no /etc/chrony.conf on w0"

# ---------------------------------------------------------------- plan warns about owners
sed -i 's/user: {name: root}/user: {name: chrony}\n        group: {name: chrony}/' "$R/machineconfigs/50-worker-chrony.yaml"
scommit "$R" op "chrony, owned by chrony"
echo 'chrony:x:994:994::/var/lib/chrony:/sbin/nologin' >>"$CL/roots/w1/etc/passwd"
expect_rc 0 "plan of a chrony-owned file" -- "$MCGIT" plan --repo "$R" --trust "$T/trust" --cluster "local:$CL"
want="has no %s 'chrony' in /etc/%s \\(it owns /etc/chrony.conf\\): the agent would refuse this config there \\(Degraded\\)"
expect_grep "^mcgit plan: warning: pool worker: node w0 $(printf "$want" user passwd)$" "$T/err" "w0 lacks user chrony"
expect_grep "^mcgit plan: warning: pool worker: node w0 $(printf "$want" group group)$" "$T/err" "w0 lacks group chrony"
expect_grep "^mcgit plan: warning: pool worker: node w1 $(printf "$want" group group)$" "$T/err" "w1 lacks group chrony"
! grep -q "node w1 has no user" "$T/err" && ok "w1 has user chrony: no warning for it" || bad "w1 user warned"
[ "$(grep -c warning "$T/err")" = 3 ] && ok "three warnings, one per node and name" || { bad "warnings"; sed 's/^/    /' "$T/err"; }
expect_rc 0 "plan -o json" -- "$MCGIT" plan --repo "$R" --trust "$T/trust" --cluster "local:$CL" -o json
python3 -c 'import json,sys; w=json.load(open(sys.argv[1]))["warnings"]; sys.exit(0 if sum("chrony" in x for x in w) == 3 else 1)' "$T/out" &&
  ok "the json plan lists the owner warnings" || bad "json warnings"
# without a cluster (or with kube), names other than root and core cannot be checked
expect_rc 0 "plan without a cluster" -- env -u MCGIT_CLUSTER "$MCGIT" plan --repo "$R" --trust "$T/trust"
expect_grep "^mcgit plan: warning: pool worker: user 'chrony' \\(it owns /etc/chrony.conf\\) is not checked, no node root to read: a node without it refuses this config \\(Degraded\\)$" \
  "$T/err" "unchecked owner named without a cluster"
[ "$(grep -c warning "$T/err")" = 2 ] && ok "user and group chrony, nothing for root" || { bad "warnings"; sed 's/^/    /' "$T/err"; }

# ---------------------------------------------------------------- owners from the OS image
# RHCOS keeps its system users in /usr/lib/passwd and /usr/lib/group, read
# through nss-altfiles: a name found there is the node's, as NSS would say.
mkdir -p "$CL/roots/w0/usr/lib"
echo 'chrony:x:994:994::/var/lib/chrony:/sbin/nologin' >"$CL/roots/w0/usr/lib/passwd"
echo 'chrony:x:994:' >"$CL/roots/w0/usr/lib/group"
expect_rc 0 "plan again" -- "$MCGIT" plan --repo "$R" --trust "$T/trust" --cluster "local:$CL"
! grep -q "node w0" "$T/err" && ok "w0's owners found in /usr/lib: no warning for w0" || { bad "w0 warned"; sed 's/^/    /' "$T/err"; }
"$MCGIT" node remove --cluster "local:$CL" w1 # it never ran its agent: it holds the rollout
"$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "local:$CL" --once -q >/dev/null 2>&1 || true
expect_rc 0 "agent w0 applies the chrony-owned file" -- "$MCGIT" agent --node w0 --cluster "local:$CL" --once -q
[ "$(stat -c %u:%g "$CL/roots/w0/etc/chrony.conf")" = 994:994 ] || [ "$(id -u)" != 0 ] &&
  ok "owned by chrony (994) from /usr/lib/passwd and /usr/lib/group" || bad "owner: $(stat -c %u:%g "$CL/roots/w0/etc/chrony.conf")"

finish
