#!/usr/bin/env bash
# test_pool_sync.sh — an operator's requests on the cluster side, local:DIR:
#   - mcgit pool pause|resume: the pause is MCO's spec.paused on the pool
#     object; it holds a rollout (the target moves, no node gets it), is never
#     overwritten from git by the controller's writes, shows in status with
#     its reason; resume removes only the operator's pause (a pool paused in
#     git, status.pausedInGit, stays paused and resume says so); the older
#     pause annotation still holds and resume lifts it; what changes nothing
#     says so; metadata.generation moves with the pause and
#     status.observedGeneration follows once a pass saw it
#   - pool status as MCO writes it: configuration.source (the MachineConfigs
#     in the render, shown by status -o wide), the conditions' messages
#   - mcgit sync: a running controller with a 300 s interval passes at once
#     and answers; --wait prints the answer, exit 1 for a refused pass or
#     when no controller answers; a pause wakes the controller too
. "$(dirname "$0")/lib.sh"
need jq

R=$T/cfg
fixture_signed_repo "$R"
fixture_v1 "$R"
CL=local:$T/cl
fixture_workers "$CL" w0 w1
ctl_once() { "$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "$CL" --once >/dev/null 2>&1; }
desired() { "$MCGIT" status --cluster "$CL" nodes -o json | jq -r --arg n "$1" '.items[] | select(.metadata.name == $n) | .metadata.annotations["machineconfiguration.mcgit.io/desiredConfig"] // ""'; }
target() { "$MCGIT" status --cluster "$CL" -o json | jq -r '.items[] | select(.metadata.name == "worker") | .spec.configuration.name // ""'; }
updating_msg() { "$MCGIT" status --cluster "$CL" -o json | jq -r '.items[] | select(.metadata.name == "worker") | .status.conditions[] | select(.type == "Updating") | .message'; }
wpool() { jq -r "$1" "$T/cl/pools/worker.json"; }

# ------------------------------------------------------------ usage, errors
expect_rc 2 "pool without a verb is a usage error" -- "$MCGIT" pool --cluster "$CL"
expect_grep "expected pause POOL or resume POOL" "$T/err" "(it says what it expects)"
[ "$(wc -l <"$T/err")" = 2 ] && ok "(one line and the hint)" || bad "usage error: $(cat "$T/err")"
expect_rc 2 "pool frobnicate is a usage error" -- "$MCGIT" pool frobnicate worker --cluster "$CL"
expect_rc 2 "pool pause without --cluster nor \$MCGIT_CLUSTER" -- env -u MCGIT_CLUSTER "$MCGIT" pool pause worker
expect_rc 1 "pause before the controller made the pool objects" -- "$MCGIT" pool pause worker --cluster "$CL"
expect_grep "^mcgit pool: cluster local:.* has no pool 'worker' \(the controller makes the pools" "$T/err" "(the reason names the pool and why)"
[ ! -e "$T/cl/pools/worker.json" ] && ok "(nothing written)" || bad "a pool object appeared"
expect_rc 1 "an invalid pool name is refused" -- "$MCGIT" pool pause Bad_Name --cluster "$CL"
expect_grep "invalid pool name 'Bad_Name'" "$T/err" "(named)"
expect_rc 1 "sync on a cluster directory that does not exist" -- "$MCGIT" sync --cluster "local:$T/nope"
expect_grep "no such directory" "$T/err" "(one line)"
[ ! -e "$T/nope" ] && ok "(nothing created)" || bad "$T/nope created"
expect_rc 2 "sync --timeout junk" -- "$MCGIT" sync --cluster "$CL" --timeout soon

for round in 1 2; do # a first rollout goes one node at a time, as any other
  ctl_once
  for n in w0 w1; do "$MCGIT" agent --node "$n" --cluster "$CL" --once -q >/dev/null 2>&1; done
done
V1=$(target)
[ -n "$V1" ] && [ "$(desired w0)" = "$V1" ] && ok "set-up: worker on $V1" || bad "set-up: target '$V1'"
# a rendered config's metadata: owned by its pool, with the version that made it
M=$T/cl/configs/.meta/$V1.json
[ "$(jq -r '.metadata.ownerReferences[0] | "\(.kind) \(.name) \(.controller)"' "$M")" = "MachineConfigPool worker true" ] \
  && [ "$(jq -r '.metadata.annotations["machineconfiguration.openshift.io/generated-by-controller-version"]' "$M")" = "$("$MCGIT" --version | head -1 | awk '{print $2}')" ] \
  && ok "$V1: owned by pool worker, generated-by-controller-version = mcgit's version" || bad "config metadata: $(cat "$M" 2>&1)"
expect_rc 1 "pause of a pool the repo does not have" -- "$MCGIT" pool pause infra --cluster "$CL"
expect_grep "has no pool 'infra'" "$T/err" "(named)"

# ------------------------------------------------------------ operator pause
expect_rc 0 "pool pause worker" -- "$MCGIT" pool pause worker --cluster "$CL"
expect_grep "^pool worker paused by an operator: its nodes get no new config until \`mcgit pool resume worker\`$" "$T/out" "pause says what it does"
[ "$(wpool .spec.paused)" = true ] && ok "the pause is spec.paused on the pool object, as MCO's" \
  || bad "spec.paused: $(cat "$T/cl/pools/worker.json")"
[ "$(wpool '.metadata.generation - .status.observedGeneration')" = 1 ] \
  && ok "the pause moves metadata.generation ($(wpool .metadata.generation)); no pass saw it yet" \
  || bad "generation $(wpool .metadata.generation), observed $(wpool .status.observedGeneration)"
expect_rc 0 "pausing again changes nothing" -- "$MCGIT" pool pause worker --cluster "$CL"
expect_grep "^pool worker is already paused by an operator; nothing changed$" "$T/out" "(and says so)"
MCGIT_CLUSTER=$CL expect_rc 0 "status with \$MCGIT_CLUSTER" -- "$MCGIT" status
expect_grep "^worker: paused by an operator \(\`mcgit pool resume\` resumes it\)$" "$T/out" "status names the paused pool and why"
if grep -q "^master: paused" "$T/out"; then bad "master listed as paused"; else ok "(master is not listed)"; fi

write_mc "$R" 10-worker worker /etc/demo.conf v2
scommit "$R" op "v2"
ctl_once
[ "$(wpool '.metadata.generation == .status.observedGeneration')" = true ] \
  && ok "a pass saw it: observedGeneration = generation = $(wpool .metadata.generation)" \
  || bad "generation $(wpool .metadata.generation), observed $(wpool .status.observedGeneration)"
V2=$(target)
[ -n "$V2" ] && [ "$V2" != "$V1" ] && ok "the paused pool still renders: target $V2" || bad "target did not move: $V2"
[ "$(desired w0)" = "$V1" ] && [ "$(desired w1)" = "$V1" ] && ok "no node gets the new config while paused" \
  || bad "rolled out while paused: $(desired w0) $(desired w1)"
[ "$(updating_msg)" = "Pool is paused; will not update to MachineConfig $V2 (paused by an operator)" ] \
  && ok "Updating condition: MCO's message, and who paused it" || bad "Updating: $(updating_msg)"
[ "$(wpool .spec.paused)" = true ] && [ "$(wpool .status.pausedInGit)" = false ] \
  && ok "the controller's pool write keeps spec.paused (git says false: status.pausedInGit)" \
  || bad "spec.paused $(wpool .spec.paused), pausedInGit $(wpool .status.pausedInGit)"
[ "$(wpool '[.spec.configuration.source[].name] | join(",")')" = "00-worker,10-worker" ] \
  && [ "$(wpool '.spec.configuration.source[0] | "\(.apiVersion) \(.kind)"')" = "machineconfiguration.openshift.io/v1 MachineConfig" ] \
  && ok "spec.configuration.source: the target's MachineConfigs as ObjectReferences" \
  || bad "spec.configuration: $(wpool .spec.configuration)"

expect_rc 0 "pool resume worker" -- "$MCGIT" pool resume worker --cluster "$CL"
expect_grep "^pool worker resumed: the controller rolls it out again$" "$T/out" "resume says so"
expect_rc 0 "resuming again changes nothing" -- "$MCGIT" pool resume worker --cluster "$CL"
expect_grep "^pool worker is not paused; nothing changed$" "$T/out" "(and says so)"
ctl_once
n=0; for x in w0 w1; do [ "$(desired $x)" = "$V2" ] && n=$((n+1)); done
[ "$n" = 1 ] && ok "resumed: the rollout goes on (one node at maxUnavailable 1)" || bad "$n nodes on $V2"
for x in w0 w1; do "$MCGIT" agent --node "$x" --cluster "$CL" --once -q >/dev/null 2>&1; done
ctl_once
for x in w0 w1; do "$MCGIT" agent --node "$x" --cluster "$CL" --once -q >/dev/null 2>&1; done

# spec.paused written straight into the object (what `kubectl patch` does on
# kube): honoured, never overwritten from git, and resume lifts it
jq '.spec.paused = true' "$T/cl/pools/worker.json" >"$T/p.json" && mv "$T/p.json" "$T/cl/pools/worker.json"
write_mc "$R" 10-worker worker /etc/demo.conf v2b
scommit "$R" op "v2b"
ctl_once
[ "$(desired w0)" = "$V2" ] && [ "$(desired w1)" = "$V2" ] && [ "$(wpool .spec.paused)" = true ] \
  && ok "spec.paused set by hand holds the pool and survives the controller's pass" \
  || bad "spec.paused $(wpool .spec.paused); nodes $(desired w0) $(desired w1)"
expect_rc 0 "status" -- "$MCGIT" status --cluster "$CL"
expect_grep "^worker: paused by an operator" "$T/out" "(status: paused by an operator)"
expect_rc 0 "resume" -- "$MCGIT" pool resume worker --cluster "$CL"
expect_grep "^pool worker resumed" "$T/out" "(resume lifts it)"
V2=$(target)
for _ in 1 2; do
  ctl_once
  for x in w0 w1; do "$MCGIT" agent --node "$x" --cluster "$CL" --once -q >/dev/null 2>&1; done
done
[ "$(desired w0)" = "$V2" ] && [ "$(desired w1)" = "$V2" ] && ok "resumed: rolled out to $V2" || bad "after resume: $(desired w0) $(desired w1)"

# the older annotation still pauses, the controller keeps it, and resume lifts it
jq '.metadata.annotations["machineconfiguration.mcgit.io/paused"] = "true"' "$T/cl/pools/worker.json" >"$T/p.json" \
  && mv "$T/p.json" "$T/cl/pools/worker.json"
ctl_once
[ "$(desired w0)" = "$V2" ] && [ "$(desired w1)" = "$V2" ] && [ "$(wpool '.metadata.annotations["machineconfiguration.mcgit.io/paused"]')" = true ] \
  && ok "the older pause annotation holds the pool, kept by the controller" || bad "annotation: $(desired w0) $(desired w1) $(wpool .metadata)"
expect_rc 0 "resume lifts the annotation too" -- "$MCGIT" pool resume worker --cluster "$CL"
expect_grep "^pool worker resumed" "$T/out" "(says so)"
[ "$(wpool '.metadata.annotations // {} | has("machineconfiguration.mcgit.io/paused")')" = false ] && [ "$(wpool .spec.paused)" = false ] \
  && ok "(annotation gone, spec.paused false)" || bad "after resume: $(wpool .metadata) $(wpool .spec)"

# ------------------------------------------------------------ paused in git
sed -i 's/paused: false/paused: true/' "$R/pools/worker.yaml"
scommit "$R" op "pause worker in git"
ctl_once
# an object as an earlier mcgit wrote it: git's pause in spec.paused, no
# status.pausedInGit; the pass takes that spec.paused as git's and clears it
jq '.spec.paused = true | del(.status.pausedInGit)' "$T/cl/pools/worker.json" >"$T/p.json" && mv "$T/p.json" "$T/cl/pools/worker.json"
ctl_once
[ "$(wpool .spec.paused)" = false ] && [ "$(wpool .status.pausedInGit)" = true ] \
  && ok "upgrade: an earlier mcgit's spec.paused (git's) is cleared once, git's pause kept" \
  || bad "after the upgrade pass: spec.paused $(wpool .spec.paused), pausedInGit $(wpool .status.pausedInGit)"
expect_rc 0 "status" -- "$MCGIT" status --cluster "$CL"
expect_grep "^worker: paused in git \(spec.paused; resumed by a signed commit\)$" "$T/out" "status: paused in git"
[ "$(wpool .status.pausedInGit)" = true ] && [ "$(wpool .spec.paused)" = false ] \
  && ok "git's pause is status.pausedInGit; spec.paused stays the operator's" || bad "pausedInGit $(wpool .status.pausedInGit), spec.paused $(wpool .spec.paused)"
expect_rc 0 "resume of a pool paused only in git" -- "$MCGIT" pool resume worker --cluster "$CL"
expect_grep "^pool worker has no operator pause; nothing changed \(it stays paused: spec.paused is true in git\)$" "$T/out" "resume says the pool stays paused"
expect_rc 0 "pause on top of git's" -- "$MCGIT" pool pause worker --cluster "$CL"
expect_grep "\(it is paused in git too\)$" "$T/out" "(says it is paused in git too)"
expect_rc 0 "status" -- "$MCGIT" status --cluster "$CL"
expect_grep "^worker: paused in git \(spec.paused\) and by an operator" "$T/out" "status: both reasons"
expect_rc 0 "resume removes the operator's pause only" -- "$MCGIT" pool resume worker --cluster "$CL"
expect_grep "^pool worker: operator pause removed, but the pool stays paused: spec.paused is true in git" "$T/out" "resume says git still pauses it"
write_mc "$R" 10-worker worker /etc/demo.conf v3
scommit "$R" op "v3"
ctl_once
V3=$(target)
[ "$V3" != "$V2" ] && [ "$(desired w0)" = "$V2" ] && [ "$(desired w1)" = "$V2" ] \
  && ok "still paused by git after the operator's resume: nothing rolls out" || bad "rolled out: $(desired w0) $(desired w1)"
sed -i 's/paused: true/paused: false/' "$R/pools/worker.yaml"
scommit "$R" op "resume worker in git"
for _ in 1 2; do # two waves at maxUnavailable 1: both nodes Done on v3
  ctl_once
  for x in w0 w1; do "$MCGIT" agent --node "$x" --cluster "$CL" --once -q >/dev/null 2>&1; done
done
[ "$(desired w0)" = "$V3" ] && [ "$(desired w1)" = "$V3" ] && ok "resumed in git: rolled out" \
  || bad "after the git resume: $(desired w0) $(desired w1)"
ctl_once
[ "$(wpool '.status.configuration.name')" = "$V3" ] && [ "$(wpool '[.status.configuration.source[].name] | join(",")')" = "00-worker,10-worker" ] \
  && ok "status.configuration.source: those of the config the nodes run" || bad "status.configuration: $(wpool .status.configuration)"
expect_rc 0 "status -o wide" -- "$MCGIT" status --cluster "$CL" -o wide
expect_grep "^NAME +CONFIG .* AGE +MACHINECONFIGS$" "$T/out" "-o wide adds MACHINECONFIGS"
expect_grep "^worker +$V3 .* 00-worker,10-worker$" "$T/out" "(the MachineConfigs CONFIG was rendered from)"

# ------------------------------------------------------------ sync
expect_rc 1 "sync --wait with no controller running times out" -- "$MCGIT" sync --cluster "$CL" --wait --timeout 0.5
expect_grep "^mcgit sync: no controller answered sync #[0-9]+ within 0.5 s" "$T/err" "(and says so)"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$T"' EXIT
"$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "$CL" --interval 300 >"$T/ctl.log" 2>&1 & pids+=($!)
sleep 1.5 # its first pass (answering the request above) is over
expect_rc 0 "sync --wait against a controller with a 300 s interval" -- timeout 20 "$MCGIT" sync --cluster "$CL" --wait --timeout 15
expect_grep "^sync #[0-9]+ answered at 20[0-9-]+T[0-9:]+Z: pass done over 2 nodes: [0-9]+ given a new desiredConfig$" "$T/out" "the answer is the pass's result"
s=$(date +%s%N)
MCGIT_CLUSTER=$CL expect_rc 0 "sync --wait with \$MCGIT_CLUSTER" -- "$MCGIT" sync --wait --timeout 15
ms=$(( ($(date +%s%N) - s) / 1000000 ))
[ "$ms" -lt 5000 ] && ok "answered in ${ms} ms (interval 300 s)" || bad "sync took ${ms} ms"
# many at once, some arriving while a pass runs: every one answered, by a pass
# that started after it (the counter counts each; the loop passes again at once)
s=$(date +%s%N); wp=()
for i in 1 2 3 4 5 6; do timeout 20 "$MCGIT" sync --cluster "$CL" --wait --timeout 15 >"$T/many.$i" 2>&1 & wp+=($!); sleep 0.03; done
n=0; for p in "${wp[@]}"; do wait "$p" && n=$((n+1)); done
ms=$(( ($(date +%s%N) - s) / 1000000 ))
[ "$n" = 6 ] && ok "six concurrent syncs all answered in ${ms} ms" || { bad "$n of 6 syncs answered"; cat "$T"/many.*; }
[ "$(jq -r '.requested == .handled' "$T/cl/sync.json")" = true ] && ok "(requested = handled: $(jq -r .handled "$T/cl/sync.json"))" || bad "sync.json: $(cat "$T/cl/sync.json")"
expect_rc 0 "sync without --wait" -- "$MCGIT" sync --cluster "$CL"
expect_grep "^sync #[0-9]+ requested: the controller passes at once" "$T/out" "(says what it did)"
# a pause wakes the controller too: pause, commit, resume --wait rolls out at once
"$MCGIT" pool pause worker --cluster "$CL" --wait --timeout 15 >"$T/out" 2>"$T/err" \
  && ok "pause --wait: the controller applied it" || bad "pause --wait: $(cat "$T/err")"
B0=$(desired w0) B1=$(desired w1)
write_mc "$R" 10-worker worker /etc/demo.conf v4
scommit "$R" op "v4"
sleep 1.5 # the controller sees the commit within a second: new target, held
[ "$(desired w0)" = "$B0" ] && [ "$(desired w1)" = "$B1" ] && ok "a commit to a paused pool rolls out nowhere" \
  || bad "moved while paused: $(desired w0) $(desired w1)"
expect_rc 0 "resume --wait" -- timeout 20 "$MCGIT" pool resume worker --cluster "$CL" --wait --timeout 15
expect_grep "^sync #[0-9]+ answered at .*: pass done over 2 nodes: 1 given a new desiredConfig$" "$T/out" "the pass after resume gave one node the new config"
# a refused commit: the answer says so, exit 1
echo "# unsigned" >>"$R/machineconfigs/10-worker.yaml"
scommit "$R" - "unsigned"
expect_rc 1 "sync --wait when the pass refuses a commit" -- timeout 20 "$MCGIT" sync --cluster "$CL" --wait --timeout 15
expect_grep "^mcgit sync: sync #[0-9]+ answered at .*: commit [0-9a-f]{12} refused" "$T/err" "(the refusal, one line)"
kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null || true
if grep -qE "Sanitizer|runtime error" "$T/ctl.log"; then bad "sanitizer report in the controller's log"; fi
finish
