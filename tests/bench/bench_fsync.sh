#!/usr/bin/env bash
# bench_fsync.sh — what libgit2's gitdir fsync (on in every repository mcgit
# writes) costs: the same work with fsync and fdatasync as they are, and with
# both turned into no-ops by an LD_PRELOAD shim (built here with cc), in
# interleaved pairs:
#
#   render  `mcgit render --repo` of N signed commits from scratch (N rendered commits)
#   import  `mcgit bundle import` of those N commits into an empty bare repository
#   push    `git push` of one signed commit to a bare repository with mcgit's
#           pre-receive and post-receive hooks (verify and render on the server)
#
#   tests/bench/bench_fsync.sh [N]     N=100 commits, ROUNDS=5
#
# Configures and builds a Release build in build-release first (BUILD=dir uses
# an already configured build instead). Results go in docs/PERFORMANCE.md,
# "Durable repository writes". The figures depend on the disk above all.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
N=${1:-100}
ROUNDS=${ROUNDS:-5}
B=${BUILD:-$SRC/build-release}
[ -n "${BUILD:-}" ] || cmake -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$B" -j"$(nproc)" --target mcgit >/dev/null 2>&1 || cmake --build "$B" --target mcgit
MCGIT=$B/mcgit
command -v cc >/dev/null || { echo "needs cc for the shim"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/mcgit-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$SRC/tests/bench/lib.sh"

printf '#include <unistd.h>\nint fsync(int fd) { (void)fd; return 0; }\nint fdatasync(int fd) { (void)fd; return 0; }\n' >"$T/nosync.c"
cc -shared -fPIC -o "$T/nosync.so" "$T/nosync.c"
bench_signed_repo "$MCGIT" "$T"
for i in $(seq "$N"); do bench_mc "v$i"; done
git -C "$R" bundle create -q "$T/all.bundle" main 2>/dev/null

# one round of WHAT, fsync on (LOG .on) or off (.off)
round() {
  local what=$1 mode=$2 pre=()
  [ "$mode" = off ] && pre=(env LD_PRELOAD="$T/nosync.so")
  case $what in
    render)
      rm -rf "$T/r.git"; git clone -q --bare "$R" "$T/r.git"
      bench_run "$T/render.$mode" "${pre[@]}" "$MCGIT" render --repo "$T/r.git" --trust "$T/trust" ;;
    import)
      rm -rf "$T/i.git"; git init -q --bare "$T/i.git"
      bench_run "$T/import.$mode" "${pre[@]}" "$MCGIT" bundle import --repo "$T/i.git" "$T/all.bundle" --trust "$T/trust" ;;
    push)
      rm -rf "$T/p.git" "$T/w"; git clone -q --bare "$R" "$T/p.git"
      "$MCGIT" render --repo "$T/p.git" --trust "$T/trust" >/dev/null 2>&1
      "$MCGIT" hook install --repo "$T/p.git" --trust "$T/trust" >/dev/null 2>&1
      git -C "$T/p.git" config mcgit.binary "$MCGIT" # the hook finds this build, not one on PATH
      git clone -q "$T/p.git" "$T/w" 2>/dev/null
      git -C "$T/w" config gpg.format ssh; git -C "$T/w" config user.signingkey "$T/key"
      (R=$T/w; bench_mc "pushed-$mode")
      if [ "$mode" = off ]; then
        bench_run "$T/push.$mode" env LD_PRELOAD="$T/nosync.so" git -C "$T/w" push -q origin main
      else
        bench_run "$T/push.$mode" git -C "$T/w" push -q origin main
      fi ;;
  esac
}
for what in render import push; do
  for r in $(seq "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then round "$what" on; round "$what" off; else round "$what" off; round "$what" on; fi
  done
  read -r on _ _ < <(bench_stat 1 "$T/$what.on")
  read -r off _ _ < <(bench_stat 1 "$T/$what.off")
  read -r ratio lo hi < <(bench_ratios "$T/$what.on" "$T/$what.off" 1)
  work="$what ($N commits)"
  [ "$what" = push ] && work="push of 1 commit (hooks verify, render)"
  bench_table "$work, gitdir fsync on" "$(printf '%.3f s' "$on")" "$(printf 'fsync off: %.3f s' "$off")" "$ratio" "$lo–$hi" ""
done
echo "load: $(bench_load)"
