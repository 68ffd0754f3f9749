#!/usr/bin/env bash
# test_safe_rollout.sh — safe rollouts on the local backend (a pool's
# spec.rollout and maintenanceWindows), each node's health check a command
# run through its agent's --host-exec prefix, whose answer the test sets per
# node:
#   - a check that fails on the second node reverts that node exactly (its
#     file byte for byte, back at the old config), reports Degraded with the
#     check, the time, the target and the config it went back to, and halts
#     the pool (RolloutHalted names the node, the check and the source
#     commit, and the rollback to run): the third node never gets the config;
#   - `mcgit pool resume` lifts the halt; a new source commit does too;
#   - onFailure: Halt leaves the node as it is, Degraded;
#   - a canary's next wave waits for its pause;
#   - a closed maintenance window holds the rollout, and its opening starts
#     it (MCGIT_TEST_NOW stands the controller at a given hour); `mcgit sync
#     --now POOL` overrides it, and the pool says so;
#   - two pools sharing maxConcurrentDisruptions: 1 never update two nodes at
#     once.
. "$(dirname "$0")/lib.sh"
need jq

mkkey op ed25519
signer_line op@example.com op >"$T/trust"
R=$T/cfg
"$MCGIT" init "$R" >/dev/null 2>&1
sign_setup "$R" "$T/trust"
CL=local:$T/cl
pool_yaml() { # ROLLOUT-YAML (indented under spec), MAXUNAVAILABLE
  cat >"$R/pools/worker.yaml" <<EOF
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata: {name: worker}
spec:
  machineConfigSelector:
    matchLabels: {machineconfiguration.openshift.io/role: worker}
  nodeSelector:
    matchLabels: {node-role.kubernetes.io/worker: ""}
  maxUnavailable: ${2:-2}
$1
EOF
}
CHECKS='  rollout:
    healthChecks:
    - name: api
      command: [/usr/local/bin/check-api, --quick]
    healthTimeout: 3s'
for n in w0 w1 w2; do
  "$MCGIT" node add --cluster "$CL" "$n" --labels node-role.kubernetes.io/worker= >/dev/null
  # the node's host: check-api answers with the exit status in health-NODE
  printf '#!/bin/sh\nif [ "$1" = /usr/local/bin/check-api ]; then exit "$(cat %s/health-%s 2>/dev/null || echo 0)"; fi\nexec "$@"\n' \
    "$T" "$n" >"$T/hx-$n"
  chmod +x "$T/hx-$n"
done
ctl() { "$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "$CL" --once >"$T/ctl.out" 2>&1 || true; }
agent() { "$MCGIT" agent --node "$1" --cluster "$CL" --once -v --host-exec "$T/hx-$1" >"$T/agent-$1.out" 2>&1 || true; }
agents() { for n in w0 w1 w2; do agent "$n"; done; }
at_target() { local c=0 n; for n in w0 w1 w2; do [ "$(ann $n desiredConfig)" = "$1" ] && c=$((c + 1)); done; echo "$c"; }
ann() { jq -r --arg k "machineconfiguration.mcgit.io/$2" '.metadata.annotations[$k] // ""' "$T/cl/nodes/$1.json"; }
target() { jq -r '.spec.configuration.name // ""' "$T/cl/pools/${1:-worker}.json"; }
cond() { "$MCGIT" status --cluster "$CL" -o json | jq -r --arg p "${2:-worker}" --arg t "$1" \
  '.items[] | select(.metadata.name == $p) | .status.conditions[] | select(.type == $t) | "\(.status) \(.reason) \(.message)"'; }

# ---------------------------------------------------------------- v1 everywhere
pool_yaml "$CHECKS"
write_mc "$R" 10-app worker /etc/app.conf v1
scommit "$R" op "v1"
ctl; agents
grep -q "health checks passed" "$T/agent-w0.out" && ok "the first config's health checks ran and passed" ||
  bad "no health check on w0"
ctl; agents; ctl
for n in w0 w1 w2; do [ "$(ann $n state)" = Done ] || bad "$n not Done at v1: $(ann $n state) $(ann $n reason)"; done
V1=$(ann w0 currentConfig)
expect_grep "^False  $" <(cond RolloutHalted) "RolloutHalted False (a pool with spec.rollout)"

# ---------------------------------------------------------------- a check fails on w1
write_mc "$R" 10-app worker /etc/app.conf v2
scommit "$R" op "v2"
SRC2=$(git -C "$R" rev-parse HEAD)
echo 1 >"$T/health-w1"
ctl
V2=$(ann w0 desiredConfig)
[ "$(ann w1 desiredConfig)" = "$V2" ] && [ "$(ann w2 desiredConfig)" = "$V1" ] && ok "first wave: w0 and w1 (maxUnavailable 2)" ||
  bad "wave: $(ann w0 desiredConfig) $(ann w1 desiredConfig) $(ann w2 desiredConfig)"
agent w0; agent w1
[ "$(ann w0 state)" = Done ] && ok "w0's check passes: Done" || bad "w0: $(ann w0 state) $(ann w0 reason)"
case "$(ann w1 reason)" in
  "health check api failed "*" after update to $V2: '/usr/local/bin/check-api' exited 1; reverted to $V1")
    ok "w1: Degraded, naming the check, the target and the config it went back to" ;;
  *) bad "w1 reason: $(ann w1 reason)" ;; esac
