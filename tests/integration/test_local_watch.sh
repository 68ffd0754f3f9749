#!/usr/bin/env bash
# test_local_watch.sh — the local loop is event-driven: the controller sees
# a commit to the repo it reads within a second, an agent wakes when its node
# changes and the controller when any node does (inotify on DIR/nodes), so a
# rollout goes wave by wave without waiting for anyone's interval. All run
# with --interval 300: a commit rolled out over two worker nodes at
# maxUnavailable 1 (two waves) can only finish in time if each step wakes
# the next. (How fast is measured in tests/bench, not here.)
. "$(dirname "$0")/lib.sh"

R=$T/cfg
fixture_signed_repo "$R"
fixture_v1 "$R"
CL=local:$T/cl
fixture_workers "$CL" w0 w1
for round in 1 2; do # a first rollout goes one node at a time, as any other
  "$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "$CL" --once >/dev/null 2>&1
  for n in w0 w1; do "$MCGIT" agent --node "$n" --cluster "$CL" --once -q >/dev/null 2>&1; done
done
done_count() { "$MCGIT" status --cluster "$CL" nodes -o json |
  jq --arg c "$1" '[.items[].metadata.annotations | select(.["machineconfiguration.mcgit.io/currentConfig"] == $c and .["machineconfiguration.mcgit.io/state"] == "Done")] | length'; }
V1=$("$MCGIT" status --cluster "$CL" -o json | jq -r '.items[] | select(.metadata.name=="worker") | .spec.configuration.name')
[ "$(done_count "$V1")" = 2 ] && ok "both workers Done on v1 (set-up)" || bad "set-up: $(done_count "$V1") Done"

# long-running agents and controller, each with a 300 s interval
for n in w0 w1; do
  "$MCGIT" agent --node "$n" --cluster "$CL" --interval 300 -q >"$T/agent-$n.log" 2>&1 & PIDS+=($!)
done
"$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "$CL" --interval 300 >"$T/ctl.log" 2>&1 & PIDS+=($!)
sleep 2 # its first pass finds nothing new
write_mc "$R" 10-worker worker /etc/demo.conf v2
scommit "$R" op "v2" # the push: the controller looks at the branch every second
V2=""
for _ in $(seq 300); do
  V2=$("$MCGIT" status --cluster "$CL" -o json | jq -r '.items[] | select(.metadata.name=="worker") | .spec.configuration.name // empty')
  [ -n "$V2" ] && [ "$V2" != "$V1" ] && [ "$(done_count "$V2")" = 2 ] && break
  sleep 0.1
done
if [ -n "$V2" ] && [ "$V2" != "$V1" ] && [ "$(done_count "$V2")" = 2 ]; then
  ok "a commit rolled out in two waves within 30 s although every interval is 300 s (controller woke on the commit and on node changes, agents on theirs)"
else
  bad "rollout did not finish on events: $(done_count "${V2:-none}") Done on ${V2:-no target}"
  "$MCGIT" status --cluster "$CL" nodes
fi
# stopped with SIGTERM: each exits 0, its log free of sanitizer reports
# (LeakSanitizer's, at exit, in the ASan build)
stop_clean "agent w0" "${PIDS[0]}" "$T/agent-w0.log"
stop_clean "agent w1" "${PIDS[1]}" "$T/agent-w1.log"
stop_clean controller "${PIDS[2]}" "$T/ctl.log"
finish
