#!/usr/bin/env bash
# test_bundle.sh — `mcgit bundle create|verify|import` with real git on the
# other side: git reads what mcgit writes (git bundle verify, git clone,
# git fetch), mcgit reads what git writes (v2 full and `main ^REV`, v3), and
# every refusal leaves the repository's refs and object files exactly as
# they were (compared as a listing with sha256 of every file, before/after).
. "$(dirname "$0")/lib.sh"

mkkey op ed25519
mkkey eve ed25519
signer_line op@example.com op >"$T/trust"

# refused DESC PATTERN REPO BUNDLE: import must exit 1 with PATTERN on
# stderr, and leave REPO exactly as it was.
refused() {
  local desc=$1 pat=$2 repo=$3 bundle=$4
  snap "$repo" >"$T/before"
  expect_rc 1 "refused: $desc" -- "$MCGIT" bundle import --repo "$repo" "$bundle" --trust "$T/trust"
  expect_grep "$pat" "$T/err" "refused: $desc: reason"
  [ "$(wc -l <"$T/err")" = 1 ] && ok "refused: $desc: one line" || { bad "refused: $desc: one line"; cat "$T/err"; }
  snap "$repo" >"$T/after"
  if cmp -s "$T/before" "$T/after"; then ok "refused: $desc: repo unchanged"
  else bad "refused: $desc: repo unchanged"; diff "$T/before" "$T/after" | head -5; fi
}
# edit REPO N: N signed (op) commits changing pools/worker.yaml.
edit() {
  local i
  for i in $(seq "$2"); do
    echo "# change $RANDOM" >>"$1/pools/worker.yaml"
    scommit "$1" op "edit $i"
  done
}

# ---------------------------------------------------------------- source repo
"$MCGIT" init "$T/src" >/dev/null
sign_setup "$T/src" "$T/trust"
scommit "$T/src" op "initial config"
edit "$T/src" 3
git -C "$T/src" -c user.signingkey="$T/keys/op" tag -s -m "release 1" v1
BASE=$(git -C "$T/src" rev-parse main)

# ---------------------------------------------------------------- git reads mcgit's bundles
expect_rc 0 "create a full bundle" -- "$MCGIT" bundle create --repo "$T/src" "$T/full.bundle"
head -1 "$T/full.bundle" >"$T/line1"
expect_grep '^# v2 git bundle$' "$T/line1" "full bundle: v2 header"
expect_rc 0 "git bundle verify accepts the full bundle" -- git -C "$T/src" bundle verify "$T/full.bundle"
expect_grep 'complete history' "$T/out" "git: the full bundle records a complete history"
expect_rc 0 "git clone accepts the full bundle" -- git clone -q "$T/full.bundle" "$T/clone"
[ "$(git -C "$T/clone" rev-parse HEAD)" = "$BASE" ] && ok "clone: HEAD checked out at main" || bad "clone: HEAD"
[ "$(git -C "$T/clone" rev-parse v1^{})" = "$BASE" ] && ok "clone: the tag came along" || bad "clone: tag"
expect_rc 0 "clone passes git fsck" -- git -C "$T/clone" fsck --strict

"$MCGIT" bundle create --repo "$T/src" - >"$T/stdout.bundle" 2>/dev/null
expect_rc 0 "a bundle written to stdout verifies" -- git -C "$T/src" bundle verify "$T/stdout.bundle"

edit "$T/src" 2
MID=$(git -C "$T/src" rev-parse main)
expect_rc 0 "create an incremental bundle" -- "$MCGIT" bundle create --repo "$T/src" --since "$BASE" "$T/inc.bundle"
sed -n 2p "$T/inc.bundle" >"$T/line2"
expect_grep "^-$BASE " "$T/line2" "incremental: the prerequisite is the --since commit"
[ "$(git -C "$T/src" bundle list-heads "$T/inc.bundle" | grep -c refs/tags)" = 0 ] &&
  ok "incremental: old tags are left out" || bad "incremental: old tags are left out"
expect_rc 0 "git bundle verify accepts the incremental bundle" -- git -C "$T/clone" bundle verify "$T/inc.bundle"
expect_rc 0 "git fetch takes the incremental bundle" -- git -C "$T/clone" fetch -q "$T/inc.bundle" main:refs/remotes/b/main
[ "$(git -C "$T/clone" rev-parse refs/remotes/b/main)" = "$MID" ] && ok "fetch: main at the new tip" || bad "fetch: tip"
expect_rc 1 "git refuses the incremental bundle where the prerequisite is missing" -- \
  git -C "$(git init -q "$T/empty" && echo "$T/empty")" bundle verify "$T/inc.bundle"
expect_rc 1 "nothing new: create refuses an empty bundle" -- "$MCGIT" bundle create --repo "$T/src" --since main "$T/none.bundle"
ls "$T" | grep -q 'none.bundle' && bad "empty bundle: no file or temp file left" || ok "empty bundle: no file or temp file left"
expect_rc 0 "--ref chooses the refs" -- "$MCGIT" bundle create --repo "$T/src" --ref main --ref v1 "$T/refs.bundle"
git -C "$T/src" bundle list-heads "$T/refs.bundle" | cut -d' ' -f2 >"$T/heads"
[ "$(tr '\n' ' ' <"$T/heads")" = "refs/heads/main refs/tags/v1 " ] && ok "--ref: exactly main and v1" || { bad "--ref"; cat "$T/heads"; }

