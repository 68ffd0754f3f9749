#!/usr/bin/env bash
# test_site_policy.sh — a site's own rollout policy from the same signed
# repository (docs/sites.md): sites/NAME.yaml's spec.pools, maxUnavailable
# and maintenanceWindows, applied by the site's controller (--site NAME):
#   - a pool the site does not run gets no target there and no pool object,
#     and its nodes are never touched;
#   - the site's window holds its pools' rollout where the pool itself has
#     none, and its opening starts it;
#   - the site's maxUnavailable replaces the pool's (1 node at a time where
#     the pool says 3), its maxConcurrentDisruptions mcgit.yaml's;
#   - a controller without --site, beside it, runs every pool by the pools'
#     own policy (the control);
#   - a signed change of the site file takes effect at the next pass;
#   - mcgit validate refuses a bad site policy with file and line.
. "$(dirname "$0")/lib.sh"
need jq ssh-keygen

mkkey op ed25519
signer_line op@example.com op >"$T/trust"
ssh-keygen -q -t ed25519 -N '' -C site-edge -f "$T/keys/site-edge"
R=$T/cfg
"$MCGIT" init "$R" >/dev/null 2>&1
sign_setup "$R" "$T/trust"
sed -i 's/^  maxUnavailable: 1$/  maintenanceWindows: []\n  maxUnavailable: 3/' "$R/pools/worker.yaml"
grep -q 'maxUnavailable: 3' "$R/pools/worker.yaml" || bad "the worker pool's maxUnavailable not set to 3"
site() { # site POLICY-YAML (indented under spec)
  mkdir -p "$R/sites"
  cat >"$R/sites/edge.yaml" <<EOF
apiVersion: mcgit.io/v1
kind: Site
metadata:
  name: edge
spec:
  statusKey: $(cat "$T/keys/site-edge.pub")
  pools: [worker]
$1
EOF
}
site '  maxUnavailable: 1
  maintenanceWindows:
  - days: [Sat]
    start: "03:00"
    duration: 1h
    timeZone: Europe/Berlin'
write_mc "$R" 10-app worker /etc/app.conf v1
write_mc "$R" 10-motd master /etc/motd m1
scommit "$R" op "v1, site edge"
expect_rc 0 "mcgit validate accepts the site's policy" -- "$MCGIT" validate "$R"

for cl in edge hq; do
  "$MCGIT" node add --cluster "local:$T/$cl" m0 --labels node-role.kubernetes.io/master= >/dev/null
  fixture_workers "local:$T/$cl" w0 w1 w2
done
# Saturday 2026-11-28 01:00 UTC = 02:00 in Berlin: an hour before the site's window
SAT_0200=$(date -d '2026-11-28T01:00:00Z' +%s)
ctl() { # ctl CLUSTER NOW [ARGS...]
  local cl=$1 now=$2
  shift 2
  MCGIT_TEST_NOW=$now "$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "local:$T/$cl" \
    --once "$@" >"$T/ctl-$cl.out" 2>&1 || true
}
ectl() { ctl edge "$1" --site edge --site-key "$T/keys/site-edge"; }
agents() { for n in m0 w0 w1 w2; do "$MCGIT" agent --node "$n" --cluster "local:$T/$1" --once -q >/dev/null 2>&1 || true; done; }
ann() { jq -r --arg k "machineconfiguration.mcgit.io/$3" '.metadata.annotations[$k] // ""' "$T/$1/nodes/$2.json"; }
target() { jq -r '.spec.configuration.name // ""' "$T/$1/pools/$2.json" 2>/dev/null; }
at_target() { local c=0 n t; t=$(target "$1" worker); for n in w0 w1 w2; do [ -n "$t" ] && [ "$(ann "$1" $n desiredConfig)" = "$t" ] && c=$((c + 1)); done; echo "$c"; }

# rollout EDGE-START: site passes a minute apart from EDGE-START, agents
# between; sets MAXBUSY to the most workers updating at once
rollout() {
  local i n busy
  MAXBUSY=0
  for i in 1 2 3 4 5 6 7 8; do
    ectl $(($1 + 60 * i))
    busy=0
    for n in w0 w1 w2; do
      [ "$(ann edge $n desiredConfig)" != "$(ann edge $n currentConfig)" ] && busy=$((busy + 1))
    done
    [ "$busy" -gt "$MAXBUSY" ] && MAXBUSY=$busy
    agents edge
  done
}
# ---------------------------------------------------------------- v1, in the window
rollout $((SAT_0200 + 3600))
[ -n "$(target edge worker)" ] && ok "the site runs the worker pool (its target published)" || bad "no worker target at the site: $(cat "$T/ctl-edge.out")"
[ "$(at_target edge)" = 3 ] && ok "v1: every worker at the target" || bad "v1: $(at_target edge) workers at the target"
[ "$MAXBUSY" = 1 ] && ok "v1: the site's maxUnavailable 1 in place of the pool's 3 (at most $MAXBUSY updating)" || bad "v1: $MAXBUSY workers updating at once"
for n in w0 w1 w2; do [ "$(ann edge $n state)" = Done ] || bad "$n not Done: $(ann edge $n state) $(ann edge $n reason)"; done
[ ! -e "$T/edge/pools/master.json" ] && ok "the pool the site does not run has no pool object there" || bad "master pool at the site"
[ -z "$(ann edge m0 desiredConfig)" ] && ok "and its node gets no desiredConfig" || bad "m0 desired $(ann edge m0 desiredConfig)"
git -C "$R" rev-parse -q --verify refs/mcgit/status/edge >/dev/null && ok "the site's controller records its status (refs/mcgit/status/edge)" || bad "no status record"
git -C "$R" show refs/mcgit/status/edge:status.json | jq -e '[.pools[].name] == ["worker"]' >/dev/null &&
  ok "its record lists the pools it runs" || bad "record: $(git -C "$R" show refs/mcgit/status/edge:status.json | jq -c '[.pools[].name]')"
