#!/usr/bin/env bash
# Many writers on one local cluster store, none losing another's update:
# 40 agent processes and the controller roll out three configs in a row
# (maxUnavailable 100%, so every agent writes at once) while `mcgit node
# label` adds labels to every node in parallel. Labels are written once and
# never again, so any read-modify-write that was not atomic would lose one
# for good; annotations must end with every node Done at the last target.
. "$(dirname "$0")/lib.sh"
need jq

CL=local:$T/cl
R=$T/repo
N=${CONC_NODES:-40}
LABELS=${CONC_LABELS:-6}
fixture_signed_repo "$R"
sed -i 's/maxUnavailable: 1/maxUnavailable: "100%"/' "$R/pools/worker.yaml"
mc() { write_mc "$R" 10-worker worker /etc/test.conf "$1"; }
worker_target() {
  "$MCGIT" status --cluster "$CL" -o json |
    jq -r '.items[] | select(.metadata.name == "worker") | .spec.configuration.name // empty'
}
# all N nodes Done at target $1
all_done() {
  "$MCGIT" status --cluster "$CL" nodes -o json >"$T/nodes.json" || return 1
  jq -e --arg t "$1" --argjson n "$N" '(.items | length) == $n and all(.items[].metadata.annotations;
      .["machineconfiguration.mcgit.io/state"] == "Done" and
      .["machineconfiguration.mcgit.io/desiredConfig"] == $t and
      .["machineconfiguration.mcgit.io/currentConfig"] == $t)' "$T/nodes.json" >/dev/null
}

mc v1
scommit "$R" op v1
for i in $(seq -w 1 "$N"); do
  "$MCGIT" node add --cluster "$CL" "node-$i" --labels node-role.kubernetes.io/worker=
done
mkdir -p "$T/logs"
"$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "$CL" --interval 0.1 2>"$T/logs/controller" &
PIDS+=($!)
for i in $(seq -w 1 "$N"); do
  "$MCGIT" agent --node "node-$i" --cluster "$CL" --interval 1 -q 2>"$T/logs/node-$i" &
  PIDS+=($!)
done

# labels hammering every node in parallel while the three rollouts run
LPIDS=()
for i in $(seq -w 1 "$N"); do
  (
    for k in $(seq 1 "$LABELS"); do
      "$MCGIT" node label --cluster "$CL" "node-$i" "hammer.example.com/k$k=v$k" || echo "node-$i k$k" >>"$T/label-errors"
      sleep 0.$((RANDOM % 5))
    done
  ) &
  LPIDS+=($!)
done
for v in v2 v3; do
  sleep 1.5
  mc "$v"
  scommit "$R" op "$v"
done
wait "${LPIDS[@]}"
[ ! -s "$T/label-errors" ] && ok "$((N * LABELS)) label calls succeeded" || { bad "label calls failed"; head -3 "$T/label-errors"; }

end=$((SECONDS + 45))
while :; do
  t=$(worker_target)
  [ -n "$t" ] && grep -q v3 "$T/cl/configs/$t.json" 2>/dev/null && all_done "$t" && break
  [ $SECONDS -ge $end ] && break
  sleep 0.3
done
[ -n "$t" ] && grep -q v3 "$T/cl/configs/$t.json" && ok "worker target is the v3 render" || bad "worker target is not v3"
all_done "$t" && ok "all $N nodes Done at the last target" || {
  bad "not all nodes Done at $t"
  jq -r '.items[] | "\(.metadata.name) \(.metadata.annotations)"' "$T/nodes.json" 2>&1 | grep -v '"Done"' | head -3 || true
}

# no label lost, nothing else lost either
lost=0
for i in $(seq -w 1 "$N"); do
  have=$(jq -r --arg n "node-$i" '.items[] | select(.metadata.name == $n) | .metadata.labels | keys[]' "$T/nodes.json" 2>/dev/null | grep -c '^hammer.example.com/' || true)
  [ "$have" = "$LABELS" ] || { lost=$((lost + LABELS - have)); echo "    node-$i has $have of $LABELS labels"; }
done
[ "$lost" = 0 ] && ok "no label lost ($((N * LABELS)) written)" || bad "$lost labels lost"
jq -e 'all(.items[]; .metadata.labels["node-role.kubernetes.io/worker"] == "")' "$T/nodes.json" >/dev/null \
  && ok "role labels intact" || bad "a role label was lost"
v3=0
for i in $(seq -w 1 "$N"); do grep -q v3 "$T/cl/roots/node-$i/etc/test.conf" && v3=$((v3 + 1)); done
[ "$v3" = "$N" ] && ok "every root holds the v3 file" || bad "only $v3 of $N roots hold the v3 file"
left=$(find "$T/cl/nodes" -name '*.tmp.*' | wc -l)
[ "$left" = 0 ] && ok "no temporary files left in the store" || bad "$left temporary files left"
invalid=0
for f in "$T"/cl/nodes/*.json; do jq -e . "$f" >/dev/null || { bad "$f is not valid JSON"; invalid=$((invalid + 1)); }; done
[ "$invalid" = 0 ] && ok "every node object is valid JSON"
"$MCGIT" status --cluster "$CL" -o json | jq -e '.items[] | select(.metadata.name == "worker") |
  .status.machineCount == '"$N"' and .status.updatedMachineCount == '"$N"'' >/dev/null \
  && ok "pool status: $N of $N updated" || bad "pool status counts wrong"
for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null || bad "process $p died"; done
stop_all
if grep -lE "Sanitizer|runtime error" "$T"/logs/* >"$T/san" 2>/dev/null; then bad "sanitizer reports in $(cat "$T/san")"; else ok "no sanitizer reports in the processes' logs"; fi
# Many label edits of ONE node at once: each is applied to the labels as
# they are under the lock, so none is lost (a read-then-replace would be).
"$MCGIT" node add --cluster "$CL" same --labels a=b
for k in $(seq 1 24); do "$MCGIT" node label --cluster "$CL" same "same.example.com/k$k=v$k" & done
wait
"$MCGIT" node label --cluster "$CL" same a- >/dev/null
n=$("$MCGIT" node list --cluster "$CL" | awk '$1 == "same" {print $2}' | tr ',' '\n' | grep -c '^same.example.com/k' || true)
[ "$n" = 24 ] && ok "24 concurrent label edits of one node: none lost" || bad "only $n of 24 labels kept"
"$MCGIT" node list --cluster "$CL" | awk '$1 == "same"' | grep -q 'a=b' && bad "label a not removed by 'a-'" || ok "'key-' removes a label"
expect_rc 2 "a bad label edit is refused as usage" -- "$MCGIT" node label --cluster "$CL" same 'bad key=v'
expect_grep "^mcgit node: " "$T/err" "with a one-line reason"
finish
