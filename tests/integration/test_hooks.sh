#!/usr/bin/env bash
# test_hooks.sh — the git hooks `mcgit hook install` puts in place, driven by
# real `git push` over file:// to a bare server repo and a real `git commit`.
. "$(dirname "$0")/lib.sh"

mkkey alice ed25519
mkkey bob ed25519
TR=$T/trust
signer_line alice@example.com alice >"$TR"
S=$T/server.git
git init -q --bare "$S"
srefs() { git -C "$S" for-each-ref --format='%(refname) %(objectname)'; }

# ---------------------------------------------------------------- install
expect_rc 0 "hook install into a bare repo" -- "$MCGIT" hook install --repo "$S" --trust "$TR"
for h in pre-receive post-receive; do
  [ -x "$S/hooks/$h" ] && cmp -s "$S/hooks/$h" "$SRC/hooks/$h" && ok "installed hooks/$h (executable, as in hooks/)" ||
    bad "hooks/$h not installed"
done
[ ! -e "$S/hooks/pre-commit" ] && ok "no pre-commit hook in a bare repo (nothing is committed there)" ||
  bad "pre-commit installed into a bare repo"
[ "$(git -C "$S" config mcgit.trust)" = "$(cd "$T" && pwd -P)/trust" ] && ok "mcgit.trust recorded, absolute" ||
  bad "mcgit.trust = $(git -C "$S" config mcgit.trust)"
! git -C "$S" config mcgit.binary >/dev/null && ok "no binary pinned: the hooks run mcgit from PATH" ||
  bad "mcgit.binary = $(git -C "$S" config mcgit.binary)"
! grep -q warning "$T/err" && ok "install finds mcgit on PATH" || { bad "install warned"; sed 's/^/    /' "$T/err"; }
# the mcgit it found ($T/bin) is not where sshd's PATH looks: pushes over ssh
# would not find it, and install says so (the caller's PATH is not the server's)
if [ -x /usr/local/bin/mcgit ] || [ -x /usr/bin/mcgit ] || [ -x /bin/mcgit ]; then
  skip_part "an mcgit is installed on sshd's PATH here: the note cannot be shown"
else
  expect_grep "^mcgit hook: note: mcgit is on your PATH but not on the PATH sshd gives a push over ssh \(/usr/local/bin:/usr/bin:/bin:/usr/games\): .*git -C $S config mcgit.binary" \
    "$T/err" "install notes that sshd's PATH has no mcgit, and how to name one"
  git -C "$S" config mcgit.binary "$(readlink -f "$MCGIT")"
  "$MCGIT" hook install --repo "$S" --trust "$TR" >/dev/null 2>"$T/err2" || true
  ! grep -q "note: mcgit is on your PATH" "$T/err2" && ok "with git config mcgit.binary set, no note" || bad "note despite mcgit.binary"
  git -C "$S" config --unset mcgit.binary
fi
expect_rc 1 "hook install with a missing trust file" -- "$MCGIT" hook install --repo "$S" --trust "$T/nope"
expect_rc 2 "hook with an unknown subcommand" -- "$MCGIT" hook frobnicate --repo "$S" --trust "$TR"

# ---------------------------------------------------------------- client
C=$T/client
"$MCGIT" init "$C" >/dev/null 2>&1
sign_setup "$C" "$TR"
git -C "$C" remote add origin "file://$S"
push() { git -C "$C" push "$@" >"$T/push.out" 2>&1; }
# refused LABEL PATTERN -- push args: the push fails, the pusher sees PATTERN
# on a "remote: mcgit: refusing" line, and no server ref moves.
refused() {
  local label=$1 pat=$2 before rc=0; shift 3
  before=$(srefs)
  "$@" || rc=$?
  if [ "$rc" = 0 ]; then bad "$label: push accepted"; sed 's/^/    /' "$T/push.out"
  elif ! grep -qE "^remote: mcgit: refusing .*$pat" "$T/push.out"; then
    bad "$label: no 'remote: mcgit: refusing ...$pat' line"; sed 's/^/    /' "$T/push.out"
  elif [ "$(srefs)" != "$before" ]; then bad "$label: server refs moved"
  else ok "$label: refused, pusher sees the reason, nothing moved"; fi
}
reset_client() { git -C "$C" reset -q --hard origin/main; }

