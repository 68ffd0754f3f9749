#!/usr/bin/env bash
# test_health_checks.sh — a health check is bounded and never passes
# without running (local backend, one pool of two nodes, maxUnavailable 1):
#   - a check that hangs (`sleep 100000`, healthTimeout 5s) ends at its
#     deadline: its whole process group is killed (a child it started in the
#     background too), its output (2 MB) is bounded in the agent's log, and
#     the timeout is a failed check: the node reverts, the pool halts, the
#     other node never gets the config;
#   - a check this agent cannot run (a command, and no --host-exec on a
#     simulated node) is a failed check, never "passed": the node reverts,
#     says why, and the pool halts;
#   - the controller halts from the structured field the agent writes beside
#     its human reason (annotation healthFailure: {check, config}), not from
#     the reason's words: a node whose reason reads "health check ..." without
#     the field halts nothing, and a reworded reason with it still halts;
#   - a NUL inside a check's command is refused by `mcgit validate` with the
#     file and line, never truncated;
#   - an agent stopped (SIGTERM) while a check hangs stops at once, the
#     check's group killed, and its journal keeps the health phase.
. "$(dirname "$0")/lib.sh"
need jq timeout

mkkey op ed25519
signer_line op@example.com op >"$T/trust"
R=$T/cfg
"$MCGIT" init "$R" >/dev/null 2>&1
sign_setup "$R" "$T/trust"
CL=local:$T/cl
pool_yaml() { # ROLLOUT-YAML (indented under spec)
  cat >"$R/pools/worker.yaml" <<EOF
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata: {name: worker}
spec:
  machineConfigSelector:
    matchLabels: {machineconfiguration.openshift.io/role: worker}
  nodeSelector:
    matchLabels: {node-role.kubernetes.io/worker: ""}
  maxUnavailable: 1
$1
EOF
}
for n in w0 w1; do
  "$MCGIT" node add --cluster "$CL" "$n" --labels node-role.kubernetes.io/worker= >/dev/null
done
printf '#!/bin/sh\nexec "$@"\n' >"$T/hx"
chmod +x "$T/hx"
ctl() { "$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "$CL" --once >"$T/ctl.out" 2>&1 || true; }
# agent NODE [ARGS...]: one pass, bounded so that a hang fails the test instead of stalling it
agent() { local n=$1; shift; RC=0; timeout 60 "$MCGIT" agent --node "$n" --cluster "$CL" --once -v "$@" >"$T/agent-$n.out" 2>&1 || RC=$?; }
ann() { jq -r --arg k "machineconfiguration.mcgit.io/$2" '.metadata.annotations[$k] // ""' "$T/cl/nodes/$1.json"; }
# alive PID: running (a killed child whose reaper has not reaped it yet is a zombie, not alive)
alive() { [ -r "/proc/$1/stat" ] && [ "$(sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f1)" != Z ]; }
halted() { "$MCGIT" status --cluster "$CL" -o json | jq -r '.items[] | select(.metadata.name == "worker") |
  .status.conditions[] | select(.type == "RolloutHalted") | "\(.status) \(.message)"'; }

# ------------------------------------------------------------ v1 everywhere, checks passing
# the passing check leaves a child behind, as a careless script would
cat >"$T/ok.sh" <<EOF
sleep 100000 >/dev/null 2>&1 &
echo \$! >>$T/okbg.pids
exit 0
EOF
pool_yaml "  rollout:
    healthChecks:
    - name: ok
      command: [/bin/sh, $T/ok.sh]
    healthTimeout: 5s"
write_mc "$R" 10-app worker /etc/app.conf v1
scommit "$R" op "v1"
for i in 1 2 3; do ctl; agent w0 --host-exec "$T/hx"; agent w1 --host-exec "$T/hx"; done
V1=$(ann w0 currentConfig)
[ "$(ann w0 state) $(ann w1 state)" = "Done Done" ] && [ "$(ann w1 currentConfig)" = "$V1" ] &&
  ok "v1 on both nodes, its check passing" || bad "v1: $(ann w0 state) $(ann w1 state) $(ann w0 reason)"
left=0
for p in $(cat "$T/okbg.pids" 2>/dev/null); do alive "$p" && { left=$((left + 1)); kill "$p"; }; done
[ -s "$T/okbg.pids" ] && [ "$left" = 0 ] && ok "what a passing check left running in its group was killed" ||
  bad "$left children of a passing check outlive it"

# ------------------------------------------------------------ a hanging check
cat >"$T/hang.sh" <<EOF
sleep 100000 &
echo \$! >$T/bg.pid
head -c 2000000 /dev/zero | tr '\\0' x
echo
sleep 100000
EOF
pool_yaml "  rollout:
    healthChecks:
    - name: hang
      command: [/bin/sh, $T/hang.sh]
    healthTimeout: 5s"
write_mc "$R" 10-app worker /etc/app.conf v2
scommit "$R" op "v2 with a check that hangs"
ctl
V2=$(ann w0 desiredConfig)
[ "$V2" != "$V1" ] && [ "$(ann w1 desiredConfig)" = "$V1" ] && ok "v2 goes to w0 first" || bad "desired: $V2 $(ann w1 desiredConfig)"
t0=$(date +%s)
agent w0 --host-exec "$T/hx"
rc=$RC took=$(($(date +%s) - t0))
[ "$rc" != 124 ] && [ "$took" -lt 40 ] && ok "the agent's pass ends (${took}s for a 5s healthTimeout)" ||
  bad "the agent hung on the check (rc $rc, ${took}s)"
case "$(ann w0 state) $(ann w0 reason)" in
  "Degraded health check hang failed "*" after update to $V2: '/bin/sh' still running at the deadline: its process group was killed; reverted to $V1")
    ok "the timeout is a failed check: Degraded, naming it, reverted" ;;
  *) bad "w0: $(ann w0 state) $(ann w0 reason)" ;; esac
