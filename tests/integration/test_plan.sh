#!/usr/bin/env bash
# test_plan.sh — `mcgit plan` (text and -o json), the plan the pre-receive
# hook answers a real `git push` with, the plan of `bundle verify|import`,
# the warning for a MachineConfig no pool selects, and the small frictions
# of issue 19 (usage hint, empty verify/log, YAML tabs, maxUnavailable over
# 100%, $MCGIT_CLUSTER).
. "$(dirname "$0")/lib.sh"
need jq

mkkey alice ed25519
TR=$T/trust
signer_line alice@example.com alice >"$TR"
S=$T/server.git
git init -q --bare "$S"
expect_rc 0 "hook install into a bare repo" -- "$MCGIT" hook install --repo "$S" --trust "$TR"
C=$T/client
"$MCGIT" init "$C" >/dev/null 2>&1
sign_setup "$C" "$TR"
git -C "$C" remote add origin "file://$S"
# git pads remote: lines with blanks (to wipe progress output): strip them
push() {
  local rc=0
  git -C "$C" push "$@" >"$T/push.raw" 2>&1 || rc=$?
  sed 's/[[:space:]]*$//' "$T/push.raw" >"$T/push.out"
  return $rc
}
sync_rendered() { git -C "$C" fetch -q origin rendered:rendered; }

# ---------------------------------------------------------------- first push
scommit "$C" alice "initial config"
expect_rc 0 "first push accepted" -- push origin main
expect_grep "^remote: mcgit: plan: pool worker: none -> rendered-worker-[0-9a-f]{32}$" "$T/push.out" \
  "the pusher sees the plan: worker from none to its first rendered config"
expect_grep "^remote: mcgit: plan:   nodes: unknown \(no --cluster\), maxUnavailable 1" "$T/push.out" \
  "the hook says node counts are unknown"
W0=$(git -C "$S" show rendered:worker/name)
M0=$(git -C "$S" show rendered:master/name)
sync_rendered

# ---------------------------------------------------------------- a change, planned
cat >"$C/machineconfigs/policy.yaml" <<'YAML'
apiVersion: operator.openshift.io/v1
kind: MachineConfiguration
metadata:
  name: cluster
spec:
  nodeDisruptionPolicy:
    files:
    - path: /etc/chrony.conf
      actions:
      - type: Restart
        restart:
          serviceName: chronyd.service
YAML
write_mc "$C" 50-chrony worker /etc/chrony.conf "server%20a"
cat >>"$C/machineconfigs/50-chrony.yaml" <<'YAML'
    systemd:
      units:
      - name: extra.service
        enabled: true
        contents: "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"
  kernelArguments:
  - nosmt
YAML
sed -i 's/^  maxUnavailable: .*/  maxUnavailable: 2/' "$C/pools/worker.yaml"
grep -q 'maxUnavailable: 2' "$C/pools/worker.yaml" || bad "test setup: worker maxUnavailable"
scommit "$C" alice "chrony, a unit, nosmt"
before=$(git -C "$C" rev-parse rendered)

expect_rc 0 "mcgit plan of the unpushed commit" -- "$MCGIT" plan --repo "$C" --trust "$TR"
cp "$T/out" "$T/plan.txt"
expect_grep "^pool worker: $W0 -> rendered-worker-[0-9a-f]{32}$" "$T/plan.txt" "plan: worker old -> new"
expect_grep "^pool master: $M0 \(unchanged\)$" "$T/plan.txt" "plan: master unchanged"
expect_grep "^  added file /etc/chrony.conf: Restart chronyd.service$" "$T/plan.txt" \
  "plan: a file under the policy's Restart rule"
expect_grep "^  added unit extra.service: Reboot$" "$T/plan.txt" "plan: a unit with no rule needs a Reboot"
expect_grep "^  added kernelArguments \(\+nosmt\): Reboot$" "$T/plan.txt" \
  "plan: kernel arguments need a Reboot"
expect_grep "^  actions: Reboot$" "$T/plan.txt" "plan: the pool's actions collapse into one Reboot"
expect_grep "^  nodes: unknown \(no --cluster\), maxUnavailable 2$" "$T/plan.txt" \
  "plan: no cluster, node count unknown, maxUnavailable shown"
