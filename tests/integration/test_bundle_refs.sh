#!/usr/bin/env bash
# test_bundle_refs.sh — a bundle with 20,000 refs imports. libgit2's ref
# transaction held one open lock file per ref ("Too many open files" at
# about ten thousand); past 256 refs bundle import writes packed-refs once
# under packed-refs.lock instead. Checked under `ulimit -n 64`: all 20,000
# tags arrive, git fsck is clean, a branch held as a loose ref moves (its
# loose file, now stale, removed), a ref whose name is the directory of
# another is refused with nothing moved, and a held packed-refs.lock makes
# the import fail without moving anything.
. "$(dirname "$0")/lib.sh"
need git
R=$T/cfg
fixture_signed_repo "$R"
fixture_v1 "$R"
H=$(git -C "$R" rev-parse main)
for i in $(seq 1 20000); do echo "create refs/tags/t$i $H"; done | git -C "$R" update-ref --stdin
git -C "$R" bundle create -q "$T/many.bundle" main --tags 2>/dev/null
git init -q --bare "$T/dst.git"
rc=0
(ulimit -n 64; exec "$MCGIT" bundle import --repo "$T/dst.git" --trust "$T/trust" "$T/many.bundle") >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" = 0 ] && ok "20,000 tags and main imported under ulimit -n 64" || { bad "import: exit $rc"; head -3 "$T/err"; }
n=$(git -C "$T/dst.git" for-each-ref refs/tags | wc -l)
[ "$n" = 20000 ] && ok "20,000 tags in the repository" || bad "$n tags"
[ "$(git -C "$T/dst.git" rev-parse main)" = "$H" ] && ok "and main" || bad "main missing"
[ "$(git -C "$T/dst.git" rev-parse refs/tags/t12345)" = "$H" ] && ok "refs/tags/t12345 is the tagged commit" || bad "refs/tags/t12345 wrong"
git -C "$T/dst.git" fsck --no-progress >"$T/fsck" 2>&1 && ok "git fsck clean" || bad "fsck: $(head -3 "$T/fsck")"
[ ! -e "$T/dst.git/packed-refs.lock" ] && ok "no lock left" || bad "packed-refs.lock left"

# main as a loose ref at its old value; the next bundle moves it and adds 300 tags
mkdir -p "$T/dst.git/refs/heads" && echo "$H" >"$T/dst.git/refs/heads/main"
[ -f "$T/dst.git/refs/heads/main" ] && ok "main is a loose ref" || bad "main not loose"
scommit "$R" op "second"
H2=$(git -C "$R" rev-parse main)
for i in $(seq 1 300); do echo "create refs/tags/u$i $H2"; done | git -C "$R" update-ref --stdin
git -C "$R" bundle create -q "$T/next.bundle" "$H..main" $(for i in $(seq 1 300); do echo "refs/tags/u$i"; done) 2>/dev/null
rc=0
(ulimit -n 64; exec "$MCGIT" bundle import --repo "$T/dst.git" --trust "$T/trust" "$T/next.bundle") >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" = 0 ] && ok "the next bundle (main forward, 300 tags) imported" || { bad "next: exit $rc"; head -3 "$T/err"; }
[ "$(git -C "$T/dst.git" rev-parse main)" = "$H2" ] && ok "main moved forward" || bad "main at $(git -C "$T/dst.git" rev-parse main)"
[ ! -e "$T/dst.git/refs/heads/main" ] && ok "main's stale loose file removed" || bad "loose main left"
n=$(git -C "$T/dst.git" for-each-ref refs/tags | wc -l)
[ "$n" = 20300 ] && ok "20,300 tags" || bad "$n tags"

# a ref that is another's directory: refused, nothing moved
scommit "$R" op "third"
H3=$(git -C "$R" rev-parse main)
for i in $(seq 1 300); do echo "create refs/tags/v$i $H3"; done | git -C "$R" update-ref --stdin
git init -q --bare "$T/df.git"
git -C "$T/df.git" fetch -q "$R" "$H2:refs/heads/main"
git -C "$T/df.git" update-ref refs/tags/v7/x "$H2"
git -C "$R" bundle create -q "$T/df.bundle" "$H2..main" $(for i in $(seq 1 300); do echo "refs/tags/v$i"; done) 2>/dev/null
before=$(git -C "$T/df.git" for-each-ref)
expect_rc 1 "refs/tags/v7 beside refs/tags/v7/x: refused" -- "$MCGIT" bundle import --repo "$T/df.git" --trust "$T/trust" "$T/df.bundle"
expect_grep 'refs/tags/v7: refs exist under it|cannot both be refs' "$T/err" "the conflict named"
[ "$(git -C "$T/df.git" for-each-ref)" = "$before" ] && ok "nothing moved" || bad "refs moved"
# packed-refs.lock held by another process: the import fails, nothing moves
git -C "$T/df.git" update-ref -d refs/tags/v7/x
: >"$T/df.git/packed-refs.lock"
before=$(git -C "$T/df.git" for-each-ref)
expect_rc 1 "packed-refs.lock held: refused" -- "$MCGIT" bundle import --repo "$T/df.git" --trust "$T/trust" "$T/df.bundle"
expect_grep 'packed-refs.lock: File exists' "$T/err" "the lock named"
[ "$(git -C "$T/df.git" for-each-ref)" = "$before" ] && ok "nothing moved while locked" || bad "refs moved while locked"
rm "$T/df.git/packed-refs.lock"
expect_rc 0 "imported once the lock is gone" -- "$MCGIT" bundle import --repo "$T/df.git" --trust "$T/trust" "$T/df.bundle"
finish
