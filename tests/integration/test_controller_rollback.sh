#!/usr/bin/env bash
# Rollback, paused pools, a node claimed by two custom pools, published
# configs kept to a bound, and the status views (-o wide, AGE) — with a
# real controller and agents on a local cluster.
. "$(dirname "$0")/lib.sh"
need jq

CL=local:$T/cl
R=$T/repo
fixture_signed_repo "$R"
sed -i 's/maxUnavailable: 1/maxUnavailable: 3/' "$R/pools/worker.yaml"
for p in infra gpu; do
  cat >"$R/pools/$p.yaml" <<EOF
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: $p
spec:
  machineConfigSelector:
    matchLabels:
      machineconfiguration.openshift.io/role: $p
  nodeSelector:
    matchLabels:
      node-role.kubernetes.io/$p: ""
EOF
done
mc() { write_mc "$R" 10-worker worker /etc/test.conf "$1"; }
# pool_field POOL JQ: a field of the pool object
pool_field() { "$MCGIT" status --cluster "$CL" -o json | jq -r --arg p "$1" ".items[] | select(.metadata.name == \$p) | $2"; }
# workers_at CONTENT: every worker Done with /etc/test.conf = CONTENT, and the pool Updated
workers_at() {
  for n in w0 w1 w2; do [ "$(cat "$T/cl/roots/$n/etc/test.conf" 2>/dev/null)" = "$1" ] || return 1; done
  "$MCGIT" status --cluster "$CL" >"$T/table" && grep -qE '^worker +rendered-worker-[0-9a-f]+ +True +False +False +3 +3 +3 +0 ' "$T/table"
}
wait_for() {
  local end=$((SECONDS + $1)) desc=$2; shift 2
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $end ]; then bad "$desc (timed out)"; return 1; fi
    sleep 0.2
  done
  ok "$desc"
}

mc v1
scommit "$R" op v1
SRC1=$(git -C "$R" rev-parse HEAD)
"$MCGIT" node add --cluster "$CL" m0 --labels node-role.kubernetes.io/master=
for n in w0 w1 w2; do "$MCGIT" node add --cluster "$CL" $n --labels node-role.kubernetes.io/worker=; done
"$MCGIT" node add --cluster "$CL" both --labels node-role.kubernetes.io/worker=,node-role.kubernetes.io/infra=,node-role.kubernetes.io/gpu=
# node commands: bad input is refused with one line and writes nothing
expect_rc 1 "node add: invalid name refused" -- "$MCGIT" node add --cluster "local:$T/fresh" Bad_Name
expect_grep "invalid node name 'Bad_Name'" "$T/err" "with the reason"
[ ! -e "$T/fresh" ] && ok "and nothing was created" || bad "$T/fresh was created"
expect_rc 1 "status of a cluster directory that does not exist" -- "$MCGIT" status --cluster "local:$T/fresh"
[ ! -e "$T/fresh" ] && ok "is refused without creating it" || bad "status created $T/fresh"
expect_rc 1 "node add: a duplicate is refused" -- "$MCGIT" node add --cluster "$CL" w0
expect_rc 2 "node label: bad label syntax is a usage error" -- "$MCGIT" node label --cluster "$CL" w0 "bad key=x"
expect_rc 1 "node label: unknown node" -- "$MCGIT" node label --cluster "$CL" nope a=b
"$MCGIT" node add --cluster "$CL" gone --labels node-role.kubernetes.io/worker=
expect_rc 0 "node remove" -- "$MCGIT" node remove --cluster "$CL" gone
expect_rc 1 "node remove: unknown node" -- "$MCGIT" node remove --cluster "$CL" gone
"$MCGIT" node list --cluster "$CL" >"$T/list"
expect_grep "^w0 node-role.kubernetes.io/worker=$" "$T/list" "node list shows labels"
grep -q "^gone" "$T/list" && bad "removed node still listed" || ok "removed node gone"