# the control: every pool, by the pools' own policy (no window, maxUnavailable 3)
ctl hq "$SAT_0200"
[ -n "$(target hq master)" ] && [ -n "$(ann hq m0 desiredConfig)" ] && ok "control: without --site the master pool rolls out" || bad "control: master"
[ "$(at_target hq)" = 3 ] && ok "control: the pool's own maxUnavailable 3 moves three workers at once" || bad "control: $(at_target hq) workers"

# ---------------------------------------------------------------- v2: the window holds it
write_mc "$R" 10-app worker /etc/app.conf v2
scommit "$R" op "v2"
WEEK=$((7 * 86400))
ectl $((SAT_0200 + WEEK))
V1=$(ann edge w0 currentConfig)
[ "$(target edge worker)" != "$V1" ] && ok "v2: a new target" || bad "v2: no new target"
[ "$(at_target edge)" = 0 ] && ok "v2: the site's window (the pool has none) holds the rollout" || bad "v2: $(at_target edge) workers moved outside the site's window"
"$MCGIT" status --cluster "local:$T/edge" >"$T/status.txt" 2>&1 || true
expect_grep "^worker: waiting for the window Sat 03:00 Europe/Berlin, in 60m$" "$T/status.txt" "mcgit status names the site's window"
rollout $((SAT_0200 + WEEK + 3600))
[ "$(at_target edge)" = 3 ] && ok "v2: the window's opening starts it: every worker at the target" || bad "v2: $(at_target edge) at the target"
[ "$MAXBUSY" = 1 ] && ok "v2: one worker at a time (at most $MAXBUSY)" || bad "v2: $MAXBUSY workers updating at once"
[ -z "$(ann edge m0 desiredConfig)" ] && [ ! -e "$T/edge/pools/master.json" ] && ok "the master node still untouched" || bad "master touched"

# ---------------------------------------------------------------- a signed change of the site
for i in 1 2 3 4; do agents hq; ctl hq $((SAT_0200 + WEEK + 60 * i)); done # the control at v2, settled
site '  maintenanceWindows: []
  maxConcurrentDisruptions: 2'
write_mc "$R" 10-app worker /etc/app.conf v3
scommit "$R" op "v3, site edge any time, the pool's maxUnavailable, two disruptions at once"
ectl $((SAT_0200 + WEEK + 86400))
[ "$(at_target edge)" = 2 ] && ok "the site's change at the next pass: windows: [] (any time), the pool's maxUnavailable 3 capped by the site's maxConcurrentDisruptions 2" ||
  bad "$(at_target edge) workers moved after the site's change (want 2)"
ctl hq $((SAT_0200 + WEEK + 86400))
[ "$(at_target hq)" = 3 ] && ok "control: three at once without --site (mcgit.yaml sets no budget)" || bad "control: $(at_target hq) workers at v3"

# ---------------------------------------------------------------- validate
cp "$R/sites/edge.yaml" "$T/edge.saved"
bad_site() { # bad_site DESC POLICY-YAML WANT-RE
  site "$2"
  expect_rc 1 "validate refuses $1" -- "$MCGIT" validate "$R"
  expect_grep "$3" "$T/err" "($1: file and line)"
  [ "$(grep -c . "$T/err")" -ge 1 ] || bad "$1: no message"
}
bad_site "a window on no day" '  maintenanceWindows:
  - days: [Someday]
    start: "03:00"
    duration: 1h' "sites/edge.yaml:[0-9]+: spec.maintenanceWindows\[0\].days\[0\] must be one of Mon"
bad_site "an unknown time zone" '  maintenanceWindows:
  - days: [Sat]
    start: "03:00"
    duration: 1h
    timeZone: Mars/Olympus_Mons' "sites/edge.yaml:[0-9]+: spec.maintenanceWindows\[0\].timeZone: unknown time zone 'Mars/Olympus_Mons'"
bad_site "a maxUnavailable over 100%" '  maxUnavailable: "150%"' "sites/edge.yaml:[0-9]+: maxUnavailable '150%' is over 100%"
bad_site "a budget of 0" '  maxConcurrentDisruptions: 0' "sites/edge.yaml:[0-9]+: spec.maxConcurrentDisruptions must be at least 1"
bad_site "a misspelt key" '  maxUnavailble: 1' "sites/edge.yaml:[0-9]+: .*maxUnavailble"
cp "$T/edge.saved" "$R/sites/edge.yaml"
expect_rc 0 "validate passes again" -- "$MCGIT" validate "$R"
finish
