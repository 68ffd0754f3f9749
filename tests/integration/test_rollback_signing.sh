#!/usr/bin/env bash
# test_rollback_signing.sh — `mcgit rollback` signs as git does: every key
# type ssh-keygen signs with, an encrypted key through ssh-agent, the key
# from git config (with ~ expanded) or --key, gpg.ssh.program; a signer that
# fails writes nothing. And a rendered branch made by an older mcgit (no
# Render-Rule trailer) is replaced by the pure one, its tip kept.
. "$(dirname "$0")/lib.sh"
need jq
unset GIT_AUTHOR_DATE GIT_COMMITTER_DATE # rollbacks are made now

mkkey alice ed25519
mkkey ec ecdsa
mkkey rsa rsa
ssh-keygen -q -t ed25519 -N 'secret words' -C locked -f "$T/keys/locked"
TR=$T/trust
for k in alice ec rsa locked; do signer_line "$k@example.com" "$k"; done >"$TR"
R=$T/repo
"$MCGIT" init "$R" >/dev/null 2>&1
sign_setup "$R" "$TR"
g() { git -C "$R" "$@"; }
mc() { write_mc "$R" 10-worker worker /etc/test.conf "$1"; }
mc v1; scommit "$R" alice v1; S1=$(g rev-parse HEAD)
mc v2; scommit "$R" alice v2; S2=$(g rev-parse HEAD)
refs() { g for-each-ref --format='%(refname) %(objectname)'; }
# rollback_with DESC ARGS...: a rollback alternating between v1 and v2 that
# must succeed and verify (git verify-commit and mcgit verify)
n=0
rollback_with() {
  local desc=$1; shift
  local to=$S1; [ $((n % 2)) = 1 ] && to=$S2; n=$((n + 1))
  expect_rc 0 "rollback signed $desc" -- "$MCGIT" rollback --repo "$R" "$to" "$@"
  if g verify-commit HEAD >/dev/null 2>&1 && "$MCGIT" verify --repo "$R" --trust "$TR" >/dev/null 2>&1; then
    ok "$desc: git verify-commit and mcgit verify accept it"
  else bad "$desc: signature not accepted"; fi
}
rollback_with "with --key (ed25519)" --key "$T/keys/alice"
# ssh-keygen's "Signing data on standard input" stays out of the output, as git keeps it
grep -q "Signing data" "$T/err" "$T/out" && bad "ssh-keygen's chatter in rollback's output: $(cat "$T/err")" ||
  ok "no 'Signing data on standard input' between rollback's lines"
rollback_with "with --key (ecdsa p256)" --key "$T/keys/ec"
rollback_with "with --key (rsa 3072)" --key "$T/keys/rsa"
g config user.signingkey "$T/keys/ec"
rollback_with "with git config user.signingkey"
[ "$(g log -1 --format=%GK HEAD 2>/dev/null)" = "$(keyfp ec)" ] && ok "by the configured key" || bad "configured key not used: $(g log -1 --format=%GK)"
mkdir -p "$HOME/.ssh" && cp "$T/keys/rsa" "$T/keys/rsa.pub" "$HOME/.ssh/"
g config user.signingkey "~/.ssh/rsa"
rollback_with "with user.signingkey ~/.ssh/rsa (~ expanded)"
# an encrypted key: its private half in ssh-agent (the file alone would prompt)
eval "$(ssh-agent -s)" >/dev/null
trap 'kill "$SSH_AGENT_PID" 2>/dev/null; rm -rf "$T"' EXIT
SSH_ASKPASS="$T/askpass" SSH_ASKPASS_REQUIRE=force DISPLAY=none \
  sh -c "printf '#!/bin/sh\necho \"secret words\"\n' >'$T/askpass'; chmod +x '$T/askpass'; ssh-add -q '$T/keys/locked' </dev/null"
rollback_with "with an encrypted key held by ssh-agent" --key "$T/keys/locked.pub"
[ "$(g log -1 --format=%GK HEAD 2>/dev/null)" = "$(keyfp locked)" ] && ok "by the encrypted key" || bad "locked key not used"
# gpg.ssh.program is the signing program
cat >"$T/signer" <<EOF
#!/bin/sh
echo "\$@" >>"$T/signer.log"
exec ssh-keygen "\$@"
EOF
chmod +x "$T/signer"
g config gpg.ssh.program "$T/signer"
rollback_with "through gpg.ssh.program" --key "$T/keys/alice"
expect_grep "^-Y sign -n git -f $T/keys/alice$" "$T/signer.log" "run as PROGRAM -Y sign -n git -f KEY"
# a signer that fails: refused, nothing written (the tip holds S1's configs now)
[ "$(g rev-parse HEAD:machineconfigs)" = "$(g rev-parse "$S1:machineconfigs")" ] || bad "expected S1's configs at the tip"
printf '#!/bin/sh\necho "no card present" >&2\nexit 3\n' >"$T/signer"
before=$(refs)
expect_rc 1 "a failing signing program is refused" -- "$MCGIT" rollback --repo "$R" "$S2" --key "$T/keys/alice"
expect_grep "signing with .* failed: .*signer -Y sign exited 3: no card present$" "$T/err" "with the program's exit status and its last line"
[ "$(refs)" = "$before" ] && [ -z "$(g status --porcelain)" ] && ok "and nothing is written (refs, work tree)" || bad "failed signing wrote something"
g config --unset gpg.ssh.program
expect_rc 1 "a key file that does not exist is refused" -- "$MCGIT" rollback --repo "$R" "$S2" --key "$T/keys/nope"
expect_grep "signing with $T/keys/nope failed" "$T/err" "says signing failed"
[ "$(refs)" = "$before" ] && ok "nothing written" || bad "missing key wrote something"

# ---------------------------------------------------------------- legacy branch
# A rendered branch an older mcgit made (no Render-Rule trailer) is replaced.
L=$T/legacy.git
git clone -q --bare "$R" "$L"
tree=$(git -C "$L" mktree </dev/null)
old=$(git -C "$L" commit-tree "$tree" -m "Render ${S1:0:12}: v1

Source-Commit: $S1")
git -C "$L" update-ref refs/heads/rendered "$old"
expect_rc 0 "render over a rendered branch made by an older mcgit" -- "$MCGIT" render --repo "$L" --trust "$TR"
F=$T/fresh.git
git clone -q --bare "$R" "$F"
"$MCGIT" render --repo "$F" --trust "$TR" >/dev/null 2>&1
[ "$(git -C "$L" rev-parse rendered)" = "$(git -C "$F" rev-parse rendered)" ] &&
  ok "replaced by the pure rendered history (the same as a fresh clone's)" || bad "legacy not replaced"
[ "$(git -C "$L" rev-parse "refs/mcgit/rendered-legacy/$old")" = "$old" ] &&
  ok "the old tip is kept as refs/mcgit/rendered-legacy/<sha>" || bad "legacy tip not kept"
git -C "$L" merge-base --is-ancestor "$old" rendered && bad "the legacy commit was reused" || ok "the legacy commit is not reused as a parent"
finish
