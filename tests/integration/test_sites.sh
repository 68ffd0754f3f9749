#!/usr/bin/env bash
# test_sites.sh — many sites from one signed repository, and their status
# back across the air gap (docs/sites.md), through record, export, import
# and status, with the attacks: a tampered bundle, another site's key, the
# wrong namespace, a replayed older record, a record naming a config HQ
# never rendered, a site not declared, a revoked site key; and the
# operator's side: a status key rotated by a signed commit.
#
# HQ: a server with hooks (the signed config repo, rendered). Two sites,
# north and south, each an air-gapped repo fed by `bundle import` and a
# local cluster rolled out by its controller and agents; a third, east, is
# declared but never reports.
. "$(dirname "$0")/lib.sh"
need jq
unset GIT_AUTHOR_DATE GIT_COMMITTER_DATE # records carry the time they were made

mkkey op ed25519
for s in north south east north2; do ssh-keygen -q -t ed25519 -N '' -C "site-$s" -f "$T/keys/site-$s"; done
signer_line op@example.com op >"$T/trust"
HQ=$T/hq.git
fixture_server "$HQ" "$T/trust"
W=$T/w
"$MCGIT" init "$W" >/dev/null
sign_setup "$W" "$T/trust"
git -C "$W" remote add origin "$HQ"
site_yaml() { # site_yaml NAME KEYNAME [POOLS]
  mkdir -p "$W/sites"
  cat >"$W/sites/$1.yaml" <<EOF
apiVersion: mcgit.io/v1
kind: Site
metadata:
  name: $1
spec:
  statusKey: $(cat "$T/keys/$2.pub")
  maxReportAge: 1h
${3:+  pools: [$3]}
EOF
}
site_yaml north site-north
site_yaml south site-south worker
site_yaml east site-east
write_mc "$W" 10-worker worker /etc/motd v1
scommit "$W" op "v1, three sites"
expect_rc 0 "HQ accepts the sites in a signed push" -- git -C "$W" push origin main
expect_rc 0 "mcgit validate checks sites/" -- "$MCGIT" validate "$W"

# validate: a bad site with file and line
cp "$W/sites/east.yaml" "$T/east.saved"
sed -i 's/^  name: east/  name: west/' "$W/sites/east.yaml"
expect_rc 1 "validate refuses a site whose name is not its file's" -- "$MCGIT" validate "$W"
expect_grep "^mcgit validate: sites/east.yaml:[0-9]+: metadata.name 'west' must be the file's name 'east'" "$T/err" "(file and line)"
cp "$T/east.saved" "$W/sites/east.yaml"
sed -i 's/statusKey: ssh-ed25519 AAAA/statusKey: ssh-ed25519 QAAA/' "$W/sites/east.yaml"
expect_rc 1 "validate refuses a status key that is not a key" -- "$MCGIT" validate "$W"
expect_grep "sites/east.yaml:[0-9]+: spec.statusKey is not an OpenSSH public key line" "$T/err" "(file and line)"
cp "$T/east.saved" "$W/sites/east.yaml"

# ---------------------------------------------------------------- the sites
site_up() { # site_up NAME: its repo (from a bundle), cluster, one rollout
  local s=$1
  git init -q --bare "$T/$s.git"
  "$MCGIT" bundle create --repo "$HQ" "$T/to-$s.bundle" 2>/dev/null
  "$MCGIT" bundle import --repo "$T/$s.git" "$T/to-$s.bundle" --trust "$T/trust" -q >/dev/null 2>&1 || return 1
  fixture_workers "local:$T/$s-cl" "$s-w0" "$s-w1"
  local i
  for i in 1 2 3; do
    "$MCGIT" controller --repo "$T/$s.git" --trust "$T/trust" --cluster "local:$T/$s-cl" --once -q >/dev/null 2>&1 || return 1
    "$MCGIT" agent --node "$s-w0" --cluster "local:$T/$s-cl" --once -q >/dev/null 2>&1 || true
    "$MCGIT" agent --node "$s-w1" --cluster "local:$T/$s-cl" --once -q >/dev/null 2>&1 || true
  done
}
site_up north && ok "north rolled out from a bundle" || bad "north"
site_up south && ok "south rolled out from a bundle" || bad "south"
# north's operator pins each node's key: its records carry attested machines
for n in north-w0 north-w1; do
  "$MCGIT" agent --node "$n" --cluster "local:$T/north-cl" --print-node-key >"$T/$n.pub" 2>/dev/null
  "$MCGIT" node bind --cluster "local:$T/north-cl" "$n" --node-key "$T/$n.pub" >/dev/null
  "$MCGIT" agent --node "$n" --cluster "local:$T/north-cl" --once -q >/dev/null 2>&1 || true