[ "$(git -C "$C" rev-parse rendered)" = "$before" ] && [ ! -e "$C/.git/mcgit/verified" ] &&
  ok "plan wrote nothing (rendered branch and verified mark untouched)" || bad "plan wrote something"

# -o json: the documented fields
expect_rc 0 "mcgit plan -o json" -- "$MCGIT" plan --repo "$C" --trust "$TR" -o json
jq -e --arg w0 "$W0" '.version == 1 and (.source|length) == 40 and (.renderedTip|length) == 40 and
  (.pools|map(.pool)) == ["master","worker"] and
  (.pools[1] | .old == $w0 and (.new|test("^rendered-worker-[0-9a-f]{32}$")) and .changed == true
     and .actions == [{"type":"Reboot"}] and .nodes == null and .waves == null and .paused == false
     and .unreconcilable == false
     and (.changes|map(select(.kind=="file" and .op=="added" and .key=="/etc/chrony.conf"))[0].actions
          == [{"type":"Restart","service":"chronyd.service"}])
     and (.changes|map(select(.kind=="kernelArguments"))[0].what == ["+nosmt"])) and
  (.pools[0] | .changed == false and .changes == [])' "$T/out" >/dev/null &&
  ok "plan -o json: version, source, pools, old/new, changes with kind/op/key/what/actions" ||
  { bad "plan -o json fields"; head -c 1500 "$T/out" | sed 's/^/    /'; }

# node counts from a local cluster: 3 workers, maxUnavailable 2 -> 2 waves
CL=local:$T/cluster
for n in w1 w2 w3; do
  "$MCGIT" node add --cluster "$CL" "$n" --labels node-role.kubernetes.io/worker= >/dev/null 2>&1
done
"$MCGIT" node add --cluster "$CL" m1 --labels node-role.kubernetes.io/master= >/dev/null 2>&1
expect_rc 0 "plan --cluster" -- "$MCGIT" plan --repo "$C" --trust "$TR" --cluster "$CL"
expect_grep "^  nodes: 3 of 3, 2 waves at maxUnavailable 2$" "$T/out" "plan --cluster: 3 nodes in 2 waves"
expect_rc 0 "plan with MCGIT_CLUSTER instead of --cluster" -- env MCGIT_CLUSTER="$CL" \
  "$MCGIT" plan --repo "$C" --trust "$TR" -o json
jq -e '.pools[1] | .machineCount == 3 and .nodes == 3 and .maxUnavailable == 2 and .waves == 2' \
  "$T/out" >/dev/null && ok "MCGIT_CLUSTER: node counts in -o json" || bad "MCGIT_CLUSTER plan json"
expect_rc 0 "status with MCGIT_CLUSTER only" -- env MCGIT_CLUSTER="$CL" "$MCGIT" status nodes
expect_grep "^w3 " "$T/out" "status reads the cluster from MCGIT_CLUSTER"
expect_rc 2 "status with neither --cluster nor MCGIT_CLUSTER" -- env -u MCGIT_CLUSTER "$MCGIT" status

# a commit that does not verify is not planned
echo x >"$C/NOTES"; scommit "$C" - "unsigned"
expect_rc 1 "plan refuses an unsigned commit" -- "$MCGIT" plan --repo "$C" --trust "$TR"
expect_grep "commit is not signed" "$T/err" "plan names the bad commit"
[ ! -s "$T/out" ] && ok "nothing planned for a refused commit" || bad "plan printed a plan"
git -C "$C" reset -q --hard HEAD~1

# ---------------------------------------------------------------- bundle verify | import
M=$T/mirror.git
git clone -q --bare "$S" "$M"
git -C "$M" fetch -q origin rendered:rendered 2>/dev/null || git -C "$M" branch -f rendered origin/rendered 2>/dev/null || true
git -C "$M" rev-parse -q --verify refs/heads/rendered >/dev/null || bad "mirror has no rendered branch"
expect_rc 0 "bundle create of the change" -- "$MCGIT" bundle create --repo "$C" "$T/change.bundle" \
  --since "$(git -C "$S" rev-parse main)" --ref main