scommit "$C" alice "initial config"
expect_rc 0 "push of a signed, valid first commit is accepted" -- push origin main
[ "$(git -C "$S" rev-parse main)" = "$(git -C "$C" rev-parse main)" ] && ok "server main is the pushed commit" ||
  bad "server main"
if git -C "$S" rev-parse -q --verify refs/heads/rendered >/dev/null &&
   [ "$(git -C "$S" log -1 --format='%(trailers:key=Source-Commit,valueonly)' rendered | head -1)" = \
     "$(git -C "$S" rev-parse main)" ]; then
  ok "post-receive rendered the pushed commit onto the server's rendered branch"
else bad "no rendered branch in the server"; sed 's/^/    /' "$T/push.out"; fi
expect_grep "^remote: mcgit: rendered " "$T/push.out" "the pusher sees the render"

echo "change" >"$C/NOTES"; scommit "$C" - "unsigned change"
refused "unsigned commit" "commit [0-9a-f]{12}: commit is not signed" -- push origin main
expect_grep "^remote: mcgit: hint: sign the tip with \`git commit --amend -S --no-edit\`" "$T/push.out" \
  "the refusal of an unsigned commit says how to sign it"
# the hint, followed as written, makes the push go through
git -C "$C" -c user.signingkey="$T/keys/alice" commit -q --amend -S --no-edit
expect_rc 0 "after git commit --amend -S --no-edit the push is accepted" -- git -C "$C" push -q origin main
reset_client

echo "bob" >"$C/NOTES"; scommit "$C" bob "bob is not trusted"
refused "untrusted key" "is not in allowed signers" -- push origin main
grep -q "hint: sign" "$T/push.out" && bad "a signed (untrusted) commit gets the signing hint" || ok "a signed commit gets no signing hint"
reset_client

echo "a" >"$C/NOTES"; scommit "$C" alice "signed one"
echo "b" >"$C/NOTES"; scommit "$C" - "unsigned in the middle"
mid=$(git -C "$C" rev-parse HEAD)
echo "c" >"$C/NOTES"; scommit "$C" alice "signed tip"
refused "unsigned commit in the middle of a signed push" "commit ${mid:0:12}: commit is not signed" -- push origin main
reset_client

cat >"$T/99-bad.yaml" <<'EOF'
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 99-bad
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  kernelType: lowlatency
  config:
    ignition:
      version: 3.4.0
EOF
cp "$T/99-bad.yaml" "$C/machineconfigs/"
scommit "$C" alice "a config mcgit refuses"
refused "signed commit whose tree does not validate" "machineconfigs/99-bad.yaml:[0-9]+: " -- push origin main
reset_client

echo "good" >"$C/NOTES"; scommit "$C" alice "second config"
nrendered=$(git -C "$S" rev-list --count rendered)
expect_rc 0 "push of a second signed commit is accepted" -- push origin main
[ "$(git -C "$S" rev-list --count rendered)" = $((nrendered + 1)) ] &&
  [ "$(git -C "$S" log -1 --format='%(trailers:key=Source-Commit,valueonly)' rendered | head -1)" = \
    "$(git -C "$C" rev-parse main)" ] && ok "post-receive appended a second render" || bad "second render"

git -C "$C" -c user.signingkey="$T/keys/alice" commit -q --amend -S -m "second config, rewritten"
refused "force push (not a fast-forward)" "is not a fast-forward" -- push -f origin main
reset_client

refused "push to the rendered branch" "rendered branch is written by mcgit only" -- push -f origin main:refs/heads/rendered

git -C "$C" checkout -q -b feature
echo "wip" >"$C/NOTES"; scommit "$C" - "unsigned work in progress"
before=$(git -C "$S" rev-parse rendered)
expect_rc 0 "push to another branch is not the source branch's business" -- push origin feature
[ "$(git -C "$S" rev-parse rendered)" = "$before" ] && ok "a push to another branch renders nothing" ||
  bad "feature push rendered"