done
"$MCGIT" controller --repo "$T/north.git" --trust "$T/trust" --cluster "local:$T/north-cl" --once -q >/dev/null 2>&1
record() { "$MCGIT" site record --repo "$T/$1.git" --cluster "local:$T/$1-cl" --site "$1" --site-key "$T/keys/${2:-site-$1}" "${@:3}"; }
expect_rc 0 "site record at north" -- record north
R1=$(cat "$T/out")
expect_grep "^[0-9a-f]{40}$" "$T/out" "(prints the record)"
[ "$(git -C "$T/north.git" rev-parse refs/mcgit/status/north)" = "$R1" ] && ok "the record is refs/mcgit/status/north" || bad "ref"
git -C "$T/north.git" cat-file -p "$R1" | grep -q "^gpgsig -----BEGIN SSH SIGNATURE-----" && ok "(an SSH-signed commit)" || bad "unsigned"
git -C "$T/north.git" show "$R1:status.json" | jq -e '.site == "north" and (.pools | length) == 2 and
  ([.pools[] | select(.name == "worker")][0] | .machineCount == 2 and .updatedMachineCount == 2 and (.config | startswith("rendered-worker-")))' >/dev/null &&
  ok "status.json: both workers updated on the worker pool's config" || bad "status.json: $(git -C "$T/north.git" show "$R1:status.json")"
expect_rc 0 "a second record with nothing changed writes nothing" -- record north
expect_grep "^unchanged" "$T/out" "(and says so)"
expect_rc 1 "record with another site's key is refused at the site" -- record north site-south
expect_grep "is not site 'north''s statusKey" "$T/err" "(it says whose key it is not)"
# south's controller records its status itself, each pass whose status changed
expect_rc 0 "south's controller with --site records its status" -- \
  "$MCGIT" controller --repo "$T/south.git" --trust "$T/trust" --cluster "local:$T/south-cl" --once \
  --site south --site-key "$T/keys/site-south"
expect_grep "site status recorded: [0-9a-f]{40}" "$T/err" "(its log names the record)"
S1=$(git -C "$T/south.git" rev-parse refs/mcgit/status/south)
"$MCGIT" controller --repo "$T/south.git" --trust "$T/trust" --cluster "local:$T/south-cl" --once \
  --site south --site-key "$T/keys/site-south" >/dev/null 2>&1
[ "$(git -C "$T/south.git" rev-parse refs/mcgit/status/south)" = "$S1" ] && ok "a pass that changed nothing records nothing" ||
  bad "a second record for an unchanged status"
expect_rc 2 "--site without --site-key is a usage error" -- \
  "$MCGIT" controller --repo "$T/south.git" --trust "$T/trust" --cluster "local:$T/south-cl" --once --site south

