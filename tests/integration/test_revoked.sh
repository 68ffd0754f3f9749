#!/usr/bin/env bash
# test_revoked.sh — --revoked FILE wherever --trust is: verify, render
# --repo, bundle verify/import, the git hooks (git config mcgit.revoked,
# recorded by `hook install --revoked`) and the controller. The file is a
# KRL made by `ssh-keygen -k` (a key, a certificate serial) or a plain list
# of public keys. A commit by a revoked key is refused everywhere — also
# when the key was added by the repo's own .mcgit/allowed_signers — and a
# revocation file that cannot be read or parsed refuses everything, in one
# line naming the file.
. "$(dirname "$0")/lib.sh"

mkkey op ed25519
mkkey alice ed25519
mkkey ca ed25519
mkkey carol ecdsa
ssh-keygen -q -s "$T/keys/ca" -I carol-id -z 7 -n carol@example.com -V 20250101:20300101 "$T/keys/carol.pub"
TR=$T/trust
{ signer_line op@example.com op; signer_line '*@example.com' ca cert-authority; } >"$TR"

# revocation files
ssh-keygen -q -k -f "$T/alice.krl" "$T/keys/alice.pub"
printf 'serial: 7\n' >"$T/spec"
ssh-keygen -q -k -f "$T/carol.krl" -s "$T/keys/ca.pub" "$T/spec"
{ echo "# revoked keys"; cat "$T/keys/alice.pub"; } >"$T/alice.list"
ssh-keygen -q -k -f "$T/empty.krl"
: >"$T/empty.list"
printf 'SSHKRL\n\0\0\0\0\1garbage' >"$T/broken.krl"
printf 'ssh-ed25519 AAAA!!!\n' >"$T/broken.list"

# the source: op's commits; op adds alice through .mcgit/allowed_signers; alice commits
S=$T/src
"$MCGIT" init "$S" >/dev/null
sign_setup "$S" "$TR"
scommit "$S" op "initial config"
mkdir -p "$S/.mcgit"
signer_line alice@example.com alice >"$S/.mcgit/allowed_signers"
scommit "$S" op "op trusts alice"
OPTIP=$(git -C "$S" rev-parse HEAD)
echo "alice" >"$S/NOTES"; scommit "$S" alice "alice's change"
ALICE=$(git -C "$S" rev-parse HEAD)

# ---------------------------------------------------------------- verify
expect_rc 0 "verify: without a revocation list every commit is good" -- "$MCGIT" verify --repo "$S" --trust "$TR"
for rev in alice.krl alice.list; do
  expect_rc 1 "verify --revoked $rev: alice's commit is bad" -- "$MCGIT" verify --repo "$S" --trust "$TR" --revoked "$T/$rev"
  expect_grep "^bad $ALICE key SHA256:[^ ]+ is revoked \($T/$rev\)$" "$T/out" \
    "$rev: the key added by .mcgit/allowed_signers is still revoked, and the line says so"
  expect_grep "^good $OPTIP " "$T/out" "$rev: op's commits stay good"
done
for rev in empty.krl empty.list carol.krl; do
  expect_rc 0 "verify --revoked $rev: nothing of this history is revoked" -- \
    "$MCGIT" verify --repo "$S" --trust "$TR" --revoked "$T/$rev"
done
expect_rc 1 "verify: a broken KRL refuses" -- "$MCGIT" verify --repo "$S" --trust "$TR" --revoked "$T/broken.krl"
expect_grep "^mcgit verify: $T/broken.krl: KRL (header is truncated|format version)" "$T/err" "the broken KRL is named in one line"
[ "$(wc -l <"$T/err")" = 1 ] && [ ! -s "$T/out" ] && ok "one line, no verdicts" || bad "broken KRL: output"
expect_rc 1 "verify: a broken key list refuses" -- "$MCGIT" verify --repo "$S" --trust "$TR" --revoked "$T/broken.list"
expect_grep "^mcgit verify: $T/broken.list:1: bad base64 in key" "$T/err" "the broken list is named with its line"
expect_rc 1 "verify: a missing revocation file refuses" -- "$MCGIT" verify --repo "$S" --trust "$TR" --revoked "$T/nope"
expect_grep "^mcgit verify: .*nope" "$T/err" "the missing file is named"
expect_rc 1 "verify -o json: alice's commit is bad" -- "$MCGIT" verify --repo "$S" --trust "$TR" --revoked "$T/alice.krl" -o json
expect_grep '"reason": ?"key SHA256:[^"]+ is revoked' "$T/out" "json: the reason"

# a certificate revoked by serial
C=$T/certs
"$MCGIT" init "$C" >/dev/null
sign_setup "$C" "$TR"
scommit "$C" carol-cert.pub "carol, with a certificate"
expect_rc 0 "verify: the certificate is trusted through the CA" -- "$MCGIT" verify --repo "$C" --trust "$TR"
expect_grep "^good [0-9a-f]+ carol@example.com " "$T/out" "the principal is the certificate's"
expect_rc 1 "verify --revoked carol.krl: the certificate's serial is revoked" -- \
  "$MCGIT" verify --repo "$C" --trust "$TR" --revoked "$T/carol.krl"
expect_grep "certificate 'carol-id' \(serial 7, key SHA256:[^)]+\) is revoked" "$T/out" "named by key id and serial"
{ echo "# the CA itself"; cat "$T/keys/ca.pub"; } >"$T/ca.list"
expect_rc 1 "verify: a revoked CA revokes its certificates" -- "$MCGIT" verify --repo "$C" --trust "$TR" --revoked "$T/ca.list"
expect_grep "is signed by revoked CA key" "$T/out" "the CA is named"

