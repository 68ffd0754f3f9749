#!/usr/bin/env bash
# test_rendered_history.sh — rendered history is a pure function of signed
# source history, and a rollback is signed source history (issue 15).
#
# One source history (merges included) reaches four kinds of clone: a
# server rendering every push (hooks), a controller's clone rendering only
# the tip, a mirror fed by a bundle, a fresh clone rendering once. Their
# rendered ids must be equal. Rollbacks by each kind of REV are made on an
# operator's clone, pushed with real git, and show up on the others; one is
# carried by bundle to an air-gapped mirror; one does not bring back a
# removed signer. Then the emergency path: the server is down, a rollback is
# signed on the controller's own clone, the controller's fetch refuses the
# divergence (nothing lost, nothing overwritten) until it is pushed.
. "$(dirname "$0")/lib.sh"
need jq
# Rollbacks are made now; the history before them must not lie in the future
# of "now" nor go back in time after them (MCG_CLOCK_SKEW): real clock time.
unset GIT_AUTHOR_DATE GIT_COMMITTER_DATE

mkkey alice ed25519
mkkey bob ecdsa
TR=$T/trust
signer_line alice@example.com alice >"$TR"
S=$T/server.git
fixture_server "$S" "$TR"
C=$T/ops
"$MCGIT" init "$C" >/dev/null 2>&1
sign_setup "$C" "$TR"
git -C "$C" config user.signingkey "$T/keys/alice"
git -C "$C" remote add origin "file://$S"
push() { git -C "$C" push -q origin main 2>"$T/push.err" || { cat "$T/push.err"; return 1; }; }
mc() { write_mc "$C" 10-worker worker /etc/test.conf "$1"; }
rendered() { git -C "$1" rev-parse -q --verify refs/heads/rendered || echo "none:$1"; }
# name REPO POOL: the pool's rendered name at the rendered tip
name() { git -C "$1" show "rendered:$2/name"; }

# ---------------------------------------------------------------- one history
mc v1; scommit "$C" alice "v1"; push
echo notes >"$C/NOTES"; scommit "$C" alice "notes only (data, not config)"; push
mc v2; scommit "$C" alice "v2"; push
SV2=$(git -C "$C" rev-parse HEAD)
# a merge: a side branch with a config change, merged with a signed merge
git -C "$C" checkout -q -b feature
write_mc "$C" 20-master master /etc/motd hello; scommit "$C" alice "motd on masters"
git -C "$C" checkout -q main
mc v3; scommit "$C" alice "v3"
git -C "$C" merge -q --no-ff -S -m "merge feature" feature
push
# a commit that does not render, below a tip that does (pushed together)
echo "not: [yaml" >"$C/machineconfigs/30-broken.yaml"; scommit "$C" alice "broken for a moment"
rm "$C/machineconfigs/30-broken.yaml"; mc v4; scommit "$C" alice "v4 (fixed)"
push
SV4=$(git -C "$C" rev-parse HEAD)
RS=$(rendered "$S")

# (b) the controller's clone renders only the tip, (c) a mirror from a bundle,
# (d) a fresh clone renders once
K=$T/controller.git
git clone -q --bare "file://$S" "$K"
CL=local:$T/cl
"$MCGIT" node add --cluster "$CL" w0 --labels node-role.kubernetes.io/worker= >/dev/null
CTL=("$MCGIT" controller --repo "$K" --trust "$TR" --cluster "$CL" --once)
expect_rc 0 "the controller renders its clone's tip" -- "${CTL[@]}"
"$MCGIT" bundle create --repo "$S" "$T/full.bundle" 2>/dev/null
M=$T/airgap.git
git init -q --bare -b main "$M"
expect_rc 0 "bundle import into an air-gapped mirror" -- "$MCGIT" bundle import --repo "$M" "$T/full.bundle" --trust "$TR"
F=$T/fresh.git
git clone -q --bare "file://$S" "$F"
expect_rc 0 "a fresh clone renders once" -- "$MCGIT" render --repo "$F" --trust "$TR"
[ "$(rendered "$K")" = "$RS" ] && [ "$(rendered "$M")" = "$RS" ] && [ "$(rendered "$F")" = "$RS" ] &&
  ok "one source history, one rendered id: server (every push), controller (tip), bundle mirror, fresh clone" ||
  bad "rendered ids differ: server $RS controller $(rendered "$K") mirror $(rendered "$M") fresh $(rendered "$F")"
