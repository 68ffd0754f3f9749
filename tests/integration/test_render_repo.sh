#!/usr/bin/env bash
# test_render_repo.sh — `mcgit render --repo`, `log`, `rollback` and `fetch`
# against real signed repos: the rendered branch's trees, authorship,
# messages and reproducibility; refusals that move nothing; rollback trees.
. "$(dirname "$0")/lib.sh"

mkkey alice ed25519
TR=$T/trust
signer_line alice@example.com alice >"$TR"
R=$T/src
"$MCGIT" init "$R" >/dev/null 2>&1
sign_setup "$R" "$TR"
g() { git -C "$R" "$@"; }
refs() { git -C "${1:-$R}" for-each-ref --format='%(refname) %(objectname)'; }
mc() { # mc FILE NAME ROLE CHRONY-LINE: a MachineConfig with a file, a unit and a drop-in
  cat >"$R/machineconfigs/$1" <<EOF
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: $2
  labels:
    machineconfiguration.openshift.io/role: $3
spec:
  config:
    ignition:
      version: 3.4.0
    storage:
      files:
        - path: /etc/chrony.conf
          mode: 420
          contents:
            source: data:,$4
        - path: /usr/local/bin/hello
          mode: 493
          contents:
            source: data:;base64,IyEvYmluL3NoCmVjaG8gaGkK
    systemd:
      units:
        - name: hello.service
          enabled: true
          contents: |
            [Service]
            ExecStart=/usr/local/bin/hello
          dropins:
            - name: 10-env.conf
              contents: |
                [Service]
                Environment=POOL=$3
EOF
}

# S1: first source commit; S2 changes both pools. A non-UTC zone checks that
# the rendered commit keeps the source commit's time *and* zone.
mc 50-worker.yaml 50-worker worker 'server%20a.example.com%20iburst%0A'
mc 50-master.yaml 50-master master 'server%20m.example.com%20iburst%0A'
GIT_COMMITTER_DATE="2026-01-02T03:04:05+02:00" scommit "$R" alice "first config"
S1=$(g rev-parse HEAD)
mc 50-worker.yaml 50-worker worker 'server%20b.example.com%20iburst%0A'
mc 50-master.yaml 50-master master 'server%20n.example.com%20iburst%0A'
GIT_COMMITTER_DATE="2026-01-03T00:00:00Z" scommit "$R" alice "second config"
S2=$(g rev-parse HEAD)

