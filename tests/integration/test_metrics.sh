#!/usr/bin/env bash
# test_metrics.sh — --metrics-bind-address and the webhook, against real
# tools: the controller and an agent serve /metrics on 127.0.0.1, each scrape
# passes `promtool check metrics`, a real Prometheus server scrapes both and
# answers queries for a pool metric and an agent metric; the webhook refuses
# a wrong or missing token (401, no pass) and, with the right one, makes a
# controller whose interval is 300 s (and whose repo is a remote mirror, so
# no local watch can help) render a push within a second; the post-receive
# hook installed with --webhook-url makes a real `git push` wake it too.
. "$(dirname "$0")/lib.sh"
need curl jq python3 openssl
command -v promtool >/dev/null || skip "promtool not found (Debian package prometheus)"
command -v prometheus >/dev/null || skip "prometheus not found (Debian package prometheus)"


# the operators' repo, pushed to a bare origin; the controller mirrors origin
R=$T/cfg
fixture_signed_repo "$R"
fixture_v1 "$R"
git init -q --bare "$T/origin.git"
git -C "$R" push -q "$T/origin.git" main
CL=local:$T/cl
"$MCGIT" node add --cluster "$CL" w0 --labels node-role.kubernetes.io/worker= >/dev/null
printf 's3cret-token\n' >"$T/token"

CP=$(freeport)
"$MCGIT" controller --repo "file://$T/origin.git" --mirror "$T/mirror" --trust "$T/trust" \
  --cluster "$CL" --interval 300 --metrics-bind-address "127.0.0.1:$CP" \
  --webhook-token-file "$T/token" >"$T/ctl.log" 2>&1 &
PIDS+=($!)
AP=$(freeport)
"$MCGIT" agent --node w0 --cluster "$CL" --interval 300 --metrics-bind-address "127.0.0.1:$AP" \
  >"$T/agent.log" 2>&1 &
PIDS+=($!)
state() { "$MCGIT" status --cluster "$CL" nodes -o json | jq -r '.items[0].metadata.annotations["machineconfiguration.mcgit.io/state"] // ""'; }
for _ in $(seq 100); do [ "$(state)" = Done ] && break; sleep 0.1; done
[ "$(state)" = Done ] && ok "controller and agent rolled out v1 (set-up)" || bad "set-up: w0 is '$(state)'"

# ---- scrapes, checked by promtool
curl -sf "http://127.0.0.1:$CP/metrics" >"$T/ctl.prom" && ok "controller serves /metrics" || bad "controller /metrics"
curl -sf "http://127.0.0.1:$AP/metrics" >"$T/agent.prom" && ok "agent serves /metrics" || bad "agent /metrics"
for f in ctl agent; do
  if promtool check metrics <"$T/$f.prom" >"$T/promtool.$f" 2>&1; then ok "promtool check metrics: $f scrape is clean"
  else bad "promtool check metrics ($f)"; sed 's/^/    /' "$T/promtool.$f" | head -10; fi
done
expect_grep '^mcgit_pool_machines\{pool="worker"\} 1$' "$T/ctl.prom" "pool machine count"
expect_grep '^mcgit_pool_updated_machines\{pool="worker"\} 1$' "$T/ctl.prom" "pool updated count"
expect_grep '^mcgit_node_state\{node="w0",pool="worker",state="Done"\} 1$' "$T/ctl.prom" "per-node state"
expect_grep '^mcgit_rollout_duration_seconds_count\{pool="worker"\} 1$' "$T/ctl.prom" "one rollout timed"
expect_grep '^mcgit_verify_duration_seconds_count 1$' "$T/ctl.prom" "verify duration observed"
expect_grep '^mcgit_render_duration_seconds_count 1$' "$T/ctl.prom" "render duration observed"
# The family is declared at start; a series appears with the first failure,
# and this controller's repository has no remote, so there must be none.
expect_grep '^# TYPE mcgit_fetch_failures_total counter$' "$T/ctl.prom" "fetch failures exposed"
grep -qE '^mcgit_fetch_failures_total [^0]' "$T/ctl.prom" && bad "fetch failures counted: $(grep '^mcgit_fetch_failures_total ' "$T/ctl.prom")" ||
  ok "no fetch failure counted"
expect_grep '^mcgit_agent_node_state\{node="w0",state="Done"\} 1$' "$T/agent.prom" "agent: node state"
expect_grep '^mcgit_agent_applies_total\{node="w0"\} 1$' "$T/agent.prom" "agent: one apply"
for f in ctl agent; do
  for m in process_resident_memory_bytes process_open_fds process_cpu_seconds_total process_start_time_seconds; do
    expect_grep "^$m [0-9]" "$T/$f.prom" "$f: $m"
  done
done
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$AP/hooks/git" -X POST)
[ "$code" = 404 ] && ok "the agent has no webhook (404)" || bad "agent webhook answered $code"

