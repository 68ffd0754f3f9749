#!/usr/bin/env bash
# test_approvals.sh — the two-person rule of .mcgit/policy.yaml, through the
# real hooks (git push), `mcgit approve` (ssh-keygen signing as git does),
# bundles and a fresh `mcgit verify`: 2 of 3 signers for pools/master.yaml
# and .mcgit/*.
. "$(dirname "$0")/lib.sh"

mkkey alice ed25519
mkkey bob ed25519
mkkey carol ed25519
mkkey mallory ed25519
TR=$T/trust
{ signer_line alice@example.com alice; signer_line bob@example.com bob; signer_line carol@example.com carol; } >"$TR"

S=$T/srv.git
fixture_server "$S" "$TR"
W=$T/w
"$MCGIT" init "$W" >/dev/null 2>&1
sign_setup "$W" "$TR"
git -C "$W" remote add origin "file://$S"
srefs() { git -C "$S" for-each-ref --format='%(refname) %(objectname)'; }

mkdir -p "$W/.mcgit"
cat >"$W/.mcgit/policy.yaml" <<'EOF'
approvals:
- paths: ["pools/master.yaml", ".mcgit/*"]
  required: 2
EOF
scommit "$W" alice "policy: two signers for master and trust"
expect_rc 0 "the first push (policy introduced by the first commit) is accepted" -- git -C "$W" push -q origin main

# a change outside the rule: one signer is enough
echo "# worker" >>"$W/pools/worker.yaml"; scommit "$W" alice "worker change"
expect_rc 0 "a change no rule names needs no approval" -- git -C "$W" push -q origin main

# a change to pools/master.yaml by alice alone is refused
echo "# master" >>"$W/pools/master.yaml"; scommit "$W" alice "master change"
M=$(git -C "$W" rev-parse HEAD)
before=$(srefs)
if git -C "$W" push origin main >"$T/push.out" 2>&1; then bad "master change without approval accepted"
else
  expect_grep "refusing refs/heads/main: commit ${M:0:12}: approvals rule 1 \(pools/master.yaml\) needs 2 distinct trusted signers, has 1: 1 approval missing" \
    "$T/push.out" "the refusal names the rule and how many approvals are missing"
fi
[ "$(srefs)" = "$before" ] && ok "the refusal changed nothing" || bad "server refs moved"

# alice approving her own commit does not count twice
expect_rc 0 "mcgit approve by alice herself" -- "$MCGIT" approve --repo "$W" HEAD --key "$T/keys/alice"
expect_rc 1 "alice's own approval does not make two signers" -- git -C "$W" push origin main refs/notes/mcgit-approvals
# mallory (untrusted) approving does not count
expect_rc 0 "mcgit approve by mallory" -- "$MCGIT" approve --repo "$W" HEAD --key "$T/keys/mallory"
expect_rc 1 "an untrusted approval does not count" -- git -C "$W" push origin main refs/notes/mcgit-approvals
# bob approves (signing key from git config, as git signs)
git -C "$W" config user.signingkey "$T/keys/bob"
expect_rc 0 "mcgit approve by bob (git's signing configuration)" -- "$MCGIT" approve --repo "$W" "$M"
expect_grep "^approved $M" "$T/out" "approve prints the approved commit"
N0=$(git -C "$W" rev-parse refs/notes/mcgit-approvals)
expect_rc 0 "the same approval twice changes nothing" -- "$MCGIT" approve --repo "$W" "$M"
expect_grep "^commit $M already carries this approval; nothing changed$" "$T/out" "(and says so)"
[ "$(git -C "$W" rev-parse refs/notes/mcgit-approvals)" = "$N0" ] && ok "(no notes commit written)" || bad "a notes commit was written"
git -C "$W" config --unset user.signingkey
expect_rc 0 "the branch and its approvals in one push are accepted" -- git -C "$W" push -q origin main refs/notes/mcgit-approvals
[ "$(git -C "$S" rev-parse main)" = "$M" ] && ok "server main is the approved commit" || bad "server main"

# a policy change is subject to the policy before it
sed -i 's/required: 2/required: 1/' "$W/.mcgit/policy.yaml"; scommit "$W" alice "weaken the policy alone"
expect_rc 1 "weakening the policy alone is refused (the old policy applies)" -- git -C "$W" push origin main
git -C "$W" reset -q --hard "$M"

# the same through a bundle: a mirror refuses without approvals and accepts with them
echo "# master 2" >>"$W/pools/master.yaml"; scommit "$W" carol "carol's master change"
M2=$(git -C "$W" rev-parse HEAD)
git clone -q --bare "$S" "$T/mirror"
git -C "$T/mirror" fetch -q origin refs/notes/mcgit-approvals:refs/notes/mcgit-approvals
"$MCGIT" render --repo "$T/mirror" --trust "$TR" >/dev/null 2>&1
"$MCGIT" bundle create --repo "$W" "$T/no-approval.bundle" --since "$M" 2>/dev/null
before=$(git -C "$T/mirror" for-each-ref)
expect_rc 1 "bundle import without the approval is refused" -- "$MCGIT" bundle import --repo "$T/mirror" "$T/no-approval.bundle" --trust "$TR"
expect_grep "approvals rule 1" "$T/err" "and the reason names the rule"
[ "$(git -C "$T/mirror" for-each-ref)" = "$before" ] && ok "the refused import changed nothing" || bad "mirror changed"
"$MCGIT" approve --repo "$W" "$M2" --key "$T/keys/alice" >/dev/null 2>&1
"$MCGIT" bundle create --repo "$W" "$T/approved.bundle" --since "$M" 2>/dev/null
expect_rc 0 "bundle import with the approval is accepted" -- "$MCGIT" bundle import --repo "$T/mirror" "$T/approved.bundle" --trust "$TR"
[ "$(git -C "$T/mirror" rev-parse main)" = "$M2" ] && ok "the mirror is at the approved commit" || bad "mirror main"
# a fresh verify of the whole history, notes included, is clean; without the notes it is not
rm "$T/mirror/mcgit/verified" # mcgit's private mark: verify from the root
expect_rc 0 "a fresh verify with the approvals accepts the history" -- "$MCGIT" verify --repo "$T/mirror" --trust "$TR"
git clone -q --bare "$S" "$T/nonotes"
expect_rc 1 "a clone without the approvals notes refuses the approved commit" -- "$MCGIT" verify --repo "$T/nonotes" --trust "$TR"

# the controller's fetch brings the approvals with the branch
expect_rc 0 "carol's approved change and its approval pushed to the server" -- git -C "$W" push -q origin main refs/notes/mcgit-approvals
git init -q --bare -b main "$T/ctl"
git -C "$T/ctl" remote add origin "file://$S"
expect_rc 0 "mcgit fetch into a fresh mirror verifies with the fetched approvals" -- "$MCGIT" fetch --repo "$T/ctl" --trust "$TR"
[ "$(git -C "$T/ctl" rev-parse main)" = "$M2" ] && ok "the fetched mirror is at the approved commit" || bad "fetched mirror main"

finish