mkdir -p "$T/logs"
"$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "$CL" --interval 0.2 --keep-configs 1 2>"$T/logs/controller" &
PIDS+=($!)
for n in m0 w0 w1 w2 both; do
  "$MCGIT" agent --node $n --cluster "$CL" --interval 1 -q 2>"$T/logs/$n" &
  PIDS+=($!)
done
wait_for 30 "v1 rolled out" workers_at v1 || exit 1
W1=$(pool_field worker .status.configuration.name)

# --- a node in two custom pools is unmanaged, and says so ----------------------
"$MCGIT" status --cluster "$CL" nodes -o wide >"$T/wide"
expect_grep "^NODE +DESIRED +CURRENT +STATE +POOL +REASON$" "$T/wide" "-o wide adds POOL and REASON"
expect_grep "^both +<none> +<none> +<none> +<unmanaged> +unmanaged: belongs to 2 custom pools: gpu, infra$" "$T/wide" "node in two custom pools: unmanaged, with the reason"
expect_grep "^w0 +$W1 +$W1 +Done +worker +$" "$T/wide" "a worker's row in -o wide"
expect_grep "^m0 +rendered-master-[0-9a-f]+ +rendered-master-[0-9a-f]+ +Done +master " "$T/wide" "a master's row in -o wide"
expect_grep "node=both: unmanaged: belongs to 2 custom pools: gpu, infra" "$T/logs/controller" "the controller logs it"
[ "$(grep -c ': unmanaged: ' "$T/logs/controller")" = 1 ] && ok "once" || bad "logged $(grep -c ': unmanaged: ' "$T/logs/controller") times"
for p in infra gpu; do [ "$(pool_field $p .status.machineCount)" = 0 ] && ok "$p counts no machine" || bad "$p machineCount"; done
"$MCGIT" node label --cluster "$CL" both node-role.kubernetes.io/gpu-
wait_for 15 "with one custom pool left it joins infra and is configured" \
  sh -c "'$MCGIT' status --cluster '$CL' nodes -o wide | grep -qE '^both +rendered-infra-[0-9a-f]+ +rendered-infra-[0-9a-f]+ +Done +infra '" || true

# --- more renders; rollback to the first -----------------------------------------
mc v2; scommit "$R" op v2
wait_for 20 "v2 rolled out" workers_at v2 || true
mc v3; scommit "$R" op v3
wait_for 20 "v3 rolled out" workers_at v3 || true
W3=$(pool_field worker .status.configuration.name)
expect_rc 0 "mcgit rollback to the first source commit (a signed source commit)" -- "$MCGIT" rollback --repo "$R" "$SRC1" --key "$T/keys/op"
expect_grep "^    worker: $W3 -> $W1$" "$T/out" "it prints the worker pool's rendered name, old -> new"
wait_for 20 "the rollback rolls out: workers back at v1" workers_at v1 || true
[ "$(pool_field worker .status.configuration.name)" = "$W1" ] && ok "worker CONFIG is the first render again" || bad "worker CONFIG after rollback"
git -C "$R" log -1 --format=%B rendered >"$T/msg"
expect_grep "^Rollback-To: $SRC1$" "$T/msg" "the rendered branch records it (from the source commit's trailer)"
git -C "$R" log -1 --format=%B main >"$T/msg"
expect_grep "^Rollback-To: $SRC1$" "$T/msg" "the source branch holds the signed rollback"
ls "$T/cl/configs" >"$T/published"
[ "$(grep -c '^rendered-worker-' "$T/published")" -le 2 ] && ok "published worker configs bounded (--keep-configs 1): $(grep -c '^rendered-worker-' "$T/published")" \
  || { bad "too many worker configs published"; cat "$T/published"; }
grep -q "^$W3.json$" "$T/published" && ok "the newest older config is still published" || bad "$W3 not kept"
export GIT_COMMITTER_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) GIT_AUTHOR_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) # after the rollback (made now)
mc v4; scommit "$R" op "v4 after the rollback"
wait_for 20 "a newer source commit ends the rollback" workers_at v4 || true

