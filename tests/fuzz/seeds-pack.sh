#!/usr/bin/env bash
# seeds-pack.sh — (re)make the seed corpora of fuzz_rawobj, fuzz_packscan,
# fuzz_packgraph and fuzz_bundle_header in tests/fuzz/corpus/ from a small
# throwaway repository
# made with real git and ssh-keygen: SSH-signed commits (one a merge),
# trees with .mcgit/allowed_signers, an annotated tag, deltas; packs whole,
# thin (REF_DELTA to a base outside) and as git bundles (v2 and v3); and the
# hostile delta graphs of tests/integration/cyclepack.py (a delta on its own
# result, cycles, a missing base, a chain of 3,000).
# Run once by hand when the formats the targets read change; the corpora
# are committed. Files are named by content hash, so reruns only add.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=$PWD/tests/fuzz/corpus
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export HOME=$T/home GIT_CONFIG_NOSYSTEM=1 LC_ALL=C TZ=UTC
export GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z"
mkdir -p "$HOME" "$OUT/fuzz_rawobj" "$OUT/fuzz_packscan" "$OUT/fuzz_packgraph" "$OUT/fuzz_bundle_header"
ssh-keygen -q -t ed25519 -N '' -C seed -f "$T/key"
git config --global user.name Seed
git config --global user.email seed@example.com
git config --global init.defaultBranch main
git config --global gpg.format ssh
git config --global user.signingkey "$T/key"
git config --global commit.gpgsign true

# put DIR BYTES-FILE: store under its content hash
put() { cp "$2" "$1/$(sha1sum <"$2" | cut -c1-16)"; }
# sel BYTE FILE: the file with a selector byte in front (fuzz_rawobj)
sel() { { printf '%b' "\\x$1"; cat "$2"; } >"$T/sel"; put "$OUT/fuzz_rawobj" "$T/sel"; }

R=$T/repo
git init -q "$R"
cd "$R"
mkdir .mcgit
echo "seed@example.com $(cat "$T/key.pub")" >.mcgit/allowed_signers
seq 1 400 >numbers
git add -A && git commit -q -m "first"
for i in 1 2 3; do
  sed -i "s/^$((i * 50))\$/changed $i/" numbers
  git commit -q -am "change $i"
done
git checkout -q -b side HEAD~1
echo side >side && git add side && git commit -q -m side
git checkout -q main
git merge -q --no-edit side
git tag -a -m "release" v1

# raw objects: commits (0), tags (1), trees (2)
for c in $(git rev-list --all | head -3) $(git rev-parse HEAD); do
  git cat-file commit "$c" >"$T/o" && sel 00 "$T/o"
done
git cat-file tag v1 >"$T/o" && sel 01 "$T/o"
git cat-file tree HEAD >"$T/o" && sel 02 "$T/o"
git cat-file tree HEAD:.mcgit >"$T/o" && sel 02 "$T/o"
# deltas (3): base length (2 bytes), base, delta — "hello world" -> "hello there"
printf '\x03\x00\x0bhello world\x0b\x0b\x90\x05\x06 there' >"$T/sel"
put "$OUT/fuzz_rawobj" "$T/sel"
printf '\x03\x00\x0bhello world\x0b\x05\x91\x06\x05' >"$T/sel"
put "$OUT/fuzz_rawobj" "$T/sel"

# packs: everything; the newest commits only, thin (REF_DELTA bases outside)
git rev-list --objects --all | git pack-objects -q --stdout >"$T/p"
put "$OUT/fuzz_packscan" "$T/p"
printf '%s\n^%s\n' HEAD HEAD~2 | git pack-objects -q --revs --thin --stdout >"$T/p"
put "$OUT/fuzz_packscan" "$T/p"
git rev-list --objects HEAD~1..HEAD | git pack-objects -q --stdout --no-reuse-delta >"$T/p"
put "$OUT/fuzz_packscan" "$T/p"
# the pack targets share their packs
cp "$OUT"/fuzz_packscan/* "$OUT/fuzz_packgraph/"
for shape in self-ofs self-ref ref-cycle mixed-cycle missing-ref deep honest; do
  python3 "$OUT/../../integration/cyclepack.py" "$shape" pack "$T/p"
  put "$OUT/fuzz_packscan" "$T/p"
  put "$OUT/fuzz_packgraph" "$T/p"
done

# bundles: v2 whole and incremental, v3; and hand-made headers
git bundle create -q "$T/b" --all 2>/dev/null && put "$OUT/fuzz_bundle_header" "$T/b"
git bundle create -q "$T/b" HEAD~1..main 2>/dev/null && put "$OUT/fuzz_bundle_header" "$T/b"
git bundle create -q --version=3 "$T/b" main 2>/dev/null && put "$OUT/fuzz_bundle_header" "$T/b"
H=$(git rev-parse HEAD)
printf '# v3 git bundle\n@object-format=sha1\n-%s parent\n%s refs/heads/main\n%s HEAD\n\nPACK' \
  "$H" "$H" "$H" >"$T/b" && put "$OUT/fuzz_bundle_header" "$T/b"
printf '# v2 git bundle\n%s refs/tags/v1\n%s refs/tags/v1\n\n' "$H" "$H" >"$T/b" &&
  put "$OUT/fuzz_bundle_header" "$T/b"
find "$OUT"/fuzz_rawobj "$OUT"/fuzz_packscan "$OUT"/fuzz_packgraph "$OUT"/fuzz_bundle_header -type f | wc -l
