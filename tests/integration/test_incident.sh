#!/usr/bin/env bash
# test_incident.sh — docs/operations.md's incident runbook, run as written.
#
# Leaked key: bob's key is stolen; the thief pushes a signed MachineConfig
# and it rolls out. The operator revokes the key (a KRL, on the server's
# hooks and the controller), lists what it signed (`verify --all`), pushes a
# rollback signed by alice (still trusted) and watches the nodes return to
# the good config. The thief's key then signs nothing new: not by push, not
# through a mirror, not in a bundle. A new controller, a new mirror (mcgit
# fetch) and a new air-gapped site importing the whole history all accept
# the history (from the checkpoint the operator recorded in the trust root
# when revoking) and render the rollback to the same rendered commit;
# without the checkpoint a new site refuses it. Nothing the key signs after
# the revocation is accepted, whatever trusted commit builds on it.
#
# Departing signer: carol's line is deleted from the trust root after she
# signed, with a checkpoint; the history she signed stays usable, her new
# commits are refused.
. "$(dirname "$0")/lib.sh"
need jq

mkkey op ed25519
mkkey alice ed25519
mkkey bob ed25519
mkkey carol ed25519
ETC=$T/etc
mkdir -p "$ETC"
{
  signer_line op@example.com op
  signer_line alice@example.com alice
  signer_line bob@example.com bob
  signer_line carol@example.com carol
} >"$ETC/allowed_signers"
TR=$ETC/allowed_signers

# the server, with hooks; the operators' clone; a controller's mirror
SV=$T/server.git
fixture_server "$SV" "$TR"
W=$T/work
"$MCGIT" init "$W" >/dev/null
sign_setup "$W" "$TR"
git -C "$W" remote add origin "$SV"
mc() { write_mc "$W" 10-worker worker /etc/motd "$1"; }
mc good
scommit "$W" op "good config"
echo carol >"$W/NOTES"
scommit "$W" carol "carol's note"
git -C "$W" push -q origin main 2>/dev/null
GOOD=$(git -C "$W" rev-parse HEAD)
git clone -q --bare "$SV" "$T/mirror"
CL=local:$T/cl
"$MCGIT" node add --cluster "$CL" w0 --labels node-role.kubernetes.io/worker= >/dev/null
"$MCGIT" node add --cluster "$CL" w1 --labels node-role.kubernetes.io/worker= >/dev/null
# cond POOL TYPE: "status reason message" of a pool condition
cond() { "$MCGIT" status --cluster "$CL" -o json | jq -r --arg p "$1" --arg t "$2" \
  '.items[] | select(.metadata.name == $p) | .status.conditions[] | select(.type == $t) | "\(.status) \(.reason) \(.message)"'; }
pass() { # controller passes (with the given extra options) and the agents: one round a node (maxUnavailable 1)
  local round
  for round in 1 2; do
    "$MCGIT" controller --repo "$T/mirror" --trust "$TR" --cluster "$CL" --once "$@" >"$T/ctl.out" 2>"$T/ctl.err" || return 1
    for n in w0 w1; do "$MCGIT" agent --node "$n" --cluster "$CL" --once -q >/dev/null 2>&1 || true; done
  done
}
motd() { cat "$T/cl/roots/$1/etc/motd" 2>/dev/null; }
pass && [ "$(motd w0)" = good ] && [ "$(motd w1)" = good ] && ok "the good config rolled out" || bad "good config: $(motd w0)"

# ---------------------------------------------------------------- the theft
mc evil
scommit "$W" bob "thief: evil config"
EVIL=$(git -C "$W" rev-parse HEAD)
expect_rc 0 "the thief's push is accepted (bob's key is trusted)" -- git -C "$W" push -q origin main
pass && pass && [ "$(motd w0)$(motd w1)" = evilevil ] && ok "the thief's config rolled out" ||
  bad "evil: $(motd w0) $(motd w1)"

# ---------------------------------------------------------------- the runbook
# 1. revoke the key everywhere
ssh-keygen -q -k -f "$ETC/revoked" "$T/keys/bob.pub"
cp "$TR" "$ETC/allowed_signers.before"
echo "# mcgit-checkpoint: $(git -C "$SV" rev-parse main) key revoked $(date -u +%F)" >>"$TR"
expect_rc 0 "runbook 1: hook install --revoked" -- "$MCGIT" hook install --repo "$SV" --trust "$TR" --revoked "$ETC/revoked"
expect_rc 0 "runbook 1: the controller, with --revoked, keeps its verified history (no refusal)" -- \
  pass --revoked "$ETC/revoked"