# ---------------------------------------------------------------- render
expect_rc 0 "render --repo at S1" -- "$MCGIT" render --repo "$R" --rev "$S1" --trust "$TR"
R1=$(g rev-parse rendered)
if [ "$(g ls-tree -r --format='%(objectmode) %(path)' "$R1")" = "100644 master/files/etc/chrony.conf
100755 master/files/usr/local/bin/hello
100644 master/name
100644 master/spec.json
100644 master/units/hello.service
100644 master/units/hello.service.d/10-env.conf
100644 worker/files/etc/chrony.conf
100755 worker/files/usr/local/bin/hello
100644 worker/name
100644 worker/spec.json
100644 worker/units/hello.service
100644 worker/units/hello.service.d/10-env.conf" ]; then
  ok "rendered tree: per pool spec.json, name, files/<path> (modes kept), units/<unit> + .d/"
else bad "rendered tree"; g ls-tree -r "$R1" | sed 's/^/    /'; fi
[ "$(g show "$R1:worker/files/etc/chrony.conf")" = "server a.example.com iburst" ] &&
  [ "$(g show "$R1:worker/files/usr/local/bin/hello")" = "$(printf '#!/bin/sh\necho hi')" ] &&
  ok "files/<path> hold the decoded contents" || bad "decoded file contents"
[ "$(g show "$R1:worker/units/hello.service.d/10-env.conf")" = "$(printf '[Service]\nEnvironment=POOL=worker')" ] &&
  ok "units/<unit>.d/<drop-in> holds the drop-in" || bad "drop-in contents"
# name = rendered-<pool>-<first 32 hex of sha256(spec.json)>, as `mcgit render DIR` names it.
g checkout -q "$S1" 2>/dev/null
"$MCGIT" render "$R" >"$T/names"
g checkout -q main
good_names=1
for p in master worker; do
  h=$(g show "$R1:$p/spec.json" | sha256sum | cut -c1-32)
  [ "$(g show "$R1:$p/name")" = "rendered-$p-$h" ] || good_names=0
  grep -qx "$p rendered-$p-$h" "$T/names" || good_names=0
done
[ $good_names = 1 ] && ok "name = rendered-<pool>-sha256(spec.json)[:32], same as render DIR" ||
  { bad "pool names"; cat "$T/names"; }
[ "$(g log -1 --format='%an <%ae> %ad|%cn <%ce> %cd' --date=raw "$R1")" = \
  "mcgit <mcgit@localhost> $(g log -1 --format=%ct "$S1") +0200|mcgit <mcgit@localhost> $(g log -1 --format=%ct "$S1") +0200" ] &&
  ok "author and committer mcgit <mcgit@localhost> at the source's committer time and zone" ||
  bad "rendered authorship: $(g log -1 --format='%an <%ae> %ad|%cn <%ce> %cd' --date=raw "$R1")"
g log -1 --format=%B "$R1" >"$T/msg"
expect_grep "^master: rendered-master-[0-9a-f]{32}$" "$T/msg" "message lists master's rendered name"
expect_grep "^worker: rendered-worker-[0-9a-f]{32}$" "$T/msg" "message lists worker's rendered name"
[ "$(grep -v '^$' "$T/msg" | tail -1)" = "Source-Commit: $S1" ] &&
  [ "$(g log -1 --format='%(trailers:key=Source-Commit,valueonly)' "$R1" | head -1)" = "$S1" ] &&
  ok "message ends with trailer Source-Commit: <sha>" || { bad "Source-Commit trailer"; cat "$T/msg"; }
[ "$(g rev-list --parents -1 "$R1" | wc -w)" = 1 ] && ok "first rendered commit has no parent" ||
  bad "first rendered commit has a parent"

expect_rc 0 "render --repo (default rev: main = S2)" -- "$MCGIT" render --repo "$R" --trust "$TR"
R2=$(g rev-parse rendered)
[ "$(g rev-parse "$R2^")" = "$R1" ] && ok "second render appended on top of the first" || bad "R2's parent"
[ "$(g show "$R2:worker/files/etc/chrony.conf")" = "server b.example.com iburst" ] &&
  ok "second render holds S2's files" || bad "S2's chrony.conf"
g diff --name-only "$R1" "$R2" >"$T/diff"
[ "$(cat "$T/diff")" = "master/files/etc/chrony.conf
master/name
master/spec.json
worker/files/etc/chrony.conf
worker/name
worker/spec.json" ] && ok "git diff R1 R2 shows exactly what changes on the nodes" ||
  { bad "R1..R2 diff"; cat "$T/diff"; }

before=$(refs)
expect_rc 0 "re-render of S2" -- "$MCGIT" render --repo "$R" --trust "$TR"
[ "$(refs)" = "$before" ] && ok "re-rendering a rendered source adds nothing" || bad "re-render moved refs"
expect_rc 0 "re-render of S1" -- "$MCGIT" render --repo "$R" --rev "$S1" --trust "$TR"
[ "$(refs)" = "$before" ] && ok "re-rendering an older rendered source adds nothing" || bad "re-render S1 moved refs"
"$MCGIT" verify --repo "$R" --trust "$TR" >"$T/v.out" 2>&1 && rc=0 || rc=$?
[ "$rc" = 0 ] && [ ! -s "$T/v.out" ] && ok "verify after render: nothing new since the last verified commit" ||
  { bad "verify after render (exit $rc)"; cat "$T/v.out"; }

# ---------------------------------------------------------------- refusals
echo "unsigned" >"$R/NOTES"
g checkout -q -b unsigned-tip
scommit "$R" - "unsigned change"
U=$(g rev-parse HEAD)
g checkout -q main
before=$(refs)
expect_rc 1 "render of an unsigned commit is refused" -- "$MCGIT" render --repo "$R" --rev unsigned-tip --trust "$TR"
expect_grep "bad $U commit is not signed" "$T/err" "the refusal names the unsigned commit"
[ "$(refs)" = "$before" ] && ok "a refused verification moves no ref" || { bad "refs moved"; diff <(echo "$before") <(refs); }

g checkout -q -b bad-tree
cat >"$R/machineconfigs/99-bad.yaml" <<'EOF'
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 99-bad
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  kernelType: lowlatency
  config:
    ignition:
      version: 3.4.0
EOF
scommit "$R" alice "a config mcgit refuses"
g checkout -q main
before=$(refs)
expect_rc 1 "render of a signed but invalid tree is refused" -- "$MCGIT" render --repo "$R" --rev bad-tree --trust "$TR"
expect_grep "machineconfigs/99-bad.yaml:[0-9]+:" "$T/err" "the refusal says file:line"
[ "$(refs)" = "$before" ] && ok "a refused render moves no ref (not even refs/mcgit/verified)" ||
  { bad "refs moved"; diff <(echo "$before") <(refs); }

g checkout -q -b sideways "$S1"
echo side >"$R/NOTES"; scommit "$R" alice "sideways"
g checkout -q main
before=$(refs)
expect_rc 1 "a source not descending from the last rendered one is refused" -- \
  "$MCGIT" render --repo "$R" --rev sideways --trust "$TR"
[ "$(refs)" = "$before" ] && ok "the refused sideways render moves nothing" || bad "sideways moved refs"

# ---------------------------------------------------------------- reproducibility
for i in 1 2; do
  git clone -q "$R" "$T/clone$i"
  "$MCGIT" render --repo "$T/clone$i" --rev "$S1" --trust "$TR" >/dev/null 2>&1
  "$MCGIT" render --repo "$T/clone$i" --rev "$S2" --trust "$TR" >/dev/null 2>&1
done
c1=$(git -C "$T/clone1" rev-parse -q --verify refs/heads/rendered || echo none1)
c2=$(git -C "$T/clone2" rev-parse -q --verify refs/heads/rendered || echo none2)
[ "$c1" = "$c2" ] && [ "$c1" = "$R2" ] &&
  ok "two clones render the same history to identical commit ids (and equal to the original's)" ||
  bad "rendered ids differ: clone1 $c1 clone2 $c2 original $R2"

# ---------------------------------------------------------------- log
"$MCGIT" log --repo "$R" >"$T/log" 2>&1 && rc=0 || rc=$?
[ "$rc" = 0 ] && [ "$(grep -c '^[0-9a-f]\{12\} ' "$T/log")" = 2 ] &&
  head -1 "$T/log" | grep -q "^${R2:0:12}  2026-01-03T00:00:00Z  source ${S2:0:12}$" &&
  grep -q "^    worker rendered-worker-" "$T/log" &&
  ok "log: newest first, rendered, time, source, pools" || { bad "log (exit $rc)"; cat "$T/log"; }
"$MCGIT" log --repo "$R" -o json >"$T/log.json" 2>/dev/null
jq -e --arg r1 "$R1" --arg r2 "$R2" --arg s1 "$S1" --arg s2 "$S2" \
   --arg w1 "$(g show "$R1:worker/name")" --arg m2 "$(g show "$R2:master/name")" '
  length == 2 and .[0].rendered == $r2 and .[0].source == $s2 and .[1].rendered == $r1 and
  .[1].source == $s1 and .[0].rollbackTo == null and .[1].time == "2026-01-02T01:04:05Z" and
  .[1].pools.worker == $w1 and .[0].pools.master == $m2 and
  all(.[]; keys == ["pools","rendered","rollbackTo","source","time"])' "$T/log.json" >/dev/null &&
  ok "log -o json: [{rendered, source, time, rollbackTo, pools}]" || { bad "log json"; cat "$T/log.json"; }
mkdir -p "$T/empty" && git init -q "$T/empty"
"$MCGIT" log --repo "$T/empty" -o json >"$T/elog" 2>&1 && rc=0 || rc=$?
[ "$rc" = 0 ] && jq -e 'length == 0' "$T/elog" >/dev/null && ok "log -o json with no rendered branch: []" ||
  { bad "empty log (exit $rc)"; cat "$T/elog"; }

# ---------------------------------------------------------------- rollback
before=$(refs)
expect_rc 1 "rollback to an unknown revision" -- "$MCGIT" rollback --repo "$R" no-such-rev
[ "$(refs)" = "$before" ] && ok "unknown rollback target writes nothing" || bad "unknown rollback moved refs"
expect_rc 1 "rollback to a source commit that was never rendered" -- "$MCGIT" rollback --repo "$R" "$U"
[ "$(refs)" = "$before" ] && ok "unrendered rollback target writes nothing" || bad "unrendered rollback moved refs"
expect_rc 1 "rollback of a pool that does not exist" -- "$MCGIT" rollback --repo "$R" "$R1" --pool infra
[ "$(refs)" = "$before" ] && ok "unknown pool writes nothing" || bad "unknown pool moved refs"
expect_rc 2 "rollback without REV is a usage error" -- "$MCGIT" rollback --repo "$R"

expect_rc 0 "rollback to rendered commit R1" -- "$MCGIT" rollback --repo "$R" "$R1"
B1=$(g rev-parse rendered)
[ "$(cat "$T/out")" = "$B1" ] && [ "$(g rev-parse "$B1^")" = "$R2" ] &&
  ok "rollback appends one commit on top and prints it" || bad "rollback commit placement"
[ "$(g rev-parse "$B1^{tree}")" = "$(g rev-parse "$R1^{tree}")" ] &&
  ok "rollback tree equals the target's tree" || bad "rollback tree differs from R1's"
[ "$(g log -1 --format='%(trailers:key=Rollback-To,valueonly)' "$B1" | head -1)" = "$R1" ] &&
  ok "rollback has trailer Rollback-To: <rendered sha>" || bad "Rollback-To trailer"
"$MCGIT" log --repo "$R" -o json | jq -e --arg r1 "$R1" '.[0].rollbackTo == $r1' >/dev/null &&
  ok "log marks the rollback" || bad "log rollbackTo"
"$MCGIT" log --repo "$R" | head -1 | grep -q "rollback to ${R1:0:12}" && ok "log text marks the rollback" ||
  bad "log text rollback mark"

# rollback --pool: only that pool's subtree is replaced.
expect_rc 0 "rollback to source commit S2, pool worker only" -- "$MCGIT" rollback --repo "$R" "$S2" --pool worker
B2=$(g rev-parse rendered)
[ "$(g rev-parse "$B2:worker")" = "$(g rev-parse "$R2:worker")" ] &&
  [ "$(g rev-parse "$B2:master")" = "$(g rev-parse "$B1:master")" ] &&
  [ "$(g ls-tree --name-only "$B2" | tr '\n' ' ')" = "master worker " ] &&
  ok "--pool worker: worker from S2's render, master unchanged" || bad "--pool rollback tree"
[ "$(g log -1 --format='%(trailers:key=Rollback-To,valueonly)' "$B2" | head -1)" = "$R2" ] &&
  ok "rollback by source commit targets that source's rendered commit" || bad "rollback by source: trailer"

expect_rc 0 "rollback to source commit S1 (whole tree)" -- "$MCGIT" rollback --repo "$R" "$S1"
B3=$(g rev-parse rendered)
[ "$(g rev-parse "$B3^{tree}")" = "$(g rev-parse "$R1^{tree}")" ] && ok "rollback by source: tree equals R1's" ||
  bad "rollback by source tree"

# It stays the target: re-rendering the same source adds nothing...
before=$(refs)
expect_rc 0 "render of the same source after a rollback" -- "$MCGIT" render --repo "$R" --trust "$TR"
[ "$(refs)" = "$before" ] && ok "the rollback stays the target (render adds nothing)" || bad "render after rollback moved refs"
# ...until a newer signed source commit is rendered.
mc 50-worker.yaml 50-worker worker 'server%20c.example.com%20iburst%0A'
# (a subject that looks like a "pool: name" line must not become one in the log)
GIT_COMMITTER_DATE="2026-01-04T00:00:00Z" scommit "$R" alice "rendered-bogus: third config"
S3=$(g rev-parse HEAD)
expect_rc 0 "render a newer source after the rollback" -- "$MCGIT" render --repo "$R" --trust "$TR"
R3=$(g rev-parse rendered)
[ "$(g rev-parse "$R3^")" = "$B3" ] && [ "$(g show "$R3:worker/files/etc/chrony.conf")" = "server c.example.com iburst" ] &&
  [ "$(g log -1 --format='%(trailers:key=Source-Commit,valueonly)' "$R3" | head -1)" = "$S3" ] &&
  ok "newer source renders on top of the rollback" || bad "render after rollback"
"$MCGIT" log --repo "$R" -o json >"$T/log.json"
jq -e --arg r3 "$R3" --arg s3 "$S3" 'length == 6 and .[0].rendered == $r3 and .[0].source == $s3 and
  (.[0].pools | keys) == ["master","worker"] and ([.[] | select(.rollbackTo != null)] | length) == 3' \
  "$T/log.json" >/dev/null && ok "log lists 3 renders and 3 rollbacks; pools only from the pool lines" ||
  { bad "log after rollbacks"; jq -c '.[0]' "$T/log.json"; }

# ---------------------------------------------------------------- fetch
U=$T/upstream
git clone -q "$R" "$U"
sign_setup "$U" "$TR"
git clone -q --bare "file://$U" "$T/mirror.git"
git -C "$T/mirror.git" config remote.origin.url "file://$U"
echo one >"$U/NOTES"; scommit "$U" alice "upstream one"
expect_rc 0 "fetch over file:// (fast-forward)" -- "$MCGIT" fetch --repo "$T/mirror.git"
[ "$(cat "$T/out")" = "$(git -C "$U" rev-parse main)" ] &&
  [ "$(git -C "$T/mirror.git" rev-parse main)" = "$(git -C "$U" rev-parse main)" ] &&
  ok "fetch moved main to the remote tip and printed it" || bad "fetch result"
expect_rc 0 "fetch with nothing new" -- "$MCGIT" fetch --repo "$T/mirror.git"
keep=$(git -C "$T/mirror.git" rev-parse main)
git -C "$U" reset -q --hard HEAD~1
echo two >"$U/NOTES"; scommit "$U" alice "upstream rewritten"
expect_rc 1 "fetch of a force-pushed (rewritten) branch is refused" -- "$MCGIT" fetch --repo "$T/mirror.git"
expect_grep "not a fast-forward" "$T/err" "the refusal says why"
[ "$(git -C "$T/mirror.git" rev-parse main)" = "$keep" ] && ok "local main unchanged after the refusal" ||
  bad "local main moved"
git -C "$U" reset -q --hard HEAD~1
expect_rc 1 "fetch of a rewound branch is refused" -- "$MCGIT" fetch --repo "$T/mirror.git"
[ "$(git -C "$T/mirror.git" rev-parse main)" = "$keep" ] && ok "local main unchanged after the rewind" ||
  bad "local main moved on rewind"
expect_rc 1 "fetch from a remote that does not exist" -- "$MCGIT" fetch --repo "$T/mirror.git" --remote nope
# The fetched history verifies and renders like a local one.
git -C "$U" reset -q --hard "$keep"
expect_rc 0 "render --repo of the fetched mirror" -- "$MCGIT" render --repo "$T/mirror.git" --trust "$TR"

finish
