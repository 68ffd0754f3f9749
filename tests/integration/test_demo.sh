#!/usr/bin/env bash
# The README's main job: `mcgit demo` runs the whole loop and its commits
# carry real SSH signatures that git verify-commit accepts.
. "$(dirname "$0")/lib.sh"
expect_rc 0 "mcgit demo completes" -- timeout 120 "$MCGIT" demo --dir "$T/demo"
cp "$T/out" "$T/demo.out"
# The rollout's timeline, as the demo saw the nodes through the cluster interface
# (not another module's events file): each worker Working then Done, never two at once.
sed -n '/the rollout, as the cluster showed it/,/^$/p' "$T/demo.out" | grep -E '^ +\+[0-9.]+ s +worker-[0-9]' >"$T/timeline"
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
# The agent only reports drift, never overwriting it; the demo has it
# re-applied through MCO's force file (help text lines joined, so a
# rewrap does not matter).
tr '\n' ' ' <"$T/help" | grep -q "reported as drift (the agent reports it and never overwrites it; the demo has it re-applied through MCO's force file, with the reboot it brings" &&
  ok "help demo: the agent reports drift, the demo has it re-applied (the force file)" || bad "help demo: who repairs drift"
expect_grep "^==> The agent never overwrites drift .*as \`mcgit agent --force\` does" "$T/demo.out" "the demo says who puts drift back, and how"
expect_grep "^    touch $T/demo/cluster/roots/worker-1/run/machine-config-daemon-force " "$T/demo.out" "with the command"
expect_grep "^    the agent put /etc/chrony.conf back; worker-1 is Done again" "$T/demo.out" "and the agent put the file back"
# every pool refuses the unsigned commit, and the demo names each
for p in infra master worker; do
  expect_grep "^    $p: RenderDegraded: Failed to render configuration for pool $p: commit [0-9a-f]+ refused: commit is not signed" "$T/demo.out" "unsigned commit refused: pool $p named"
done
expect_grep "^    every pool \(3\) is RenderDegraded" "$T/demo.out" "and says all three are"
expect_grep "Degraded +worker +.*chrony.conf" "$T/demo.out" "drift reported with the path"
expect_grep "Rollback-To" "$T/demo.out" "rollback narrated"
expect_grep "^    [0-9a-f]{12} is the first render's commit on the rendered branch; it was rendered from source commit [0-9a-f]{12} on main, which the rollback names" \
  "$T/demo.out" "the rollback says why it prints two ids"
# the "Explore:" lines run as printed (tests/setup.sh --demo installs git for them)
grep -qE '^ +libsodium-dev .*libmicrohttpd-dev git$' "$SRC/tests/setup.sh" && ok "setup.sh --demo installs git" || bad "setup.sh --demo: no git"
sed -n '/^==> Done in .* Explore:/,$p' "$T/demo.out" | grep -E '^    (git|/.*mcgit) ' >"$T/explore"
[ "$(wc -l <"$T/explore")" -ge 5 ] && ok "the demo ends with lines to explore" || bad "explore lines: $(cat "$T/explore")"
while read -r line; do
  bash -c "$line" </dev/null >/dev/null 2>"$T/explore.err" && ok "explore: ${line:0:60}... runs" || { bad "explore: $line"; cat "$T/explore.err"; }
done <"$T/explore"
# the demo's build (-DMCGIT_TESTS=OFF) does not look for cmocka, nor say it is missing
cmake -S "$SRC" -B "$T/cfg-notests" -DCMAKE_BUILD_TYPE=Release -DMCGIT_TESTS=OFF >"$T/configure" 2>&1 &&
  ok "configure with -DMCGIT_TESTS=OFF" || { bad "configure with tests off"; tail -5 "$T/configure"; }
grep -qi cmocka "$T/configure" && bad "configure with tests off mentions cmocka: $(grep -i cmocka "$T/configure")" ||
  ok "and says nothing about cmocka"
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
