#!/usr/bin/env bash
# test_freeze.sh — freeze protection: maxSourceAge in .mcgit/policy.yaml.
# A source that stops moving (an attacker withholding updates, a stale
# bundle at an air-gapped site) puts every pool in SourceStale, shown by
# `mcgit status` (text and -o json) and logged once by the controller; a
# signed `mcgit heartbeat` clears it; bundle verify/import print the age.
. "$(dirname "$0")/lib.sh"

R=$T/cfg
fixture_signed_repo "$R" alice
mkdir -p "$R/.mcgit"
printf 'maxSourceAge: 720h\n' >"$R/.mcgit/policy.yaml"
scommit "$R" alice "config, 2026-01-01"   # lib.sh dates commits 2026-01-01: months ago
CL=local:$T/cl
"$MCGIT" node add --cluster "$CL" w0 --labels node-role.kubernetes.io/worker= >/dev/null
CTL=("$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "$CL" --once)
cond() { "$MCGIT" status --cluster "$CL" -o json | jq -r --arg p "$1" \
  '.items[] | select(.metadata.name == $p) | .status.conditions[] | select(.type == "SourceStale") | "\(.status) \(.reason)"'; }

expect_rc 0 "a controller pass over an old source" -- "${CTL[@]}"
expect_grep "SourceStale: the newest verified source commit [0-9a-f]{12} .* more than maxSourceAge 30d" "$T/err" "the controller logs SourceStale"
for p in master worker; do
  [ "$(cond $p)" = "True SourceStale" ] && ok "$p: SourceStale True in -o json" || bad "$p: SourceStale is '$(cond $p)'"
done
"$MCGIT" status --cluster "$CL" >"$T/table"
expect_grep "^worker: SourceStale: " "$T/table" "mcgit status shows it under the table"
expect_grep "^NAME +CONFIG +UPDATED" "$T/table" "the table keeps kubectl's columns"

# a heartbeat (signed, now) makes the source current; nothing changes on nodes
before=$("$MCGIT" status --cluster "$CL" nodes -o json | jq -r '.items[].metadata.annotations["machineconfiguration.mcgit.io/desiredConfig"]')
unset GIT_COMMITTER_DATE GIT_AUTHOR_DATE
expect_rc 0 "mcgit heartbeat signs an empty commit" -- "$MCGIT" heartbeat --repo "$R" --key "$T/keys/alice"
HB=$(cat "$T/out")
[ "$(git -C "$R" rev-parse HEAD)" = "$HB" ] && ok "the source branch is at the heartbeat" || bad "HEAD is not the heartbeat"
[ "$(git -C "$R" rev-parse "$HB^{tree}")" = "$(git -C "$R" rev-parse "$HB~1^{tree}")" ] && ok "its tree is the tip's" || bad "heartbeat changed the tree"
git -C "$R" -c gpg.ssh.allowedSignersFile="$T/trust" verify-commit "$HB" >/dev/null 2>&1 && ok "git verify-commit accepts the heartbeat" || bad "heartbeat not signed"
expect_rc 0 "a controller pass after the heartbeat" -- "${CTL[@]}"
[ "$(cond worker)" = "False " ] && ok "SourceStale False after the heartbeat" || bad "SourceStale is '$(cond worker)'"
after=$("$MCGIT" status --cluster "$CL" nodes -o json | jq -r '.items[].metadata.annotations["machineconfiguration.mcgit.io/desiredConfig"]')
[ "$before" = "$after" ] && ok "the heartbeat changed no node's desiredConfig" || bad "desired changed"
expect_rc 1 "heartbeat without a key is refused in one line" -- "$MCGIT" heartbeat --repo "$R"
[ "$(wc -l <"$T/err")" = 1 ] && ok "one line" || bad "$(cat "$T/err")"

# bundle verify/import say how old the newest commit is
git init -q --bare -b main "$T/mirror"
"$MCGIT" bundle create --repo "$R" "$T/b.bundle" 2>/dev/null
expect_rc 0 "bundle verify" -- "$MCGIT" bundle verify --repo "$T/mirror" "$T/b.bundle" --trust "$T/trust"
expect_grep "newest source commit ${HB:0:12}, .* old\)" "$T/err" "bundle verify prints the newest commit's age"
expect_rc 0 "bundle import" -- "$MCGIT" bundle import --repo "$T/mirror" "$T/b.bundle" --trust "$T/trust"
expect_grep "newest source commit ${HB:0:12}" "$T/err" "bundle import prints it too"
finish
