#!/usr/bin/env bash
# Numeric settings from the environment are read by one parser that refuses
# junk (mcg_env_u64): a value that is not a whole number in range is an
# error naming the variable, the value and the range — never silently the
# default.
. "$(dirname "$0")/lib.sh"
cat >"$T/kc" <<'KC'
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
KC
for v in "MCGIT_KUBE_RETRIES=lots:from 1 to 20" "MCGIT_KUBE_INFLIGHT=0:from 1 to" \
         "MCGIT_KUBE_TIMEOUT=-5:from 1 to 3600" "MCGIT_KUBE_LEASE_DURATION=15s:from 1 to 3600" \
         "MCGIT_KUBE_DRAIN_TIMEOUT=99999999999999999999999:from 1 to 86400"; do
  kv=${v%%:*} want=${v#*:}
  expect_rc 1 "$kv refused" -- env "$kv" "$MCGIT" status --cluster "kube:$T/kc"
  expect_grep "^mcgit status: cluster kube:$T/kc: ${kv%%=*}='[^']*': not a whole number $want" "$T/err" "$kv: named, with the range"
done
# a good value is taken (the status then fails only on the unreachable server)
expect_rc 1 "MCGIT_KUBE_RETRIES=1 accepted" -- env MCGIT_KUBE_RETRIES=1 MCGIT_KUBE_TIMEOUT=1 "$MCGIT" status --cluster "kube:$T/kc"
! grep -q "not a whole number" "$T/err" && ok "no refusal of a good value" || bad "good value refused: $(cat "$T/err")"
# Without --cluster and $MCGIT_CLUSTER, every command that needs a cluster says
# where else it can come from
unset MCGIT_CLUSTER
for c in "status" "status nodes" "node add w0" "agent --node w0" "controller --repo r --trust t" "pool pause worker" "sync"; do
  # shellcheck disable=SC2086
  expect_rc 2 "mcgit $c without a cluster: a usage error" -- "$MCGIT" $c
  expect_grep 'MCGIT_CLUSTER' "$T/err" "mcgit $c: the error names \$MCGIT_CLUSTER"
done
finish