expect_grep "^True UntrustedSigner changes by keys not trusted now still in force: ${EVIL:0:12}: file /etc/motd$" \
  <(cond worker UntrustedChanges) "runbook 1: the worker pool says the revoked key's change is in force"
expect_grep "^False  $" <(cond master UntrustedChanges) "runbook 1: the master pool is not affected"
# 2. the blast radius
expect_rc 1 "runbook 2: verify --all lists the revoked key's commit (the tip: bad until a trusted commit builds on it)" -- \
  "$MCGIT" verify --repo "$SV" --trust "$TR" --revoked "$ETC/revoked" --all
expect_grep "^bad $EVIL key SHA256:[^ ]+ is revoked" "$T/out" "runbook 2: the thief's commit is named"
expect_grep "^still-in $EVIL worker: file /etc/motd$" "$T/out" "runbook 2: and what of it the worker pool still runs"
# 3. the rollback, signed by a key still trusted, and pushed
git -C "$W" log --format=%H -- .mcgit >"$T/trustlog"
[ "$(git -C "$W" log --format=%H "$GOOD..main" -- .mcgit)" = "" ] && ok "runbook 3: the thief changed nothing under .mcgit/" ||
  bad "the thief changed .mcgit/"
expect_rc 0 "runbook 3: mcgit rollback, signed by alice" -- "$MCGIT" rollback --repo "$W" "$GOOD" --key "$T/keys/alice" \
  --trust "$TR" --revoked "$ETC/revoked"
ROLL=$(git -C "$W" rev-parse HEAD)
unset GIT_AUTHOR_DATE GIT_COMMITTER_DATE # the rollback is dated now: what follows too
expect_rc 0 "runbook 3: the rollback's push is accepted" -- git -C "$W" push origin main
if grep -q "render failed" "$T/err"; then bad "post-receive: $(grep 'render failed' "$T/err")"; else ok "post-receive renders the rollback"; fi
[ "$(git -C "$SV" log -1 --format=%B rendered | sed -n 's/^Source-Commit: //p')" = "$ROLL" ] &&
  ok "the server's rendered branch is at the rollback" || bad "server rendered: $(git -C "$SV" log -1 --format=%B rendered)"
SRV_RENDERED=$(git -C "$SV" rev-parse rendered)
# 4. watch the nodes return (one node at a time: maxUnavailable 1)
expect_rc 0 "runbook 4: a controller pass renders the rollback" -- pass --revoked "$ETC/revoked"
for _ in 1 2 3; do [ "$(motd w0)$(motd w1)" = goodgood ] || pass --revoked "$ETC/revoked"; done
[ "$(motd w0)" = good ] && [ "$(motd w1)" = good ] && ok "runbook 4: the nodes are back on the good config" ||
  bad "nodes: $(motd w0) $(motd w1)"
[ "$(git -C "$T/mirror" rev-parse rendered)" = "$SRV_RENDERED" ] && ok "the controller's rendered commit is the server's" ||
  bad "controller rendered differs"
expect_grep "^False  $" <(cond worker UntrustedChanges) "runbook 4: the condition clears once the rollback replaced the change"
expect_rc 1 "runbook 2 again: verify --all still lists the revoked key's commit" -- \
  "$MCGIT" verify --repo "$SV" --trust "$TR" --revoked "$ETC/revoked" --all
expect_grep "^bad $EVIL key SHA256:[^ ]+ is revoked" "$T/out" "the thief's commit stays bad: nothing vouches for it"
expect_grep "^good $ROLL " "$T/out" "the rollback itself is good"
grep -q "^still-in $EVIL" "$T/out" && bad "the rollback did not replace the thief's change: $(grep still-in "$T/out")" ||
  ok "after the rollback, no pool holds the thief's change any more"

# ---------------------------------------------------------------- the thief afterwards
git clone -q "$SV" "$T/thief"
sign_setup "$T/thief" "$TR"
write_mc "$T/thief" 10-worker worker /etc/motd evil2
scommit "$T/thief" bob "thief: again"
THIEF2=$(git -C "$T/thief" rev-parse HEAD)
expect_rc 1 "a revoked key's new commit is refused at the server" -- git -C "$T/thief" push origin main
expect_grep "is revoked" "$T/err" "the pusher is told the key is revoked"
"$MCGIT" bundle create --repo "$T/thief" "$T/thief.bundle" 2>/dev/null
git init -q --bare "$T/site0"
expect_rc 1 "a revoked key's new commit is refused by bundle import" -- \
  "$MCGIT" bundle import --repo "$T/site0" "$T/thief.bundle" --trust "$TR" --revoked "$ETC/revoked" -q