n=$(grep -c "^remote: mcgit: note: " "$T/push.out" || true)
[ "$n" = 1 ] && grep -qE "^remote: mcgit: note: feature is not the source branch \(main\): accepted, nothing will be rendered" "$T/push.out" &&
  ok "the pusher is told, in one note, that feature is not the source branch main" ||
  { bad "no one-line note on a push to another branch"; sed 's/^/    /' "$T/push.out"; }
expect_rc 0 "deleting that branch" -- push origin :feature
! grep -q "note:" "$T/push.out" && ok "a deleted branch gets no note" || bad "note on a deletion"
git -C "$C" checkout -q main

# A misspelt key (within two edits of a key known there) is refused, with a
# did-you-mean, by `mcgit validate`, `mcgit render` and the push.
mc_chrony() {
  cat >"$C/machineconfigs/40-chrony.yaml" <<YAML
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 40-chrony
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  config:
    ignition:
      version: 3.2.0
    storage:
      files:
      - path: /etc/chrony.conf
        filesystem: root
        $1: 420
        $2:
          source: data:,server%20a
YAML
}
mc_chrony mdoe contnets
want='machineconfigs/40-chrony.yaml:15: unknown field "mdoe" \(did you mean "mode"\?\)'
want2='machineconfigs/40-chrony.yaml:16: unknown field "contnets" \(did you mean "contents"\?\)'
expect_rc 1 "validate refuses a misspelt key" -- "$MCGIT" validate "$C"
expect_grep "^mcgit validate: $want$" "$T/err" "validate: did you mean mode"
expect_grep "^mcgit validate: $want2$" "$T/err" "validate: did you mean contents"
expect_rc 1 "render refuses a misspelt key" -- "$MCGIT" render "$C"
expect_grep "^mcgit render: $want$" "$T/err" "render: did you mean"
scommit "$C" alice "chrony, misspelt"
refused "a push with a misspelt key" "$want *$" -- push origin main
expect_grep "^remote: mcgit: refusing refs/heads/main: $want2 *$" "$T/push.out" "the pusher sees both misspellings"
reset_client

# A key Ignition only warns about (far from every key known there): the push
# is accepted and the pusher sees each warning with its file and line on a
# remote: line.
mc_chrony verify contents
scommit "$C" alice "chrony, with two keys Ignition ignores"
expect_rc 0 "a push with warnings is accepted" -- push origin main
n=$(grep -cE "^remote: mcgit: [0-9a-f]{12}: warning: machineconfigs/40-chrony.yaml:1[45]: unknown field 'storage.files\[0\].(filesystem|verify)'" "$T/push.out" || true)
[ "$n" = 2 ] && ok "the pusher sees both warnings on remote: lines with file:line" ||
  { bad "remote warnings: $n"; sed 's/^/    /' "$T/push.out"; }

# ---------------------------------------------------------------- the binary
# Nothing pinned, so a rebuild or a move cannot break the hooks: they run
# mcgit from PATH, or git config mcgit.binary. When they cannot run it, a push
# is refused (pre-receive fails closed) with one line saying why.
nomcgit=$T/nomcgit # PATH for git alone
mkdir -p "$nomcgit" && ln -s "$(command -v git)" "$nomcgit/git"
nomcgit_push() { local rc=0; PATH=$nomcgit git -C "$C" push "$@" >"$T/push.out" 2>&1 || rc=$?; return $rc; }
one_line_refusal() { # LABEL PATTERN: the push failed with exactly one remote: mcgit: line, PATTERN
  local n; n=$(grep -c "^remote: mcgit: " "$T/push.out" || true)
  if [ "$n" = 1 ] && grep -qE "^remote: mcgit: refusing push: $2" "$T/push.out" && [ "$(srefs)" = "$before" ]; then
    ok "$1: refused in one line, nothing moved"
  else bad "$1 ($n remote lines)"; sed 's/^/    /' "$T/push.out"; fi
}
echo "binary" >>"$C/NOTES"; scommit "$C" alice "pushed while mcgit is missing"
before=$(srefs)
expect_rc 1 "a push when the server has no mcgit on PATH" -- nomcgit_push origin main
one_line_refusal "mcgit missing from PATH" \
  "cannot run 'mcgit' \(not found or not executable\): put mcgit on the server's PATH or set git config mcgit.binary"