expect_rc 0 "bundle verify" -- "$MCGIT" bundle verify --repo "$M" "$T/change.bundle" --trust "$TR"
expect_grep "^pool worker: $W0 -> rendered-worker-[0-9a-f]{32}$" "$T/out" "bundle verify prints the plan"
expect_grep "^  added file /etc/chrony.conf: Restart chronyd.service$" "$T/out" "bundle verify: the changes"
expect_grep "^accepted$" "$T/out" "bundle verify still ends in its verdict"
expect_rc 0 "bundle import" -- "$MCGIT" bundle import --repo "$M" "$T/change.bundle" --trust "$TR"
expect_grep "^pool worker: $W0 -> rendered-worker-[0-9a-f]{32}$" "$T/out" \
  "bundle import prints the plan against the rendered branch before the import"

# ---------------------------------------------------------------- the push
expect_rc 0 "push of the change accepted" -- push origin main
expect_grep "^remote: mcgit: plan: pool worker: $W0 -> rendered-worker-[0-9a-f]{32}$" "$T/push.out" \
  "the push's plan: worker old -> new"
expect_grep "^remote: mcgit: plan:   added file /etc/chrony.conf: Restart chronyd.service$" "$T/push.out" \
  "the push's plan: the file and its action"
expect_grep "^remote: mcgit: plan: pool master: $M0 \(unchanged\)$" "$T/push.out" "the push's plan: master unchanged"
W1=$(git -C "$S" show rendered:worker/name)
grep -q "plan: pool worker: $W0 -> $W1\$" "$T/push.out" && ok "the planned name is the name rendered" ||
  bad "planned name differs from rendered $W1"
sync_rendered

# ---------------------------------------------------------------- a MachineConfig no pool selects
write_mc "$C" 60-orphan nobody /etc/orphan x
expect_rc 0 "validate accepts an MC no pool selects" -- "$MCGIT" validate "$C"
expect_grep "^mcgit validate: warning: machineconfigs/60-orphan.yaml:1: MachineConfig '60-orphan' is selected by no pool's machineConfigSelector" \
  "$T/err" "validate warns about the unselected MC with file:line"
expect_rc 0 "render DIR with the unselected MC" -- "$MCGIT" render "$C"
expect_grep "warning: .*'60-orphan' is selected by no pool" "$T/err" "render warns too"
scommit "$C" alice "an orphan"
expect_rc 0 "plan of the orphan commit" -- "$MCGIT" plan --repo "$C" --trust "$TR"
expect_grep "warning: .*'60-orphan' is selected by no pool" "$T/err" "plan warns too"
expect_grep "^pool worker: $W1 \(unchanged\)$" "$T/out" "the orphan changes no pool"
expect_rc 0 "push of the orphan accepted" -- push origin main
expect_grep "^remote: mcgit: [0-9a-f]{12}: warning: machineconfigs/60-orphan.yaml:1: MachineConfig '60-orphan' is selected by no pool" \
  "$T/push.out" "the push warns about the unselected MC"

# ---------------------------------------------------------------- frictions
expect_rc 2 "an unknown option" -- "$MCGIT" plan --bogus
[ "$(wc -l <"$T/err")" = 2 ] && grep -q "unrecognized option '--bogus'" "$T/err" &&
  grep -qx "see 'mcgit help plan'" "$T/err" && ! grep -q "^usage:" "$T/err" &&
  ok "unknown option: one line and a hint, not the whole help" || { bad "unknown option output"; sed 's/^/    /' "$T/err"; }
expect_rc 2 "a missing argument" -- "$MCGIT" verify --repo "$C"
[ "$(wc -l <"$T/err")" = 2 ] && grep -qx "see 'mcgit help verify'" "$T/err" &&
  ok "usage error: the reason and a hint" || { bad "usage error output"; sed 's/^/    /' "$T/err"; }
# Option errors name the command, and a misspelt long option gets a did-you-mean.
two_lines() { # LABEL CMD LINE: stderr is LINE and the hint, nothing else
  [ "$(wc -l <"$T/err")" = 2 ] && [ "$(head -1 "$T/err")" = "$3" ] && grep -qx "see 'mcgit help $2'" "$T/err" &&
    ok "$1" || { bad "$1"; sed 's/^/    /' "$T/err"; }
}
expect_rc 2 "a misspelt long option" -- "$MCGIT" plan --repo "$C" --trsut "$TR"
two_lines "misspelt option: mcgit plan: prefix, did you mean --trust" plan \
  "mcgit plan: unrecognized option '--trsut' (did you mean '--trust'?)"