[ "$(ann w1 state)" = Degraded ] && [ "$(ann w1 currentConfig)" = "$V1" ] && ok "w1 reverted: currentConfig is v1 again" ||
  bad "w1: $(ann w1 state) current $(ann w1 currentConfig)"
[ "$(cat "$T/cl/roots/w1/etc/app.conf")" = v1 ] && cmp -s "$T/cl/roots/w1/etc/app.conf" "$T/cl/roots/w2/etc/app.conf" &&
  ok "w1's file is v1 again, byte for byte" || bad "w1's file: $(cat "$T/cl/roots/w1/etc/app.conf")"
agent w1
[ "$(ann w1 currentConfig)" = "$V1" ] && [ "$(cat "$T/cl/roots/w1/etc/app.conf")" = v1 ] &&
  ok "the failed config is not applied again while it is desired" || bad "w1 re-applied v2"
ctl
expect_grep "^True HealthCheckFailed node w1: health check api failed on source commit ${SRC2:0:12}" <(cond RolloutHalted) \
  "RolloutHalted names the node, the check and the source commit"
expect_grep "Next: in a clone of the config repo, \`mcgit rollback --repo \. [0-9a-f]{12}\` and a push restore the last good source" \
  <(cond RolloutHalted) "and the rollback that restores the last good source"
# That command works from an operator's clone. In the controller's own clone,
# whose pass fetched main without its work tree, a rollback is refused saying
# so, never advising to commit what git shows there as local changes.
NEXT=$(cond RolloutHalted | sed -n 's/.*Next: in a clone of the config repo, `\(mcgit rollback --repo \. [0-9a-f]*\)`.*/\1/p')
SV=$T/server.git
git clone -q --bare "$R" "$SV"
git clone -q "$SV" "$T/ctlclone" && git -C "$T/ctlclone" reset -q --hard HEAD~1
"$MCGIT" controller --repo "$T/ctlclone" --trust "$T/trust" --cluster "local:$T/cl-ctlclone" --once >/dev/null 2>&1 || true
[ "$(git -C "$T/ctlclone" rev-parse main)" = "$SRC2" ] && [ -n "$(git -C "$T/ctlclone" status --porcelain)" ] &&
  ok "the controller's pass moved its clone's main, not its work tree (git shows changes)" || bad "controller clone: $(git -C "$T/ctlclone" rev-parse main)"
before=$(git -C "$T/ctlclone" for-each-ref; git -C "$T/ctlclone" status --porcelain)
expect_rc 1 "the Next: command in the controller's clone is refused" -- bash -c "cd '$T/ctlclone' && $NEXT --key '$T/keys/op'"
expect_grep "the work tree is at [0-9a-f]{12} but branch main is at ${SRC2:0:12}: the branch moved without its work tree .*nothing was changed. Make the rollback in your own clone" \
  "$T/err" "saying the branch moved under the work tree, and where to make it"
grep -qi "commit or stash\|commit them" "$T/err" && bad "the refusal advises committing changes mcgit did not make" ||
  ok "and it does not advise committing anything"
[ "$before" = "$(git -C "$T/ctlclone" for-each-ref; git -C "$T/ctlclone" status --porcelain)" ] && ok "nothing changed there" || bad "the refused rollback changed the clone"
git clone -q "$SV" "$T/opclone" && sign_setup "$T/opclone" "$T/trust"
expect_rc 0 "the Next: command works in an operator's clone" -- bash -c "cd '$T/opclone' && $NEXT --key '$T/keys/op'"
expect_rc 0 "and its push is a fast-forward" -- git -C "$T/opclone" push -q origin main
[ "$(git -C "$SV" rev-parse main:machineconfigs)" = "$(git -C "$R" rev-parse "$SRC2~1:machineconfigs")" ] &&
  ok "the server now holds the last good source's configs" || bad "the rollback did not restore v1's configs"