# ---------------------------------------------------------------- back to HQ
expect_rc 0 "site export at north" -- "$MCGIT" site export --repo "$T/north.git" --site north "$T/north.status"
git -C "$T/north.git" bundle verify "$T/north.status" >/dev/null 2>&1 && ok "git bundle verify reads the status bundle" || bad "git bundle verify"
# south's first export carries two records, a second later: HQ checks a line
# of records oldest first
sleep 1
expect_rc 0 "a forced second record at south" -- record south site-south --force
S2=$(git -C "$T/south.git" rev-parse refs/mcgit/status/south)
[ "$(git -C "$T/south.git" rev-parse "$S2^")" = "$S1" ] && ok "(on top of the controller's)" || bad "S2's parent"
"$MCGIT" site export --repo "$T/south.git" --site south "$T/south.status" 2>/dev/null
expect_rc 0 "HQ imports north's status" -- "$MCGIT" site import --repo "$HQ" "$T/north.status" --trust "$T/trust"
expect_grep "^refs/mcgit/status/north \(none\) -> $R1 \(imported\)" "$T/out" "(it says what moved)"
expect_rc 0 "HQ imports south's status: a first import of two records" -- "$MCGIT" site import --repo "$HQ" "$T/south.status" --trust "$T/trust"
expect_grep "^refs/mcgit/status/south \(none\) -> $S2 \(imported\)" "$T/out" "(both, to the newer)"
expect_rc 0 "mcgit status --sites" -- "$MCGIT" status --sites --repo "$HQ"
cp "$T/out" "$T/fleet"
expect_grep "^SITE +POOL +CONFIG +SOURCE +MACHINES +UPDATED +ATTESTED +DEGRADED +REPORTED +STALE" "$T/fleet" "the table's header"
expect_grep "^north +worker +rendered-worker-[0-9a-f]+ +[0-9a-f]{12} +2 +2 +2 +0 +.* ago +no" "$T/fleet" "north's worker pool: 2 machines, updated, attested"
expect_grep "^south +worker +rendered-worker-[0-9a-f]+ +[0-9a-f]{12} +2 +2 +0 +0 " "$T/fleet" "south pinned no key: none attested"
expect_grep "^south +worker " "$T/fleet" "south's worker pool"
grep -q "^south +master" "$T/fleet" && bad "south runs only the worker pool (spec.pools)" || ok "south's row lists only its pools (spec.pools)"
expect_grep "^east +- +- +- +0 +0 +0 +0 +never +yes" "$T/fleet" "east, never heard from, is listed and stale"
expect_rc 0 "status --sites -o json" -- "$MCGIT" status --sites --repo "$HQ" -o json
jq -e '[.items[] | select(.site == "north" and .pool == "worker")][0] | .machineCount == 2 and .updatedMachineCount == 2 and
  .attestedMachineCount == 2 and .degradedMachineCount == 0 and (.reportedAt | test("Z$")) and .stale == false' "$T/out" >/dev/null &&
  ok "-o json: the contract's fields" || bad "json: $(cat "$T/out")"
expect_rc 0 "status --sites -o metrics" -- "$MCGIT" status --sites --repo "$HQ" -o metrics
expect_grep '^mcgit_site_stale\{site="east"\} 1$' "$T/out" "metrics: east is stale"
expect_grep '^mcgit_site_pool_updated_machines\{site="north",pool="worker"\} 2$' "$T/out" "metrics: north's updated workers"
if command -v promtool >/dev/null; then
  promtool check metrics <"$T/out" >/dev/null 2>&1 && ok "promtool accepts the metrics" || bad "promtool: $(promtool check metrics <"$T/out" 2>&1 | head -3)"
else skip_part "promtool not installed"; fi

# ---------------------------------------------------------------- attacks
hqrefs() { git -C "$HQ" for-each-ref refs/mcgit/status; }
refused() { # refused DESC BUNDLE PATTERN: import refused, naming why, nothing changed
  local before; before=$(hqrefs)
  expect_rc 1 "$1: refused" -- "$MCGIT" site import --repo "$HQ" "$2" --trust "$T/trust" "${@:4}"
  expect_grep "$3" "$T/err" "$1: (says why)"
  [ "$(hqrefs)" = "$before" ] && ok "$1: nothing changed" || bad "$1: HQ's refs moved"
}
# a tampered bundle: one byte of the pack changed
cp "$T/north.status" "$T/tampered.status"
size=$(stat -c %s "$T/tampered.status")
printf '\x55' | dd of="$T/tampered.status" bs=1 seek=$((size - 30)) conv=notrunc 2>/dev/null
refused "a tampered bundle" "$T/tampered.status" "."
# forged records: commits with status.json signed by hand (ssh-keygen -Y sign)
forge() { # forge REPO SITE KEYFILE NS STATUSJSON-FILE: a record on refs/mcgit/status/SITE
  local repo=$1 blob tree parent c
  blob=$(git -C "$repo" hash-object -w "$5")
  tree=$(printf '100644 blob %s\tstatus.json\n' "$blob" | git -C "$repo" mktree)
  parent=$(git -C "$repo" rev-parse -q --verify "refs/mcgit/status/$2" || true)
  python3 - "$tree" "$parent" "$2" "$3" "$4" "$T/commit" <<'PY'
import subprocess, sys, time
tree, parent, site, key, ns, out = sys.argv[1:]
t = int(time.time())
head = "tree %s\n" % tree + ("parent %s\n" % parent if parent else "")
who = "mcgit site <mcgit-site@localhost> %d +0000" % t
body = head + "author %s\ncommitter %s\n" % (who, who)
msg = "\nStatus of site %s (forged)\n" % site
payload = (body + msg).encode()
sig = subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-n", ns, "-f", key], input=payload,
                     capture_output=True, check=True).stdout.decode().rstrip("\n")