expect_rc 2 "a misspelt option of a subcommand" -- "$MCGIT" bundle create --repo "$C" --sicne x "$T/b"
two_lines "bundle create: did you mean --since" bundle "mcgit bundle: unrecognized option '--sicne' (did you mean '--since'?)"
expect_rc 2 "an option far from every option" -- "$MCGIT" plan --bogus
two_lines "no did-you-mean for --bogus" plan "mcgit plan: unrecognized option '--bogus'"
expect_rc 2 "a missing argument of a long option" -- "$MCGIT" plan --repo
two_lines "missing argument: mcgit plan: prefix" plan "mcgit plan: option '--repo' requires an argument"
expect_rc 2 "a missing argument of a short option" -- "$MCGIT" status -o
two_lines "missing argument of -o" status "mcgit status: option '-o' requires an argument"
expect_rc 2 "an unknown short option" -- "$MCGIT" status -x
two_lines "unknown short option" status "mcgit status: unrecognized option '-x'"
expect_rc 2 "an ambiguous abbreviation" -- "$MCGIT" verify --re x
two_lines "ambiguous abbreviation" verify "mcgit verify: option '--re' is ambiguous: --repo, --rev, --revoked"
expect_rc 2 "an argument to a flag" -- "$MCGIT" plan --help=yes
two_lines "an argument to a flag" plan "mcgit plan: option '--help' takes no argument"
expect_rc 2 "a misspelt command" -- "$MCGIT" rnder
[ "$(cat "$T/err")" = "mcgit: 'rnder' is not a command (did you mean 'render'?); see 'mcgit help'" ] &&
  ok "a misspelt command: did you mean render" || { bad "misspelt command"; sed 's/^/    /' "$T/err"; }
# A --trust that is no allowed_signers file (a public key, say) says "trust root".
expect_rc 1 "a public key as --trust" -- "$MCGIT" plan --repo "$C" --trust "$T/keys/alice.pub"
expect_grep "^mcgit plan: trust root \(an allowed_signers file\): $T/keys/alice.pub:1: " "$T/err" "a wrong --trust names the trust root"
expect_rc 1 "a missing --trust" -- "$MCGIT" verify --repo "$C" --trust "$T/nope"
expect_grep "^mcgit verify: trust root \(an allowed_signers file\): $T/nope: " "$T/err" "a missing --trust names the trust root"
expect_rc 1 "hook install with a missing --trust" -- "$MCGIT" hook install --repo "$C" --trust "$T/nope"
expect_grep "^mcgit hook: trust root \(an allowed_signers file\): $T/nope: " "$T/err" "hook install names the trust root"

"$MCGIT" render --repo "$C" --trust "$TR" >/dev/null 2>&1 # records the verified mark
expect_rc 0 "verify with nothing new" -- "$MCGIT" verify --repo "$C" --trust "$TR"
expect_grep "^nothing to verify: no commit of main is newer than the last verified one$" "$T/out" \
  "verify says there is nothing to verify"
E=$T/empty
"$MCGIT" init "$E" >/dev/null 2>&1
expect_rc 0 "log of a repo never rendered" -- "$MCGIT" log --repo "$E"
expect_grep "^no rendered commits yet" "$T/out" "log says there is nothing to show"
expect_rc 0 "log -o json of a repo never rendered" -- "$MCGIT" log --repo "$E" -o json
[ "$(cat "$T/out")" = "[]" ] && ok "log -o json stays a JSON list" || bad "log -o json: $(cat "$T/out")"

printf 'apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n\tname: tabbed\n' \
  >"$E/machineconfigs/70-tab.yaml"
expect_rc 1 "a tab in YAML indentation" -- "$MCGIT" validate "$E"
expect_grep "^mcgit validate: machineconfigs/70-tab.yaml:4: tab character used for indentation" "$T/err" \
  "the tab is named as the problem at file:line"
rm "$E/machineconfigs/70-tab.yaml"

sed -i 's/^  maxUnavailable: .*/  maxUnavailable: 150%/' "$E/pools/worker.yaml"
expect_rc 1 "maxUnavailable: 150%" -- "$MCGIT" validate "$E"
[ "$(wc -l <"$T/err")" = 1 ] && grep -q "pools/worker.yaml:[0-9]*: maxUnavailable '150%' is over 100%" "$T/err" &&
  ok "maxUnavailable 150%: one clear error" || { bad "maxUnavailable 150% errors"; sed 's/^/    /' "$T/err"; }

finish
