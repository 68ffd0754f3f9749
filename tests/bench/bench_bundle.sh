#!/usr/bin/env bash
# bench_bundle.sh — mcgit bundles against git's, on the same repository, in one run:
#
#   create   `mcgit bundle create --repo R FILE`  vs  `git bundle create FILE --all`
#   import   `mcgit bundle import` into an empty repo (index into a quarantine,
#            connectivity, every signature, fast-forward, render)  vs
#            `git fetch FILE 'refs/heads/*:refs/heads/*'` into an empty repo
#            (index-pack, connectivity), both from git's bundle
#   size     the two bundle files
#
# The repository: `mcgit init`, then N (default 5,000) really SSH-signed
# commits from bench_gen_history.c, each rewriting three lines of one of 100
# text files of BYTES (default 4,000) bytes: N x BYTES ~ 20 MB of text over the
# history. Loose objects as written; with PACKED=1 `git gc` first (git can
# then reuse its stored deltas; libgit2's packbuilder always recomputes them).
#
#   tests/bench/bench_bundle.sh [N [BYTES]]     ROUNDS=3 (the best of each is kept)
#
# Uses a Release build in build-rel-bundle (BUILD=dir for another). Not run by
# ctest. Results go in docs/PERFORMANCE.md, "Bundles". Targets: time <= 1.5x
# git's, size <= 1.1x.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
N=${1:-5000}
BYTES=${2:-4000}
ROUNDS=${ROUNDS:-3}
B=${BUILD:-$SRC/build-rel-bundle}

[ -f "$B/CMakeCache.txt" ] || cmake -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$B" -j"$(nproc)" --target mcgit bench_gen_history >/dev/null
MCGIT=$B/mcgit

T=$(mktemp -d "${TMPDIR:-/tmp}/mcgit-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
export HOME="$T/home" GIT_CONFIG_NOSYSTEM=1 LC_ALL=C TZ=UTC
export GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z"
mkdir -p "$HOME"
git config --global user.name Bench
git config --global user.email bench@example.com
git config --global init.defaultBranch main

now() { date +%s.%N; }
min() { printf '%s\n' "$@" | sort -g | head -1; }
# best CMD...: the fastest of ROUNDS runs, in seconds; $PREP runs before each.
best() {
  local times=() i t0
  for i in $(seq "$ROUNDS"); do
    eval "${PREP:-:}"
    t0=$(now)
    "$@" >/dev/null 2>&1
    times+=("$(echo "$(now) - $t0" | bc -l)")
  done
  min "${times[@]}"
}

# ---------------------------------------------------------------- the repository
ssh-keygen -q -t ed25519 -N '' -C op -f "$T/op"
echo "op@example.com $(cut -d' ' -f1,2 "$T/op.pub")" >"$T/trust"
"$MCGIT" init "$T/repo" >/dev/null
git -C "$T/repo" add -A
git -C "$T/repo" -c gpg.format=ssh -c user.signingkey="$T/op" commit -q -S -m "initial config"
"$B/tests/bench/bench_gen_history" "$T/repo" "$N" "$BYTES" "$T/gen"
cat "$T/gen" >>"$T/trust"
[ -n "${PACKED:-}" ] && git -C "$T/repo" gc -q
commits=$(git -C "$T/repo" rev-list --count main)
text=$(git -C "$T/repo" rev-list --objects main | cut -d' ' -f1 |
  git -C "$T/repo" cat-file --batch-check='%(objecttype) %(objectsize)' |
  awk '$1 == "blob" { s += $2 } END { print s }')

# ---------------------------------------------------------------- create
t_mc=$(best "$MCGIT" bundle create --repo "$T/repo" "$T/mcgit.bundle")
t_git=$(best git -C "$T/repo" bundle create -q "$T/git.bundle" --all)
s_mc=$(stat -c %s "$T/mcgit.bundle")
s_git=$(stat -c %s "$T/git.bundle")
git -C "$T/repo" bundle verify -q "$T/mcgit.bundle" >/dev/null 2>&1 || { echo "git rejects mcgit's bundle" >&2; exit 1; }

# ---------------------------------------------------------------- import
PREP='rm -rf "$T/dst" && git init -q --bare "$T/dst"'
i_mc=$(best "$MCGIT" bundle import --repo "$T/dst" "$T/git.bundle" --trust "$T/trust")
[ "$(git -C "$T/dst" rev-parse main)" = "$(git -C "$T/repo" rev-parse main)" ] || { echo "mcgit import failed" >&2; exit 1; }
i_git=$(best git -C "$T/dst" fetch -q "$T/git.bundle" 'refs/heads/*:refs/heads/*')
i_mc2=$(best "$MCGIT" bundle import --repo "$T/dst" "$T/mcgit.bundle" --trust "$T/trust")
PREP=

ratio() { printf '%.2f' "$(echo "$1 / $2" | bc -l)"; }
load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo ?)
cat <<EOF
repository: $commits commits, $((text / 1000000)) MB of text (blob bytes over the history), $(nproc) CPUs (load $load)${PACKED:+, packed (git gc)}
                       mcgit       git         mcgit/git (target)
bundle create (s)      $(printf '%-11.3f %-11.3f' "$t_mc" "$t_git") $(ratio "$t_mc" "$t_git") (<= 1.5)
bundle size (bytes)    $(printf '%-11d %-11d' "$s_mc" "$s_git") $(ratio "$s_mc" "$s_git") (<= 1.1)
import vs fetch (s)    $(printf '%-11.3f %-11.3f' "$i_mc" "$i_git") $(ratio "$i_mc" "$i_git") (<= 1.5)   (git's bundle)
import mcgit's (s)     $(printf '%-11.3f' "$i_mc2")
EOF
