#!/usr/bin/env bash
# test_bundle_thin.sh — `mcgit bundle create --since` writes a thin pack, as
# git does for incremental bundles: objects may be deltas on the
# prerequisites' trees and blobs, which the receiver already has. Checked
# against real git: the size stays within 1.1x of `git bundle create` for
# the same range and refs (a small range and a larger one, loose and after
# git gc); git bundle verify / git fetch accept it where the prerequisite
# is; the pack really is thin (index-pack needs --fix-thin); mcgit imports
# it into a mirror holding the prerequisite with the same refs and rendered
# ids as git's bundle gives; a receiver lacking a delta base (or the
# prerequisite) refuses it with one line and is left as it was; the same
# input gives the same bytes; full bundles stay self-contained.
. "$(dirname "$0")/lib.sh"

mkkey op ed25519
signer_line op@example.com op >"$T/trust"
GEN=$(dirname "$MCGIT")/tests/bench/bench_history

# refused DESC PATTERN REPO BUNDLE: import exits 1 with PATTERN as its one
# line on stderr, and leaves REPO exactly as it was.
refused() {
  local desc=$1 pat=$2 repo=$3 bundle=$4
  snap "$repo" >"$T/before"
  expect_rc 1 "refused: $desc" -- "$MCGIT" bundle import --repo "$repo" "$bundle" --trust "$T/trust"
  expect_grep "$pat" "$T/err" "refused: $desc: reason"
  [ "$(wc -l <"$T/err")" = 1 ] && ok "refused: $desc: one line" || { bad "refused: $desc: one line"; cat "$T/err"; }
  snap "$repo" >"$T/after"
  cmp -s "$T/before" "$T/after" && ok "refused: $desc: repo unchanged" || bad "refused: $desc: repo unchanged"
}
# big_mc REPO TAG: a MachineConfig of 60 files (~7 KB of YAML), one value
# depending on TAG, as a site's larger configs are.
big_mc() {
  {
    cat <<MC
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 50-worker-app
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  config:
    ignition:
      version: 3.4.0
    storage:
      files:
MC
    local i
    for i in $(seq -w 1 60); do
      printf '      - path: /etc/app/conf%s.conf\n        contents:\n          source: data:,setting-%s%%3Dvalue-%s\n' \
        "$i" "$i" "$([ "$i" = 17 ] && echo "$2" || echo "$i-default")"
    done
  } >"$1/machineconfigs/50-worker-app.yaml"
}
# size_ok DESC MCGIT_BUNDLE GIT_BUNDLE: mcgit's at most 1.1x git's.
size_ok() {
  local sm sg
  sm=$(stat -c %s "$2") sg=$(stat -c %s "$3")
  echo "# $1: mcgit $sm bytes, git $sg bytes"
  [ $((sm * 100)) -le $((sg * 110)) ] && ok "$1: size within 1.1x of git's ($sm vs $sg)" ||
    bad "$1: size $sm vs git's $sg"
}
# at REPO SRC REV: a new bare REPO holding exactly what SRC's REV reaches, main at REV.
at() {
  git init -q --bare "$1"
  git -C "$1" fetch -q "$2" "$3:refs/heads/main"
}

# ---------------------------------------------------------------- a small range
"$MCGIT" init "$T/src" >/dev/null
sign_setup "$T/src" "$T/trust"
big_mc "$T/src" v0
scommit "$T/src" op "initial config"
BASE=$(git -C "$T/src" rev-parse main)
big_mc "$T/src" v1
scommit "$T/src" op "app: conf17 v1"
big_mc "$T/src" v2
scommit "$T/src" op "app: conf17 v2"
TIP=$(git -C "$T/src" rev-parse main)

expect_rc 0 "create a thin incremental bundle" -- "$MCGIT" bundle create --repo "$T/src" --since "$BASE" "$T/small.bundle"
git -C "$T/src" bundle create -q "$T/small-git.bundle" HEAD main "^$BASE"
size_ok "2 commits" "$T/small.bundle" "$T/small-git.bundle"
"$MCGIT" bundle create --repo "$T/src" --since "$BASE" "$T/small2.bundle" 2>/dev/null
cmp -s "$T/small.bundle" "$T/small2.bundle" && ok "the same input gives the same bytes" || bad "not deterministic"

