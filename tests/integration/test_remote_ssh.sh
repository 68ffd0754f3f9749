#!/usr/bin/env bash
# Fetching over ssh:// from a real OpenSSH server, started here on 127.0.0.1
# with its own host key and an authorized_keys entry that only runs
# git-shell: a deploy key (identity or ssh-privatekey) and a known_hosts
# that is required; an unknown, changed or revoked host key, a wrong key, a
# server that hangs (before and after the handshake) or closes mid-pack are
# refused in one line naming the remote and the cause, within the deadline,
# and every refusal leaves the mirror's refs as they were. The controller
# mirrors over ssh and `bundle create` writes from that mirror.
. "$(dirname "$0")/lib.sh"
# libgit2 1.5's leaks inside git_remote_connect_ext on refused connections
# (lsan-transport.supp); full stacks so that the suppression matches by name
export LSAN_OPTIONS="suppressions=$SRC/tests/integration/lsan-transport.supp"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
need git ssh-keygen git-shell python3 jq timeout
[ -x /usr/sbin/sshd ] || skip "/usr/sbin/sshd not found (openssh-server)"

PIDS=()
stop_all() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for f in "$T"/hang.pid.*; do [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
  for p in "${PIDS[@]}"; do timeout 5 tail --pid="$p" -f /dev/null 2>/dev/null || kill -9 "$p" 2>/dev/null || true; done
}
trap 'stop_all; rm -rf "$T"' EXIT

# --- the config repo and its server ---------------------------------------------
mkkey alice ed25519
mkkey deploy ed25519
mkkey intruder ed25519
signer_line alice@example.com alice >"$T/trust"
"$MCGIT" init "$T/src" >/dev/null
cp "$T/trust" "$T/src/.mcgit/allowed_signers"
sign_setup "$T/src" "$T/trust"
scommit "$T/src" alice "initial"
mkdir -p "$T/srv" "$T/sshd"
git clone -q --bare "$T/src" "$T/srv/config.git"
push() { git -C "$T/src" push -q "$T/srv/config.git" main; }

ssh-keygen -q -t ed25519 -N '' -C host -f "$T/sshd/host_ed25519"
ssh-keygen -q -t ed25519 -N '' -C other -f "$T/sshd/other_ed25519"
# gitsh: git-shell only; $T/cut makes it close mid-pack (dd: unbuffered, unlike
# head -c), $T/hang makes it hang
cat >"$T/sshd/gitsh" <<EOF
#!/bin/sh
if [ -e "$T/hang" ]; then echo \$\$ >"$T/hang.pid.\$\$"; exec sleep 120; fi
if [ -e "$T/cut" ]; then git-shell -c "\$SSH_ORIGINAL_COMMAND" | dd bs=1 count=20000 status=none; exit 0; fi
exec git-shell -c "\$SSH_ORIGINAL_COMMAND"
EOF
chmod 755 "$T/sshd/gitsh"
echo "command=\"$T/sshd/gitsh\",restrict $(cut -d' ' -f1,2 "$T/keys/deploy.pub") deploy" >"$T/sshd/authorized_keys"
PORT=$(freeport)
cat >"$T/sshd/config" <<EOF
Port $PORT
ListenAddress 127.0.0.1
HostKey $T/sshd/host_ed25519
PidFile $T/sshd/sshd.pid
AuthorizedKeysFile $T/sshd/authorized_keys
StrictModes no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
LogLevel ERROR
EOF
[ "$(id -u)" = 0 ] && mkdir -p /run/sshd # its privilege separation directory
/usr/sbin/sshd -D -e -f "$T/sshd/config" 2>"$T/sshd.log" &
SSHD=$!
PIDS+=($SSHD)
wait_port "$PORT" || { cat "$T/sshd.log"; bad "sshd did not start"; finish; exit 1; }
ok "sshd listens on 127.0.0.1:$PORT"

USER_=$(id -un)
URL="ssh://$USER_@127.0.0.1:$PORT$T/srv/config.git"
hostline() { echo "[127.0.0.1]:$PORT $(cut -d' ' -f1,2 "$1")"; }
# credentials are private, as mcgit requires (0600 files, a 0700 directory)
umask 077
mkdir -p "$T/creds"
cp "$T/keys/deploy" "$T/creds/identity"
hostline "$T/sshd/host_ed25519.pub" >"$T/creds/known_hosts"
export MCGIT_GIT_CREDENTIALS="$T/creds"
git init -q --bare "$T/mirror"
git -C "$T/mirror" remote add origin "$URL"
FETCH=(timeout 60 "$MCGIT" fetch --repo "$T/mirror" --trust "$T/trust" --timeout 5)

