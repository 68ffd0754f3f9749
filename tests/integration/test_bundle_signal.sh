#!/usr/bin/env bash
# test_bundle_signal.sh — an interrupted `mcgit bundle import|verify|create`
# leaves nothing behind:
#
#   SIGINT, SIGTERM, SIGHUP mid-import   the handler removes the quarantine;
#                                        the process dies of the signal
#   kill -9 mid-import                   the quarantine stays, and the next
#                                        verify or import removes it
#   a second import while one is alive   leaves the live one's quarantine alone
#   git's own incoming-* directories     are never touched
#   SIGINT mid-create                    no FILE, no temp file
#
# The import is held in the middle deterministically: it reads the bundle
# from a FIFO that gets only part of the pack until the test has seen the
# quarantine appear. Background jobs of a script ignore SIGINT; `env
# --default-signal` gives the import the default disposition back.
. "$(dirname "$0")/lib.sh"

mkkey op ed25519
signer_line op@example.com op >"$T/trust"

quarantines() { find "$1/objects" -maxdepth 1 -name 'mcgit-incoming-*' | wc -l; }

"$MCGIT" init "$T/src" >/dev/null
sign_setup "$T/src" "$T/trust"
scommit "$T/src" op "initial config"
for i in 1 2 3; do
  head -c 300000 /dev/urandom | base64 >"$T/src/blob$i.txt"
  scommit "$T/src" op "edit $i"
done
"$MCGIT" bundle create --repo "$T/src" "$T/full.bundle" 2>/dev/null
size=$(stat -c %s "$T/full.bundle")

# held_import REPO [verify]: start `mcgit bundle import --repo REPO -` reading
# from a FIFO that has been sent 60% of the bundle; wait until the quarantine
# exists. Sets PID (the import) and FEEDER (the process holding the FIFO open).
held_import() {
  local repo=$1 cmd=${2:-import} i
  rm -f "$T/fifo"
  mkfifo "$T/fifo"
  env --default-signal=INT,QUIT "$MCGIT" bundle "$cmd" --repo "$repo" - --trust "$T/trust" \
    <"$T/fifo" >"$T/held.out" 2>"$T/held.err" &
  PID=$!
  # The rest never comes: the feeder holds the FIFO open until the import ends.
  { head -c $((size * 6 / 10)) "$T/full.bundle"; while kill -0 "$PID" 2>/dev/null; do sleep 0.05; done; } >"$T/fifo" &
  FEEDER=$!
  for i in $(seq 200); do
    [ -n "$(find "$repo/objects" -path '*mcgit-incoming-*/pack/*' -type f 2>/dev/null)" ] && return 0
    sleep 0.05
  done
  return 1
}
stop_feeder() { wait "$FEEDER" 2>/dev/null || true; }

git init -q --bare "$T/dst"
for sig in INT TERM HUP; do
  snap "$T/dst" >"$T/before"
  if held_import "$T/dst"; then ok "SIG$sig: the import is held mid-pack, quarantine present"
  else bad "SIG$sig: the import never made its quarantine"; fi
  kill -s "$sig" "$PID"
  rc=0
  wait "$PID" 2>/dev/null || rc=$?
  stop_feeder
  want=$((128 + $(kill -l "$sig")))
  [ "$rc" = "$want" ] && ok "SIG$sig: the import died of the signal (exit $rc)" ||
    { bad "SIG$sig: exit $rc, want $want"; cat "$T/held.err"; }
  [ "$(quarantines "$T/dst")" = 0 ] && ok "SIG$sig: no quarantine left" || bad "SIG$sig: quarantine left"
  snap "$T/dst" >"$T/after"
  cmp -s "$T/before" "$T/after" && ok "SIG$sig: refs and objects unchanged" ||
    { bad "SIG$sig: repo changed"; diff "$T/before" "$T/after" | head -5; }
done

# The same for verify, which quarantines too.
if held_import "$T/dst" verify; then ok "verify: held mid-pack"; else bad "verify: never quarantined"; fi
kill -TERM "$PID"
wait "$PID" 2>/dev/null || true
stop_feeder
[ "$(quarantines "$T/dst")" = 0 ] && ok "SIGTERM during verify: no quarantine left" || bad "verify: quarantine left"

