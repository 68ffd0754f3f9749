#!/usr/bin/env bash
# Fetching from a private https remote: credentials come from the directory
# $MCGIT_GIT_CREDENTIALS names (username + password); missing or wrong ones
# fail once with a one-line reason (no retry loop) and leave the branch.
. "$(dirname "$0")/lib.sh"
mkkey alice ed25519
signer_line alice@example.com alice >"$T/trust"
mkdir -p "$T/srv"
"$MCGIT" init "$T/src" >/dev/null
cp "$T/trust" "$T/src/.mcgit/allowed_signers"
sign_setup "$T/src" "$T/trust"
scommit "$T/src" alice "initial"
git clone -q --bare "$T/src" "$T/srv/config.git"

python3 "$SRC/tests/integration/githttp.py" "$T/srv" "$T/port" mcgit s3cret &
srv=$!
trap 'kill $srv 2>/dev/null; rm -rf "$T"' EXIT
for _ in $(seq 50); do [ -s "$T/port" ] && break; sleep 0.1; done
url="http://127.0.0.1:$(cat "$T/port")/config.git"
git init -q --bare "$T/mirror"
git -C "$T/mirror" remote add origin "$url"

expect_rc 1 "fetch without credentials is refused" -- "$MCGIT" fetch --repo "$T/mirror" --trust "$T/trust"
expect_grep 'fetch: .*(auth|401|credential)' "$T/err" "the reason names the authentication failure"
# (LeakSanitizer's suppression summary, in ASan builds, is not ours)
n=$(sed '/^-----/,/^-----/d' "$T/err" | grep -c . || true)
[ "$n" = 1 ] && ok "one-line reason" || bad "reason is $n lines"
# credentials are private, as mcgit requires (0600 files, a 0700 directory)
umask 077
mkdir -p "$T/creds"
printf 'mcgit\n' >"$T/creds/username"
printf 'wrong\n' >"$T/creds/password"
export MCGIT_GIT_CREDENTIALS="$T/creds"
if timeout 20 "$MCGIT" fetch --repo "$T/mirror" --trust "$T/trust" >"$T/out" 2>"$T/err"; then
  bad "wrong password accepted"
else
  rc=$?
  [ "$rc" = 1 ] && ok "wrong password fails once (no loop)" || bad "wrong password: exit $rc"
fi
git -C "$T/mirror" rev-parse -q --verify refs/heads/main >/dev/null \
  && bad "branch created by a failed fetch" || ok "failed fetch leaves no branch"
printf 's3cret\n' >"$T/creds/password"
# the directory and its files are judged as OpenSSH judges a key: each
# loose permission is refused in one line naming the file, before any
# connection; the server logs nothing
perm_refused() { # DESC PATTERN
  expect_rc 1 "$1: refused" -- "$MCGIT" fetch --repo "$T/mirror" --trust "$T/trust"
  expect_grep "$2" "$T/err" "$1: the file and the fix named"
  [ "$(grep -c . "$T/err")" = 1 ] && ok "$1: one line" || bad "$1: $(grep -c . "$T/err") lines"
}
chmod 644 "$T/creds/password"
perm_refused "a world-readable password" "creds/password: readable by others \(mode 0644\): a secret must be 0600 or stricter.*chmod 600"
chmod 640 "$T/creds/password"
perm_refused "a group-readable password of this user's" "creds/password: readable by group or others \(mode 0640\)"
chmod 600 "$T/creds/password"
chmod 666 "$T/creds/username"
perm_refused "a world-writable username" "creds/username: writable by group or others \(mode 0666\).*chmod go-w"
chmod 600 "$T/creds/username"
chmod 770 "$T/creds"
perm_refused "a group-writable directory" "creds: writable by group or others \(mode 0770\)"
chmod 700 "$T/creds"
if [ "$(id -u)" = 0 ]; then
  chown 4242 "$T/creds/password"
  perm_refused "a password owned by another user" "creds/password: owned by uid 4242, not by this user \(0\) or root"
  chown 0 "$T/creds/password"
else
  skip_part "a file owned by another user: needs root to chown"
fi
expect_rc 0 "fetch with the right credentials" -- "$MCGIT" fetch --repo "$T/mirror" --trust "$T/trust"
[ "$(git -C "$T/mirror" rev-parse main)" = "$(git -C "$T/src" rev-parse main)" ] \
  && ok "source branch fetched" || bad "source branch not fetched"

# url.<base>.insteadOf rewrites the remote's URL (the longest prefix wins),
# as git and libgit2 do: mcgit applies it itself, without libgit2's leaking
# regex walk of the configuration
git init -q --bare "$T/mirror2"
git -C "$T/mirror2" remote add origin "nowhere://config.git"
git -C "$T/mirror2" config url."http://127.0.0.1:1/".insteadOf "nowhere://"
git -C "$T/mirror2" config url."http://127.0.0.1:$(cat "$T/port")/config".insteadOf "nowhere://config"
expect_rc 0 "fetch through url.*.insteadOf" -- "$MCGIT" fetch --repo "$T/mirror2" --trust "$T/trust"
[ "$(git -C "$T/mirror2" rev-parse -q --verify main)" = "$(git -C "$T/src" rev-parse main)" ] \
  && ok "insteadOf: source branch fetched from the rewritten URL" || bad "insteadOf: not fetched"

# a password in the controller's --repo URL would land in the mirror's
# config (0644): refused, the password never shown, no mirror made
expect_rc 1 "controller --repo with a password in the URL: refused" -- timeout 60 "$MCGIT" controller --once \
  --repo "http://mcgit:s3cret@127.0.0.1:$(cat "$T/port")/config.git" --mirror "$T/pwmirror" --trust "$T/trust" --cluster "local:$T/cl0"
expect_grep 'http://mcgit:\*\*\*@127\.0\.0\.1:[0-9]+/config\.git: a password in the URL would be stored in the mirror.s config.*MCGIT_GIT_CREDENTIALS' "$T/err" "refused with the hint"
grep -q s3cret "$T/err" "$T/out" && bad "the password is shown" || ok "the password is not shown"
[ ! -e "$T/pwmirror" ] && ok "no mirror made" || { bad "a mirror was made"; grep -r s3cret "$T/pwmirror/config" && bad "with the password in its config"; }

# a new mirror whose first fetch fails: the fetch's one line, no trailing
# "unknown revision 'main'" (there is nothing to render yet)
"$MCGIT" node add --cluster "local:$T/cl" w0 --labels node-role.kubernetes.io/worker= >/dev/null
expect_rc 1 "controller: a new mirror of a dead remote" -- timeout 60 "$MCGIT" controller --once \
  --repo "http://127.0.0.1:1/config.git" --mirror "$T/newmirror" --trust "$T/trust" --cluster "local:$T/cl"
expect_grep 'fetch from origin failed: http://127\.0\.0\.1:1/config\.git: connection refused' "$T/err" "the fetch's failure named"
grep -q "unknown revision" "$T/err" && bad "trailing: $(cat "$T/err")" || ok "no trailing unknown revision"
[ "$(grep -c . "$T/err")" = 1 ] && ok "one line" || bad "$(grep -c . "$T/err") lines"
finish
