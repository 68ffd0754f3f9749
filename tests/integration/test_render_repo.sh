#!/usr/bin/env bash
# test_render_repo.sh — `mcgit render --repo`, `log`, `rollback` and `fetch`
# against real signed repos: the rendered branch's trees, authorship,
# messages and reproducibility; refusals that move nothing; rollback trees.
. "$(dirname "$0")/lib.sh"

TR=$T/trust
R=$T/src
fixture_signed_repo "$R" alice
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
export GIT_COMMITTER_DATE="2026-01-03T00:00:00Z" # times do not go back (MCG_CLOCK_SKEW)
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
[ "$rc" = 0 ] && [ "$(cat "$T/v.out")" = "nothing to verify: no commit of main is newer than the last verified one" ] &&
  ok "verify after render: nothing new since the last verified commit, and it says so" ||
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
  .[0].subject == "second config" and .[0].author == "Test Operator <op@example.com>" and
  .[0].signer.fingerprint == $fp and .[0].signer.principal == null and
  all(.[]; keys == ["author","pools","rendered","rollbackTo","signer","source","subject","time"])' \
  --arg fp "$(keyfp alice)" "$T/log.json" >/dev/null &&
  ok "log -o json: [{rendered, source, time, subject, author, signer, rollbackTo, pools}]" || { bad "log json"; cat "$T/log.json"; }
"$MCGIT" log --repo "$R" --trust "$TR" -o json | jq -e '.[0].signer.principal == "alice@example.com"' >/dev/null &&
  ok "log --trust names the signer's principal" || bad "log --trust principal"
"$MCGIT" log --repo "$R" >"$T/log"
expect_grep "^    second config$" "$T/log" "log text: the subject"
expect_grep "^    author Test Operator <op@example.com>$" "$T/log" "log text: the author"
grep -qxF "    signed by $(keyfp alice)" "$T/log" && ok "log text: the signing key's fingerprint" || bad "log text signer"
mkdir -p "$T/empty" && git init -q "$T/empty"
"$MCGIT" log --repo "$T/empty" -o json >"$T/elog" 2>&1 && rc=0 || rc=$?
[ "$rc" = 0 ] && jq -e 'length == 0' "$T/elog" >/dev/null && ok "log -o json with no rendered branch: []" ||
  { bad "empty log (exit $rc)"; cat "$T/elog"; }

# ---------------------------------------------------------------- rollback
# A rollback is a signed commit on the source branch (R is a clone with a
# work tree on main: the work tree follows).
before=$(refs)
expect_rc 1 "rollback to an unknown revision" -- "$MCGIT" rollback --repo "$R" no-such-rev --key "$T/keys/alice"
[ "$(wc -l <"$T/err")" = 1 ] && expect_grep "unknown revision 'no-such-rev'" "$T/err" "one line naming it" || bad "unknown REV: not one line"
[ "$(refs)" = "$before" ] && ok "unknown rollback target writes nothing" || bad "unknown rollback moved refs"
objs=$(g count-objects -v | grep -v size)
expect_rc 1 "rollback to a rendered id no clone of this history makes (the history is recomputed in memory)" -- \
  "$MCGIT" rollback --repo "$R" abcdef123456 --key "$T/keys/alice"
expect_grep "unknown revision 'abcdef123456'" "$T/err" "refused with one line"
[ "$(refs)" = "$before" ] && [ "$(g count-objects -v | grep -v size)" = "$objs" ] &&
  ok "and not one object or ref is written" || bad "recomputing wrote objects"
expect_rc 1 "rollback to a commit that is not on the source branch" -- "$MCGIT" rollback --repo "$R" "$U" --key "$T/keys/alice"
[ "$(refs)" = "$before" ] && ok "an off-branch rollback target writes nothing" || bad "off-branch rollback moved refs"
expect_rc 1 "rollback to a rendered config name nothing renders to" -- "$MCGIT" rollback --repo "$R" "rendered-worker-0123456789abcdef0123456789abcdef" --key "$T/keys/alice"
expect_grep "no commit of source branch 'main' renders to rendered-worker-0123456789abcdef0123456789abcdef" "$T/err" "the refusal says so"
expect_rc 2 "rollback --pool is gone (a rollback restores every pool's configs): usage error" -- "$MCGIT" rollback --repo "$R" "$R1" --pool worker
expect_rc 2 "rollback without REV is a usage error" -- "$MCGIT" rollback --repo "$R"
expect_rc 1 "rollback with no signing key configured" -- "$MCGIT" rollback --repo "$R" "$R1"
expect_grep "no signing key: pass --key FILE, or set git config gpg.format ssh and user.signingkey FILE" "$T/err" "says how to configure one"
g config user.signingkey "$T/keys/alice"; g config gpg.format openpgp
expect_rc 1 "rollback with user.signingkey but gpg.format openpgp" -- "$MCGIT" rollback --repo "$R" "$R1"
expect_grep "gpg.format is 'openpgp', not ssh" "$T/err" "says gpg.format must be ssh"
g config gpg.format ssh
[ "$(refs)" = "$before" ] && [ -z "$(g status --porcelain)" ] && ok "refused rollbacks wrote nothing" || bad "refused rollbacks wrote"
# local changes in the way: refused, nothing changed
echo "# local edit" >>"$R/machineconfigs/50-worker.yaml"
expect_rc 1 "rollback with a local change to a file it restores" -- "$MCGIT" rollback --repo "$R" "$R1"
expect_grep "local changes to machineconfigs/50-worker.yaml would be overwritten \(nothing was changed\): they are not part of the rollback; set them aside \(git stash\)" "$T/err" "names the file"
grep -qi "commit or stash\|commit them" "$T/err" && bad "the refusal advises committing local changes into a signed rollback" ||
  ok "and never advises committing them"
