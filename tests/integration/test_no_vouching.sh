#!/usr/bin/env bash
# test_no_vouching.sh — nothing is vouched for by a later commit
# (docs/trust.md, "Trust changes"), through every entry point.
#
# On a forge without mcgit's hook (the documented webhook set-up):
#   N1  one signer, alice, alone deletes .mcgit/policy.yaml (two signers
#       required) and adds her key to master's core user;
#   N2  bob's key is revoked; a thief holding it pushes a commit that adds an
#       outsider's key to .mcgit/allowed_signers and to master's core user.
# Each time the controller refuses the commit; then alice tries
# `mcgit heartbeat` (refused: it verifies what it signs on), and signs a
# commit with git on top and pushes it. The controller, `mcgit fetch`,
# `bundle import` and a first push to a new server with hooks must all
# still refuse the bad commit: the master node never gets the key. Then the
# operator resets the forge to the last good commit and the fleet moves on.
. "$(dirname "$0")/lib.sh"
need jq
unset GIT_AUTHOR_DATE GIT_COMMITTER_DATE # heartbeats are dated now: every commit is

mkkey alice ed25519
mkkey bob ed25519
mkkey carol ed25519
mkkey outsider ed25519
TR=$T/trust
{ signer_line alice@example.com alice; signer_line bob@example.com bob; signer_line carol@example.com carol; } >"$TR"
: >"$T/revoked"

FORGE=$T/forge.git
git init -q --bare "$FORGE" # no hooks: anyone with push access moves main
W=$T/w
"$MCGIT" init "$W" >/dev/null 2>&1
sign_setup "$W" "$TR"
git -C "$W" remote add origin "$FORGE"
mkdir -p "$W/.mcgit"
cat >"$W/.mcgit/policy.yaml" <<'EOF'
approvals:
- paths: ["pools/master.yaml", ".mcgit/*", "machineconfigs/*master*"]
  required: 2
EOF
scommit "$W" alice "policy: two signers for master and trust"
git -C "$W" push -q origin main
GOOD=$(git -C "$W" rev-parse HEAD)

CL=local:$T/cl
"$MCGIT" node add --cluster "$CL" m0 --labels node-role.kubernetes.io/master= >/dev/null
git clone -q --bare "$FORGE" "$T/mirror"
pass() {
  "$MCGIT" controller --repo "$T/mirror" --trust "$TR" --revoked "$T/revoked" --cluster "$CL" --once \
    >"$T/ctl.out" 2>"$T/ctl.err" || true
  "$MCGIT" agent --node m0 --cluster "$CL" --once -q >/dev/null 2>&1 || true
}
keys() { cat "$T/cl/roots/m0/home/core/.ssh/authorized_keys.d/ignition" "$T/cl/roots/m0/home/core/.ssh/authorized_keys" 2>/dev/null || true; }
pass
[ "$(git -C "$T/mirror" rev-parse main)" = "$GOOD" ] && ok "the controller runs the good commit" || bad "mirror main"

master_key() { # master_key KEYNAME: a MachineConfig giving core that key on masters
  cat >"$W/machineconfigs/99-master-ssh.yaml" <<MC
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 99-master-ssh
  labels:
    machineconfiguration.openshift.io/role: master
spec:
  config:
    ignition:
      version: 3.4.0
    passwd:
      users:
      - name: core
        sshAuthorizedKeys:
        - $(cut -d' ' -f1,2 "$T/keys/$1.pub")
MC
}