[ "$(git -C "$S" rev-list rendered | sort)" = "$(git -C "$F" rev-list rendered | sort)" ] &&
  ok "and the same rendered commits below it" || bad "rendered histories differ"
[ "$(git -C "$S" rev-list --count rendered)" = 7 ] &&
  ok "every source commit that renders has its rendered commit (7 of 8)" || bad "rendered count $(git -C "$S" rev-list --count rendered)"
git -C "$S" log -1 --format=%B rendered >"$T/msg"
expect_grep "^Render-Rule: 2$" "$T/msg" "rendered commits carry Render-Rule: 2"
[ "$(git -C "$S" rev-list --parents -1 rendered | wc -w)" = 2 ] &&
  [ "$(git -C "$S" log -1 --format='%(trailers:key=Source-Commit,valueonly)' rendered^ | head -1)" = \
    "$(git -C "$C" rev-parse HEAD~2)" ] &&
  ok "the commit that does not render is left out: R(v4)'s parent is R(merge)" || bad "parent of R(v4)"
RM=$(git -C "$S" rev-parse rendered^)
[ "$(git -C "$S" rev-list --parents -1 "$RM" | wc -w)" = 3 ] &&
  ok "a merge renders to a merge of its parents' renders (rendered history has the source's shape)" ||
  bad "R(merge) parents: $(git -C "$S" rev-list --parents -1 "$RM")"
# a clone of the fresh clone's history rendered commit by commit gives the same
step=$T/step.git
git init -q --bare -b main "$step"
for c in $(git -C "$C" rev-list --first-parent --reverse main); do
  git -C "$C" push -q "$step" "$c:refs/heads/main" 2>/dev/null
  "$MCGIT" render --repo "$step" --trust "$TR" >/dev/null 2>&1 || true
done
[ "$(rendered "$step")" = "$RS" ] && ok "rendering each first-parent commit in turn gives the same id too" ||
  bad "step by step: $(rendered "$step") vs $RS"

# ---------------------------------------------------------------- rollbacks
# REV = a rendered commit id from another clone (the server's, prefix), made
# on the operator's clone which has no rendered branch at all
git -C "$C" rev-parse -q --verify rendered >/dev/null && bad "ops clone has a rendered branch" || ok "the ops clone never rendered"
"$MCGIT" log --repo "$S" -o json >"$T/slog.json"
RV2=$(jq -r --arg s "$SV2" '.[] | select(.source == $s) | .rendered' "$T/slog.json")
WV2=$(jq -r --arg s "$SV2" '.[] | select(.source == $s) | .pools.worker' "$T/slog.json")
WV4=$(name "$S" worker)
objs=$(git -C "$C" count-objects -v | grep -v size)
expect_rc 1 "an id that is no rendered commit of this history is refused" -- "$MCGIT" rollback --repo "$C" abcdef0123
[ "$(git -C "$C" count-objects -v | grep -v size)" = "$objs" ] &&
  ok "recomputing the whole rendered history in memory wrote no object" || bad "the lookup wrote objects"
expect_rc 0 "rollback by the server's rendered commit id (prefix) on the ops clone" -- \
  "$MCGIT" rollback --repo "$C" "${RV2:0:12}"
expect_grep "^    worker: $WV4 -> $WV2$" "$T/out" "prints worker: old -> new"
[ "$(git -C "$C" log -1 --format='%(trailers:key=Rollback-To,valueonly)' | head -1)" = "$SV2" ] &&
  ok "it targets that rendered commit's source" || bad "rollback by rendered id: target"
