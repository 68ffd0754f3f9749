#!/usr/bin/env bash
# The agent's named pause points (MCGIT_TEST_PAUSE_AT, used by the power-cut
# test on a real guest, tests/vm/test_real_node.sh): at each point an update
# of a simulated node passes, the agent says "mcgit: paused at NAME" on
# stderr and stops there. Killed there (-9), every managed file is whole, old
# or new, and the next agent finishes the update from its journal. Unset, or
# naming no point, the variable changes nothing. (before-actions and
# before-reboot, on the paths of the other disruption actions and of a live
# host, are covered on the real guest.)
. "$(dirname "$0")/lib.sh"
need python3 timeout

POINTS="journal-written backups-taken temps-written temps-synced renamed-one renamed-more
        files-synced written before-commit current-written committed"
files_cfg() { # files_cfg WORD: three files in /etc/pc, each holding WORD-N
  printf '{"ignition":{"version":"3.4.0"},"storage":{"files":['
  printf '{"path":"/etc/pc/a","contents":{"source":"data:,%s-a"}},' "$1"
  printf '{"path":"/etc/pc/b","contents":{"source":"data:,%s-b"}},' "$1"
  printf '{"path":"/etc/pc/c","contents":{"source":"data:,%s-c"}}]}}' "$1"
}
agent() { "$MCGIT" agent --node n1 --cluster "local:$CL" --once -q "$@"; }

for p in $POINTS; do
  CL=$T/cl-$p
  "$MCGIT" node add --cluster "local:$CL" n1 >/dev/null
  node_cfg_helpers "$CL"
  old=$(publish "$(files_cfg old)")
  new=$(publish "$(files_cfg new)")
  desire "$old"
  agent >/dev/null
  desire "$new"
  MCGIT_TEST_PAUSE_AT=$p "$MCGIT" agent --node n1 --cluster "local:$CL" --interval 1 \
    >/dev/null 2>"$T/pause.err" &
  pid=$!
  for _ in $(seq 100); do grep -q "paused at $p" "$T/pause.err" && break; sleep 0.1; done
  sleep 0.2
  if grep -qx "mcgit: paused at $p" "$T/pause.err" && kill -0 "$pid" 2>/dev/null; then
    ok "$p: the agent says it paused there, and stays"
  else
    bad "$p: no pause"; sed 's/^/    /' "$T/pause.err" | head -5
  fi
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  torn=
  for f in a b c; do
    c=$(cat "$CL/roots/n1/etc/pc/$f" 2>/dev/null || echo missing)
    [ "$c" = "old-$f" ] || [ "$c" = "new-$f" ] || torn="$torn $f=$c"
  done
  [ -z "$torn" ] && ok "$p: killed there, every file whole (old or new)" || bad "$p: torn:$torn"
  out=$(agent 2>&1) || true
  [ "$out" = "n1 Done $new" ] && [ "$(cat "$CL/roots/n1/etc/pc/b")" = new-b ] &&
    ok "$p: the next agent finishes the update (Done, new files)" || bad "$p: after the kill: $out"
done

# not a point, or unset: nothing changes
CL=$T/cl-none
"$MCGIT" node add --cluster "local:$CL" n1 >/dev/null
node_cfg_helpers "$CL"
desire "$(publish "$(files_cfg x)")"
out=$(MCGIT_TEST_PAUSE_AT=nowhere timeout 20 "$MCGIT" agent --node n1 --cluster "local:$CL" --once 2>&1) &&
  [[ $out == *"n1 Done"* ]] && [[ $out != *paused* ]] &&
  ok "a name that is no point: the update runs through" || bad "no point: $out"
finish
