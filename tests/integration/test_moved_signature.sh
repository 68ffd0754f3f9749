#!/usr/bin/env bash
# test_moved_signature.sh — a commit's signature is read from its header
# only, as git reads it. The attacker takes a signed commit and moves its
# gpgsig block from the header to the end of the message (a new commit id
# for the same signed content): `git verify-commit` calls it unsigned, and
# so do `mcgit verify`, the pre-receive hook and bundle import.
. "$(dirname "$0")/lib.sh"
need python3

TR=$T/trust
W=$T/w
fixture_signed_repo "$W" alice
scommit "$W" alice base
BASE=$(git -C "$W" rev-parse HEAD)
echo change >"$W/NOTES"
scommit "$W" alice "a signed change"
GOOD=$(git -C "$W" rev-parse HEAD)
# move the signature into the message
git -C "$W" cat-file commit "$GOOD" | python3 -c '
import sys
lines = sys.stdin.read().split("\n")
head, sig, i = [], [], 0
while lines[i] != "":
    if lines[i].startswith("gpgsig ") or (sig and lines[i].startswith(" ") and len(sig) == i - len(head)):
        sig.append(lines[i])
    else:
        head.append(lines[i])
    i += 1
body = "\n".join(lines[i:])
sys.stdout.write("\n".join(head) + "\n" + body.rstrip("\n") + "\n" + "\n".join(sig) + "\n")
' >"$T/moved"
grep -q '^gpgsig ' "$T/moved" && ! sed '/^$/q' "$T/moved" | grep -q '^gpgsig' && ok "the signature now stands in the message" ||
  bad "moving the signature failed"
MOVED=$(git -C "$W" hash-object -t commit -w "$T/moved")
expect_rc 1 "git verify-commit rejects the moved signature" -- git -C "$W" verify-commit "$MOVED"
git -C "$W" update-ref refs/heads/main "$MOVED"
expect_rc 1 "mcgit verify rejects it too" -- "$MCGIT" verify --repo "$W" --trust "$TR"
expect_grep "^bad $MOVED commit is not signed$" "$T/out" "as unsigned"

S=$T/srv.git
fixture_server "$S" "$TR"
git -C "$W" push -q "$S" "$BASE:refs/heads/main" 2>/dev/null
expect_rc 1 "the pre-receive hook refuses it" -- git -C "$W" push "$S" main
expect_grep "refusing refs/heads/main: commit ${MOVED:0:12}: commit is not signed" "$T/err" "the pusher is told it is unsigned"
[ "$(git -C "$S" rev-parse main)" = "$BASE" ] && ok "server main did not move" || bad "server main moved"

"$MCGIT" bundle create --repo "$W" "$T/moved.bundle" 2>/dev/null
git init -q --bare "$T/site"
expect_rc 1 "bundle import refuses it" -- "$MCGIT" bundle import --repo "$T/site" "$T/moved.bundle" --trust "$TR" -q
expect_grep "not signed" "$T/err" "bundle: the reason"
[ -z "$(git -C "$T/site" for-each-ref)" ] && ok "bundle: no ref moved" || bad "site refs moved"

# the original commit, signature in the header, is good everywhere
git -C "$W" update-ref refs/heads/main "$GOOD"
expect_rc 0 "the commit as git signed it is good" -- git -C "$W" push "$S" main

finish
