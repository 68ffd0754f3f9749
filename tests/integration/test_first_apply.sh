#!/usr/bin/env bash
# test_first_apply.sh — a node's first config is compared with what the node
# already holds: an entry that matches needs no action, and a node whose
# entries all match is not cordoned, drained or rebooted (MCO's nodes get
# their first config at install, so a first rollout disrupts nothing). A
# node that differs takes the disruption its change needs (a file without a
# policy rule: Reboot). Pools count such nodes against maxUnavailable.
. "$(dirname "$0")/lib.sh"
need jq

R=$T/cfg
fixture_signed_repo "$R"
write_mc "$R" 10-worker worker /etc/demo.conf hello
scommit "$R" op "v1"
CL=local:$T/cl
fixture_workers "$CL" w0 w1
# w0 already holds the file as the config says (written at install); w1 holds another
mkdir -p "$T/cl/roots/w0/etc" "$T/cl/roots/w1/etc"
printf hello >"$T/cl/roots/w0/etc/demo.conf" # what write_mc's data:,hello decodes to
chmod 0644 "$T/cl/roots/w0/etc/demo.conf"
echo other >"$T/cl/roots/w1/etc/demo.conf"

ctl() { "$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "$CL" --once >/dev/null 2>&1; }
agent() { "$MCGIT" agent --node "$1" --cluster "$CL" --once -q >/dev/null 2>&1; }
state() { "$MCGIT" status --cluster "$CL" nodes -o json | jq -r --arg n "$1" '.items[] | select(.metadata.name == $n) | .metadata.annotations["machineconfiguration.mcgit.io/state"] // ""'; }
events() { jq -r --arg n "$1" 'select(.name == $n) | .reason' "$T/cl/events.jsonl" 2>/dev/null | sort -u | paste -sd, -; }

ctl
n0=$(jq -r '.metadata.annotations["machineconfiguration.mcgit.io/desiredConfig"] // ""' "$T/cl/nodes/w0.json")
n1=$(jq -r '.metadata.annotations["machineconfiguration.mcgit.io/desiredConfig"] // ""' "$T/cl/nodes/w1.json")
[ -n "$n0" ] && [ -z "$n1" ] && ok "first pass: one new node configured (maxUnavailable 1), the other waits" ||
  bad "first pass: w0 '$n0', w1 '$n1'"
agent w0
[ "$(state w0)" = Done ] && ok "w0 Done" || bad "w0: $(state w0)"
[ "$(events w0)" = NodeDone ] && ok "w0, whose disk already matched: no cordon, drain or reboot" ||
  bad "w0 events: $(events w0)"
ctl
agent w1
[ "$(state w1)" = Done ] && ok "w1 Done" || bad "w1: $(state w1)"
case ",$(events w1)," in *,Reboot,*) ok "w1, whose file differed: Reboot ($(events w1))" ;;
  *) bad "w1 events: $(events w1)" ;; esac
[ "$(cat "$T/cl/roots/w1/etc/demo.conf")" = "$(cat "$T/cl/roots/w0/etc/demo.conf")" ] &&
  ok "w1's file now as rendered" || bad "w1's file"
finish