# ---------------------------------------------------------------- mcgit imports its own bundles
git init -q --bare "$T/dst"
expect_rc 0 "verify the full bundle into an empty repo" -- "$MCGIT" bundle verify --repo "$T/dst" "$T/full.bundle" --trust "$T/trust"
expect_grep "^refs/heads/main \(none\) -> $BASE \(new" "$T/out" "verify: reports ref, old -> new"
expect_grep "$BASE good op@example.com $(keyfp op | sed 's/[+]/[+]/g')" "$T/out" "verify: reports each commit's signer and fingerprint"
expect_grep '^accepted$' "$T/out" "verify: accepted"
expect_grep "^refs/tags/v1 \(none\) -> [0-9a-f]{40} \(new, checked with refs/heads/main\)" "$T/out" \
  "verify: a tag on the branch is checked with it, not again"
[ -z "$(git -C "$T/dst" for-each-ref)" ] && ok "verify changed no ref" || bad "verify changed no ref"
[ -z "$(find "$T/dst/objects" -type f)" ] && ok "verify left no object file" || bad "verify left no object file"
expect_rc 0 "import the full bundle" -- "$MCGIT" bundle import --repo "$T/dst" "$T/full.bundle" --trust "$T/trust"
[ "$(git -C "$T/dst" rev-parse main)" = "$BASE" ] && ok "import: main moved" || bad "import: main moved"
[ "$(git -C "$T/dst" rev-parse v1)" = "$(git -C "$T/src" rev-parse v1)" ] && ok "import: tag created" || bad "import: tag"
expect_grep "^refs/heads/main \(none\) -> $BASE \(4 commits verified\)" "$T/out" "import: reports the commits verified"
expect_grep "^refs/tags/v1 .*\(verified with refs/heads/main\)" "$T/out" "import: the tag was verified with main"
expect_rc 0 "import: rendered branch exists" -- git -C "$T/dst" rev-parse --verify rendered
git -C "$T/dst" log -1 --format=%B rendered >"$T/msg"
expect_grep "Source-Commit: $BASE" "$T/msg" "import: the new tip was rendered"
# stdout and stderr in one stream, as on a terminal: the render's line comes
# after the ref it rendered, and says which branch holds what
"$MCGIT" bundle import --repo "$T/dst" "$T/inc.bundle" --trust "$T/trust" >"$T/both" 2>&1 &&
  ok "import the incremental bundle" || { bad "import the incremental bundle"; cat "$T/both"; }
awk -v mid="$MID" '/^refs\/heads\/main .* -> /{r=NR} /rendered source commit [0-9a-f]+: branch rendered is now [0-9a-f]+$/{if (r && NR > r && index($0, substr(mid, 1, 12))) f=1} END{exit !f}' "$T/both" &&
  ok "import: 'rendered source commit <tip>: branch rendered is now <id>' after the main line" ||
  { bad "import: the render line's order or wording"; sed 's/^/    /' "$T/both"; }
[ "$(git -C "$T/dst" rev-parse main)" = "$MID" ] && ok "import: main fast-forwarded" || bad "import: fast-forward"
expect_rc 0 "imported repo passes git fsck" -- git -C "$T/dst" fsck --strict
snap "$T/dst" >"$T/before"
expect_rc 0 "an identical bundle again is a no-op" -- "$MCGIT" bundle import --repo "$T/dst" "$T/inc.bundle" --trust "$T/trust"
snap "$T/dst" >"$T/after"
cmp -s "$T/before" "$T/after" && ok "no-op: repo unchanged" || bad "no-op: repo unchanged"

# ---------------------------------------------------------------- mcgit imports git's bundles
git -C "$T/src" bundle create -q "$T/git-full.bundle" main
git init -q --bare "$T/dst2"
expect_rc 0 "import git's full bundle (main)" -- "$MCGIT" bundle import --repo "$T/dst2" "$T/git-full.bundle" --trust "$T/trust"
[ "$(git -C "$T/dst2" rev-parse main)" = "$MID" ] && ok "git full: main" || bad "git full: main"
# The pack is read as it is indexed: every commit's signature is checked then
# (git stores commits as deltas of one another; the scan resolves them).
n=$(git -C "$T/src" rev-list --count "$MID")
git init -q --bare "$T/dst2v"
"$MCGIT" bundle verify --repo "$T/dst2v" "$T/git-full.bundle" --trust "$T/trust" >"$T/out" 2>&1
expect_grep ", $n commit signatures checked while indexing$" "$T/out" \
  "git's bundle: every commit's signature checked while the pack was indexed"
"$MCGIT" bundle verify --repo "$T/dst2v" "$T/full.bundle" --trust "$T/trust" >"$T/out" 2>&1
expect_grep ", $(git -C "$T/src" rev-list --count "$BASE") commit signatures checked while indexing$" "$T/out" \
  "mcgit's bundle: every commit's signature checked while the pack was indexed"
