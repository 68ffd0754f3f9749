#!/usr/bin/env bash
# test_bundle_bomb.sh — a small file cannot take gigabytes. Bundles made
# here (tests/integration/bomb.py writes the pack by hand):
#   one:   a few KiB whose one delta declares a 512 MiB result (copy
#          instructions over a 1 MiB base of zeros);
#   many:  40 deltas of 15 MiB each, every one under the per-object limit,
#          600 MiB in all from a few KiB;
#   whole: a blob whose entry header says 32 MiB (over the per-object limit).
# `mcgit bundle verify` and `bundle import` refuse each in one line before
# the indexer resolves a delta: exit 1, peak RSS (GNU time) at most 64 MiB,
# the repository unchanged. An honest bundle still verifies.
. "$(dirname "$0")/lib.sh"
need python3
[ -x /usr/bin/time ] || skip "GNU time (/usr/bin/time, Debian package time) not found"

R=$T/cfg
fixture_signed_repo "$R"
fixture_v1 "$R"
git init -q --bare "$T/dst.git"
git -C "$R" bundle create -q "$T/honest.bundle" main 2>/dev/null

for kind in one many whole; do
  python3 "$SRC/tests/integration/bomb.py" "$kind" "$T/$kind.bundle"
  size=$(stat -c %s "$T/$kind.bundle")
  for cmd in verify import; do
    before=$(cd "$T/dst.git" && find . -type f | sort | xargs sha256sum | sha256sum)
    rc=0
    /usr/bin/time -f %M -o "$T/rss" "$MCGIT" bundle "$cmd" --repo "$T/dst.git" "$T/$kind.bundle" \
      --trust "$T/trust" >"$T/out" 2>"$T/err" || rc=$?
    kib=$(tail -1 "$T/rss")
    [ "$rc" = 1 ] && ok "$kind ($size bytes): bundle $cmd refused (exit 1)" || bad "$kind: bundle $cmd exit $rc"
    [ "$(grep -c . "$T/err")" = 1 ] && ok "$kind: one line: $(cat "$T/err")" \
      || { bad "$kind: $cmd said $(grep -c . "$T/err") lines"; head -3 "$T/err"; }
    expect_grep 'refused before indexing' "$T/err" "$kind: refused before the indexer resolves anything"
    [ "${kib:-999999}" -le 65536 ] && ok "$kind: bundle $cmd peak RSS ${kib} KiB (at most 64 MiB)" \
      || bad "$kind: bundle $cmd peak RSS ${kib} KiB (over 64 MiB)"
    after=$(cd "$T/dst.git" && find . -type f | sort | xargs sha256sum | sha256sum)
    [ "$before" = "$after" ] && ok "$kind: $cmd left the repository unchanged" || bad "$kind: $cmd changed the repository"
  done
done
expect_grep 'over the limit of 16777216 for one object' "$T/err" "whole: the per-object limit named"
python3 "$SRC/tests/integration/bomb.py" one "$T/one.bundle"
"$MCGIT" bundle verify --repo "$T/dst.git" "$T/one.bundle" --trust "$T/trust" 2>"$T/err" || true
expect_grep 'would inflate to 536870912 bytes, over the limit of 16777216' "$T/err" "one: the declared size named"
"$MCGIT" bundle verify --repo "$T/dst.git" "$T/many.bundle" --trust "$T/trust" 2>"$T/err" || true
expect_grep 'would inflate to [0-9]+ bytes, over its budget' "$T/err" "many: the pack's budget named"
expect_rc 0 "an honest bundle still verifies" -- "$MCGIT" bundle verify --repo "$T/dst.git" "$T/honest.bundle" --trust "$T/trust"
finish