# kill -9 cannot be caught: the quarantine stays until the next run.
snap "$T/dst" >"$T/before"
held_import "$T/dst" || bad "kill -9: never quarantined"
kill -KILL "$PID"
wait "$PID" 2>/dev/null || true
stop_feeder
[ "$(quarantines "$T/dst")" = 1 ] && ok "kill -9: the quarantine is left behind" || bad "kill -9: quarantines: $(quarantines "$T/dst")"
# A git receive-pack quarantine (not ours) must survive the cleanup.
mkdir -p "$T/dst/objects/incoming-AbC123/pack"
echo x >"$T/dst/objects/incoming-AbC123/pack/tmp_pack_x"
expect_rc 0 "the next verify runs" -- "$MCGIT" bundle verify --repo "$T/dst" "$T/full.bundle" --trust "$T/trust"
[ "$(quarantines "$T/dst")" = 0 ] && ok "kill -9: the next run removed the stale quarantine" || bad "kill -9: stale quarantine still there"
[ -f "$T/dst/objects/incoming-AbC123/pack/tmp_pack_x" ] && ok "git's incoming-* directory untouched" || bad "git's incoming-* removed"
rm -rf "$T/dst/objects/incoming-AbC123"
snap "$T/dst" >"$T/after"
cmp -s "$T/before" "$T/after" && ok "kill -9, then verify: refs and objects as before" ||
  { bad "kill -9: repo changed"; diff "$T/before" "$T/after" | head -5; }

# A live import's quarantine is not stale: a concurrent import leaves it.
git init -q --bare "$T/dst2"
held_import "$T/dst2" || bad "concurrent: never quarantined"
live=$(find "$T/dst2/objects" -maxdepth 1 -name 'mcgit-incoming-*')
expect_rc 0 "a second import runs while the first is held" -- \
  "$MCGIT" bundle import --repo "$T/dst2" "$T/full.bundle" --trust "$T/trust"
[ -d "$live" ] && ok "concurrent: the live import's quarantine was left alone" || bad "concurrent: live quarantine removed"
[ "$(quarantines "$T/dst2")" = 1 ] && ok "concurrent: the second import removed only its own" || bad "concurrent: $(quarantines "$T/dst2") quarantines"
kill -TERM "$PID"
wait "$PID" 2>/dev/null || true
stop_feeder
[ "$(quarantines "$T/dst2")" = 0 ] && ok "concurrent: the first import cleaned up on SIGTERM" || bad "concurrent: quarantine left"
expect_rc 0 "concurrent: the imported repo passes git fsck" -- git -C "$T/dst2" fsck --strict

# SIGINT while a bundle file is written: neither FILE nor a temp file stays.
# Timing-based (create has no input to hold back): a history big enough to
# take a while to pack, and an interrupt soon after the start.
GEN=$(dirname "$MCGIT")/tests/bench/bench_history
if [ -x "$GEN" ]; then
  "$GEN" --bytes 65536 --random "$T/src" 400 "$T/gen-signer" >/dev/null
  mkdir "$T/outdir"
  for sig in INT KILL; do
    env --default-signal=INT "$MCGIT" bundle create --repo "$T/src" "$T/outdir/big.bundle" 2>/dev/null &
    PID=$!
    sleep 0.3
    kill -s "$sig" "$PID" 2>/dev/null || true
    rc=0
    wait "$PID" 2>/dev/null || rc=$?
    if [ "$rc" = 0 ]; then
      echo "# skip: create finished before SIG$sig"
      rm -f "$T/outdir/big.bundle"
    else
      [ "$rc" = $((128 + $(kill -l "$sig"))) ] && ok "create: died of SIG$sig" || bad "create: exit $rc"
      [ -z "$(ls -A "$T/outdir")" ] && ok "create, SIG$sig: no bundle and no temp file left" ||
        bad "create, SIG$sig: left $(ls -A "$T/outdir")"
    fi
  done
else
  skip_part "$GEN not built"
fi
finish