mkdir -p "$T/moved" && cp "$MCGIT" "$T/moved/mcgit"
git -C "$S" config mcgit.binary "$T/moved/mcgit"
expect_rc 0 "hook install with mcgit.binary set" -- env PATH="$nomcgit" "$MCGIT" hook install --repo "$S" --trust "$TR"
expect_grep "the hooks run $T/moved/mcgit \(git config mcgit.binary\)" "$T/err" "install names the binary the hooks run"
[ "$(git -C "$S" config mcgit.binary)" = "$T/moved/mcgit" ] && ok "install keeps mcgit.binary" || bad "mcgit.binary changed"
rm "$T/moved/mcgit" # moved away, or rebuilt elsewhere
before=$(srefs)
expect_rc 1 "a push when mcgit.binary names a binary that is gone" -- nomcgit_push origin main
one_line_refusal "mcgit.binary gone" "cannot run '$T/moved/mcgit' \(not found or not executable\)"
expect_rc 0 "hook install warns that the hooks cannot run mcgit" -- "$MCGIT" hook install --repo "$S" --trust "$TR"
expect_grep "^mcgit hook: warning: the hooks cannot run $T/moved/mcgit \(not found or not executable\), so every push is refused" \
  "$T/err" "install warns about a binary the hooks cannot run"
cp "$MCGIT" "$T/moved/mcgit"
expect_rc 0 "a push through mcgit.binary, nothing on PATH" -- nomcgit_push origin main
git -C "$S" config --unset mcgit.binary
echo "binary 2" >>"$C/NOTES"; scommit "$C" alice "pushed with mcgit on PATH"
expect_rc 0 "a push through mcgit on PATH" -- push origin main
expect_grep "^remote: mcgit: rendered " "$T/push.out" "post-receive ran mcgit from PATH"
expect_rc 0 "hook install with no mcgit on PATH" -- env PATH="$nomcgit" "$MCGIT" hook install --repo "$S" --trust "$TR"
expect_grep "^mcgit hook: warning: the hooks cannot run mcgit from PATH" "$T/err" "install warns when mcgit is not on PATH"
expect_rc 1 "post-receive without mcgit" -- env GIT_DIR="$S" PATH="$nomcgit" "$S/hooks/post-receive" </dev/null
[ "$(wc -l <"$T/err")" = 1 ] && grep -q "^mcgit: warning: nothing rendered: cannot run 'mcgit' (not found or not executable)" "$T/err" &&
  ok "post-receive says in one line that nothing was rendered" || { bad "post-receive without mcgit"; sed 's/^/    /' "$T/err"; }

# ---------------------------------------------------------------- pre-commit
W=$T/work
git clone -q "file://$S" "$W"
sign_setup "$W" "$TR"
expect_rc 0 "hook install into a clone" -- "$MCGIT" hook install --repo "$W" --trust "$TR"
[ -x "$W/.git/hooks/pre-commit" ] && ok "pre-commit installed in .git/hooks" || bad "no .git/hooks/pre-commit"
cp "$T/99-bad.yaml" "$W/machineconfigs/"
before=$(git -C "$W" rev-parse HEAD)
expect_rc 1 "pre-commit blocks a commit of an invalid tree" -- scommit "$W" alice "invalid"
expect_grep "machineconfigs/99-bad.yaml:[0-9]+: " "$T/err" "pre-commit says file:line"
[ "$(git -C "$W" rev-parse HEAD)" = "$before" ] && ok "no commit was made" || bad "invalid commit made"
rm "$W/machineconfigs/99-bad.yaml"
echo "fine" >"$W/NOTES"
expect_rc 0 "pre-commit lets a valid tree through" -- scommit "$W" alice "valid"
echo "fine 2" >"$W/NOTES"
expect_rc 1 "pre-commit without mcgit fails closed" -- env PATH="$nomcgit" git -C "$W" commit -qam "no mcgit"
[ "$(wc -l <"$T/err")" = 1 ] && expect_grep "^mcgit: cannot validate the commit: cannot run 'mcgit'" "$T/err" "pre-commit says why in one line" ||
  { bad "pre-commit without mcgit: $(wc -l <"$T/err") lines"; sed 's/^/    /' "$T/err"; }

finish
