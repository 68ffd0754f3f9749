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
# commits from bench_history.c, each rewriting three lines of one of 100
# text files of BYTES (default 4,000) bytes: N x BYTES ~ 20 MB of text over the
# history. Measured twice: with loose objects as written, then after `git gc`
# (git can then reuse its stored deltas; libgit2 1.5's packbuilder always
# computes them again).
#
#   tests/bench/bench_bundle.sh [N [BYTES]]     ROUNDS=5 (the best of each is kept)
#
# mcgit and git run in alternation, round by round, so that a change in the
# load of a shared machine hits both alike. Peak memory is the maximum RSS
# (GNU time) of one more run of each. Uses a Release build in build-rel-bundle
# (BUILD=dir for another). Not run by ctest. Results go in
# docs/PERFORMANCE.md, "Bundles". Targets: time <= 1.5x git's, size <= 1.1x.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
N=${1:-5000}
BYTES=${2:-4000}
ROUNDS=${ROUNDS:-5}
B=${BUILD:-$SRC/build-rel-bundle}

[ -f "$B/CMakeCache.txt" ] || cmake -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$B" -j2 --target mcgit bench_history >/dev/null
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
# pair PREP -- CMD_A... -- CMD_B...: ROUNDS alternating timed runs of A and B
# (PREP, eval'd, before each); sets A and B to the fastest of each, in seconds.
pair() {
  local prep=$1 a=() b=() ta=() tb=() i t0
  shift 2
  while [ "$1" != -- ]; do a+=("$1"); shift; done
  shift
  b=("$@")
  for i in $(seq "$ROUNDS"); do
    eval "$prep"; t0=$(now); "${a[@]}" >/dev/null 2>&1; ta+=("$(echo "$(now) - $t0" | bc -l)")
    eval "$prep"; t0=$(now); "${b[@]}" >/dev/null 2>&1; tb+=("$(echo "$(now) - $t0" | bc -l)")
  done
  A=$(min "${ta[@]}") B=$(min "${tb[@]}")
}
# peak PREP -- CMD...: maximum RSS of one run, in MiB.
peak() {
  local prep=$1
  shift 2
  eval "$prep"
  /usr/bin/time -f %M -o "$T/rss" "$@" >/dev/null 2>&1
  echo $(($(tail -1 "$T/rss") / 1024))
}
ratio() { printf '%.2f' "$(echo "$1 / $2" | bc -l)"; }

# ---------------------------------------------------------------- the repository
ssh-keygen -q -t ed25519 -N '' -C op -f "$T/op"
echo "op@example.com $(cut -d' ' -f1,2 "$T/op.pub")" >"$T/trust"
"$MCGIT" init "$T/repo" >/dev/null
git -C "$T/repo" add -A
git -C "$T/repo" -c gpg.format=ssh -c user.signingkey="$T/op" commit -q -S -m "initial config"
"$B/tests/bench/bench_history" --bytes "$BYTES" "$T/repo" "$N" "$T/gen" >/dev/null
cat "$T/gen" >>"$T/trust"
commits=$(git -C "$T/repo" rev-list --count main)
text=$(git -C "$T/repo" rev-list --objects main | cut -d' ' -f1 |
  git -C "$T/repo" cat-file --batch-check='%(objecttype) %(objectsize)' |
  awk '$1 == "blob" { s += $2 } END { print s }')
load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo ?)
echo "repository: $commits commits, $((text / 1000000)) MB of text (blob bytes over the history), $(nproc) CPUs, load $load"
echo "best of $ROUNDS alternating rounds; peak RSS of one more run"

measure() { # measure LABEL
  local empty='rm -rf "$T/dst" && git init -q --bare "$T/dst"'
  pair : -- "$MCGIT" bundle create -q --repo "$T/repo" "$T/mcgit.bundle" -- \
    git -C "$T/repo" bundle create -q "$T/git.bundle" --all
  local t_mc=$A t_git=$B
  local m_mc m_git
  m_mc=$(peak : -- "$MCGIT" bundle create -q --repo "$T/repo" "$T/mcgit.bundle")
  m_git=$(peak : -- git -C "$T/repo" bundle create -q "$T/git.bundle" --all)
  local s_mc s_git
  s_mc=$(stat -c %s "$T/mcgit.bundle") s_git=$(stat -c %s "$T/git.bundle")
  git -C "$T/repo" bundle verify -q "$T/mcgit.bundle" >/dev/null 2>&1 || { echo "git rejects mcgit's bundle" >&2; exit 1; }

  pair "$empty" -- "$MCGIT" bundle import -q --repo "$T/dst" "$T/git.bundle" --trust "$T/trust" -- \
    git -C "$T/dst" fetch -q "$T/git.bundle" 'refs/heads/*:refs/heads/*'
  local i_mc=$A i_git=$B
  eval "$empty"
  "$MCGIT" bundle import -q --repo "$T/dst" "$T/git.bundle" --trust "$T/trust" >/dev/null
  [ "$(git -C "$T/dst" rev-parse main)" = "$(git -C "$T/repo" rev-parse main)" ] || { echo "mcgit import failed" >&2; exit 1; }
  local n_mc n_git
  n_mc=$(peak "$empty" -- "$MCGIT" bundle import -q --repo "$T/dst" "$T/git.bundle" --trust "$T/trust")
  n_git=$(peak "$empty" -- git -C "$T/dst" fetch -q "$T/git.bundle" 'refs/heads/*:refs/heads/*')
  pair "$empty" -- "$MCGIT" bundle import -q --repo "$T/dst" "$T/mcgit.bundle" --trust "$T/trust" -- \
    git -C "$T/dst" fetch -q "$T/mcgit.bundle" 'refs/heads/*:refs/heads/*'
  local j_mc=$A j_git=$B

  cat <<EOF

$1
                              mcgit       git         mcgit/git (target)
bundle create (s)             $(printf '%-11.3f %-11.3f' "$t_mc" "$t_git") $(ratio "$t_mc" "$t_git") (<= 1.5)
bundle size (bytes)           $(printf '%-11d %-11d' "$s_mc" "$s_git") $(ratio "$s_mc" "$s_git") (<= 1.1)
import vs fetch, git's (s)    $(printf '%-11.3f %-11.3f' "$i_mc" "$i_git") $(ratio "$i_mc" "$i_git") (<= 1.5)
import vs fetch, mcgit's (s)  $(printf '%-11.3f %-11.3f' "$j_mc" "$j_git") $(ratio "$j_mc" "$j_git")
peak RSS create (MiB)         $(printf '%-11d %-11d' "$m_mc" "$m_git")
peak RSS import (MiB)         $(printf '%-11d %-11d' "$n_mc" "$n_git")
EOF
}

measure "loose objects (as the history was written):"
git -C "$T/repo" gc -q
measure "after git gc (one pack):"
echo
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo ?)"
