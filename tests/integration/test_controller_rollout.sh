#!/usr/bin/env bash
# A rollout with real processes: one controller and one agent per node on a
# local cluster, commits signed with ssh-keygen through git. The second
# rollout is sampled all along (`mcgit status nodes -o json` in a tight loop,
# each sample one consistent snapshot of the store): no pool may ever have
# more than maxUnavailable nodes updating (state not Done, or desiredConfig
# != currentConfig), and every pool must converge on its new target.
. "$(dirname "$0")/lib.sh"
need jq

CL=local:$T/cl
R=$T/repo
fixture_signed_repo "$R"

# wait_for SECONDS DESC CMD...: poll CMD until it succeeds
wait_for() {
  local end=$((SECONDS + $1)) desc=$2; shift 2
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $end ]; then bad "$desc (timed out)"; return 1; fi
    sleep 0.2
  done
  ok "$desc"
}
# mc NAME ROLE CONTENT: a MachineConfig writing /etc/test/NAME
mc() { write_mc "$R" "$1" "$2" "/etc/test/$1" "$3"; }
# every pool Updated, its CONFIG at its target, and that target not in $1 (old targets)
converged() {
  "$MCGIT" status --cluster "$CL" -o json >"$T/pools.json" || return 1
  jq -e --arg old "${1:-}" '(.items | length) == 3 and all(.items[];
      .status.configuration.name == .spec.configuration.name and
      (.status.conditions[] | select(.type == "Updated") | .status) == "True" and
      (.spec.configuration.name as $t | ($old | split(" ") | index($t)) == null))' \
      "$T/pools.json" >/dev/null
}

# pools: master (maxUnavailable 1), worker (2), infra (custom, 50% of 3 = 1)
sed -i 's/maxUnavailable: 1/maxUnavailable: 2/' "$R/pools/worker.yaml"
cat >"$R/pools/infra.yaml" <<'EOF'
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: infra
spec:
  machineConfigSelector:
    matchLabels:
      machineconfiguration.openshift.io/role: infra
  nodeSelector:
    matchLabels:
      node-role.kubernetes.io/infra: ""
  maxUnavailable: "50%"
EOF
mc 10-master master v1
mc 10-worker worker v1
mc 10-infra infra v1
scommit "$R" op "three pools"

NODES=()
add() { "$MCGIT" node add --cluster "$CL" "$1" --labels "$2" && NODES+=("$1"); }
for i in 0 1 2; do add "master-$i" node-role.kubernetes.io/master=; done
for i in 0 1 2 3 4 5 6 7; do add "worker-$i" "node-role.kubernetes.io/worker=,topology.kubernetes.io/zone=z$((i % 2))"; done
for i in 0 1 2; do add "infra-$i" node-role.kubernetes.io/worker=,node-role.kubernetes.io/infra=; done

mkdir -p "$T/logs"
"$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "$CL" --interval 0.2 2>"$T/logs/controller" &
PIDS+=($!)
for n in "${NODES[@]}"; do
  "$MCGIT" agent --node "$n" --cluster "$CL" --interval 1 --reboot-command "sleep 0.5" -q 2>"$T/logs/$n" &
  PIDS+=($!)
done

wait_for 40 "first rollout: every pool converges (new nodes take the target at once)" converged || exit 1
OLD=$(jq -r '[.items[].spec.configuration.name] | join(" ")' "$T/pools.json")
[ "$(grep -c v1 "$T"/cl/roots/worker-3/etc/test/10-worker)" = 1 ] && ok "worker file written" || bad "worker file missing"

# Sample the second rollout. Pool of a node: master, else infra, else worker.
# (Agents and controller wake on each change, so each node's update is
# stretched by a half-second "reboot" to leave the sampler something to see.)
cat >"$T/sample.jq" <<'EOF'
[.items[] | {pool: (if .metadata.labels["node-role.kubernetes.io/master"] != null then "master"
                    elif .metadata.labels["node-role.kubernetes.io/infra"] != null then "infra"
                    else "worker" end),
             a: .metadata.annotations}
 | select(.a["machineconfiguration.mcgit.io/state"] != "Done" or
          .a["machineconfiguration.mcgit.io/desiredConfig"] != .a["machineconfiguration.mcgit.io/currentConfig"])
 | .pool] as $u
| "master=\([$u[] | select(. == "master")] | length) worker=\([$u[] | select(. == "worker")] | length) infra=\([$u[] | select(. == "infra")] | length)"
EOF
: >"$T/samples"
(
  while [ ! -e "$T/stop-sampling" ]; do
    "$MCGIT" status --cluster "$CL" nodes -o json 2>/dev/null | jq -r -f "$T/sample.jq" >>"$T/samples" || true
  done
) &
SAMPLER=$!
"$MCGIT" status --cluster "$CL" --watch >"$T/watch" 2>&1 &
WATCH=$!
sleep 0.3

