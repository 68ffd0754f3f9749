#!/usr/bin/env bash
# test_pack_graph.sh — a hostile delta graph cannot take memory or time,
# through every entry point a pack reaches. tests/integration/cyclepack.py
# writes the packs by hand:
#   self-ref     a blob, then a REF_DELTA on it whose result is that blob
#                (libgit2 1.5.1's indexer looped on it, its memory growing
#                without bound: 23 GB for `bundle verify`)
#   ref-cycle    two REF_DELTAs, each on the other's result
#   mixed-cycle  a REF_DELTA on an OFS_DELTA built on it; with the base's
#                blob in the repository it makes that blob again
#   missing-ref  a REF_DELTA on an object nobody has
#   deep         a chain of 3,000 deltas (over the limit of 1,000)
#   self-ofs     an OFS_DELTA on itself
# Each is refused in one line, exit 1, within seconds, under `ulimit -v`
# (a regression fails instead of eating the machine): by `bundle verify`,
# `bundle import`, `mcgit fetch` over http and https (a hostile smart-HTTP
# server) and over ssh (a real sshd whose command speaks upload-pack),
# and the controller's mirror fetch. A push meets git's own receive-pack
# first, which resolves the pack itself (a cycle is refused there; the small
# self-ref pack is unpacked into loose objects, one blob written twice), so
# mcgit's pre-receive hook reads only loose or git-indexed objects: it
# refuses the unsigned commit and never hangs.
# --timeout covers the indexing too: an honest pack that takes seconds to
# check and index is stopped at the deadline. An honest pack still passes
# the graph check (refused only for its unsigned commit).
# Run it with LD_LIBRARY_PATH at Debian's libgit2 without the security
# update too (tests/run-all.sh's libgit2-deb12u1 phase).
. "$(dirname "$0")/lib.sh"
# libgit2 1.5's leaks on refused or cut connections, as in test_remote_ssh
export LSAN_OPTIONS="suppressions=$SRC/tests/integration/lsan-transport.supp"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
need python3 timeout git
[ -x /usr/bin/time ] || skip "GNU time (/usr/bin/time, Debian package time) not found"
GEN=$SRC/tests/integration/cyclepack.py
# ASan reserves terabytes of address space: ulimit -v cannot apply there, the
# peak RSS and the timeout still do
VLIMIT=2097152 # KiB
# (ldd's whole output first: grep -q closing the pipe early fails it under pipefail)
# ASan keeps freed blocks in its quarantine (256 MiB by default), so an ASan
# build's peak RSS bound is 256 MiB above the plain build's
RSSCAP=262144 # KiB
case $(ldd "$MCGIT") in *libasan*) VLIMIT=unlimited RSSCAP=524288 ;; esac

mkkey alice ed25519
signer_line alice@example.com alice >"$T/trust"
SHAPES="self-ref ref-cycle mixed-cycle missing-ref deep self-ofs"
want() {
  case $1 in
    self-ref) echo 'made a second time \(a delta whose result is its own base' ;;
    ref-cycle | mixed-cycle | missing-ref) echo 'missing delta base|neither the pack builds nor the repository has' ;;
    deep) echo 'a chain of deltas deeper than 1000' ;;
    self-ofs) echo 'a delta whose base is itself|damaged bundle|out of bounds' ;;
  esac
}
# capped DESC WANT-RE CMD...: CMD under ulimit -v and a 60 s timeout must
# exit 1 within 20 s, in one line matching WANT-RE, peak RSS under RSSCAP
capped() {
  local desc=$1 re=$2 rc=0 secs kib
  shift 2
  (
    ulimit -v "$VLIMIT"
    exec /usr/bin/time -f '%e %M' -o "$T/time" timeout 60 "$@"
  ) >"$T/out" 2>"$T/err" || rc=$?
  read -r secs kib <<<"$(tail -1 "$T/time")"
  [ "$rc" = 1 ] && ok "$desc: exit 1" || { bad "$desc: exit $rc, want 1"; head -3 "$T/err"; }
  [ "$(sed '/^-----/,/^-----/d' "$T/err" | grep -c .)" = 1 ] && ok "$desc: one line" \
    || bad "$desc: $(grep -c . "$T/err") lines"
  expect_grep "$re" "$T/err" "$desc: $(head -c 160 "$T/err")"
  awk -v s="${secs:-99}" 'BEGIN { exit !(s < 20) }' && ok "$desc: ${secs}s" || bad "$desc: took ${secs}s"
  [ "${kib:-999999}" -le "$RSSCAP" ] && ok "$desc: peak RSS ${kib} KiB" || bad "$desc: peak RSS ${kib} KiB"
}
repo_state() { (cd "$1" && find . -type f ! -name '*.lock' | sort | xargs sha256sum | sha256sum); }

