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

. "$SRC/tests/bench/lib.sh"
# pair PREP -- CMD_A... -- CMD_B...: ROUNDS interleaved pairs of A and B (the
# order alternates; PREP, eval'd, before each run, untimed), each run a whole
# process (lib.sh). Sets A and B (median seconds), AC and BC (median CPU
# seconds), AM and BM (median peak RSS, MiB), R and RMM (median per-pair
# ratio A/B and its min–max) and RC (the same for CPU).
pair() {
  local prep=$1 a=() b=() i
  shift 2
  while [ "$1" != -- ]; do a+=("$1"); shift; done
  shift
  b=("$@")
  : >"$T/a.log"; : >"$T/b.log"
  for i in $(seq "$ROUNDS"); do
    if [ $((i % 2)) = 1 ]; then
      eval "$prep"; bench_run "$T/a.log" "${a[@]}"; eval "$prep"; bench_run "$T/b.log" "${b[@]}"
    else
      eval "$prep"; bench_run "$T/b.log" "${b[@]}"; eval "$prep"; bench_run "$T/a.log" "${a[@]}"
    fi
  done
  read -r A _ _ < <(bench_stat 1 "$T/a.log"); read -r B _ _ < <(bench_stat 1 "$T/b.log")
  read -r AC _ _ < <(bench_stat 2 "$T/a.log"); read -r BC _ _ < <(bench_stat 2 "$T/b.log")
  read -r AM _ _ < <(bench_stat 3 "$T/a.log"); read -r BM _ _ < <(bench_stat 3 "$T/b.log")
  AM=$((${AM%.*} / 1024)) BM=$((${BM%.*} / 1024))
  local lo hi
  read -r R lo hi < <(bench_ratios "$T/a.log" "$T/b.log" 1); RMM="$lo–$hi"
  read -r RC lo hi < <(bench_ratios "$T/a.log" "$T/b.log" 2)
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
echo "$ROUNDS interleaved pairs; medians, per-pair ratios; peak RSS median of the runs"

measure() { # measure LABEL
  local empty='rm -rf "$T/dst" && git init -q --bare "$T/dst"'
  pair : -- "$MCGIT" bundle create -q --repo "$T/repo" "$T/mcgit.bundle" -- \
    git -C "$T/repo" bundle create -q "$T/git.bundle" --all
  local t_mc=$A t_git=$B m_mc=$AM m_git=$BM r_c=$R rmm_c=$RMM
  local s_mc s_git
  s_mc=$(stat -c %s "$T/mcgit.bundle") s_git=$(stat -c %s "$T/git.bundle")
  git -C "$T/repo" bundle verify -q "$T/mcgit.bundle" >/dev/null 2>&1 || { echo "git rejects mcgit's bundle" >&2; exit 1; }

  eval "$empty"
  "$MCGIT" bundle import -q --repo "$T/dst" "$T/git.bundle" --trust "$T/trust" >/dev/null
  [ "$(git -C "$T/dst" rev-parse main)" = "$(git -C "$T/repo" rev-parse main)" ] || { echo "mcgit import failed" >&2; exit 1; }
  pair "$empty" -- "$MCGIT" bundle import -q --repo "$T/dst" "$T/git.bundle" --trust "$T/trust" -- \
    git -C "$T/dst" fetch -q "$T/git.bundle" 'refs/heads/*:refs/heads/*'
  local i_mc=$A i_git=$B n_mc=$AM n_git=$BM r_i=$R rmm_i=$RMM rc_i=$RC ic_mc=$AC ic_git=$BC
  pair "$empty" -- "$MCGIT" bundle import -q --repo "$T/dst" "$T/mcgit.bundle" --trust "$T/trust" -- \
    git -C "$T/dst" fetch -q "$T/mcgit.bundle" 'refs/heads/*:refs/heads/*'
  local j_mc=$A j_git=$B r_j=$R

  cat <<EOF

$1 (medians of $ROUNDS interleaved pairs; ratio = median per-pair ratio, min–max)
                              mcgit       git         mcgit/git (target)
bundle create (s)             $(printf '%-11.3f %-11.3f' "$t_mc" "$t_git") $r_c $rmm_c (<= 1.5)
bundle size (bytes)           $(printf '%-11d %-11d' "$s_mc" "$s_git") $(ratio "$s_mc" "$s_git") (<= 1.1)
import vs fetch, git's (s)    $(printf '%-11.3f %-11.3f' "$i_mc" "$i_git") $r_i $rmm_i (<= 1.0)
import vs fetch, CPU (s)      $(printf '%-11.3f %-11.3f' "$ic_mc" "$ic_git") $rc_i (<= 1.5)
import vs fetch, mcgit's (s)  $(printf '%-11.3f %-11.3f' "$j_mc" "$j_git") $r_j
peak RSS create (MiB)         $(printf '%-11d %-11d' "$m_mc" "$m_git")
peak RSS import (MiB)         $(printf '%-11d %-11d' "$n_mc" "$n_git")
EOF
  bench_table "bundle import, $commits commits, $2 (CPU $ic_mc s vs $ic_git s: $rc_i)" "$(printf '%.3f s' "$i_mc")" \
    "git fetch: $(printf '%.3f s, %d MiB' "$i_git" "$n_git")" "$r_i" "$rmm_i" "$n_mc MiB" >>"$T/table"
  bench_table "bundle create, $commits commits, $2" "$(printf '%.3f s' "$t_mc")" \
    "git bundle create: $(printf '%.3f s' "$t_git")" "$r_c" "$rmm_c" "$m_mc MiB" >>"$T/table"
}

: >"$T/table"
measure "loose objects (as the history was written):" "loose"
git -C "$T/repo" gc -q
measure "after git gc (one pack):" "packed"
echo
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo ?)"
cat "$T/table"