# ---- drift on the agent's node is counted
echo tampered >"$T/cl/roots/w0/etc/demo.conf"
"$MCGIT" node label --cluster "$CL" w0 poke=1 >/dev/null 2>&1 || true # wake the agent (a node change)
for _ in $(seq 50); do
  curl -sf "http://127.0.0.1:$AP/metrics" | grep -q '^mcgit_agent_drift_detections_total{node="w0"} 1$' && break; sleep 0.1
done
curl -sf "http://127.0.0.1:$AP/metrics" >"$T/agent2.prom"
expect_grep '^mcgit_agent_drift_detections_total\{node="w0"\} 1$' "$T/agent2.prom" "agent: drift detection counted"
"$MCGIT" agent --node w0 --cluster "$CL" --once --force -q >/dev/null 2>&1 || true

# ---- webhook: a push waits for nobody's interval
rendered() { git -C "$T/mirror" rev-parse -q --verify refs/heads/rendered 2>/dev/null || echo none; }
R0=$(rendered)
write_mc "$R" 10-worker worker /etc/demo.conf v2
scommit "$R" op "v2"
git -C "$R" push -q "$T/origin.git" main
code=$(curl -s -o "$T/body" -w '%{http_code}' -X POST -H 'Authorization: Bearer wrong' "http://127.0.0.1:$CP/hooks/git")
[ "$code" = 401 ] && ok "wrong token: 401" || bad "wrong token answered $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$CP/hooks/git")
[ "$code" = 401 ] && ok "no token: 401" || bad "no token answered $code"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$CP/hooks/git")
[ "$code" = 405 ] && ok "GET: 405" || bad "GET answered $code"
code=$(head -c 1100000 /dev/zero | curl -s -o /dev/null -w '%{http_code}' -X POST --data-binary @- \
  -H 'Authorization: Bearer s3cret-token' "http://127.0.0.1:$CP/hooks/git")
[ "$code" = 413 ] && ok "a body over 1 MiB: 413" || bad "big body answered $code"
sleep 1.5
[ "$(rendered)" = "$R0" ] && ok "refused calls woke nothing (no render after 1.5 s)" || bad "a refused call caused a pass"
grep -q 's3cret' "$T/ctl.log" && bad "the token appears in the log" || ok "the token is never logged"
expect_grep 'webhook: refused a call from 127.0.0.1: wrong token' "$T/ctl.log" "a refusal is logged with the peer"
t0=$(date +%s%N)
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Authorization: Bearer s3cret-token' \
  -d '{}' "http://127.0.0.1:$CP/hooks/git")
[ "$code" = 202 ] && ok "right token: 202" || bad "right token answered $code"
for _ in $(seq 200); do [ "$(rendered)" != "$R0" ] && break; sleep 0.01; done
ms=$((($(date +%s%N) - t0) / 1000000))
if [ "$(rendered)" != "$R0" ] && [ "$ms" -le 1000 ]; then ok "rendered ${ms} ms after the webhook call (interval 300 s)"
else bad "not rendered within 1 s of the webhook call (${ms} ms)"; fi
# a GitHub-style signed call works too
body='{"ref":"refs/heads/main"}'
sig=$(printf %s "$body" | openssl dgst -sha256 -hmac s3cret-token -r | cut -d' ' -f1)
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "X-Hub-Signature-256: sha256=$sig" -d "$body" "http://127.0.0.1:$CP/hooks/git")
[ "$code" = 202 ] && ok "X-Hub-Signature-256 (GitHub) accepted" || bad "signed call answered $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "X-Hub-Signature-256: sha256=$sig" -d "${body} " "http://127.0.0.1:$CP/hooks/git")
[ "$code" = 401 ] && ok "a signature over another body: 401" || bad "bad signature answered $code"

# ---- the post-receive hook calls the webhook on a real push
"$MCGIT" hook install --repo "$T/origin.git" --trust "$T/trust" \
  --webhook-url "http://127.0.0.1:$CP/hooks/git" --webhook-token-file "$T/token" >/dev/null 2>&1
[ "$(git -C "$T/origin.git" config mcgit.webhookURL)" = "http://127.0.0.1:$CP/hooks/git" ] \
  && ok "hook install records mcgit.webhookURL" || bad "mcgit.webhookURL not recorded"
R1=$(rendered)
write_mc "$R" 10-worker worker /etc/demo.conf v3
scommit "$R" op "v3"
git -C "$R" push -q "$T/origin.git" main 2>"$T/push.err"
# the hook has called the webhook by the time the push returns; how fast the
# whole path is, is measured by tests/bench/bench_push_webhook.sh
t0=$(date +%s%N)
for _ in $(seq 1000); do [ "$(rendered)" != "$R1" ] && break; sleep 0.01; done
ms=$((($(date +%s%N) - t0) / 1000000))
expect_grep 'told the controller' "$T/push.err" "the pusher sees the controller was told"
if [ "$(rendered)" != "$R1" ]; then ok "git push → controller rendered ${ms} ms after the push returned (interval 300 s)"
else bad "push not rendered (waited ${ms} ms)"; fi
[ "$(grep -c 'webhook: call from 127.0.0.1 (bearer token)' "$T/ctl.log")" = 2 ] \
  && ok "the controller logs the hook's call" || bad "the hook's call is not in the log"