# --- a paused pool renders but rolls nothing out --------------------------------
W4=$(pool_field worker .status.configuration.name)
sed -i 's/^  maxUnavailable: 3$/  maxUnavailable: 3\n  paused: true/; /^  paused: false$/d' "$R/pools/worker.yaml"
mc v5; scommit "$R" op "v5, paused"
wait_for 10 "paused: the pool's target moves" sh -c "[ \"\$('$MCGIT' status --cluster '$CL' -o json | jq -r '.items[] | select(.metadata.name == \"worker\") | .spec.configuration.name')\" != '$W4' ]" || true
sleep 2
[ "$(cat "$T/cl/roots/w0/etc/test.conf")" = v4 ] && ok "paused: no worker updated" || bad "a paused worker was updated"
"$MCGIT" status --cluster "$CL" nodes -o json | jq -e --arg w "$W4" '[.items[] | select(.metadata.name | test("^w")) | .metadata.annotations["machineconfiguration.mcgit.io/desiredConfig"]] | all(. == $w)' >/dev/null \
  && ok "paused: no desiredConfig moved" || bad "paused: desiredConfig moved"
[ "$(pool_field worker '.status.conditions[] | select(.type == "Updating") | .reason')" = Paused ] && ok "Updating False, reason Paused" || bad "Updating reason"
[ "$(pool_field worker .status.configuration.name)" = "$W4" ] && ok "CONFIG stays on what the nodes run" || bad "CONFIG moved while paused"
"$MCGIT" node add --cluster "$CL" w3 --labels node-role.kubernetes.io/worker=
"$MCGIT" agent --node w3 --cluster "$CL" --interval 1 -q 2>"$T/logs/w3" &
PIDS+=($!)
wait_for 10 "paused: a new node gets what the pool runs (status.configuration)" \
  sh -c "[ \"\$(cat '$T/cl/roots/w3/etc/test.conf' 2>/dev/null)\" = v4 ]" || true
sed -i '/^  paused: true$/d' "$R/pools/worker.yaml"
scommit "$R" op unpause
wait_for 20 "unpaused: v5 rolls out" sh -c "for n in w0 w1 w2 w3; do [ \"\$(cat '$T/cl/roots/'\$n'/etc/test.conf')\" = v5 ] || exit 1; done" || true

# --- AGE as kubectl prints it ------------------------------------------------------
A=$T/age
mkdir -p "$A/pools"
now=$(date +%s)
age_pool() { # NAME SECONDS-AGO
  ts=$(date -u -d "@$((now - $2))" +%Y-%m-%dT%H:%M:%SZ)
  echo "{\"apiVersion\":\"machineconfiguration.openshift.io/v1\",\"kind\":\"MachineConfigPool\",\"metadata\":{\"name\":\"$1\",\"creationTimestamp\":\"$ts\"},\"spec\":{},\"status\":{}}" >"$A/pools/$1.json"
}
age_pool a-secs 44; age_pool b-min 250; age_pool c-mins 1500; age_pool d-hours 16945
age_pool e-hours 36000; age_pool f-days 274000; age_pool g-days 2600000; age_pool h-years 69200000
age_pool i-future -3600; age_pool j-skew -1
"$MCGIT" status --cluster "local:$A" >"$T/age.txt"
age() { awk -v n="$1" '$1 == n {print $NF}' "$T/age.txt"; }
for c in "a-secs 4[4-6]s" "b-min 4m1[0-2]s" "c-mins 25m" "d-hours 4h42m" "e-hours 10h" "f-days 3d4h" \
         "g-days 30d" "h-years 2y70d" "i-future <invalid>" "j-skew [01]s"; do
  set -- $c
  [[ "$(age "$1")" =~ ^$2$ ]] && ok "AGE $1: $(age "$1")" || bad "AGE $1: $(age "$1"), want $2"
done
for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null || bad "process $p died"; done
stop_all
if grep -lE "Sanitizer|runtime error" "$T"/logs/* >"$T/san" 2>/dev/null; then bad "sanitizer reports in $(cat "$T/san")"; else ok "no sanitizer reports in the processes' logs"; fi
finish