[ "$(ann w0 currentConfig)" = "$V1" ] && [ "$(cat "$T/cl/roots/w0/etc/app.conf")" = v1 ] &&
  ok "w0 is back at v1, its file too" || bad "w0 current $(ann w0 currentConfig), file $(cat "$T/cl/roots/w0/etc/app.conf")"
bg=$(cat "$T/bg.pid" 2>/dev/null)
[ -n "$bg" ] && sleep 0.5 && ! alive "$bg" && ok "the check's background child was killed with its group" ||
  { bad "the check's child ${bg:-?} outlives it"; [ -n "$bg" ] && kill "$bg" 2>/dev/null; }
size=$(wc -c <"$T/agent-w0.out")
[ "$size" -lt 20000 ] && ok "the check's 2 MB of output is bounded in the log ($size bytes)" || bad "the log holds $size bytes"
expect_grep "health check hang output: \([0-9]+ more bytes dropped\)" "$T/agent-w0.out" \
  "the log says how much output was dropped"
ctl
expect_grep "^True node w0: health check hang failed" <(halted) "the pool halts on the timeout"
ctl
[ "$(ann w1 desiredConfig)" = "$V1" ] && ok "w1 never gets v2" || bad "w1 moved to $(ann w1 desiredConfig)"

# ------------------------------------------------------------ a check the agent cannot run
pool_yaml '  rollout:
    healthChecks:
    - name: never
      command: [/bin/false]
    healthTimeout: 5s'
write_mc "$R" 10-app worker /etc/app.conf v3
scommit "$R" op "v3 with a check that fails"
ctl
V3=$(ann w0 desiredConfig)
[ "$V3" != "$V2" ] && [ "$V3" != "$V1" ] && ok "v3 (a new source commit lifts the halt) goes to w0" || bad "w0 desired $V3"
agent w0 # no --host-exec: this simulated node has no means to run a command
if grep -q "health checks passed" "$T/agent-w0.out"; then bad "'health checks passed' for a check that never ran"
else ok "no 'health checks passed' for a check that never ran"; fi
case "$(ann w0 state) $(ann w0 reason)" in
  "Degraded health check never failed "*" after update to $V3: not run: a command check needs a live agent or --host-exec, and this agent has neither; reverted to $V1")
    ok "a check that cannot run fails, saying why; the node reverts" ;;
  *) bad "w0: $(ann w0 state) $(ann w0 reason)" ;; esac
[ "$(cat "$T/cl/roots/w0/etc/app.conf")" = v1 ] && ok "w0's file is v1 again" || bad "w0's file: $(cat "$T/cl/roots/w0/etc/app.conf")"
ctl
expect_grep "^True node w0: health check never failed" <(halted) "the pool halts"
ctl; agent w1
[ "$(ann w1 desiredConfig)" = "$V1" ] && [ "$(cat "$T/cl/roots/w1/etc/app.conf")" = v1 ] &&
  ok "the bad config does not roll out to w1" || bad "w1 moved to $(ann w1 desiredConfig)"
# ------------------------------------------------------------ the halt reads the structured field
pool_yaml '  rollout:
    healthChecks:
    - name: never
      command: [/bin/false]
    healthTimeout: 5s'
write_mc "$R" 10-app worker /etc/app.conf v4
scommit "$R" op "v4 with a check that fails where it runs"
ctl
V4=$(ann w0 desiredConfig)
[ "$V4" != "$V3" ] && ok "v4 goes to w0" || bad "w0 desired $V4"
agent w0 --host-exec "$T/hx"
[ "$(ann w0 state)" = Degraded ] && [ "$(ann w0 currentConfig)" = "$V1" ] && ok "v4's check fails on w0: reverted" ||
  bad "w0: $(ann w0 state) $(ann w0 reason)"
[ "$(ann w0 healthFailure | jq -c .)" = "{\"check\":\"never\",\"config\":\"$V4\"}" ] &&
  ok "the failure is on the node as a structured field: {check, config}" || bad "healthFailure: $(ann w0 healthFailure)"