mc 10-master master v2
mc 10-worker worker v2
mc 10-infra infra v2
scommit "$R" op "change every pool"
wait_for 50 "second rollout: every pool converges on a new target" converged "$OLD" || true
touch "$T/stop-sampling"
wait "$SAMPLER" 2>/dev/null || true
kill $WATCH; wait $WATCH 2>/dev/null || true
# --watch prints the header once, then each pool's row again when it changes
nw=$(grep -c '^worker ' "$T/watch" || true)
[ "$(grep -c '^NAME ' "$T/watch")" = 1 ] && [ "$nw" -ge 3 ] &&
  ok "status --watch printed the header once and the worker row as it changed ($nw times)" \
  || { bad "status --watch: $(grep -c '^NAME ' "$T/watch") headers, $nw worker rows"; head -20 "$T/watch" | sed 's/^/    /'; }
# every row after the first table differs from the row of its pool before it
awk 'NR>1 && $1 in last && $0==last[$1] {d=1} {last[$1]=$0} END {exit d}' "$T/watch" &&
  ok "status --watch never reprints an unchanged row" || bad "status --watch reprinted an unchanged row"

n=$(wc -l <"$T/samples")
busy=$(grep -vc '^master=0 worker=0 infra=0$' "$T/samples" || true)
# what the checks below need is samples while nodes update (an ASan build on a
# loaded machine samples slowly: the count of idle ones says nothing)
[ "$busy" -ge 5 ] && ok "sampled the rollout $n times ($busy while nodes were updating)" \
  || bad "too few samples while nodes were updating ($busy of $n)"
max() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" "$T/samples" | sort -n | tail -1; }
[ "$(max master)" -le 1 ] && ok "master: at most 1 node updating at a time (max seen $(max master))" || bad "master: $(max master) updating at once"
[ "$(max worker)" -le 2 ] && ok "worker: at most 2 nodes updating at a time (max seen $(max worker))" || bad "worker: $(max worker) updating at once"
[ "$(max infra)" -le 1 ] && ok "infra: at most 1 node updating at a time (max seen $(max infra))" || bad "infra: $(max infra) updating at once"
[ "$(max worker)" = 2 ] && ok "worker: 2 at a time were used" || bad "worker never had 2 nodes updating"

# end state: every node Done at its pool's target, files on disk
"$MCGIT" status --cluster "$CL" nodes -o wide >"$T/nodes.txt"
notdone=0
for n in "${NODES[@]}"; do
  pool=${n%-*}
  target=$(jq -r --arg p "$pool" '.items[] | select(.metadata.name == $p) | .spec.configuration.name' "$T/pools.json")
  grep -qE "^$n +$target +$target +Done +$pool( |$)" "$T/nodes.txt" || { bad "$n is not Done at $target in pool $pool"; notdone=$((notdone + 1)); }
done
[ "$notdone" = 0 ] && ok "every node Done at its pool's target (checked ${#NODES[@]})"
grep -q v2 "$T/cl/roots/infra-1/etc/test/10-infra" && grep -q v2 "$T/cl/roots/infra-1/etc/test/10-worker" \
  && ok "infra node has infra's and worker's files at v2" || bad "infra files not at v2"
# -o json has the shapes kubectl get -o json prints
jq -e '.apiVersion == "v1" and .kind == "List" and all(.items[];
    .apiVersion == "machineconfiguration.openshift.io/v1" and .kind == "MachineConfigPool" and
    (.metadata.name | type) == "string" and (.metadata.creationTimestamp | type) == "string" and
    (.spec | has("nodeSelector") and has("machineConfigSelector") and has("maxUnavailable") and has("paused")) and
    (.status | (.configuration.name | type) == "string" and
      all(.machineCount, .readyMachineCount, .updatedMachineCount, .unavailableMachineCount, .degradedMachineCount; type == "number")) and
    ([.status.conditions[].type] | sort) == ["Degraded", "NodeDegraded", "RenderDegraded", "SourceStale", "UntrustedChanges", "Updated", "Updating"] and
    all(.status.conditions[]; (keys | sort) == ["lastTransitionTime", "message", "reason", "status", "type"] and
      (.status == "True" or .status == "False")))' "$T/pools.json" >/dev/null \
  && ok "pools -o json: MachineConfigPool List shape" || bad "pools -o json shape"
"$MCGIT" status --cluster "$CL" nodes -o json | jq -e '.kind == "List" and all(.items[];
    .apiVersion == "v1" and .kind == "Node" and (.metadata.name | type) == "string" and
    (.metadata.labels | type) == "object" and (.metadata.annotations | type) == "object" and
    (.spec.unschedulable | type) == "boolean")' >/dev/null \
  && ok "nodes -o json: Node List shape" || bad "nodes -o json shape"
jq -e 'all(.items[]; .status.machineCount == .status.updatedMachineCount and .status.degradedMachineCount == 0)' \
  "$T/pools.json" >/dev/null && ok "pool counts: all updated, none degraded" || bad "pool counts wrong"
for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null || bad "process $p died"; done
stop_all
if grep -lE "Sanitizer|runtime error" "$T"/logs/* >"$T/san" 2>/dev/null; then bad "sanitizer reports in $(cat "$T/san")"; else ok "no sanitizer reports in the processes' logs"; fi
finish