gpgsig = "gpgsig " + sig.replace("\n", "\n ") + "\n"
open(out, "wb").write((body + gpgsig + msg).encode())
PY
  c=$(git -C "$repo" hash-object -t commit -w "$T/commit")
  git -C "$repo" update-ref "refs/mcgit/status/$2" "$c"
}
git clone -q --bare "$T/north.git" "$T/forge.git" 2>/dev/null
git -C "$T/forge.git" fetch -q "$T/north.git" refs/mcgit/status/north:refs/mcgit/status/north
git -C "$T/north.git" show "$R1:status.json" >"$T/good.json"
jq -c '.time = (now | floor)' "$T/good.json" >"$T/now.json"
# the control: a record forged this way but signed as the site signs is taken
# (by a copy of HQ), so the refusals below are about what each one changes
forge "$T/forge.git" north "$T/keys/site-north" mcgit-site "$T/now.json"
"$MCGIT" site export --repo "$T/forge.git" --site north "$T/forged.status" --since "$R1" 2>/dev/null
cp -a "$HQ" "$T/hq-copy.git"
expect_rc 0 "control: a hand-made record signed with north's key in mcgit-site is taken" -- \
  "$MCGIT" site import --repo "$T/hq-copy.git" "$T/forged.status" --trust "$T/trust"
git -C "$T/forge.git" update-ref refs/mcgit/status/north "$R1"
# forged_north DESC KEYNAME NS JSON PATTERN: a record on top of north's R1 made
# by hand, exported as a thin bundle; HQ must refuse it; the forge is reset
forged_north() {
  forge "$T/forge.git" north "$T/keys/$2" "$3" "$4"
  "$MCGIT" site export --repo "$T/forge.git" --site north "$T/forged.status" --since "$R1" 2>/dev/null
  refused "$1" "$T/forged.status" "$5"
  git -C "$T/forge.git" update-ref refs/mcgit/status/north "$R1"
}
forged_north "a record signed with another site's key" site-south mcgit-site "$T/now.json" "not signed by site 'north''s statusKey"
forged_north "a record signed in namespace git, not mcgit-site" site-north git "$T/now.json" "not signed by site 'north''s statusKey"
jq -c '(.pools[] | select(.name == "worker") | .config) = "rendered-worker-00000000000000000000000000000bad"' "$T/now.json" >"$T/never.json"
forged_north "a record naming a config HQ never rendered" site-north mcgit-site "$T/never.json" "a config this repository never rendered"
jq -c '.source = "0000000000000000000000000000000000000bad"' "$T/now.json" >"$T/nosrc.json"
forged_north "a record naming a source commit HQ does not hold" site-north mcgit-site "$T/nosrc.json" "not in this repository's verified history"
jq -c '(.pools[] | select(.name == "worker") | .attestedMachineCount) = 2 | del(.nodes[].attestation)' "$T/now.json" >"$T/claim.json"
forged_north "a record claiming attested machines without their attestations" site-north mcgit-site "$T/claim.json" "claims 2 attested machines, 0 attestations in the record verify"
jq -c '(.nodes[] | select(.name == "north-w1") | .attestation) = ([.nodes[] | select(.name == "north-w0")][0].attestation)' "$T/now.json" >"$T/replay.json"
forged_north "a record where one node's attestation stands in for another's" site-north mcgit-site "$T/replay.json" "claims 2 attested machines, 1 attestations"
jq -c '.site = "west"' "$T/now.json" >"$T/west.json"
forge "$T/forge.git" west "$T/keys/site-north" mcgit-site "$T/west.json"
"$MCGIT" site export --repo "$T/forge.git" --site west "$T/west.status" 2>/dev/null
refused "a record of a site HQ never declared" "$T/west.status" "site 'west' is not declared"
jq -c '.time = 1000' "$T/now.json" >"$T/old.json"
forge "$T/forge.git" north "$T/keys/site-north" mcgit-site "$T/old.json"
"$MCGIT" site export --repo "$T/forge.git" --site north "$T/forged.status" --since "$R1" 2>/dev/null
refused "a record whose time goes back" "$T/forged.status" "before the previous record's"
# a replayed older record: north moves on, HQ takes it, then the old bundle again
write_mc "$W" 10-worker worker /etc/motd v2
scommit "$W" op "v2"
git -C "$W" push -q origin main 2>/dev/null
"$MCGIT" bundle create --repo "$HQ" "$T/v2.bundle" 2>/dev/null
"$MCGIT" bundle import --repo "$T/north.git" "$T/v2.bundle" --trust "$T/trust" -q >/dev/null 2>&1
for i in 1 2 3; do
  "$MCGIT" controller --repo "$T/north.git" --trust "$T/trust" --cluster "local:$T/north-cl" --once -q >/dev/null 2>&1
  for n in north-w0 north-w1; do "$MCGIT" agent --node "$n" --cluster "local:$T/north-cl" --once -q >/dev/null 2>&1 || true; done