setann() { # NODE KEY VALUE|"" (""": removed), as a reworded agent would leave it
  jq --arg k "machineconfiguration.mcgit.io/$2" --arg v "$3" \
    'if $v == "" then del(.metadata.annotations[$k]) else .metadata.annotations[$k] = $v end' \
    "$T/cl/nodes/$1.json" >"$T/node.tmp" && mv "$T/node.tmp" "$T/cl/nodes/$1.json"
}
prose=$(ann w0 reason)
case "$prose" in "health check never failed "*) ;; *) bad "w0's reason: $prose" ;; esac
setann w0 reason "Gesundheitsprüfung never fehlgeschlagen; zurück auf $V1"
ctl
expect_grep "^True node w0: health check never failed on source commit" <(halted) \
  "a reworded reason, with the field: the pool halts"
# the halt forgotten (as before it was raised), the field gone, the old words back: no halt
failure=$(ann w0 healthFailure)
jq 'del(.status.rolloutHalt)' "$T/cl/pools/worker.json" >"$T/pool.tmp" && mv "$T/pool.tmp" "$T/cl/pools/worker.json"
setann w0 healthFailure ""
setann w0 reason "$prose"
ctl
expect_grep "^False " <(halted) "a reason that reads 'health check ...' without the field halts nothing"
setann w0 healthFailure "$failure"
ctl
expect_grep "^True node w0: health check never failed" <(halted) "the field back: halted again"
ctl; agent w1 --host-exec "$T/hx"
[ "$(ann w1 desiredConfig)" = "$V1" ] && ok "and w1 never gets v4" || bad "w1 moved to $(ann w1 desiredConfig)"

# a config that passes its checks clears the field
pool_yaml '  rollout:
    healthChecks:
    - name: fine
      command: [/bin/true]
    healthTimeout: 5s'
write_mc "$R" 10-app worker /etc/app.conf v5
scommit "$R" op "v5, healthy"
for i in 1 2 3; do ctl; agent w0 --host-exec "$T/hx"; agent w1 --host-exec "$T/hx"; done
[ "$(ann w0 state) $(ann w1 state)" = "Done Done" ] && [ -z "$(ann w0 healthFailure)" ] &&
  ok "v5 everywhere, Done: the failed check is gone from w0" || bad "w0: $(ann w0 state) $(ann w0 healthFailure)"
# ------------------------------------------------------------ a NUL inside a command
pool_yaml '  rollout:
    healthChecks:
    - name: nul
      command: [/bin/true, "ok\0; rm -rf /"]'
expect_rc 1 "mcgit validate: a NUL inside a command" -- "$MCGIT" validate "$R"
"$MCGIT" validate "$R" >"$T/validate.out" 2>&1 || true
expect_grep "pools/worker.yaml:13:.*spec.rollout.healthChecks\[0\].command\[1\] contains a NUL byte" "$T/validate.out" \
  "refused with the file and line"
git -C "$R" checkout -q -- pools/worker.yaml

# ------------------------------------------------------------ SIGTERM while a check hangs
pool_yaml "  rollout:
    healthChecks:
    - name: hang
      command: [/bin/sh, $T/hang.sh]
    healthTimeout: 10m"
write_mc "$R" 10-app worker /etc/app.conf v6
scommit "$R" op "v6 with a check that hangs for 10 minutes"
ctl
rm -f "$T/bg.pid"
"$MCGIT" agent --node w0 --cluster "$CL" --interval 1 -v --host-exec "$T/hx" >"$T/loop.out" 2>&1 &
LOOP=$!
PIDS+=("$LOOP")
for i in $(seq 100); do [ -s "$T/bg.pid" ] && break; sleep 0.1; done
[ -s "$T/bg.pid" ] && ok "the hanging check is running" || bad "the check never started"
sleep 0.5
t0=$(date +%s)
kill -TERM "$LOOP"
stopped=no
for i in $(seq 100); do kill -0 "$LOOP" 2>/dev/null || { stopped=yes; break; }; sleep 0.1; done
[ "$stopped" = yes ] && ok "SIGTERM stops the agent during a hanging check ($(($(date +%s) - t0))s)" ||
  { bad "the agent did not stop within 10s of SIGTERM"; kill -KILL "$LOOP" 2>/dev/null || true; }
bg=$(cat "$T/bg.pid" 2>/dev/null)
sleep 0.5
[ -n "$bg" ] && ! alive "$bg" && ok "and the check's group was killed" || { bad "the check's child outlives the agent"; kill "$bg" 2>/dev/null || true; }
[ "$(jq -r .phase "$T/cl/roots/w0/var/lib/mcgit/journal.json" 2>/dev/null)" = health ] &&
  ok "the journal keeps the health phase, for the next agent to resume" || bad "journal: $(cat "$T/cl/roots/w0/var/lib/mcgit/journal.json" 2>&1 | head -3)"
expect_grep "health checks interrupted: the agent is stopping" "$T/loop.out" "the agent says why it stopped there"
finish