# attempt NAME BADSHA: the bad commit BADSHA is on the forge; alice tries to
# carry it; every receiver must refuse it.
attempt() {
  local name=$1 badsha=$2 before
  pass
  [ "$(git -C "$T/mirror" rev-parse main)" = "$GOOD" ] && ok "$name: the controller refuses the commit" ||
    bad "$name: the controller moved to $(git -C "$T/mirror" rev-parse main)"
  expect_rc 1 "$name: mcgit heartbeat on top is refused" -- "$MCGIT" heartbeat --repo "$W" --key "$T/keys/alice" --revoked "$T/revoked"
  expect_grep "refusing to sign on top of unverified history: commit ${badsha:0:12}" "$T/err" "$name: (it names the commit)"
  [ "$(git -C "$W" rev-parse HEAD)" = "$badsha" ] && ok "$name: (nothing written)" || bad "$name: heartbeat moved main"
  echo x >>"$W/NOTES"
  scommit "$W" alice "alice, on top"
  expect_rc 1 "$name: mcgit approve of a commit on top is refused" -- \
    "$MCGIT" approve --repo "$W" HEAD --key "$T/keys/carol" --revoked "$T/revoked"
  expect_grep "refusing to sign on top of unverified history" "$T/err" "$name: (approve says why)"
  expect_rc 0 "$name: alice's ordinary commit on top reaches the forge" -- git -C "$W" push -q origin main
  pass
  [ "$(git -C "$T/mirror" rev-parse main)" = "$GOOD" ] && ok "$name: the controller still refuses (no vouching)" ||
    bad "$name: the controller accepted the history (vouched)"
  if keys | grep -q "$(cut -d' ' -f2 "$T/keys/$3.pub")"; then bad "$name: the master node got the key"; else ok "$name: the master node never got the key"; fi
  # a new mirror: mcgit fetch of the whole history
  rm -rf "$T/m2" && git init -q --bare "$T/m2" && git -C "$T/m2" remote add origin "$FORGE"
  expect_rc 1 "$name: mcgit fetch into a new mirror refuses" -- "$MCGIT" fetch --repo "$T/m2" --trust "$TR" --revoked "$T/revoked"
  [ -z "$(git -C "$T/m2" for-each-ref refs/heads)" ] && ok "$name: (no branch moved)" || bad "$name: fetch moved a branch"
  # an existing mirror fed by mcgit fetch
  expect_rc 1 "$name: mcgit fetch into the mirror refuses" -- "$MCGIT" fetch --repo "$T/mirror" --trust "$TR" --revoked "$T/revoked"
  # a new site importing the whole history, and an existing one
  "$MCGIT" bundle create --repo "$W" "$T/b.bundle" 2>/dev/null
  rm -rf "$T/site" && git init -q --bare "$T/site"
  expect_rc 1 "$name: bundle import at a new site refuses" -- "$MCGIT" bundle import --repo "$T/site" "$T/b.bundle" --trust "$TR" --revoked "$T/revoked" -q
  before=$(git -C "$T/mirror" for-each-ref)
  expect_rc 1 "$name: bundle import at an existing site refuses" -- "$MCGIT" bundle import --repo "$T/mirror" "$T/b.bundle" --trust "$TR" --revoked "$T/revoked" -q
  [ "$(git -C "$T/mirror" for-each-ref)" = "$before" ] && ok "$name: (nothing changed)" || bad "$name: import changed refs"
  # a first push to a new server with hooks
  rm -rf "$T/srv.git" && fixture_server "$T/srv.git" "$TR"
  "$MCGIT" hook install --repo "$T/srv.git" --trust "$TR" --revoked "$T/revoked" >/dev/null 2>&1
  expect_rc 1 "$name: a first push to a new server refuses" -- git -C "$W" push "$T/srv.git" main
  expect_rc 1 "$name: mcgit verify says bad" -- "$MCGIT" verify --repo "$W" --trust "$TR" --revoked "$T/revoked"
  expect_grep "^bad ${badsha}" "$T/out" "$name: (and names the commit)"
  # the operator's way out: the forge back to the last good commit
  git -C "$W" reset -q --hard "$GOOD"
  expect_rc 0 "$name: the operator resets the forge to the last good commit" -- git -C "$W" push -q -f origin main
  expect_rc 0 "$name: then a heartbeat is signed" -- "$MCGIT" heartbeat --repo "$W" --key "$T/keys/alice" --revoked "$T/revoked"
  git -C "$W" push -q origin main
  pass
  [ "$(git -C "$T/mirror" rev-parse main)" = "$(git -C "$W" rev-parse main)" ] && ok "$name: the controller moves on" ||
    bad "$name: the controller is stuck: $(tail -2 "$T/ctl.err")"
  GOOD=$(git -C "$W" rev-parse main)
}

# ---------------------------------------------------------------- N1
git -C "$W" rm -q .mcgit/policy.yaml
master_key alice
scommit "$W" alice "alice alone: drop the policy, add her key to masters"
N1=$(git -C "$W" rev-parse HEAD)
git -C "$W" push -q origin main
attempt "N1 one signer" "$N1" alice

# ---------------------------------------------------------------- N2
ssh-keygen -q -k -f "$T/revoked" "$T/keys/bob.pub"
signer_line outsider@example.com outsider >>"$W/.mcgit/allowed_signers"
master_key outsider
scommit "$W" bob "thief with bob's revoked key: an outsider's key"
N2=$(git -C "$W" rev-parse HEAD)
git -C "$W" push -q origin main
attempt "N2 revoked key" "$N2" outsider

# the outsider's own commits on the thief's history are bad too
git -C "$W" reset -q --hard "$N2"
echo y >>"$W/NOTES"; scommit "$W" outsider "outsider on the thief's history"
expect_rc 1 "the outsider's commit on the thief's history is refused by verify" -- \
  "$MCGIT" verify --repo "$W" --trust "$TR" --revoked "$T/revoked"
expect_grep "^bad $(git -C "$W" rev-parse HEAD)" "$T/out" "(the outsider's commit is bad, not 'good')"
git -C "$W" reset -q --hard "$GOOD"

# the control: the same change made by two signers reaches the master node
master_key carol
scommit "$W" alice "carol's key on masters, approved"
expect_rc 0 "carol approves alice's commit" -- "$MCGIT" approve --repo "$W" HEAD --key "$T/keys/carol" --revoked "$T/revoked"
git -C "$W" push -q origin main refs/notes/mcgit-approvals
pass; pass
keys | grep -q "$(cut -d' ' -f2 "$T/keys/carol.pub")" && ok "control: an approved key reaches the master node" ||
  bad "control: the approved key never arrived (the check above could not fail): $(tail -2 "$T/ctl.err")"

finish