# a controller that is down never fails the push
git -C "$T/origin.git" config mcgit.webhookURL "http://127.0.0.1:1/hooks/git"
write_mc "$R" 10-worker worker /etc/demo.conf v4
scommit "$R" op "v4"
if git -C "$R" push -q "$T/origin.git" main 2>"$T/push2.err"; then ok "an unreachable webhook does not fail the push"
else bad "push failed with the webhook down"; fi
expect_grep 'warning: the controller was not told' "$T/push2.err" "and the pusher is warned"

# ---- bundle imports into the controller's repository are counted
# (an air-gapped site's monitoring: when did the last bundle arrive?)
"$MCGIT" bundle create --repo "$T/origin.git" "$T/all.bundle" -q >/dev/null 2>&1
git clone -q "$T/origin.git" "$T/evil"
echo evil >"$T/evil/machineconfigs/99-evil.yaml"
scommit "$T/evil" - "unsigned"
git -C "$T/evil" bundle create -q "$T/evil.bundle" main 2>/dev/null
expect_rc 1 "an unsigned bundle is refused by the controller's repository" -- \
  "$MCGIT" bundle import --repo "$T/mirror" "$T/evil.bundle" --trust "$T/trust"
[ ! -e "$T/mirror/mcgit/bundle-imports" ] && [ ! -e "$T/mirror/.git/mcgit/bundle-imports" ] \
  && ok "a refused import is not counted (nothing written)" || bad "a refused import was recorded"
expect_rc 0 "a signed bundle is accepted (already up to date)" -- \
  "$MCGIT" bundle import --repo "$T/mirror" "$T/all.bundle" --trust "$T/trust"
curl -s -o /dev/null -X POST -H 'Authorization: Bearer s3cret-token' "http://127.0.0.1:$CP/hooks/git"
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$CP/metrics" >"$T/ctl3.prom" && grep -q '^mcgit_bundle_imports_total 1$' "$T/ctl3.prom" && break; sleep 0.05
done
expect_grep '^mcgit_bundle_imports_total 1$' "$T/ctl3.prom" "the controller exports the accepted import"
ts=$(awk '/^mcgit_bundle_last_import_timestamp_seconds / {print $2}' "$T/ctl3.prom")
now=$(date +%s)
[ -n "$ts" ] && [ "${ts%.*}" -le "$now" ] && [ "${ts%.*}" -gt $((now - 120)) ] \
  && ok "and when it was made ($ts)" || bad "last import timestamp '$ts'"
promtool check metrics <"$T/ctl3.prom" >/dev/null 2>&1 && ok "promtool: still clean" || bad "promtool after imports"

# ---- a real Prometheus scrapes both and answers queries
PP=$(freeport)
cat >"$T/prom.yml" <<EOF
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: mcgit-controller
    static_configs: [{targets: ['127.0.0.1:$CP']}]
  - job_name: mcgit-agent
    static_configs: [{targets: ['127.0.0.1:$AP']}]
EOF
promtool check config "$T/prom.yml" >/dev/null 2>&1 && ok "promtool check config" || bad "prometheus config"
prometheus --config.file="$T/prom.yml" --storage.tsdb.path="$T/tsdb" \
  --web.listen-address="127.0.0.1:$PP" >"$T/prom.log" 2>&1 &
PIDS+=($!)
query() { curl -sf --get "http://127.0.0.1:$PP/api/v1/query" --data-urlencode "query=$1" | jq -r '.data.result[0].value[1] // empty'; }
v=""
for _ in $(seq 150); do v=$(query 'mcgit_pool_machines{pool="worker",job="mcgit-controller"}' 2>/dev/null || true); [ -n "$v" ] && break; sleep 0.2; done
[ "$v" = 1 ] && ok "Prometheus scraped the controller: mcgit_pool_machines{pool=\"worker\"} = 1" || bad "Prometheus query: '$v'"; 
v=""
for _ in $(seq 100); do v=$(query 'sum(mcgit_agent_passes_total{job="mcgit-agent"})' 2>/dev/null || true); [ -n "$v" ] && break; sleep 0.2; done
[ -n "$v" ] && [ "$v" -ge 1 ] && ok "Prometheus scraped the agent: $v passes" || bad "agent query: '$v'"
up=$(curl -sf "http://127.0.0.1:$PP/api/v1/targets" | jq '[.data.activeTargets[] | select(.health=="up")] | length')
[ "$up" = 2 ] && ok "both targets up" || bad "targets up: $up"

for f in "$T/ctl.log" "$T/agent.log"; do
  if grep -qE "Sanitizer|runtime error" "$f"; then bad "sanitizer report in $f"; sed 's/^/    /' "$f" | head; fi
done
expect_grep 'node=w0: ' "$T/agent.log" "agent log lines name the node"
expect_grep 'node=w0: desiredConfig rendered-worker-' "$T/ctl.log" "controller names the node it retargets"
finish
