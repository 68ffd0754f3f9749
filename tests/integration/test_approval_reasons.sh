#!/usr/bin/env bash
# test_approval_reasons.sh — approvals explain themselves. Bob's trust line
# says namespaces="git" (as docs once showed): his approval is signed in
# namespace mcgit-approval and cannot count. `mcgit approve` warns before it
# signs; the refusal at push (and in `mcgit verify`) names each approval not
# counted and why; alice's own approval is named as her commit's key again.
# The docs' example line (namespaces="git,mcgit-approval") works.
. "$(dirname "$0")/lib.sh"

mkkey alice ed25519
mkkey bob ed25519
TR=$T/trust
{ signer_line alice@example.com alice; signer_line bob@example.com bob 'namespaces="git"'; } >"$TR"
S=$T/srv.git
fixture_server "$S" "$TR"
W=$T/w
"$MCGIT" init "$W" >/dev/null
sign_setup "$W" "$TR"
git -C "$W" remote add origin "$S"
mkdir -p "$W/.mcgit"
printf 'approvals:\n- paths: ["pools/master.yaml"]\n  required: 2\n' >"$W/.mcgit/policy.yaml"
scommit "$W" alice policy
git -C "$W" push -q origin main 2>/dev/null
echo "# m" >>"$W/pools/master.yaml"; scommit "$W" alice "master change"
M=$(git -C "$W" rev-parse HEAD)

expect_rc 0 "mcgit approve by bob signs" -- "$MCGIT" approve --repo "$W" "$M" --key "$T/keys/bob"
expect_grep "^mcgit approve: warning: $TR:2 \(bob@example.com\) allows namespaces \"git\", approvals use \"mcgit-approval\": this approval will not count" \
  "$T/err" "but warns first that the approval will not count, naming the line"
"$MCGIT" approve --repo "$W" "$M" --key "$T/keys/alice" >/dev/null 2>&1
expect_rc 1 "the push is refused" -- git -C "$W" push origin main refs/notes/mcgit-approvals
expect_grep "1 approval missing .*approval not counted: key SHA256:[^ ]+ is not allowed for namespace mcgit-approval \($TR:2\); its line \(bob@example.com\) allows namespaces \"git\"" \
  "$T/err" "the refusal names bob's approval and why"
expect_grep "approval by alice@example.com not counted: its key \(the commit's own\) signed already" "$T/err" \
  "and alice's own approval"
expect_rc 1 "mcgit verify says the same" -- "$MCGIT" verify --repo "$W" --trust "$TR" --all
expect_grep "approval not counted: .*namespace mcgit-approval" "$T/out" "verify: the reason"

# the docs' example line
{ signer_line alice@example.com alice; signer_line bob@example.com bob 'namespaces="git,mcgit-approval"'; } >"$TR"
expect_rc 0 "with namespaces=\"git,mcgit-approval\" (docs/operations.md) approve does not warn" -- \
  "$MCGIT" approve --repo "$W" "$M" --key "$T/keys/bob"
grep -q "warning" "$T/err" && bad "warning: $(cat "$T/err")" || ok "(no warning)"
expect_rc 0 "and bob's approval counts" -- git -C "$W" push origin main refs/notes/mcgit-approvals
grep -q 'namespaces="git,mcgit-approval"' "$SRC/docs/operations.md" && ok "the docs' example line allows approvals" ||
  bad "docs/operations.md example line"

finish