# --- bundles --------------------------------------------------------------------
git init -q --bare "$T/dst.git"
for s in $SHAPES; do
  python3 "$GEN" "$s" bundle "$T/$s.bundle"
  before=$(repo_state "$T/dst.git")
  for cmd in verify import; do
    capped "bundle $cmd $s ($(stat -c %s "$T/$s.bundle") bytes)" "$(want "$s")" \
      "$MCGIT" bundle "$cmd" --repo "$T/dst.git" --trust "$T/trust" "$T/$s.bundle"
  done
  [ "$(repo_state "$T/dst.git")" = "$before" ] && ok "bundle $s: repository unchanged" \
    || bad "bundle $s: repository changed"
done
# the repository has the REF_DELTA's base: the OFS_DELTA on it makes that base again
git init -q --bare "$T/hasb.git"
printf 'b\n' | git -C "$T/hasb.git" hash-object -w --stdin >/dev/null
capped "bundle import mixed-cycle onto its base" 'made a second time' \
  "$MCGIT" bundle import --repo "$T/hasb.git" --trust "$T/trust" "$T/mixed-cycle.bundle"
python3 "$GEN" honest bundle "$T/honest.bundle"
capped "bundle verify honest: the graph passes" 'commit is not signed' \
  "$MCGIT" bundle verify --repo "$T/dst.git" --trust "$T/trust" "$T/honest.bundle"

# --- fetch over http, and the controller's mirror --------------------------------
python3 "$GEN" "${SHAPES// /,},honest,many" serve "$T/port" "$T/http.log" &
PIDS+=($!)
for _ in $(seq 300); do [ -s "$T/port" ] && break; sleep 0.2; done
[ -s "$T/port" ] || { bad "hostile server did not start"; finish; exit 1; }
HTTP=http://127.0.0.1:$(cat "$T/port")
mirror() { rm -rf "$T/m.git" && git init -q --bare "$T/m.git" && git -C "$T/m.git" remote add origin "$1"; }
for s in $SHAPES honest; do
  mirror "$HTTP/$s.git"
  re=$(want "$s")
  [ "$s" = honest ] && re='commit [0-9a-f]+ refused: commit is not signed'
  capped "fetch http $s" "$re" "$MCGIT" fetch --repo "$T/m.git" --trust "$T/trust" --timeout 30
  [ -z "$(git -C "$T/m.git" for-each-ref refs/heads)" ] && ok "fetch http $s: no ref moved" || bad "fetch http $s: refs moved"
done
CL=local:$T/cl
"$MCGIT" node add --cluster "$CL" w0 --labels node-role.kubernetes.io/worker= >/dev/null
capped "controller mirror fetch self-ref" 'made a second time' \
  "$MCGIT" controller --once --repo "$HTTP/self-ref.git" --mirror "$T/ctl-mirror" \
  --trust "$T/trust" --cluster "$CL" --fetch-timeout 30
# --timeout covers checking and indexing: 96 deltas of 15 MiB each on one
# blob (15 MiB on the wire, sent in a moment) take seconds to resolve after
# the last byte arrived, when no socket is left to time out
mirror "$HTTP/many.git"
: >"$T/http.log"
capped "fetch --timeout 3 of a pack slow to index" \
  'timed out: the pack was still arriving or being checked and indexed after 3 s' \
  "$MCGIT" fetch --repo "$T/m.git" --trust "$T/trust" --timeout 3
grep -q '^sent many' "$T/http.log" && ok "the server had sent the whole pack" \
  || bad "the server had not sent the pack: the deadline ran out in the transfer"
awk -v s="$(tail -1 "$T/time" | cut -d' ' -f1)" 'BEGIN { exit !(s < 6) }' \
  && ok "stopped within 6 s of starting" || bad "took $(tail -1 "$T/time") s"
[ -z "$(ls "$T/m.git/objects/pack")" ] && ok "nothing left in objects/pack" || bad "left: $(ls "$T/m.git/objects/pack")"