[ "$(refs)" = "$before" ] && grep -q "# local edit" "$R/machineconfigs/50-worker.yaml" && ok "and changes nothing" || bad "conflicting rollback changed something"
g checkout -q -- machineconfigs/50-worker.yaml

# by rendered commit R1 (key from git config user.signingkey)
W2=$(g show "$R2:worker/name"); W1=$(g show "$R1:worker/name"); M1=$(g show "$R1:master/name")
expect_rc 0 "rollback to rendered commit R1" -- "$MCGIT" rollback --repo "$R" "$R1"
B1=$(g rev-parse main)
[ "$(head -1 "$T/out")" = "$B1" ] && [ "$(g rev-parse "$B1^")" = "$S2" ] &&
  ok "rollback appends one commit on main and prints it" || { bad "rollback commit placement"; cat "$T/out"; }
expect_grep "^    worker: $W2 -> $W1$" "$T/out" "prints per pool: old -> new rendered name"
expect_grep "push it" "$T/err" "and a hint to push it"
[ "$(g rev-parse "$B1:machineconfigs")" = "$(g rev-parse "$S1:machineconfigs")" ] &&
  [ "$(g rev-parse "$B1:pools")" = "$(g rev-parse "$S1:pools")" ] &&
  [ "$(g rev-parse "$B1:.mcgit")" = "$(g rev-parse "$S2:.mcgit")" ] &&
  [ "$(g rev-parse "$B1:mcgit.yaml")" = "$(g rev-parse "$S2:mcgit.yaml")" ] &&
  ok "rollback tree: S1's machineconfigs/ and pools/, the tip's .mcgit/ and mcgit.yaml" || bad "rollback tree"
[ "$(g log -1 --format=%s "$B1")" = "Rollback to ${S1:0:12} (first config)" ] &&
  [ "$(g log -1 --format='%(trailers:key=Rollback-To,valueonly)' "$B1" | head -1)" = "$S1" ] &&
  ok "message 'Rollback to <short> (<subject>)', trailer Rollback-To: <source sha>" || bad "rollback message: $(g log -1 --format=%B "$B1")"
[ "$(g log -1 --format='%an <%ae>' "$B1")" = "Test Operator <op@example.com>" ] && ok "author from git config" || bad "rollback author"
g verify-commit "$B1" 2>/dev/null && ok "git verify-commit accepts the rollback's signature" || bad "rollback signature"
[ -z "$(g status --porcelain)" ] && grep -q "a.example.com" "$R/machineconfigs/50-worker.yaml" &&
  ok "the work tree follows (clean, S1's files)" || { bad "work tree after rollback"; g status --short; }
expect_rc 0 "render the rollback" -- "$MCGIT" render --repo "$R" --trust "$TR"
RB1=$(g rev-parse rendered)
[ "$(g rev-parse "$RB1^{tree}")" = "$(g rev-parse "$R1^{tree}")" ] && [ "$(g rev-parse "$RB1^")" = "$R2" ] &&
  ok "its render: R1's tree again (same rendered names), on top of R2" || bad "render of the rollback"
"$MCGIT" log --repo "$R" -o json | jq -e --arg s1 "$S1" --arg b1 "$B1" '.[0].rollbackTo == $s1 and .[0].source == $b1' >/dev/null &&
  ok "log marks the rollback (rollbackTo: the target source commit)" || bad "log rollbackTo"
"$MCGIT" log --repo "$R" | head -1 | grep -q "rollback to ${S1:0:12}" && ok "log text marks the rollback" ||
  bad "log text rollback mark"
MAIN0=$(g rev-parse main)
expect_rc 0 "a second rollback to the same configs changes nothing" -- "$MCGIT" rollback --repo "$R" "$S1"
expect_grep "^source branch 'main' already holds the configs of ${S1:0:12}; nothing changed$" "$T/out" "(one line saying so)"
[ "$(g rev-parse main)" = "$MAIN0" ] && [ ! -s "$T/err" ] && ok "(no commit written, nothing on stderr)" || bad "rollback to the current configs wrote $(g rev-parse main)"

# by rendered config name (the newest source commit rendering to it: S2), key by --key
g config --unset user.signingkey
expect_rc 0 "rollback to a rendered config name ($W2)" -- "$MCGIT" rollback --repo "$R" "$W2" --key "$T/keys/alice"
B2=$(g rev-parse main)
[ "$(g log -1 --format='%(trailers:key=Rollback-To,valueonly)' "$B2" | head -1)" = "$S2" ] &&
  ok "a config name targets the newest source commit rendering to it" || bad "rollback by name: trailer"