edit "$T/src" 2
TIP=$(git -C "$T/src" rev-parse main)
git -C "$T/src" bundle create -q "$T/git-inc.bundle" main "^$MID"
sed -n 2p "$T/git-inc.bundle" >"$T/line2"
expect_grep "^-$MID" "$T/line2" "git's incremental bundle has a prerequisite"
expect_rc 0 "import git's incremental bundle (main ^REV, a thin pack)" -- "$MCGIT" bundle import --repo "$T/dst2" "$T/git-inc.bundle" --trust "$T/trust"
[ "$(git -C "$T/dst2" rev-parse main)" = "$TIP" ] && ok "git incremental: main" || bad "git incremental: main"
expect_rc 0 "git-imported repo passes git fsck" -- git -C "$T/dst2" fsck --strict
git -C "$T/src" bundle create -q --version=3 "$T/git-v3.bundle" main
git init -q --bare "$T/dst3"
expect_rc 0 "import git's v3 bundle" -- "$MCGIT" bundle import --repo "$T/dst3" "$T/git-v3.bundle" --trust "$T/trust"
[ "$(git -C "$T/dst3" rev-parse main)" = "$TIP" ] && ok "git v3: main" || bad "git v3: main"

# ---------------------------------------------------------------- stdin, stdout, progress
git init -q --bare "$T/dst4"
"$MCGIT" bundle import --repo "$T/dst4" - --trust "$T/trust" <"$T/git-full.bundle" >"$T/out" 2>"$T/err" &&
  ok "import reads a bundle from standard input" || { bad "import from stdin"; cat "$T/err"; }
[ "$(git -C "$T/dst4" rev-parse main)" = "$MID" ] && ok "stdin: main imported" || bad "stdin: main"
git init -q --bare "$T/dst4b"
"$MCGIT" bundle create --repo "$T/src" - 2>"$T/err" |
  "$MCGIT" bundle import --repo "$T/dst4b" - --trust "$T/trust" >"$T/out" 2>&1 &&
  ok "create - | import -: a bundle streams through a pipe" || { bad "create - | import -"; cat "$T/out"; }
[ "$(git -C "$T/dst4b" rev-parse main)" = "$TIP" ] && ok "pipe: main imported" || bad "pipe: main"
grep -q '%' "$T/err" && bad "no progress bar when stderr is not a terminal" || ok "no progress bar when stderr is not a terminal"
if ! command -v script >/dev/null; then
  skip_part "no script(1) to give the command a terminal"
elif ! script -qec true /dev/null >/dev/null 2>&1 </dev/null; then
  skip_part "no pseudo-terminal for script(1) (is /dev/pts mounted?)"
else
  # script(1) gives the command a terminal; its output is what the terminal shows.
  script -qec "'$MCGIT' bundle create --repo '$T/src' '$T/tty.bundle'" /dev/null >"$T/tty" 2>&1 </dev/null || true
  expect_grep 'writing objects +\[#+\] 100%' "$T/tty" "create draws a progress bar on a terminal"
  git init -q --bare "$T/dst5"
  script -qec "'$MCGIT' bundle import --repo '$T/dst5' '$T/tty.bundle' --trust '$T/trust'" /dev/null >"$T/tty" 2>&1 </dev/null || true
  expect_grep 'receiving objects +\[#+\] 100%' "$T/tty" "import draws a progress bar on a terminal"
  expect_grep 'verifying commits +\[#+\] 100%' "$T/tty" "import: the bar follows the signature checks"
  script -qec "'$MCGIT' bundle create -q --repo '$T/src' '$T/tty2.bundle'" /dev/null >"$T/tty" 2>&1 </dev/null || true
  [ -s "$T/tty2.bundle" ] && ! grep -q '%' "$T/tty" && ok "-q: no progress bar" || bad "-q: no progress bar"
fi