expect_rc 0 "fetch over ssh:// with the deploy key (identity) and known_hosts" -- "${FETCH[@]}"
[ "$(git -C "$T/mirror" rev-parse main)" = "$(git -C "$T/src" rev-parse main)" ] \
  && ok "source branch fetched" || bad "source branch not fetched"

# the key under Kubernetes' SSH auth Secret name, and a hashed known_hosts
mv "$T/creds/identity" "$T/creds/ssh-privatekey"
cp "$T/creds/known_hosts" "$T/kh.plain"
ssh-keygen -q -H -f "$T/creds/known_hosts" 2>/dev/null && rm -f "$T/creds/known_hosts.old"
grep -q '^|1|' "$T/creds/known_hosts" && ok "known_hosts hashed (ssh-keygen -H)" || bad "not hashed"
scommit "$T/src" alice "second"
push
expect_rc 0 "fetch with ssh-privatekey and a hashed known_hosts entry" -- "${FETCH[@]}"
[ "$(git -C "$T/mirror" rev-parse main)" = "$(git -C "$T/src" rev-parse main)" ] \
  && ok "second commit fetched" || bad "second commit not fetched"
cp "$T/kh.plain" "$T/creds/known_hosts"

# --- refusals: each one line, naming the remote and the cause; refs unchanged ------
scommit "$T/src" alice "third"
push
refs() { git -C "$T/mirror" for-each-ref --format='%(refname) %(objectname)'; }
# refused DESC PATTERN: fetch fails (exit 1) in one line matching PATTERN, refs unchanged
refused() {
  local before
  before=$(refs)
  expect_rc 1 "$1: refused" -- "${FETCH[@]}"
  sed 's/^/# /' "$T/err"
  expect_grep "$2" "$T/err" "$1: the reason names the cause"
  grep -qF "$URL" "$T/err" && ok "$1: the reason names the remote" || bad "$1: no remote in: $(cat "$T/err")"
  local n
  n=$(sed '/^-----/,/^-----/d' "$T/err" | grep -c . || true)
  [ "$n" = 1 ] && ok "$1: one line" || bad "$1: $n lines"
  [ "$(refs)" = "$before" ] && ok "$1: refs unchanged" || bad "$1: refs moved"
}
# fingerprints as ssh-keygen -l prints them, escaped for grep -E
re() { sed 's/[]\\.+*?()[^$|{}]/\\&/g' <<<"$1"; }
HOSTFP=$(re "$(ssh-keygen -lf "$T/sshd/host_ed25519.pub" | cut -d' ' -f2)")
OTHERFP=$(re "$(ssh-keygen -lf "$T/sshd/other_ed25519.pub" | cut -d' ' -f2)")

rm "$T/creds/known_hosts"
refused "no known_hosts" "host key: ssh remotes need the server's host key in .*/known_hosts"

echo "[127.0.0.1]:$((PORT + 1)) $(cut -d' ' -f1,2 "$T/sshd/host_ed25519.pub")" >"$T/creds/known_hosts"
echo "example.com $(cut -d' ' -f1,2 "$T/sshd/other_ed25519.pub")" >>"$T/creds/known_hosts"
refused "unknown host key" "host key refused: \[127\.0\.0\.1\]:$PORT is not in known_hosts \(the server offers ssh-ed25519 $HOSTFP\)"

hostline "$T/sshd/other_ed25519.pub" >"$T/creds/known_hosts"
refused "changed host key" "host key refused: \[127\.0\.0\.1\]:$PORT offers ssh-ed25519 $HOSTFP, known_hosts has ssh-ed25519 $OTHERFP"

{ hostline "$T/sshd/host_ed25519.pub"; echo "@revoked [127.0.0.1]:$PORT $(cut -d' ' -f1,2 "$T/sshd/host_ed25519.pub")"; } >"$T/creds/known_hosts"
refused "revoked host key" "host key refused: .* marked @revoked"

echo "![127.0.0.1]:$PORT,* $(cut -d' ' -f1,2 "$T/sshd/host_ed25519.pub")" >"$T/creds/known_hosts"
refused "a negated pattern" "host key refused: .* is not in known_hosts"

hostline "$T/sshd/host_ed25519.pub" >"$T/creds/known_hosts"
cp "$T/keys/intruder" "$T/creds/ssh-privatekey"
refused "a key the server does not know" "authentication failed"
rm "$T/creds/ssh-privatekey"
refused "no deploy key" "authentication failed: no identity or ssh-privatekey"
cp "$T/keys/deploy" "$T/creds/identity"