jq -r 'select(.reason == "RolloutHalted") | "\(.name) \(.type) \(.message)"' "$T/cl/events.jsonl" >"$T/halt-events" 2>/dev/null || true
[ "$(wc -l <"$T/halt-events")" = 1 ] && grep -q "^worker Warning node w1: health check api failed" "$T/halt-events" &&
  ok "one RolloutHalted event about the pool" || { bad "events"; sed 's/^/    /' "$T/halt-events"; tail -3 "$T/cl/events.jsonl"; }
ctl
[ "$(ann w2 desiredConfig)" = "$V1" ] && ok "the third node never gets the config" || bad "w2 moved: $(ann w2 desiredConfig)"
# status.rolloutSince.since is a timestamp (kubectl describe mcp shows it as
# it is), kept from pass to pass while the pool rolls out the same target
since() { jq -r '.status.rolloutSince.since // ""' "$T/cl/pools/worker.json"; }
SINCE=$(since)
[[ $SINCE =~ ^20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-5][0-9]Z$ ]] &&
  ok "rolloutSince.since is a timestamp ($SINCE), not seconds since the epoch" || bad "rolloutSince.since: '$SINCE'"
sleep 1.1; ctl
[ "$(since)" = "$SINCE" ] && ok "and it is kept by the next pass" || bad "rolloutSince moved: $SINCE -> $(since)"
"$MCGIT" status --cluster "$CL" >"$T/status.txt" 2>&1 || true
expect_grep "^worker: RolloutHalted: node w1: health check api failed" "$T/status.txt" "mcgit status says the pool is halted"
"$MCGIT" status --cluster "$CL" nodes -o wide >"$T/nodes.txt" 2>&1 || true
expect_grep "^w1 .*Degraded +worker +health check api failed" "$T/nodes.txt" "and, per node, the check that failed"

# ---------------------------------------------------------------- resume lifts it
expect_rc 0 "mcgit pool resume worker" -- "$MCGIT" pool resume worker --cluster "$CL"
ctl
[ "$(ann w2 desiredConfig)" = "$V2" ] && ok "after resume the rollout goes on: w2 gets v2" || bad "w2 after resume: $(ann w2 desiredConfig)"
expect_grep "^False " <(cond RolloutHalted) "RolloutHalted False after resume"
agent w2

# ---------------------------------------------------------------- a new commit lifts a halt
rm -f "$T/health-w1"
echo 1 >"$T/health-w0"
write_mc "$R" 10-app worker /etc/app.conf v3
scommit "$R" op "v3"
ctl; agent w0; agent w1; ctl
expect_grep "^True HealthCheckFailed node w0: health check api" <(cond RolloutHalted) "v3 fails on w0: halted again"
rm -f "$T/health-w0"
write_mc "$R" 10-app worker /etc/app.conf v4
scommit "$R" op "v4 (the fix)"
ctl
expect_grep "^False " <(cond RolloutHalted) "a new source commit lifts the halt"
for i in 1 2 3; do agents; ctl; done
for n in w0 w1 w2; do [ "$(cat "$T/cl/roots/$n/etc/app.conf")" = v4 ] && [ "$(ann $n state)" = Done ] ||
  bad "$n after the fix: $(ann $n state) $(ann $n reason)"; done
ok "the fix rolls out to every node"

# ---------------------------------------------------------------- onFailure: Halt
pool_yaml "$CHECKS
    onFailure: Halt" 1
write_mc "$R" 10-app worker /etc/app.conf v5
scommit "$R" op "v5, Halt"
echo 1 >"$T/health-w0"
ctl; agent w0
case "$(ann w0 state) $(ann w0 reason)" in
  "Degraded health check api failed "*"after update to "*"exited 1") ok "Halt: Degraded, nothing reverted" ;;
  *) bad "Halt: $(ann w0 state) $(ann w0 reason)" ;; esac
[ "$(cat "$T/cl/roots/w0/etc/app.conf")" = v5 ] && ok "Halt: the node is left as it is (v5)" || bad "Halt reverted"
rm -f "$T/health-w0"

# ---------------------------------------------------------------- canary
pool_yaml '  rollout:
    canary: 1
    canaryPause: 3s
    healthChecks:
    - name: api
      command: [/usr/local/bin/check-api]
    healthTimeout: 3s' 3