[ -z "$(git -C "$T/site0" for-each-ref)" ] && ok "no ref moved" || bad "bundle import moved refs"

# the thief's commit on a feature branch (nothing reads those), and a trusted
# signer who builds on it: the server refuses the new history all the same
git -C "$T/thief" push -q origin HEAD:refs/heads/feature 2>/dev/null
git -C "$W" fetch -q origin feature
git -C "$W" checkout -q -b on-feature FETCH_HEAD
echo "built on feature" >"$W/NOTES"
scommit "$W" alice "alice builds on the feature branch"
expect_rc 1 "a trusted commit on top of the revoked key's new commit is refused at the server" -- \
  git -C "$W" push origin on-feature:main
expect_grep "commit ${THIEF2:0:12}: key SHA256:[^ ]+ is revoked" "$T/err" "the pusher is told why"
git -C "$W" checkout -q main
[ "$(git -C "$SV" rev-parse main)" = "$ROLL" ] && ok "server main stays at the rollback" || bad "server main moved"

# ---------------------------------------------------------------- new controllers, mirrors, sites
"$MCGIT" bundle create --repo "$SV" "$T/full.bundle" 2>/dev/null
git init -q --bare "$T/site-nocp"
expect_rc 1 "without the checkpoint, a new site refuses the history the revoked key signed" -- \
  "$MCGIT" bundle import --repo "$T/site-nocp" "$T/full.bundle" --trust "$ETC/allowed_signers.before" --revoked "$ETC/revoked" -q
expect_grep "${EVIL:0:12}.*is revoked" "$T/err" "(and names the thief's commit)"
git clone -q --bare "$SV" "$T/mirror2"
expect_rc 0 "a new controller renders the whole history with the revocation" -- \
  "$MCGIT" render --repo "$T/mirror2" --trust "$TR" --revoked "$ETC/revoked"
[ "$(git -C "$T/mirror2" rev-parse rendered)" = "$SRV_RENDERED" ] && ok "same rendered commit as the server" ||
  bad "new controller rendered differs"
git init -q --bare "$T/mirror3"
git -C "$T/mirror3" remote add origin "$SV"
expect_rc 0 "a new mirror: mcgit fetch of the whole history" -- \
  "$MCGIT" fetch --repo "$T/mirror3" --trust "$TR" --revoked "$ETC/revoked"
[ "$(git -C "$T/mirror3" rev-parse main)" = "$ROLL" ] && ok "the new mirror is at the rollback" || bad "mirror3 main"
git init -q --bare "$T/site"
expect_rc 0 "a new air-gapped site imports the whole history" -- \
  "$MCGIT" bundle import --repo "$T/site" "$T/full.bundle" --trust "$TR" --revoked "$ETC/revoked" -q
expect_rc 0 "and renders it" -- "$MCGIT" render --repo "$T/site" --trust "$TR" --revoked "$ETC/revoked"
[ "$(git -C "$T/site" rev-parse rendered)" = "$SRV_RENDERED" ] && ok "the site's rendered commit is the server's" ||
  bad "site rendered differs"

# ---------------------------------------------------------------- a departing signer
grep -v '^carol@' "$TR" >"$TR.new" && mv "$TR.new" "$TR"
echo "# mcgit-checkpoint: $(git -C "$SV" rev-parse main) carol left" >>"$TR"
echo more >"$W/NOTES"
scommit "$W" alice "alice, after carol left"
expect_rc 0 "carol's line deleted: alice's push is accepted and rendered" -- git -C "$W" push origin main
if grep -q "render failed" "$T/err"; then bad "post-receive after removal: render failed"; else ok "post-receive renders after the removal"; fi
expect_rc 0 "the controller goes on after the removal" -- pass --revoked "$ETC/revoked"
git init -q --bare "$T/site2"
"$MCGIT" bundle create --repo "$SV" "$T/full2.bundle" 2>/dev/null
expect_rc 0 "a new site imports history carol signed before she left" -- \
  "$MCGIT" bundle import --repo "$T/site2" "$T/full2.bundle" --trust "$TR" --revoked "$ETC/revoked" -q
echo carol-again >"$W/NOTES"
scommit "$W" carol "carol, after she left"
expect_rc 1 "carol's new commit is refused" -- git -C "$W" push origin main
expect_grep "not in allowed signers" "$T/err" "the pusher is told why"

finish