git -C "$T/mirror" remote set-url origin "ssh://$USER_@127.0.0.1:$PORT$T/srv/nothing.git"
URL0=$URL
URL="ssh://$USER_@127.0.0.1:$PORT$T/srv/nothing.git"
refused "no repository at that path" "not a git repository"
URL=$URL0
git -C "$T/mirror" remote set-url origin "$URL"

# a server that accepts and never speaks: the deadline, not a hang
HPORT=$(freeport)
python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
conns = []
while True:
    c, _ = s.accept(); conns.append(c)
' "$HPORT" &
PIDS+=($!)
wait_port "$HPORT"
echo "[127.0.0.1]:$HPORT $(cut -d' ' -f1,2 "$T/sshd/host_ed25519.pub")" >>"$T/creds/known_hosts"
git -C "$T/mirror" remote set-url origin "ssh://$USER_@127.0.0.1:$HPORT$T/srv/config.git"
URL="ssh://$USER_@127.0.0.1:$HPORT$T/srv/config.git"
t0=$SECONDS
FETCH=(timeout 60 "$MCGIT" fetch --repo "$T/mirror" --trust "$T/trust" --timeout 3)
refused "a server that never answers" "timed out: no answer within 3 s"
[ $((SECONDS - t0)) -le 10 ] && ok "stopped by the deadline ($((SECONDS - t0)) s)" || bad "took $((SECONDS - t0)) s"
URL=$URL0
git -C "$T/mirror" remote set-url origin "$URL"

