#!/usr/bin/env bash
# test_hostile_refs.sh — what a pusher without a key tries against the
# approvals and the hooks, and one key posing as two signers:
#   - refs/notes/mcgit-approvals only grows: deleting it, rewinding it, a
#     fast-forward to an empty notes tree, or pointing it at a blob is
#     refused by the pre-receive hook, by `bundle import` and by `mcgit
#     fetch` (which no longer force-copies it);
#   - the pre-receive hook fails closed on an update line it cannot parse;
#   - the two-person rule counts keys: alice's one key on two trust lines
#     with different principals is one signer.
. "$(dirname "$0")/lib.sh"

mkkey alice ed25519
mkkey bob ed25519
TR=$T/trust
{ signer_line alice@example.com alice; signer_line bob@example.com bob; } >"$TR"
S=$T/srv.git
fixture_server "$S" "$TR"
W=$T/w
"$MCGIT" init "$W" >/dev/null 2>&1
sign_setup "$W" "$TR"
git -C "$W" remote add origin "file://$S"
mkdir -p "$W/.mcgit"
printf 'approvals:\n- paths: ["pools/master.yaml"]\n  required: 2\n' >"$W/.mcgit/policy.yaml"
scommit "$W" alice "policy"
git -C "$W" push -q origin main 2>/dev/null
echo "# master" >>"$W/pools/master.yaml"; scommit "$W" alice "master change"
M=$(git -C "$W" rev-parse HEAD)
"$MCGIT" approve --repo "$W" "$M" --key "$T/keys/bob" >/dev/null
expect_rc 0 "the approved change and its approvals are pushed" -- git -C "$W" push -q origin main refs/notes/mcgit-approvals
N1=$(git -C "$S" rev-parse refs/notes/mcgit-approvals)
notes() { git -C "$S" rev-parse -q --verify refs/notes/mcgit-approvals || echo none; }

# ---------------------------------------------------------------- 4. approvals only grow: push
expect_rc 1 "push: deleting the approvals is refused" -- git -C "$W" push origin :refs/notes/mcgit-approvals
expect_grep "refusing refs/notes/mcgit-approvals cannot be deleted" "$T/err" "the pusher is told why"
EMPTY=$(git -C "$W" hash-object -t tree -w /dev/null)
E1=$(git -C "$W" commit-tree "$EMPTY" -p "$N1" -m "notes: wipe")
expect_rc 1 "push: a fast-forward to an empty notes tree is refused" -- git -C "$W" push origin "$E1:refs/notes/mcgit-approvals"
expect_grep "drops or rewrites the approvals of commit ${M:0:12}" "$T/err" "it names the approval dropped"
E0=$(git -C "$W" commit-tree "$EMPTY" -m "notes: other history")
expect_rc 1 "push: a rewrite (force) is refused" -- git -C "$W" push -f origin "$E0:refs/notes/mcgit-approvals"
expect_grep "does not descend from" "$T/err" "a rewrite is named"
BLOB=$(echo junk | git -C "$W" hash-object -w --stdin)
expect_rc 1 "push: the approvals ref at a blob is refused" -- git -C "$W" push -f origin "$BLOB:refs/notes/mcgit-approvals"
[ "$(notes)" = "$N1" ] && ok "the server's approvals are unchanged" || bad "server notes: $(notes)"
echo "# worker" >>"$W/pools/worker.yaml"; scommit "$W" alice "worker"
"$MCGIT" approve --repo "$W" HEAD --key "$T/keys/bob" >/dev/null
expect_rc 0 "push: approvals that grow are accepted" -- git -C "$W" push -q origin main refs/notes/mcgit-approvals

# ---------------------------------------------------------------- 4. bundle import
git clone -q --bare "$S" "$T/site"
git -C "$T/site" fetch -q origin refs/notes/mcgit-approvals:refs/notes/mcgit-approvals
"$MCGIT" render --repo "$T/site" --trust "$TR" >/dev/null 2>&1
N2=$(git -C "$T/site" rev-parse refs/notes/mcgit-approvals)
git -C "$W" update-ref refs/notes/mcgit-approvals "$(git -C "$W" commit-tree "$EMPTY" -p "$N2" -m wipe)"
git -C "$W" bundle create -q "$T/wipe.bundle" refs/notes/mcgit-approvals ^"$N2" 2>/dev/null
expect_rc 1 "bundle: a notes-only fast-forward to an empty tree is refused" -- \
  "$MCGIT" bundle import --repo "$T/site" "$T/wipe.bundle" --trust "$TR" -q
expect_grep "drops or rewrites the approvals" "$T/err" "bundle: the reason"
git init -q --bare "$T/site2"
git -C "$W" update-ref refs/notes/mcgit-approvals "$BLOB"
git -C "$W" bundle create -q "$T/blob.bundle" refs/notes/mcgit-approvals 2>/dev/null
expect_rc 1 "bundle: a one-object bundle pointing the notes ref at a blob is refused" -- \
  "$MCGIT" bundle import --repo "$T/site2" "$T/blob.bundle" --trust "$TR" -q
