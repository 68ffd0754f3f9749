#!/usr/bin/env bash
# The README's main job: `mcgit demo` runs the whole loop and its commits
# carry real SSH signatures that git verify-commit accepts.
. "$(dirname "$0")/lib.sh"
expect_rc 0 "mcgit demo completes" -- timeout 120 "$MCGIT" demo --dir "$T/demo"
cp "$T/out" "$T/demo.out"
# The rollout's timeline, from the events the controller and agents
# recorded: each worker Working then Done, and never two Working at once.
sed -n '/the rollout, from the/,/^$/p' "$T/demo.out" | grep -E '^ +\+[0-9.]+ s +worker-[0-9]' >"$T/timeline"
[ "$(grep -c ' Working ' "$T/timeline")" = 3 ] && [ "$(grep -c ' Done$' "$T/timeline")" = 3 ] &&
  ok "the timeline shows each of the 3 workers Working, then Done" || { bad "timeline"; cat "$T/timeline"; }
awk '/ Working /{n++; if (n > m) m = n} / Done$/{n--} END{exit !(m == 1)}' "$T/timeline" &&
  ok "one worker at a time (maxUnavailable: 1), by the timeline" || { bad "more than one worker at once"; cat "$T/timeline"; }
for t in MachineConfig pool "rendered config" maxUnavailable; do
  [ "$(grep -c "^    ($t: " "$T/demo.out")" = 1 ] && ok "'$t' explained once" || bad "'$t' not explained once"
done
expect_grep "^    the pools while the rollback rolls out" "$T/demo.out" "the tables after the rollback have a caption"
expect_grep "^    the nodes after the rollback: every worker back on rendered-worker-" "$T/demo.out" "and so has the node table"
"$MCGIT" help demo >"$T/help"
# The agent only reports drift; the operator puts the file back (help text
# lines joined, so a rewrap does not matter).
tr '\n' ' ' <"$T/help" | grep -q "reported as drift (the agent reports it, the operator puts the file back" &&
  ok "help demo: the agent reports drift, the operator repairs it" || bad "help demo: who repairs drift"
expect_grep "RenderDegraded: Failed to render configuration for pool [a-z]+: commit [0-9a-f]+ refused: commit is not signed" "$T/demo.out" "unsigned commit refused"
expect_grep "Degraded +worker +.*chrony.conf" "$T/demo.out" "drift reported with the path"
expect_grep "Rollback-To" "$T/demo.out" "rollback narrated"
expect_rc 0 "git verify-commit accepts the demo's signatures" -- \
  git -C "$T/demo/repo" -c gpg.ssh.allowedSignersFile="$T/demo/trust/allowed_signers" verify-commit main
expect_rc 0 "status works on the demo cluster" -- "$MCGIT" status --cluster "local:$T/demo/cluster"
expect_grep "^worker +rendered-worker-" "$T/out" "worker pool listed"
git -C "$T/demo/repo" log --format=%B rendered > "$T/log"
expect_grep "Rollback-To: [0-9a-f]{40}" "$T/log" "rendered branch records the rollback"
git -C "$T/demo/repo" log -1 --format=%B main >"$T/main"
expect_grep "^Rollback-To: [0-9a-f]{40}$" "$T/main" "the rollback is a commit on main"
expect_grep "^    worker: rendered-worker-[0-9a-f]+ -> rendered-worker-[0-9a-f]+$" "$T/demo.out" "the demo prints worker's rendered name, old -> new"
pgrep -f "$T/demo" >/dev/null && bad "demo left processes running" || ok "no processes left"
# a demo that dies early (its output closed: `mcgit demo | head`) takes its
# controller and agents with it
{ timeout 60 "$MCGIT" demo --dir "$T/cut" | head -3 >/dev/null; } 2>/dev/null || true
for _ in $(seq 1 30); do pgrep -f "$T/cut/" >/dev/null || break; sleep 0.2; done
pgrep -f "$T/cut/" >/dev/null && { bad "a demo cut short left processes running"; pkill -f "$T/cut/"; } ||
  ok "a demo cut short (its output closed) leaves no process behind"
finish