# a server that hangs after the handshake
touch "$T/hang"
t0=$SECONDS
refused "a server that hangs mid-protocol" "timed out"
[ $((SECONDS - t0)) -le 10 ] && ok "stopped by the deadline ($((SECONDS - t0)) s)" || bad "took $((SECONDS - t0)) s"
rm "$T/hang"
for f in "$T"/hang.pid.*; do [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null; rm -f "$f"; done

# a server that closes mid-pack: nothing moves, the next fetch recovers
head -c 400000 /dev/urandom | base64 >"$T/src/blob.txt"
scommit "$T/src" alice "a large file"
push
touch "$T/cut"
FETCH=(timeout 60 "$MCGIT" fetch --repo "$T/mirror" --trust "$T/trust" --timeout 20)
refused "a server that closes mid-pack" "."
rm "$T/cut"
FETCH=(timeout 60 "$MCGIT" fetch --repo "$T/mirror" --trust "$T/trust" --timeout 20)
expect_rc 0 "the next fetch recovers" -- "${FETCH[@]}"
[ "$(git -C "$T/mirror" rev-parse main)" = "$(git -C "$T/src" rev-parse main)" ] \
  && ok "and brings the whole history" || bad "mirror behind after recovery"
git -C "$T/mirror" fsck --connectivity-only >"$T/fsck" 2>&1 && ok "mirror intact (git fsck)" || bad "fsck: $(head -3 "$T/fsck")"

# --- the credentials directory is judged as OpenSSH judges ~/.ssh ----------------
chmod 644 "$T/creds/identity"
refused "a world-readable private key" "credentials refused: .*creds/identity: readable by others \(mode 0644\).*chmod 600"
chmod 600 "$T/creds/identity"
chmod 666 "$T/creds/known_hosts"
refused "a world-writable known_hosts" "credentials refused: .*creds/known_hosts: writable by group or others \(mode 0666\)"
chmod 644 "$T/creds/known_hosts"

# --- the controller mirrors over ssh; bundle create from its mirror --------------
CL=local:$T/cl
"$MCGIT" node add --cluster "$CL" w0 --labels node-role.kubernetes.io/worker= >/dev/null
CTL=(timeout 120 "$MCGIT" controller --once --repo "$URL" --mirror "$T/ctl-mirror" --trust "$T/trust" --cluster "$CL" --fetch-timeout 20)
expect_rc 0 "controller --repo ssh://... --mirror: fetches, verifies, renders" -- "${CTL[@]}"
[ "$(git -C "$T/ctl-mirror" rev-parse main)" = "$(git -C "$T/src" rev-parse main)" ] && git -C "$T/ctl-mirror" rev-parse -q --verify rendered >/dev/null \
  && ok "the controller's mirror holds main and rendered" || bad "controller mirror incomplete"
expect_rc 0 "bundle create from the controller's mirror" -- "$MCGIT" bundle create --repo "$T/ctl-mirror" "$T/out.bundle"
git -C "$T/ctl-mirror" bundle verify "$T/out.bundle" >/dev/null 2>&1 && ok "git bundle verify accepts it" || bad "bundle does not verify"

hostline "$T/sshd/other_ed25519.pub" >"$T/creds/known_hosts"
scommit "$T/src" alice "after the key change"
push
before=$(git -C "$T/ctl-mirror" for-each-ref --format='%(refname) %(objectname)')
expect_rc 1 "controller with a changed host key: exit 1" -- "${CTL[@]}"
expect_grep "fetch from origin failed: .*host key refused: \[127\.0\.0\.1\]:$PORT offers ssh-ed25519 $HOSTFP" "$T/err" "the controller names the host key refusal"
"$MCGIT" status --cluster "$CL" -o json | jq -r '.items[] | select(.metadata.name == "worker") | .status.conditions[] | select(.type == "RenderDegraded") | "\(.reason) \(.message)"' >"$T/cond"
expect_grep "^FetchFailed fetch from origin failed: .*host key refused: .*$HOSTFP.*$OTHERFP" "$T/cond" "the pool condition carries the same line"
grep -qF "ssh://$USER_@127.0.0.1:$PORT" "$T/cond" && ! grep -qF '***' "$T/cond" &&
  ok "and names the ssh URL with its user (an ssh user name is no secret: not masked)" || bad "ssh user in the condition: $(cat "$T/cond")"
[ "$(git -C "$T/ctl-mirror" for-each-ref --format='%(refname) %(objectname)')" = "$before" ] \
  && ok "controller: mirror refs unchanged" || bad "controller: mirror refs moved"

# the controller against a server that closes mid-pack: that pass fails and
# moves nothing, the next pass recovers
hostline "$T/sshd/host_ed25519.pub" >"$T/creds/known_hosts"
expect_rc 0 "controller with the host key back: passes" -- "${CTL[@]}"
head -c 400000 /dev/urandom | base64 >"$T/src/blob2.txt"
scommit "$T/src" alice "another large file"
push
before=$(git -C "$T/ctl-mirror" for-each-ref --format='%(refname) %(objectname)')
touch "$T/cut"
expect_rc 1 "controller against a server that closes mid-pack: exit 1" -- "${CTL[@]}"
[ "$(git -C "$T/ctl-mirror" for-each-ref --format='%(refname) %(objectname)')" = "$before" ] \
  && ok "controller: mirror refs unchanged after the cut" || bad "controller: mirror refs moved by a cut pack"
rm "$T/cut"
expect_rc 0 "the controller's next pass recovers" -- "${CTL[@]}"
[ "$(git -C "$T/ctl-mirror" rev-parse main)" = "$(git -C "$T/src" rev-parse main)" ] \
  && ok "and its mirror holds the whole history" || bad "controller mirror behind after recovery"

# --- a server with an ECDSA host key too: libssh2 prefers ECDSA, so a
# known_hosts with the Ed25519 key only is refused, saying which type is missing
kill "$SSHD"; timeout 5 tail --pid="$SSHD" -f /dev/null 2>/dev/null || true
ssh-keygen -q -t ecdsa -b 256 -N '' -C host -f "$T/sshd/host_ecdsa"
echo "HostKey $T/sshd/host_ecdsa" >>"$T/sshd/config"
/usr/sbin/sshd -D -e -f "$T/sshd/config" 2>>"$T/sshd.log" &
PIDS+=($!)
wait_port "$PORT" || bad "sshd did not restart"
hostline "$T/sshd/host_ed25519.pub" >"$T/creds/known_hosts"
ECFP=$(re "$(ssh-keygen -lf "$T/sshd/host_ecdsa.pub" | cut -d' ' -f2)")
FETCH=(timeout 60 "$MCGIT" fetch --repo "$T/mirror" --trust "$T/trust" --timeout 20)
refused "a host key type known_hosts lacks" "offers ecdsa-sha2-nistp256 $ECFP, known_hosts has ssh-ed25519 $HOSTFP \(known_hosts has no ecdsa-sha2-nistp256 key for it"
hostline "$T/sshd/host_ecdsa.pub" >>"$T/creds/known_hosts"
expect_rc 0 "with both types in known_hosts" -- "${FETCH[@]}"
[ "$(git -C "$T/mirror" rev-parse main)" = "$(git -C "$T/src" rev-parse main)" ] \
  && ok "fetched from the ECDSA-keyed server" || bad "not fetched"
finish