# ---------------------------------------------------------------- refusals
# dst is at MID; NEXT is a good bundle (MID..TIP) that would be accepted.
"$MCGIT" bundle create --repo "$T/src" --since "$MID" "$T/next.bundle" 2>/dev/null
expect_rc 0 "the good next bundle verifies" -- "$MCGIT" bundle verify --repo "$T/dst" "$T/next.bundle" --trust "$T/trust"
size=$(stat -c %s "$T/next.bundle")
hlen=$(grep -abo -m1 '^PACK' "$T/next.bundle" | head -1 | cut -d: -f1)
head -c $((size - 30)) "$T/next.bundle" >"$T/trunc.bundle"
refused "truncated pack" 'truncated|damaged' "$T/dst" "$T/trunc.bundle"
head -c 60 "$T/next.bundle" >"$T/trunc-hdr.bundle"
refused "truncated header" 'truncated|bad' "$T/dst" "$T/trunc-hdr.bundle"
flip() { # flip FILE OFFSET OUT
  cp "$1" "$3"
  local b
  b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  printf "$(printf '\\%03o' $((b ^ 0x55)))" | dd of="$3" bs=1 seek="$2" conv=notrunc status=none
}
flip "$T/next.bundle" $((hlen + (size - hlen) / 2)) "$T/flip-mid.bundle"
refused "flipped byte in the pack" 'damaged' "$T/dst" "$T/flip-mid.bundle"
flip "$T/next.bundle" $((size - 1)) "$T/flip-end.bundle"
refused "flipped byte in the pack checksum" 'damaged' "$T/dst" "$T/flip-end.bundle"
printf 'hello, this is not a bundle\n' >"$T/text.bundle"
refused "not a bundle" 'not a git bundle' "$T/dst" "$T/text.bundle"
: >"$T/emptyfile.bundle"
refused "empty file" 'not a git bundle' "$T/dst" "$T/emptyfile.bundle"
{ printf '# v3 git bundle\n@object-format=sha1\n@filter=blob:none\n'; tail -c +17 "$T/next.bundle"; } >"$T/cap.bundle"
refused "unknown capability" "capability 'filter=blob:none'" "$T/dst" "$T/cap.bundle"
{ printf '# v3 git bundle\n@object-format=sha256\n'; tail -c +17 "$T/next.bundle"; } >"$T/sha256.bundle"
refused "sha256 object format" "capability 'object-format=sha256'" "$T/dst" "$T/sha256.bundle"
{ printf '# v4 git bundle\n'; tail -c +17 "$T/next.bundle"; } >"$T/v4.bundle"
refused "unknown version" 'unsupported bundle version' "$T/dst" "$T/v4.bundle"
expect_rc 1 "import into a repository that does not exist" -- \
  "$MCGIT" bundle import --repo "$T/nowhere" "$T/next.bundle" --trust "$T/trust"
expect_grep "nowhere: no such repository \(.*\`git init --bare .*nowhere\` an empty one to push to\)" "$T/err" \
  "missing repository: the reason says how to make one"
[ ! -e "$T/nowhere" ] && ok "missing repository: nothing created" || bad "missing repository: something created"
# Damage anywhere in the pack, as the indexer and the scan thread reading
# alongside it both see it: 40 bundles, each with a few bytes changed at
# seeded random places (object headers, zlib streams, deltas, checksum).
# Each must be refused in one line, or accepted only if the changes left
# the pack intact (never a crash), and leave dst as it was.
python3 - "$T/next.bundle" "$hlen" "$T/fuzz" <<'PY'
import os, random, sys
data = open(sys.argv[1], "rb").read()
start = int(sys.argv[2]) + 5
os.makedirs(sys.argv[3], exist_ok=True)
rng = random.Random(4)
for i in range(40):
    b = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 8))):
        b[rng.randrange(start, len(b))] ^= rng.randrange(1, 256)
    open(f"{sys.argv[3]}/{i}.bundle", "wb").write(b)