git -C "$C" rev-parse -q --verify rendered >/dev/null && bad "the lookup wrote a rendered branch" ||
  ok "recomputing the rendered history wrote no ref"
expect_rc 0 "push the rollback through the server's hooks" -- push
[ "$(name "$S" worker)" = "$WV2" ] && ok "the server renders it: worker is $WV2 again" || bad "server worker name $(name "$S" worker)"
expect_rc 0 "the controller fetches it" -- "${CTL[@]}"
[ "$(name "$K" worker)" = "$WV2" ] && [ "$(rendered "$K")" = "$(rendered "$S")" ] &&
  ok "the controller's clone: same rendered commit, worker $WV2" || bad "controller after rollback 1"
"$MCGIT" log --repo "$K" -o json | jq -e --arg s "$SV2" '.[0].rollbackTo == $s and .[0].subject == "Rollback to \($s[0:12]) (v2)"' >/dev/null &&
  ok "log on the controller's clone marks the rollback" || bad "controller log rollback"

# REV = a rendered config name
WV3=$(jq -r '.[] | select(.subject == "merge feature") | .pools.worker' "$T/slog.json")
expect_rc 0 "rollback by rendered config name $WV3" -- "$MCGIT" rollback --repo "$C" "$WV3"
push
expect_rc 0 "controller pass" -- "${CTL[@]}"
[ "$(name "$S" worker)" = "$WV3" ] && [ "$(name "$K" worker)" = "$WV3" ] &&
  ok "by name: server and controller show $WV3" || bad "rollback by name: $(name "$S" worker) / $(name "$K" worker)"
# REV = a source commit
expect_rc 0 "rollback by source commit v4" -- "$MCGIT" rollback --repo "$C" "$SV4"
push
expect_rc 0 "controller pass" -- "${CTL[@]}"
[ "$(name "$S" worker)" = "$WV4" ] && [ "$(name "$K" worker)" = "$WV4" ] && [ "$(rendered "$K")" = "$(rendered "$S")" ] &&
  ok "by source commit: server and controller show $WV4" || bad "rollback by source"
"$MCGIT" status --cluster "$CL" -o json | jq -e --arg w "$WV4" '.items[] | select(.metadata.name == "worker") | .spec.configuration.name == $w' >/dev/null &&
  ok "the worker pool's target is $WV4" || bad "pool target"

# carried by bundle to the air-gapped mirror: the same rendered commit
BASE=$(git -C "$M" rev-parse main)
expect_rc 0 "incremental bundle of the rollbacks" -- "$MCGIT" bundle create --repo "$S" --since "$BASE" "$T/rb.bundle"
expect_rc 0 "imported on the air-gapped mirror" -- "$MCGIT" bundle import --repo "$M" "$T/rb.bundle" --trust "$TR"
[ "$(rendered "$M")" = "$(rendered "$S")" ] && ok "the air-gapped mirror has the same rendered commit" ||
  bad "air-gapped: $(rendered "$M") vs $(rendered "$S")"

# ---------------------------------------------------------------- removed signer
signer_line bob@example.com bob >"$C/.mcgit/allowed_signers"
scommit "$C" alice "trust bob"; push
mc bob1; git -C "$C" add -A; git -C "$C" -c user.signingkey="$T/keys/bob" commit -q -S -m "bob's change"; push
BOB=$(git -C "$C" rev-parse HEAD)
: >"$C/.mcgit/allowed_signers"; mc v5; scommit "$C" alice "bob leaves, v5"; push
expect_rc 0 "rollback to bob's commit (when bob was trusted)" -- "$MCGIT" rollback --repo "$C" "$BOB"
[ ! -s "$C/.mcgit/allowed_signers" ] && [ "$(git -C "$C" rev-parse HEAD:.mcgit)" = "$(git -C "$C" rev-parse HEAD~1:.mcgit)" ] &&
  ok "the rollback keeps .mcgit/ as it is: bob stays removed" || bad "rollback touched .mcgit"