# --- fetch over https (a test certificate for localhost, its ca.crt) --------------
if command -v openssl >/dev/null; then
  mkdir -p "$T/tls" "$T/tlscreds"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/tls/key.pem" -out "$T/tls/cert.pem" -days 2 \
    -subj /CN=localhost -addext subjectAltName=DNS:localhost >"$T/tls/log" 2>&1
  cp "$T/tls/cert.pem" "$T/tlscreds/ca.crt"
  chmod 700 "$T/tlscreds"
  python3 "$GEN" self-ref,ref-cycle serve "$T/tlsport" "$T/https.log" "$T/tls/cert.pem" "$T/tls/key.pem" &
  PIDS+=($!)
  for _ in $(seq 100); do [ -s "$T/tlsport" ] && break; sleep 0.1; done
  for s in self-ref ref-cycle; do
    mirror "https://localhost:$(cat "$T/tlsport")/$s.git"
    MCGIT_GIT_CREDENTIALS=$T/tlscreds capped "fetch https $s" "$(want "$s")" \
      "$MCGIT" fetch --repo "$T/m.git" --trust "$T/trust" --timeout 30
  done
else
  skip_part "fetch over https: openssl not found"
fi

# --- fetch over ssh -------------------------------------------------------------
if [ -x /usr/sbin/sshd ] && command -v ssh-keygen >/dev/null; then
  mkdir -p "$T/sshd" "$T/creds"
  ssh-keygen -q -t ed25519 -N '' -C host -f "$T/sshd/host"
  mkkey deploy ed25519
  # the command answers any upload-pack with the pack its path names
  cat >"$T/sshd/serve" <<EOF
#!/bin/sh
shape=\$(printf '%s' "\$SSH_ORIGINAL_COMMAND" | sed "s|.*/\\([a-z-]*\\)\\.git.*|\\1|")
exec python3 "$GEN" "\$shape" upload-pack
EOF
  chmod 755 "$T/sshd/serve"
  echo "command=\"$T/sshd/serve\",restrict $(cut -d' ' -f1,2 "$T/keys/deploy.pub")" >"$T/sshd/authorized_keys"
  PORT=$(freeport)
  printf '%s\n' "Port $PORT" "ListenAddress 127.0.0.1" "HostKey $T/sshd/host" \
    "PidFile $T/sshd/pid" "AuthorizedKeysFile $T/sshd/authorized_keys" "StrictModes no" \
    "PasswordAuthentication no" "KbdInteractiveAuthentication no" \
    "PermitRootLogin prohibit-password" "UsePAM no" "LogLevel ERROR" >"$T/sshd/config"
  [ "$(id -u)" = 0 ] && mkdir -p /run/sshd
  /usr/sbin/sshd -D -e -f "$T/sshd/config" 2>"$T/sshd.log" &
  PIDS+=($!)
  if wait_port "$PORT"; then
    cp "$T/keys/deploy" "$T/creds/identity"
    echo "[127.0.0.1]:$PORT $(cut -d' ' -f1,2 "$T/sshd/host.pub")" >"$T/creds/known_hosts"
    chmod 700 "$T/creds" && chmod 600 "$T/creds/"*
    for s in self-ref ref-cycle deep; do
      mirror "ssh://$(id -un)@127.0.0.1:$PORT/$s.git"
      MCGIT_GIT_CREDENTIALS=$T/creds capped "fetch ssh $s" "$(want "$s")" \
        "$MCGIT" fetch --repo "$T/m.git" --trust "$T/trust" --timeout 30
    done
  else
    bad "sshd did not start: $(head -3 "$T/sshd.log")"
  fi
else
  skip_part "fetch over ssh: /usr/sbin/sshd (openssh-server) not found"
fi

# --- a push: git's receive-pack, then mcgit's pre-receive hook --------------------
fixture_hooked() {
  git init -q --bare "$1"
  "$MCGIT" hook install --repo "$1" --trust "$T/trust" >/dev/null 2>&1 || bad "hook install"
}
for s in self-ref ref-cycle; do
  fixture_hooked "$T/push-$s.git"
  rc=0
  (ulimit -v "$VLIMIT"; exec timeout 60 python3 "$GEN" "$s" push "$T/push-$s.git") >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" != 124 ] && ok "push $s: over within 60 s" || bad "push $s: hung"
  if [ "$s" = self-ref ]; then
    expect_grep 'ng refs/heads/main pre-receive hook declined' "$T/out" "push self-ref: the pre-receive hook refused it"
  else
    expect_grep 'unpack (unpack-objects|index-pack) abnormal exit|unpack .*(fail|error)' "$T/out" "push ref-cycle: git's receive-pack refused the pack"
  fi
  git -C "$T/push-$s.git" rev-parse -q --verify refs/heads/main >/dev/null \
    && bad "push $s: main created" || ok "push $s: main not created"
done
finish