# ---------------------------------------------------------------- render --repo
git clone -q "$S" "$T/r1"
git -C "$T/r1" reset -q --hard "$ALICE"
expect_rc 1 "render --repo --revoked refuses alice's tip" -- "$MCGIT" render --repo "$T/r1" --trust "$TR" --revoked "$T/alice.krl"
expect_grep "is revoked" "$T/err" "render: the reason"
git -C "$T/r1" rev-parse -q --verify refs/heads/rendered >/dev/null && bad "render: a rendered branch was made" ||
  ok "render: nothing rendered"
expect_rc 0 "render --repo without --revoked renders it" -- "$MCGIT" render --repo "$T/r1" --trust "$TR"
expect_rc 2 "render --revoked without --repo is a usage error" -- "$MCGIT" render "$S" --revoked "$T/alice.krl"

# ---------------------------------------------------------------- bundles
"$MCGIT" bundle create --repo "$S" "$T/full.bundle" 2>/dev/null
git init -q --bare "$T/dst"
expect_rc 1 "bundle verify --revoked: refused" -- "$MCGIT" bundle verify --repo "$T/dst" "$T/full.bundle" --trust "$TR" --revoked "$T/alice.list"
expect_grep "BAD .*is revoked" "$T/out" "bundle verify names the revoked commit"
expect_rc 1 "bundle import --revoked: refused" -- "$MCGIT" bundle import --repo "$T/dst" "$T/full.bundle" --trust "$TR" --revoked "$T/alice.krl" -q
[ -z "$(git -C "$T/dst" for-each-ref)" ] && ok "bundle import: no ref moved" || bad "bundle import moved refs"
expect_rc 0 "bundle import with an empty KRL: accepted" -- "$MCGIT" bundle import --repo "$T/dst" "$T/full.bundle" --trust "$TR" --revoked "$T/empty.krl" -q
[ "$(git -C "$T/dst" rev-parse main)" = "$ALICE" ] && ok "bundle import: main moved" || bad "bundle import: main"

# ---------------------------------------------------------------- hooks
SV=$T/server.git
git init -q --bare "$SV"
expect_rc 1 "hook install --revoked with a broken list is refused" -- "$MCGIT" hook install --repo "$SV" --trust "$TR" --revoked "$T/broken.list"
git -C "$SV" config mcgit.revoked >/dev/null && bad "a broken list was recorded" || ok "nothing recorded for a broken list"
expect_rc 0 "hook install --revoked" -- "$MCGIT" hook install --repo "$SV" --trust "$TR" --revoked "$T/alice.krl"
[ "$(git -C "$SV" config mcgit.revoked)" = "$(cd "$T" && pwd -P)/alice.krl" ] && ok "mcgit.revoked recorded, absolute" ||
  bad "mcgit.revoked = $(git -C "$SV" config mcgit.revoked)"
expect_rc 0 "hook install again without --revoked" -- "$MCGIT" hook install --repo "$SV" --trust "$TR"
[ "$(git -C "$SV" config mcgit.revoked)" = "$(cd "$T" && pwd -P)/alice.krl" ] && ok "a recorded mcgit.revoked is kept" ||
  bad "mcgit.revoked dropped"
git -C "$S" remote add server "file://$SV"
expect_rc 0 "push of op's commits is accepted" -- git -C "$S" push server "$OPTIP:refs/heads/main"
expect_rc 1 "push of alice's commit is refused" -- git -C "$S" push server main
expect_grep "^remote: mcgit: refusing .*is revoked" "$T/err" "the pusher sees why"
[ "$(git -C "$SV" rev-parse main)" = "$OPTIP" ] && ok "server main did not move" || bad "server main moved"
git -C "$SV" config mcgit.revoked "$T/missing.krl"
expect_rc 1 "a recorded revocation file that is missing refuses every push" -- git -C "$S" push server main
expect_grep "^remote: mcgit: refusing push: .*missing.krl" "$T/err" "the pusher sees the missing file"
git -C "$SV" config --unset mcgit.revoked
expect_rc 0 "with mcgit.revoked unset, alice's push goes through" -- git -C "$S" push server main

# ---------------------------------------------------------------- controller
git clone -q --bare "$S" "$T/mirror"
CL=local:$T/cl
"$MCGIT" node add --cluster "$CL" w0 --labels node-role.kubernetes.io/worker= >/dev/null
expect_rc 1 "controller --once --revoked refuses alice's commit" -- \
  "$MCGIT" controller --repo "$T/mirror" --trust "$TR" --revoked "$T/alice.krl" --cluster "$CL" --once
expect_grep "is revoked" "$T/err" "controller: the reason"
git -C "$T/mirror" rev-parse -q --verify refs/heads/rendered >/dev/null && bad "controller rendered a revoked commit" ||
  ok "controller: nothing rendered"
expect_rc 1 "controller with a missing revocation file refuses" -- \
  "$MCGIT" controller --repo "$T/mirror" --trust "$TR" --revoked "$T/nope" --cluster "$CL" --once
expect_rc 0 "controller --revoked '' (as an unset MCGIT_REVOKED in mcgit.env): none" -- \
  "$MCGIT" controller --repo "$T/mirror" --trust "$TR" --revoked "" --cluster "$CL" --once

# ---------------------------------------------------------------- deploy
grep -q -- '- --revoked' "$SRC/deploy/controller.yaml" && grep -q '/etc/mcgit/trust/revoked' "$SRC/deploy/controller.yaml" &&
  ok "deploy/controller.yaml passes the revocation list from the trust ConfigMap" || bad "deploy/controller.yaml: --revoked"
grep -q -- '--revoked ${MCGIT_REVOKED}' "$SRC/deploy/systemd/mcgit-controller.service" &&
  ok "the systemd unit passes MCGIT_REVOKED" || bad "systemd: --revoked"

finish