write_mc "$R" 10-app worker /etc/app.conf v6
scommit "$R" op "v6, canary"
expect_rc 0 "mcgit plan of the canary" -- "$MCGIT" plan --repo "$R" --trust "$T/trust"
expect_grep "^  canary: 1 node first, the next wave after 3s healthy$" "$T/out" "plan shows the canary"
expect_grep "^  health checks: api \(/usr/local/bin/check-api\) within 3s; on failure: Revert$" "$T/out" "plan shows the checks"
ctl
V6=$(target)
[ "$(at_target "$V6")" = 1 ] && ok "canary: the first wave is one node" || bad "canary wave: $(at_target "$V6") nodes"
agents; ctl
[ "$(at_target "$V6")" = 1 ] &&
  ok "canary healthy: the next wave waits for canaryPause" || bad "the next wave did not wait"
sleep 3; ctl
[ "$(at_target "$V6")" = 3 ] &&
  ok "after the pause the rest follows" || bad "after the pause: $(ann w0 desiredConfig) $(ann w1 desiredConfig) $(ann w2 desiredConfig)"
agents; ctl

# ---------------------------------------------------------------- maintenance windows
# Saturday 2026-11-28 01:00 UTC = 02:00 in Berlin; the window opens at 03:00 Berlin
pool_yaml '  maintenanceWindows:
  - days: [Sat]
    start: "03:00"
    duration: 1h
    timeZone: Europe/Berlin' 3
write_mc "$R" 10-app worker /etc/app.conf v7
scommit "$R" op "v7, windows"
expect_rc 0 "mcgit plan with a window" -- "$MCGIT" plan --repo "$R" --trust "$T/trust"
expect_grep "^  maintenance window: Sat 03:00 for 1h Europe/Berlin$" "$T/out" "plan shows the window"
SAT_0200=$(date -d '2026-11-28T01:00:00Z' +%s)
MCGIT_TEST_NOW=$SAT_0200 ctl
V7=$(target)
"$MCGIT" status --cluster "$CL" >"$T/status.txt" 2>&1 || true
expect_grep "^worker: waiting for the window Sat 03:00 Europe/Berlin, in 60m$" "$T/status.txt" "mcgit status says when the window opens"
[ "$(at_target "$V7")" = 0 ] && ok "outside the window no node starts an update" || bad "moved outside the window"
expect_grep "^False MaintenanceWindow waiting for the window Sat 03:00 Europe/Berlin, in 60m" <(cond Updating) \
  "the pool says when the window opens"
MCGIT_TEST_NOW=$((SAT_0200 + 3600 + 60)) ctl
[ "$(at_target "$V7")" = 3 ] && ok "the window's opening starts the rollout" || { bad "not started in the window"; cond Updating; }
agents; MCGIT_TEST_NOW=$((SAT_0200 + 3600 + 120)) ctl; agents
# outside the window again, the operator's override: mcgit sync --now POOL
write_mc "$R" 10-app worker /etc/app.conf v7b
scommit "$R" op "v7b, urgent"
MCGIT_TEST_NOW=$((SAT_0200 + 86400)) ctl
V7B=$(target)
[ "$(at_target "$V7B")" = 0 ] && ok "v7b waits for the window" || bad "v7b moved outside the window"
expect_rc 0 "mcgit sync --now worker" -- "$MCGIT" sync --cluster "$CL" --now worker
expect_grep "^pool worker: $V7B rolls out now, outside its maintenance windows" "$T/out" "sync --now says what it overrides"
MCGIT_TEST_NOW=$((SAT_0200 + 86400 + 10)) ctl
[ "$(at_target "$V7B")" = 3 ] && ok "sync --now: the rollout starts outside the window" || bad "not started by sync --now"
expect_grep "^mcgit controller: pool worker $V7B: outside its maintenance windows, on an operator's \`mcgit sync --now\`" "$T/ctl.out" \
  "the controller logs the override"
expect_grep "^True Updating .*outside its maintenance windows, on an operator's \`mcgit sync --now\`" <(cond Updating) \
  "the pool's Updating condition says it was an operator's override"