push
mc bob2; git -C "$C" add -A; git -C "$C" -c user.signingkey="$T/keys/bob" commit -q -S -m "bob again"
git -C "$C" push -q origin main 2>"$T/push.err" && bad "bob's commit after the rollback was accepted" ||
  { grep -q "not in allowed signers" "$T/push.err" && ok "bob signs after the rollback: refused by the server" || { bad "refusal reason"; cat "$T/push.err"; }; }
git -C "$C" reset -q --hard origin/main
expect_rc 0 "controller pass" -- "${CTL[@]}"

# ---------------------------------------------------------------- emergency
# The server is down; an operator signs a rollback on the controller's own clone.
mv "$S" "$T/server.down"
KMAIN=$(git -C "$K" rev-parse main)
expect_rc 0 "emergency: rollback signed on the controller's clone (bare)" -- \
  "$MCGIT" rollback --repo "$K" "$SV2" --key "$T/keys/alice" --trust "$T/trust"
RBK=$(git -C "$K" rev-parse main)
[ "$(git -C "$K" rev-parse "$RBK^")" = "$KMAIN" ] && ok "a commit on the clone's main" || bad "emergency commit placement"
"${CTL[@]}" >/dev/null 2>&1 || true
[ "$(name "$K" worker)" = "$WV2" ] && ok "the controller rolls it out while the server is down" || bad "emergency not rendered"
# The server is back, unchanged: the clone is ahead; the fetch moves nothing.
mv "$T/server.down" "$S"
"${CTL[@]}" >/dev/null 2>&1 || true
cond() { "$MCGIT" status --cluster "$CL" -o json | jq -r '.items[] | select(.metadata.name == "worker") | .status.conditions[] | select(.type == "RenderDegraded") | "\(.status) \(.reason) \(.message)"'; }
cond >"$T/cond"
expect_grep "^True FetchFailed .*behind the local one .*push them" "$T/cond" "the fetch refuses (FetchFailed): the remote lacks the rollback"
[ "$(git -C "$K" rev-parse main)" = "$RBK" ] && [ "$(git -C "$S" rev-parse main)" = "$KMAIN" ] &&
  [ "$(name "$K" worker)" = "$WV2" ] && ok "nothing lost, nothing overwritten: each side keeps its branch, nodes keep the rollback" ||
  bad "emergency: refs moved"
# Someone pushes to the server meanwhile: the two diverge; still nothing moves.
git -C "$C" fetch -q origin
echo more >"$C/NOTES"; scommit "$C" alice "unrelated change"; push
"${CTL[@]}" >/dev/null 2>&1 || true
cond >"$T/cond"
expect_grep "^True FetchFailed .*diverged" "$T/cond" "diverged: the fetch refuses and says so"
[ "$(git -C "$K" rev-parse main)" = "$RBK" ] && ok "the controller's clone keeps the rollback" || bad "clone moved"
# Resolution: bring the rollback to the server (merged with what it has), signed, pushed.
git -C "$C" fetch -q "$K" main
git -C "$C" merge -q -S -m "merge the emergency rollback" FETCH_HEAD
expect_rc 0 "the emergency rollback reaches the server (merged, signed, pushed)" -- push
expect_rc 0 "the controller fetches again" -- "${CTL[@]}"
cond >"$T/cond"
expect_grep "^False " "$T/cond" "RenderDegraded clears"
[ "$(git -C "$K" rev-parse main)" = "$(git -C "$S" rev-parse main)" ] && [ "$(rendered "$K")" = "$(rendered "$S")" ] &&
  [ "$(name "$K" worker)" = "$WV2" ] && ok "server and clone agree again, same rendered commit, the rollback kept" ||
  bad "after the merge: $(name "$K" worker)"
finish