expect_grep "must point to a notes commit, not a blob" "$T/err" "bundle: the blob is named"
[ -z "$(git -C "$T/site2" for-each-ref)" ] && ok "bundle: no ref moved" || bad "site2 refs moved"
[ "$(git -C "$T/site" rev-parse refs/notes/mcgit-approvals)" = "$N2" ] && ok "bundle: the site's approvals are unchanged" ||
  bad "site notes moved"
git -C "$W" update-ref refs/notes/mcgit-approvals "$N2"

# ---------------------------------------------------------------- 4. mcgit fetch
git init -q --bare "$T/mirror"
git -C "$T/mirror" remote add origin "$S"
expect_rc 0 "fetch: the first fetch brings history and approvals" -- "$MCGIT" fetch --repo "$T/mirror" --trust "$TR"
[ "$(git -C "$T/mirror" rev-parse refs/notes/mcgit-approvals)" = "$N2" ] && ok "fetch: approvals copied" || bad "fetch: approvals"
# the server's approvals rewound behind the hook's back (a pusher with shell access, a restore)
git -C "$S" update-ref refs/notes/mcgit-approvals "$N1"
echo "# w2" >>"$W/pools/worker.yaml"; scommit "$W" alice "worker 2"
git -C "$W" push -q origin main 2>/dev/null
# (N6) not a frozen fleet: the branch still arrives, verified against the
# approvals held here, and the rewound notes are never copied
expect_rc 0 "fetch: a remote whose approvals were rewound still brings a commit that needs none" -- \
  "$MCGIT" fetch --repo "$T/mirror" --trust "$TR"
expect_grep "warning: remote 'origin': .*approvals only grow.*keeping the approvals held here" "$T/err" \
  "fetch: it warns, naming the remote and why"
[ "$(git -C "$T/mirror" rev-parse main)" = "$(git -C "$W" rev-parse main)" ] && ok "fetch: the branch moved" ||
  bad "fetch: the branch did not move"
[ "$(git -C "$T/mirror" rev-parse refs/notes/mcgit-approvals)" = "$N2" ] && ok "fetch: the local approvals are kept, not force-copied" ||
  bad "fetch: local approvals moved"
git -C "$S" update-ref refs/notes/mcgit-approvals "$N2"

# ---------------------------------------------------------------- 3. the hook fails closed
HOOK=$S/hooks/pre-receive
Z=0000000000000000000000000000000000000000
H=$(git -C "$S" rev-parse main)
for line in "$Z $H" "$Z ${H:0:39} refs/heads/x" "$Z $H refs/heads/x extra" "zz${Z:2} $H refs/heads/x" \
            "$Z $H refs/heads/a	b" "$Z $H "; do
  expect_rc 1 "pre-receive refuses the unparsable line '${line:0:30}...'" -- \
    env GIT_DIR="$S" sh -c "printf '%s\n' '$H $H refs/heads/main' \"\$1\" | '$HOOK'" _ "$line"
  expect_grep "refusing push: cannot parse update line 2" "$T/err" "and says which line"
done
expect_rc 1 "pre-receive refuses a line that does not end (truncated)" -- \
  env GIT_DIR="$S" sh -c "printf '%s' '$Z $H refs/heads/x' | '$HOOK'"
LONG=refs/heads/$(printf 'a%.0s' $(seq 1 200))/$(printf 'b%.0s' $(seq 1 200))/$(printf 'c%.0s' $(seq 1 200))/$(printf 'd%.0s' $(seq 1 200))/$(printf 'e%.0s' $(seq 1 200))
expect_rc 0 "a ref name over 1 KiB (once cut in two by the hook) is read whole" -- \
  env GIT_DIR="$S" sh -c "printf '%s\n' '$Z $H $LONG' | '$HOOK'"

# ---------------------------------------------------------------- 5. distinct keys
{ signer_line alice@example.com alice; signer_line "alice@example.com,alice@corp.example" alice;
  signer_line bob@example.com bob; } >"$TR"
echo "# master 2" >>"$W/pools/master.yaml"; scommit "$W" alice "master change 2"
M2=$(git -C "$W" rev-parse HEAD)
"$MCGIT" approve --repo "$W" "$M2" --key "$T/keys/alice" >/dev/null
expect_rc 1 "alice's key on two lines (two principals) is one signer: her own approval does not count" -- \
  git -C "$W" push origin main refs/notes/mcgit-approvals
expect_grep "needs 2 distinct trusted signers, has 1" "$T/err" "one signer counted"
expect_rc 1 "mcgit verify agrees" -- "$MCGIT" verify --repo "$W" --trust "$TR" --all
"$MCGIT" approve --repo "$W" "$M2" --key "$T/keys/bob" >/dev/null
expect_rc 0 "with bob's approval: two keys" -- git -C "$W" push -q origin main refs/notes/mcgit-approvals

finish