# by source commit
expect_rc 0 "rollback to source commit S1" -- "$MCGIT" rollback --repo "$R" "$S1" --key "$T/keys/alice"
B3=$(g rev-parse main)
expect_rc 0 "render after the rollbacks" -- "$MCGIT" render --repo "$R" --trust "$TR"
RB3=$(g rev-parse rendered)
[ "$(g rev-parse "$RB3^{tree}")" = "$(g rev-parse "$R1^{tree}")" ] && [ "$(g show "$RB3:master/name")" = "$M1" ] &&
  ok "rollback by source: R1's tree and names" || bad "rollback by source tree"
[ "$(g rev-list --count rendered)" = 5 ] && ok "rendered: R1, R2, and one render per rollback" || bad "rendered count $(g rev-list --count rendered)"

# Re-rendering the same source adds nothing; a newer signed source commit renders on top.
before=$(refs)
expect_rc 0 "render of the same source after a rollback" -- "$MCGIT" render --repo "$R" --trust "$TR"
[ "$(refs)" = "$before" ] && ok "re-rendering adds nothing" || bad "render after rollback moved refs"
mc 50-worker.yaml 50-worker worker 'server%20c.example.com%20iburst%0A'
# (a subject that looks like a "pool: name" line must not become one in the log)
export GIT_COMMITTER_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) # after the rollbacks (made now)
scommit "$R" alice "rendered-bogus: third config"
S3=$(g rev-parse HEAD)
expect_rc 0 "render a newer source after the rollback" -- "$MCGIT" render --repo "$R" --trust "$TR"
R3=$(g rev-parse rendered)
[ "$(g rev-parse "$R3^")" = "$RB3" ] && [ "$(g show "$R3:worker/files/etc/chrony.conf")" = "server c.example.com iburst" ] &&
  [ "$(g log -1 --format='%(trailers:key=Source-Commit,valueonly)' "$R3" | head -1)" = "$S3" ] &&
  ok "newer source renders on top of the rollback" || bad "render after rollback"
"$MCGIT" log --repo "$R" -o json >"$T/log.json"
jq -e --arg r3 "$R3" --arg s3 "$S3" 'length == 6 and .[0].rendered == $r3 and .[0].source == $s3 and
  (.[0].pools | keys) == ["master","worker"] and ([.[] | select(.rollbackTo != null)] | length) == 3 and
  .[0].subject == "rendered-bogus: third config"' \
  "$T/log.json" >/dev/null && ok "log lists 3 renders and 3 rollbacks; pools only from the pool lines" ||
  { bad "log after rollbacks"; jq -c '.[0]' "$T/log.json"; }

# ---------------------------------------------------------------- fetch
U=$T/upstream
git clone -q "$R" "$U"
sign_setup "$U" "$TR"
git clone -q --bare "file://$U" "$T/mirror.git"
git -C "$T/mirror.git" config remote.origin.url "file://$U"
echo one >"$U/NOTES"; scommit "$U" alice "upstream one"
expect_rc 0 "fetch over file:// (fast-forward)" -- "$MCGIT" fetch --repo "$T/mirror.git" --trust "$TR"
[ "$(cat "$T/out")" = "$(git -C "$U" rev-parse main)" ] &&
  [ "$(git -C "$T/mirror.git" rev-parse main)" = "$(git -C "$U" rev-parse main)" ] &&
  ok "fetch moved main to the remote tip and printed it" || bad "fetch result"
expect_rc 0 "fetch with nothing new" -- "$MCGIT" fetch --repo "$T/mirror.git" --trust "$TR"
keep=$(git -C "$T/mirror.git" rev-parse main)
git -C "$U" reset -q --hard HEAD~1
echo two >"$U/NOTES"; scommit "$U" alice "upstream rewritten"
expect_rc 1 "fetch of a force-pushed (rewritten) branch is refused" -- "$MCGIT" fetch --repo "$T/mirror.git" --trust "$TR"
expect_grep "not a fast-forward" "$T/err" "the refusal says why"
[ "$(git -C "$T/mirror.git" rev-parse main)" = "$keep" ] && ok "local main unchanged after the refusal" ||
  bad "local main moved"
git -C "$U" reset -q --hard HEAD~1
expect_rc 1 "fetch of a rewound branch is refused" -- "$MCGIT" fetch --repo "$T/mirror.git" --trust "$TR"
[ "$(git -C "$T/mirror.git" rev-parse main)" = "$keep" ] && ok "local main unchanged after the rewind" ||
  bad "local main moved on rewind"
expect_rc 1 "fetch from a remote that does not exist" -- "$MCGIT" fetch --repo "$T/mirror.git" --trust "$TR" --remote nope
# The fetched history verifies and renders like a local one.
git -C "$U" reset -q --hard "$keep"
expect_rc 0 "render --repo of the fetched mirror" -- "$MCGIT" render --repo "$T/mirror.git" --trust "$TR"

finish