agents; MCGIT_TEST_NOW=$((SAT_0200 + 86400 + 20)) ctl; agents
expect_rc 1 "sync --now for a pool that does not exist" -- "$MCGIT" sync --cluster "$CL" --now nosuch
expect_grep "no pool 'nosuch'" "$T/err" "(it says the pool does not exist)"
# a target the pool names that the cluster does not hold (yet): no override for it
cp "$T/cl/pools/worker.json" "$T/worker.json.saved"
jq '.spec.configuration.name = "rendered-worker-0000000000000000000000000000dead"' "$T/worker.json.saved" >"$T/cl/pools/worker.json"
expect_rc 1 "sync --now for a target that is not published" -- "$MCGIT" sync --cluster "$CL" --now worker
expect_grep "pool worker: its target rendered-worker-0+dead is not published yet" "$T/err" "(it says so)"
jq -e '.metadata.annotations["machineconfiguration.mcgit.io/sync-now"] // "" | test("dead") | not' "$T/cl/pools/worker.json" >/dev/null &&
  ok "(no override recorded for it)" || bad "an override for an unpublished target was recorded"
cp "$T/worker.json.saved" "$T/cl/pools/worker.json"

# ---------------------------------------------------------------- a shared disruption budget
"$MCGIT" node add --cluster "$CL" m0 --labels node-role.kubernetes.io/master= >/dev/null
"$MCGIT" node add --cluster "$CL" m1 --labels node-role.kubernetes.io/master= >/dev/null
sed -i 's/^  maxUnavailable: .*/  maxUnavailable: 3/' "$R/pools/master.yaml"
grep -q 'maxUnavailable: 3' "$R/pools/master.yaml" || echo '  maxUnavailable: 3' >>"$R/pools/master.yaml"
pool_yaml "" 3
scommit "$R" op "masters, no windows"
for i in 1 2 3; do ctl; for n in w0 w1 w2 m0 m1; do "$MCGIT" agent --node "$n" --cluster "$CL" --once -q >/dev/null 2>&1 || true; done; done
cat >"$R/mcgit.yaml" <<'EOF'
maxConcurrentDisruptions: 1
EOF
write_mc "$R" 10-app worker /etc/app.conf v8
write_mc "$R" 10-mapp master /etc/app.conf m8
scommit "$R" op "v8, budget 1"
most=0
for i in $(seq 12); do
  ctl
  busy=0
  for n in w0 w1 w2 m0 m1; do d=$(ann $n desiredConfig); c=$(ann $n currentConfig)
    [ -n "$d" ] && [ "$d" != "$c" ] && busy=$((busy + 1)); done
  [ "$busy" -gt "$most" ] && most=$busy
  for n in w0 w1 w2 m0 m1; do "$MCGIT" agent --node "$n" --cluster "$CL" --once -q >/dev/null 2>&1 || true; done
done
[ "$most" = 1 ] && ok "two pools, budget 1: never two nodes updating at once" || bad "at most $most at once"
[ "$(cat "$T/cl/roots/w2/etc/app.conf")" = v8 ] && [ "$(cat "$T/cl/roots/m1/etc/app.conf")" = m8 ] &&
  ok "and both pools finish" || bad "budget: not finished"
# a change that neither drains nor reboots (a None rule) is not counted: the
# workers all go at once while the masters, rebooting, go one at a time
cat >"$R/machineconfigs/policy.yaml" <<'EOF'
apiVersion: operator.openshift.io/v1
kind: MachineConfiguration
metadata: {name: cluster}
spec:
  nodeDisruptionPolicy:
    files:
    - path: /etc/app.conf
      actions: [{type: None}]
EOF
write_mc "$R" 10-app worker /etc/app.conf v9
write_mc "$R" 10-mapp master /etc/mapp.conf m9
scommit "$R" op "v9: workers without disruption, masters with a reboot"
mmost=0 wmost=0
for i in $(seq 8); do
  ctl
  mb=0 wb=0
  for n in w0 w1 w2 m0 m1; do d=$(ann $n desiredConfig); c=$(ann $n currentConfig)
    if [ -n "$d" ] && [ "$d" != "$c" ]; then case $n in m*) mb=$((mb + 1)) ;; *) wb=$((wb + 1)) ;; esac; fi; done
  [ "$mb" -gt "$mmost" ] && mmost=$mb
  [ "$wb" -gt "$wmost" ] && wmost=$wb
  for n in w0 w1 w2 m0 m1; do "$MCGIT" agent --node "$n" --cluster "$CL" --once -q >/dev/null 2>&1 || true; done
done
[ "$wmost" = 3 ] && [ "$mmost" = 1 ] &&
  ok "the budget counts what drains or reboots: workers 3 at once (None), masters one at a time" ||
  bad "workers at most $wmost, masters at most $mmost"
finish