done
expect_rc 0 "north records v2" -- record north
R2=$(cat "$T/out")
"$MCGIT" site export --repo "$T/north.git" --site north "$T/north2.status" --since "$R1" 2>/dev/null
expect_rc 0 "HQ imports the newer record (a thin bundle)" -- "$MCGIT" site import --repo "$HQ" "$T/north2.status" --trust "$T/trust"
[ "$(git -C "$HQ" rev-parse refs/mcgit/status/north)" = "$R2" ] && ok "(HQ holds it)" || bad "HQ status ref"
refused "a replayed older record" "$T/north.status" "stale"
"$MCGIT" status --sites --repo "$HQ" -o json >"$T/out"
[ "$(jq -r '.items[] | select(.site == "north" and .pool == "worker") | .source' "$T/out")" = "$(git -C "$W" rev-parse HEAD)" ] &&
  ok "status --sites: north runs v2's source commit" || bad "north's source: $(cat "$T/out")"
# a revoked site key
ssh-keygen -q -k -f "$T/krl" "$T/keys/site-north.pub"
expect_rc 0 "north records again (forced)" -- record north site-north --force
"$MCGIT" site export --repo "$T/north.git" --site north "$T/north3.status" --since "$R2" 2>/dev/null
refused "a record by a revoked status key" "$T/north3.status" "is revoked" --revoked "$T/krl"

# ---------------------------------------------------------------- rotation
site_yaml north site-north2
scommit "$W" op "rotate north's status key"
expect_rc 0 "the rotation is a signed push" -- git -C "$W" push origin main
"$MCGIT" bundle create --repo "$HQ" "$T/rot.bundle" 2>/dev/null
"$MCGIT" bundle import --repo "$T/north.git" "$T/rot.bundle" --trust "$T/trust" -q >/dev/null 2>&1
"$MCGIT" controller --repo "$T/north.git" --trust "$T/trust" --cluster "local:$T/north-cl" --once -q >/dev/null 2>&1
expect_rc 1 "after the rotation the old key records nothing" -- record north site-north --force
expect_rc 0 "the new key records" -- record north site-north2 --force
"$MCGIT" site export --repo "$T/north.git" --site north "$T/rot.status" --since "$R2" 2>/dev/null
expect_rc 0 "HQ takes the records: the old key's before the rotation, the new key's after" -- \
  "$MCGIT" site import --repo "$HQ" "$T/rot.status" --trust "$T/trust"

finish