PY
snap "$T/dst" >"$T/before"
fuzz_bad=0
for f in "$T"/fuzz/*.bundle; do
  rc=0
  "$MCGIT" bundle import --repo "$T/dst" "$f" --trust "$T/trust" >/dev/null 2>"$T/err" || rc=$?
  if [ "$rc" = 1 ] && [ "$(grep -cv '^SUMMARY: \|^$' "$T/err")" = 1 ]; then
    continue
  fi
  echo "# $f: exit $rc"; cat "$T/err"; fuzz_bad=1
done
snap "$T/dst" >"$T/after"
[ "$fuzz_bad" = 0 ] && ok "40 damaged packs: each refused in one line" || bad "damaged packs"
cmp -s "$T/before" "$T/after" && ok "damaged packs: repo unchanged" || bad "damaged packs: repo changed"

# Complete only in its header: the pack lacks a blob the history needs.
git init -q --bare "$T/dst6"
gone=$(git -C "$T/src" rev-parse main:mcgit.yaml)
git -C "$T/src" rev-list --objects main | cut -d' ' -f1 | grep -v "^$gone\$" |
  git -C "$T/src" pack-objects -q --stdout >"$T/partial.pack"
{ printf '# v2 git bundle\n%s refs/heads/main\n\n' "$TIP"; cat "$T/partial.pack"; } >"$T/partial.bundle"
refused "incomplete pack" "incomplete bundle: object [0-9a-f]{40} needs $gone" "$T/dst6" "$T/partial.bundle"
gone=$(git -C "$T/src" rev-parse main:pools)
git -C "$T/src" rev-list --objects main | cut -d' ' -f1 | grep -v "^$gone\$" |
  git -C "$T/src" pack-objects -q --stdout >"$T/partial.pack"
{ printf '# v2 git bundle\n%s refs/heads/main\n\n' "$TIP"; cat "$T/partial.pack"; } >"$T/partial.bundle"
refused "incomplete pack (a tree)" "incomplete bundle: object $(git -C "$T/src" rev-parse "main^{tree}") needs $gone" "$T/dst6" "$T/partial.bundle"
git -C "$T/src" rev-list --objects main | cut -d' ' -f1 | git -C "$T/src" pack-objects -q --stdout >"$T/whole.pack"
{ printf '# v2 git bundle\n%040d refs/heads/main\n\n' 7; cat "$T/whole.pack"; } >"$T/lie.bundle"
refused "a ref to an object not in the bundle" "incomplete bundle: refs/heads/main points to missing object 0{39}7" "$T/dst6" "$T/lie.bundle"

# A prerequisite dst lacks: TIP..TIP2 needs TIP.
edit "$T/src" 1
"$MCGIT" bundle create --repo "$T/src" --since "$TIP" "$T/ahead.bundle" 2>/dev/null
refused "missing prerequisite" "missing prerequisite $TIP" "$T/dst" "$T/ahead.bundle"

# Untrusted and unsigned commits, on a copy of the history.
git clone -q --no-local "$T/src" "$T/evil"
sign_setup "$T/evil" "$T/trust"
git -C "$T/evil" reset -q --hard "$MID"
echo "# eve was here" >>"$T/evil/pools/worker.yaml"
scommit "$T/evil" eve "looks harmless"
EVE=$(git -C "$T/evil" rev-parse HEAD)
"$MCGIT" bundle create --repo "$T/evil" --since "$MID" "$T/eve.bundle" 2>/dev/null
refused "commit signed by an untrusted key" "commit $EVE: " "$T/dst" "$T/eve.bundle"
expect_rc 1 "verify explains the untrusted commit" -- "$MCGIT" bundle verify --repo "$T/dst" "$T/eve.bundle" --trust "$T/trust"
expect_grep "$EVE BAD" "$T/out" "verify: the bad commit is named in the report"
expect_grep '^refused$' "$T/out" "verify: refused"
git -C "$T/evil" reset -q --hard "$MID"
echo "# unsigned" >>"$T/evil/pools/worker.yaml"
scommit "$T/evil" - "unsigned change"
UNS=$(git -C "$T/evil" rev-parse HEAD)
"$MCGIT" bundle create --repo "$T/evil" --since "$MID" "$T/unsigned.bundle" 2>/dev/null
refused "unsigned commit" "commit $UNS: commit is not signed" "$T/dst" "$T/unsigned.bundle"
# Signed by op, but a rewrite: it forks below dst's main.
git -C "$T/evil" reset -q --hard "$BASE"
echo "# fork" >>"$T/evil/pools/worker.yaml"
scommit "$T/evil" op "a different history"
"$MCGIT" bundle create --repo "$T/evil" --since "$BASE" "$T/fork.bundle" 2>/dev/null
refused "non-fast-forward" 'not a fast-forward' "$T/dst" "$T/fork.bundle"
# A stale bundle: dst already has more than it.
refused "stale bundle (rollback)" 'stale' "$T/dst" "$T/full.bundle"

# A root tree that names .mcgit twice (git fsck: duplicateEntries), once
# with a signer file trusting eve, then eve signs on top. Name lookup in
# such a tree is ambiguous, so the import's scan gives no signer hints for
# it: the bundle's verdict on eve's commit must be `mcgit verify`'s.
mkkey eve2 ed25519
git clone -q --no-local "$T/src" "$T/dup"
sign_setup "$T/dup" "$T/trust"
git -C "$T/dup" reset -q --hard "$MID"
blob=$(signer_line eve2@example.com eve2 | git -C "$T/dup" hash-object -w --stdin)
evdir=$(printf '100644 blob %s\tallowed_signers\n' "$blob" | git -C "$T/dup" mktree)
git -C "$T/dup" ls-tree "$MID" >"$T/entries"
python3 - "$T/entries" "$evdir" >"$T/dup.tree" <<'PY'
import sys
out = sys.stdout.buffer
ents = [l.rstrip("\n").split("\t", 1) for l in open(sys.argv[1])]
ents.append((f"040000 tree {sys.argv[2]}", ".mcgit"))
for meta, name in ents:
    mode, _, oid = meta.split()
    out.write(mode.lstrip("0").encode() + b" " + name.encode() + b"\0" + bytes.fromhex(oid))
PY
dtree=$(git -C "$T/dup" hash-object -t tree -w --literally "$T/dup.tree")
C1=$(git -C "$T/dup" -c user.signingkey="$T/keys/op" commit-tree -S "$dtree" -p "$MID" -m "two .mcgit")
C2=$(git -C "$T/dup" -c user.signingkey="$T/keys/eve2" commit-tree -S "$dtree" -p "$C1" -m "eve2 signs")
git -C "$T/dup" update-ref refs/heads/main "$C2"
git -C "$T/dup" bundle create -q "$T/dup.bundle" main
git init -q --bare "$T/dst7"
vrc=0
"$MCGIT" verify --repo "$T/dup" --trust "$T/trust" >"$T/vout" 2>&1 || vrc=$?
brc=0
"$MCGIT" bundle verify --repo "$T/dst7" "$T/dup.bundle" --trust "$T/trust" >"$T/bout" 2>&1 || brc=$?
[ "$vrc" = "$brc" ] && ok "duplicate .mcgit: bundle verify agrees with mcgit verify (exit $vrc)" ||
  { bad "duplicate .mcgit: bundle verify exits $brc, mcgit verify $vrc"; cat "$T/vout" "$T/bout"; }
v2=$(grep -c "^good $C2" "$T/vout" || true)
b2=$(grep -c "$C2 good" "$T/bout" || true)
[ "$v2" = "$b2" ] && ok "duplicate .mcgit: the same verdict on the commit above it" ||
  { bad "duplicate .mcgit: verdicts differ"; cat "$T/vout" "$T/bout"; }

# Verify changes nothing, then the good bundle still imports.
snap "$T/dst" >"$T/before"
expect_rc 0 "verify the good next bundle" -- "$MCGIT" bundle verify --repo "$T/dst" "$T/next.bundle" --trust "$T/trust"
snap "$T/dst" >"$T/after"
cmp -s "$T/before" "$T/after" && ok "verify: repo unchanged" || bad "verify: repo unchanged"
expect_rc 0 "import the good next bundle" -- "$MCGIT" bundle import --repo "$T/dst" "$T/next.bundle" --trust "$T/trust"
[ "$(git -C "$T/dst" rev-parse main)" = "$TIP" ] && ok "after the refusals, the good bundle imports" || bad "good bundle imports"
expect_rc 2 "usage: import without --trust" -- "$MCGIT" bundle import --repo "$T/dst" "$T/next.bundle"

GEN=$(dirname "$MCGIT")/tests/bench/bench_history

# ---------------------------------------------------------------- long histories
# Verification runs in pieces on two threads; the verdicts must be those of
# one pass. Trust root: op only. op's first commit adds the generator's key
# to .mcgit/allowed_signers, so the 300 generated commits after it are good
# only through the signer set each inherits from its parent — across every
# piece boundary. Then an unsigned commit: it and (their parents no longer
# good) all 150 after it are refused, and the message counts them all.
if [ -x "$GEN" ]; then
  git init -q "$T/scratch" && "$GEN" "$T/scratch" 1 "$T/gen-signer" >/dev/null
  "$MCGIT" init "$T/long" >/dev/null
  sign_setup "$T/long" "$T/trust"
  cat "$T/gen-signer" >>"$T/long/.mcgit/allowed_signers"
  scommit "$T/long" op "trust the generator's key"
  "$GEN" "$T/long" 150 "$T/gen-signer" >/dev/null
  git -C "$T/long" reset -q --hard # the generator writes commits, not the work tree
  # A side branch from far below, merged back: it crosses piece boundaries.
  # (The generator's commits count up a minute apart: later commits are
  # dated after them, as committer times may not go back beyond the skew.)
  export GIT_COMMITTER_DATE="2026-01-02T00:00:00Z"
  git -C "$T/long" checkout -q -b side main~120
  echo side >"$T/long/side.txt"
  scommit "$T/long" op "side work"
  git -C "$T/long" checkout -q main
  git -C "$T/long" -c user.signingkey="$T/keys/op" merge -q -S --no-ff -m "merge side" side
  "$GEN" "$T/long" 150 "$T/gen-signer" >/dev/null
  git -C "$T/long" reset -q --hard
  LONG=$(git -C "$T/long" rev-parse main)
  "$MCGIT" bundle create --repo "$T/long" "$T/long.bundle" 2>/dev/null
  git init -q --bare "$T/dstl"
  expect_rc 0 "303 commits with a merge, signers inherited through the repo's allowed_signers" -- \
    "$MCGIT" bundle import --repo "$T/dstl" "$T/long.bundle" --trust "$T/trust"
  expect_grep "^refs/heads/main \(none\) -> $LONG \(303 commits verified\)" "$T/out" "long: all 303 verified"
  echo "# unsigned" >>"$T/long/pools/worker.yaml"
  GIT_COMMITTER_DATE="2026-01-03T00:00:00Z" scommit "$T/long" - "unsigned change"
  UNS=$(git -C "$T/long" rev-parse main)
  "$GEN" "$T/long" 150 "$T/gen-signer" >/dev/null
  git -C "$T/long" reset -q --hard
  "$MCGIT" bundle create --repo "$T/long" --since "$LONG" "$T/long2.bundle" 2>/dev/null
  refused "an unsigned commit inside a long range" \
    "commit $UNS: commit is not signed \(151 of 151 new commits refused\)" "$T/dstl" "$T/long2.bundle"
  rm "$T/dstl/mcgit/verified" # mcgit's private mark: verify from the root
  expect_rc 1 "long: verify from the root names the same commit" -- \
    "$MCGIT" bundle verify --repo "$T/dstl" "$T/long2.bundle" --trust "$T/trust"
  expect_grep "commit $UNS: commit is not signed \(151 of 454 new commits refused\)" "$T/err" \
    "long: the count is that of one pass over the whole range"

  # Size: deltas are written as OFS_DELTA, as git writes them.
  "$GEN" "$T/long" 500 "$T/gen-signer" >/dev/null
  "$MCGIT" bundle create --repo "$T/long" "$T/mc-size.bundle" 2>/dev/null
  git -C "$T/long" bundle create -q "$T/git-size.bundle" main
  sm=$(stat -c %s "$T/mc-size.bundle") sg=$(stat -c %s "$T/git-size.bundle")
  echo "# 953 text commits: mcgit's bundle $sm bytes, git's $sg"
  [ $((sm * 100)) -le $((sg * 110)) ] && ok "bundle size within 1.1x of git's" || bad "size: $sm vs git's $sg"
  sed '1,/^$/d' "$T/mc-size.bundle" >"$T/mc-size.pack"
  git init -q --bare "$T/ip"
  expect_rc 0 "git index-pack --strict accepts mcgit's rewritten pack" -- \
    git -C "$T/ip" index-pack --strict --stdin <"$T/mc-size.pack"
  expect_rc 0 "git clone of it passes fsck" -- sh -c "git clone -q --bare '$T/mc-size.bundle' '$T/ipc' && git -C '$T/ipc' fsck --strict"

  # After git gc the stored entries are copied (the deltas are not computed
  # again): the same checks, and an incremental bundle whose deltas' bases
  # are on the prerequisite side.
  git -C "$T/long" gc -q
  "$MCGIT" bundle create --repo "$T/long" "$T/gc.bundle" 2>/dev/null
  git -C "$T/long" bundle create -q "$T/git-gc.bundle" main
  sm=$(stat -c %s "$T/gc.bundle") sg=$(stat -c %s "$T/git-gc.bundle")
  echo "# after git gc: mcgit's bundle $sm bytes, git's $sg"
  [ $((sm * 100)) -le $((sg * 110)) ] && ok "after gc: size within 1.1x of git's" || bad "after gc: $sm vs git's $sg"
  sed '1,/^$/d' "$T/gc.bundle" >"$T/gc.pack"
  git init -q --bare "$T/ip2"
  expect_rc 0 "after gc: git index-pack --strict accepts the copied entries" -- \
    git -C "$T/ip2" index-pack --strict --stdin <"$T/gc.pack"
  expect_rc 0 "after gc: git clone passes fsck" -- sh -c "git clone -q --bare '$T/gc.bundle' '$T/ipc2' && git -C '$T/ipc2' fsck --strict"
  HALF=$(git -C "$T/long" rev-parse main~100)
  "$MCGIT" bundle create --repo "$T/long" --since "$HALF" "$T/gc-inc.bundle" 2>/dev/null
  git init -q --bare "$T/half"
  git -C "$T/half" fetch -q "$T/long" "$HALF:refs/heads/main"
  expect_rc 0 "after gc: git fetches the incremental bundle" -- \
    git -C "$T/half" fetch -q "$T/gc-inc.bundle" main:refs/heads/main
  [ "$(git -C "$T/half" rev-parse main)" = "$(git -C "$T/long" rev-parse main)" ] && ok "after gc: incremental tip" || bad "after gc: incremental tip"
  expect_rc 0 "after gc: the fetched repo passes fsck" -- git -C "$T/half" fsck --strict
  # A few commits since the gc: their loose objects go through the
  # packbuilder, spliced after the copied entries.
  "$GEN" "$T/long" 5 "$T/gen-signer" >/dev/null
  "$MCGIT" bundle create --repo "$T/long" "$T/mixed.bundle" 2>/dev/null
  sed '1,/^$/d' "$T/mixed.bundle" >"$T/mixed.pack"
  git init -q --bare "$T/ip3"
  expect_rc 0 "packed and loose: git index-pack --strict accepts the pack" -- \
    git -C "$T/ip3" index-pack --strict --stdin <"$T/mixed.pack"
  expect_rc 0 "packed and loose: git clone passes fsck" -- \
    sh -c "git clone -q --bare '$T/mixed.bundle' '$T/ipc3' && git -C '$T/ipc3' fsck --strict"
  [ "$(git -C "$T/ipc3" rev-parse main)" = "$(git -C "$T/long" rev-parse main)" ] && ok "packed and loose: tip" || bad "packed and loose: tip"
fi

# mcgit imports what it makes from a packed repository, full and incremental.
git clone -q --bare --no-local "$T/src" "$T/srcgc"
git -C "$T/srcgc" gc -q
"$MCGIT" bundle create --repo "$T/srcgc" "$T/gc-full.bundle" 2>/dev/null
"$MCGIT" bundle create --repo "$T/srcgc" --since "$BASE" "$T/gc-inc2.bundle" 2>/dev/null
git init -q --bare "$T/dst7"
expect_rc 0 "import a full bundle made from a packed repo" -- \
  "$MCGIT" bundle import --repo "$T/dst7" "$T/gc-full.bundle" --trust "$T/trust"
git init -q --bare "$T/dst8"
"$MCGIT" bundle import --repo "$T/dst8" "$T/full.bundle" --trust "$T/trust" >/dev/null 2>&1
expect_rc 0 "import an incremental bundle made from a packed repo" -- \
  "$MCGIT" bundle import --repo "$T/dst8" "$T/gc-inc2.bundle" --trust "$T/trust"
for d in dst7 dst8; do
  [ "$(git -C "$T/$d" rev-parse main)" = "$(git -C "$T/srcgc" rev-parse main)" ] && ok "$d: main imported" || bad "$d: main"
  expect_rc 0 "$d passes git fsck" -- git -C "$T/$d" fsck --strict
done

# ---------------------------------------------------------------- 5,000 commits, bounded memory
# peak_import BUNDLE DST TRUST: import, and set PEAK to the peak anonymous
# memory (heap, stacks; sampled from /proc) in bytes. The pack file pages that
# libgit2's indexer maps are page cache, shared and reclaimable, not counted.
peak_import() {
  git init -q --bare "$2"
  "$MCGIT" bundle import --repo "$2" "$1" --trust "$3" >"$T/out" 2>"$T/err" &
  local pid=$! a
  PEAK=0
  while kill -0 $pid 2>/dev/null; do
    a=$(awk '/^RssAnon/{print $2}' /proc/$pid/status 2>/dev/null || true)
    [ -n "$a" ] && [ "$a" -gt "$PEAK" ] && PEAK=$a
    sleep 0.02
  done
  PEAK=$((PEAK * 1024))
  wait $pid
}
if [ ! -x "$GEN" ]; then
  skip_part "$GEN not built"
elif [ ! -r /proc/self/status ]; then
  skip_part "no /proc to measure memory with"
else
  # A config repo whose first commit op signs; the generator's key extends the
  # root. Commits carry 24 KiB of random text each, so bundle size and the
  # number of commits grow together: 1,000 commits first, then 5,000.
  "$MCGIT" init "$T/big" >/dev/null
  sign_setup "$T/big" "$T/trust"
  scommit "$T/big" op "initial config"
  start=$(date +%s)
  "$GEN" --bytes 24576 --random "$T/big" 999 "$T/gen-signer" >/dev/null
  cat "$T/trust" "$T/gen-signer" >"$T/big-trust"
  "$MCGIT" bundle create --repo "$T/big" "$T/k1.bundle" 2>/dev/null
  "$GEN" --bytes 24576 --random "$T/big" 4000 "$T/gen-signer" >/dev/null
  [ "$(git -C "$T/big" rev-list --count HEAD)" = 5000 ] &&
    ok "5,000 signed commits generated in $(($(date +%s) - start)) s" || bad "the generator did not make 5,000 commits"
  "$MCGIT" bundle create --repo "$T/big" "$T/k5.bundle" 2>/dev/null
  expect_rc 0 "git bundle verify accepts the 5,000-commit bundle" -- git -C "$T/big" bundle verify "$T/k5.bundle"
  # ASan keeps freed memory in quarantine; keep it small so RSS means live memory.
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1"
  s1=$(stat -c %s "$T/k1.bundle") s5=$(stat -c %s "$T/k5.bundle")
  peak_import "$T/k1.bundle" "$T/k1" "$T/big-trust" && ok "import 1,000 commits" || bad "import 1,000 commits"
  m1=$PEAK
  peak_import "$T/k5.bundle" "$T/k5" "$T/big-trust" && ok "import 5,000 commits" || { bad "import 5,000 commits"; head -3 "$T/err"; }
  m5=$PEAK
  echo "# 1,000 commits: bundle $((s1 >> 20)) MiB, peak memory $((m1 >> 20)) MiB"
  echo "# 5,000 commits: bundle $((s5 >> 20)) MiB, peak memory $((m5 >> 20)) MiB"
  # Memory is bounded by constants (libgit2's 16 MiB delta-base cache, a 2 MiB
  # object cache, mapped windows) plus ~1 KiB per commit, whatever the blob
  # bytes. Under ASan (redzones, shadow, allocator caches) the same heap costs
  # about twice as much, and the first render now makes the rendered history
  # of all 5,000 commits in memory before writing it as one pack (issue 15):
  # there only "below 1.25x the bundle's size" is asserted; the Release/Debug
  # bound below (half the bundle) is the real one.
  if grep -q __asan_init "$MCGIT"; then
    [ "$m5" -gt 0 ] && [ "$m5" -lt $((s5 * 5 / 4)) ] && ok "5,000 commits: peak memory below 1.25x the bundle's size (ASan build)" ||
      bad "5,000 commits: peak memory $((m5 >> 20)) MiB, bundle $((s5 >> 20)) MiB"
  else
    [ "$m5" -gt 0 ] && [ "$m5" -lt $((s5 / 2)) ] && ok "5,000 commits: peak memory below half the bundle's size" ||
      bad "5,000 commits: peak memory $((m5 >> 20)) MiB, bundle $((s5 >> 20)) MiB"
    [ $((m5 - m1)) -lt $(((s5 - s1) / 2)) ] &&
      ok "memory grows by less than half the bundle's growth (streamed, not held)" ||
      bad "memory grew $(((m5 - m1) >> 20)) MiB for $(((s5 - s1) >> 20)) MiB more bundle"
  fi
  [ "$(git -C "$T/k5" rev-parse main)" = "$(git -C "$T/big" rev-parse main)" ] && ok "5,000 commits: main imported" || bad "5,000 commits: main"
  [ "$(git -C "$T/k5" rev-list --count main)" = 5000 ] && ok "5,000 commits: all there" || bad "5,000 commits: count"
fi
finish