# the pack is thin: it indexes only with the receiver's objects
sed '1,/^$/d' "$T/small.bundle" >"$T/small.pack"
git init -q --bare "$T/nothing"
expect_rc 128 "git index-pack without the prerequisite: unresolved deltas (a thin pack)" -- \
  git -C "$T/nothing" index-pack --stdin <"$T/small.pack"
at "$T/gitside" "$T/src" "$BASE"
expect_rc 0 "git index-pack --fix-thin completes it where the prerequisite is" -- \
  git -C "$T/gitside" index-pack --stdin --fix-thin <"$T/small.pack"
# full bundles are self-contained, as before
"$MCGIT" bundle create --repo "$T/src" "$T/full.bundle" 2>/dev/null
sed '1,/^$/d' "$T/full.bundle" >"$T/full.pack"
expect_rc 0 "a full bundle's pack indexes on its own (not thin)" -- \
  git -C "$T/nothing" index-pack --strict --stdin <"$T/full.pack"

# git reads it where the prerequisite is
at "$T/gitrx" "$T/src" "$BASE"
expect_rc 0 "git bundle verify accepts the thin bundle" -- git -C "$T/gitrx" bundle verify "$T/small.bundle"
expect_rc 0 "git fetch takes the thin bundle" -- git -C "$T/gitrx" fetch -q "$T/small.bundle" main:refs/heads/main
[ "$(git -C "$T/gitrx" rev-parse main)" = "$TIP" ] && ok "git fetch: main at the tip" || bad "git fetch: tip"
expect_rc 0 "git fsck --strict after the fetch" -- git -C "$T/gitrx" fsck --strict

# mcgit imports it into a mirror at the prerequisite: the same refs and
# rendered ids as a mirror fed git's bundle, and as the source renders
at "$T/m1" "$T/src" "$BASE"
at "$T/m2" "$T/src" "$BASE"
expect_rc 0 "mcgit verify accepts the thin bundle" -- "$MCGIT" bundle verify --repo "$T/m1" "$T/small.bundle" --trust "$T/trust"
expect_rc 0 "mcgit imports the thin bundle" -- "$MCGIT" bundle import --repo "$T/m1" "$T/small.bundle" --trust "$T/trust"
expect_rc 0 "mcgit imports git's bundle of the same range" -- "$MCGIT" bundle import --repo "$T/m2" "$T/small-git.bundle" --trust "$T/trust"
[ "$(git -C "$T/m1" rev-parse main)" = "$TIP" ] && ok "import: main at the tip" || bad "import: main"
[ "$(git -C "$T/m1" for-each-ref)" = "$(git -C "$T/m2" for-each-ref)" ] &&
  ok "import: refs and rendered ids equal to those from git's bundle" || bad "import: refs differ from git's bundle's"
"$MCGIT" render --repo "$T/src" --trust "$T/trust" >/dev/null 2>&1 || true
[ "$(git -C "$T/m1" rev-parse rendered)" = "$(git -C "$T/src" rev-parse rendered)" ] &&
  ok "import: the rendered commit is the source's" || bad "import: rendered id differs from the source's"
expect_rc 0 "the mirror passes git fsck --strict" -- git -C "$T/m1" fsck --strict

