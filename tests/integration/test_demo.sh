#!/usr/bin/env bash
# The README's main job: `mcgit demo` runs the whole loop and its commits
# carry real SSH signatures that git verify-commit accepts.
. "$(dirname "$0")/lib.sh"
expect_rc 0 "mcgit demo completes" -- timeout 120 "$MCGIT" demo --dir "$T/demo"
cp "$T/out" "$T/demo.out"
# The demo samples every 100 ms; an event-driven rollout may finish between
# samples. Never more than one at a time (the invariant itself is tested
# by test_controller_rollout.sh and test_controller_concurrency.sh).
if grep -qE "at most [2-9][0-9]* worker nodes were updating" "$T/demo.out"; then bad "more than one worker updating at once"
else expect_grep "at most 1 worker node was updating|the waves went by between samples" "$T/demo.out" "workers never updated more than one at a time"; fi
expect_grep "RenderDegraded: commit [0-9a-f]+ refused: commit is not signed" "$T/demo.out" "unsigned commit refused"
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
finish