# refused where a delta base is missing, and where the prerequisite is
at "$T/nobase" "$T/src" "$BASE"
for p in "$T"/nobase/objects/pack/*.pack; do # (a small fetch is unpacked already)
  [ -f "$p" ] || continue
  mv "$p" "$T/nobase.pack" && rm -f "$T"/nobase/objects/pack/*
  git -C "$T/nobase" unpack-objects -q <"$T/nobase.pack"
done
blob=$(git -C "$T/src" rev-parse "$BASE:machineconfigs/50-worker-app.yaml")
git -C "$T/nobase" cat-file -e "$blob" && ok "the receiver holds the base blob (loose)" || bad "no loose base blob"
rm -f "$T/nobase/objects/${blob:0:2}/${blob:2}"
git -C "$T/nobase" cat-file -e "$BASE" && ok "... then only the prerequisite commit, not the blob" || bad "prerequisite lost"
refused "a delta base missing" "missing delta base $blob" "$T/nobase" "$T/small.bundle"
git init -q --bare "$T/empty"
refused "the prerequisite missing" "missing prerequisite $BASE" "$T/empty" "$T/small.bundle"

# ---------------------------------------------------------------- a larger range
if [ ! -x "$GEN" ]; then
  skip_part "$GEN not built"
else
  "$GEN" --files 20 "$T/src" 60 "$T/gen-signer" >/dev/null
  cat "$T/trust" "$T/gen-signer" >"$T/trust2"
  git -C "$T/src" reset -q --hard main # the generator moved main, not the work tree
  big_mc "$T/src" v9
  scommit "$T/src" op "app: conf17 v9"
  TIP2=$(git -C "$T/src" rev-parse main)
  n=$(git -C "$T/src" rev-list --count "$TIP..$TIP2")
  "$MCGIT" bundle create --repo "$T/src" --since "$TIP" "$T/large.bundle" 2>/dev/null
  git -C "$T/src" bundle create -q "$T/large-git.bundle" HEAD main "^$TIP"
  size_ok "$n commits" "$T/large.bundle" "$T/large-git.bundle"
  expect_rc 0 "git bundle verify accepts the larger thin bundle" -- git -C "$T/gitrx" bundle verify "$T/large.bundle"
  expect_rc 0 "git fetch takes the larger thin bundle" -- git -C "$T/gitrx" fetch -q "$T/large.bundle" main:refs/heads/main
  expect_rc 0 "git fsck --strict after it" -- git -C "$T/gitrx" fsck --strict
  expect_rc 0 "mcgit imports the larger thin bundle after the small one" -- \
    "$MCGIT" bundle import --repo "$T/m1" "$T/large.bundle" --trust "$T/trust2"
  expect_rc 0 "mcgit imports git's larger bundle" -- \
    "$MCGIT" bundle import --repo "$T/m2" "$T/large-git.bundle" --trust "$T/trust2"
  [ "$(git -C "$T/m1" for-each-ref)" = "$(git -C "$T/m2" for-each-ref)" ] &&
    ok "larger: refs and rendered ids equal to those from git's bundle" || bad "larger: refs differ"
  [ "$(git -C "$T/m1" rev-parse main)" = "$TIP2" ] && ok "larger: main at the tip" || bad "larger: main"

  # after git gc: stored deltas (newest whole) are not copied as they are
  git clone -q --bare --no-local "$T/src" "$T/srcgc"
  git -C "$T/srcgc" gc -q
  "$MCGIT" bundle create --repo "$T/srcgc" --since "$TIP" "$T/gc.bundle" 2>/dev/null
  git -C "$T/srcgc" bundle create -q "$T/gc-git.bundle" HEAD main "^$TIP"
  size_ok "$n commits after git gc" "$T/gc.bundle" "$T/gc-git.bundle"
  "$MCGIT" bundle create --repo "$T/srcgc" --since "$BASE" "$T/gc-all.bundle" 2>/dev/null
  git -C "$T/srcgc" bundle create -q "$T/gc-all-git.bundle" HEAD main "^$BASE"
  size_ok "$((n + 2)) commits after git gc" "$T/gc-all.bundle" "$T/gc-all-git.bundle"
  at "$T/m3" "$T/src" "$BASE"
  expect_rc 0 "mcgit imports a thin bundle made from a packed repo" -- \
    "$MCGIT" bundle import --repo "$T/m3" "$T/gc-all.bundle" --trust "$T/trust2"
  [ "$(git -C "$T/m3" for-each-ref)" = "$(git -C "$T/m1" for-each-ref)" ] &&
    ok "packed source: the same refs and rendered ids" || bad "packed source: refs differ"
  expect_rc 0 "git fsck --strict after it" -- git -C "$T/m3" fsck --strict
fi
finish
