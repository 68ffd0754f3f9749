#!/usr/bin/env bash
# bench_bundle_thin.sh — incremental bundles (thin packs): mcgit against git
# for the same range, on the same repository, in one run.
#
#   mcgit bundle create --repo R --since SINCE FILE
#   git bundle create FILE HEAD main ^SINCE      (the refs mcgit carries here:
#                                                  HEAD and main; no tags or
#                                                  approval notes in this repo)
#
# The repository: `mcgit init`, FILES (default 3,000) text files of 1-4 KB
# under conf/ in a first signed commit, then 120 really SSH-signed commits
# from bench_history.c, each rewriting three lines of one of 100 files
# data/fNN.txt of 4,000 bytes. Ranges: the last 1, 10 and 100 commits.
# Measured twice: with loose objects as written, then after `git gc` (stored
# deltas, mostly newest-whole, which a thin pack must not copy as they are).
#
#   tests/bench/bench_bundle_thin.sh [FILES]     ROUNDS=5 (best of each kept)
#   BEFORE=path/to/old/mcgit ...                 also the size an older mcgit
#                                                writes for each range
#
# mcgit and git run in alternation, round by round, so that a change in the
# load of a shared machine hits both alike. Each mcgit bundle is checked with
# `git bundle verify` and fetched by git into a clone holding the
# prerequisite. Uses a Release build in build-rel-thin (BUILD=dir for
# another). Not run by ctest. Results go in docs/PERFORMANCE.md, "Thin
# incremental bundles". Target: size <= 1.1x git's.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
FILES=${1:-3000}
ROUNDS=${ROUNDS:-5}
B=${BUILD:-$SRC/build-rel-thin}

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
ratio() { printf '%.2f' "$(echo "$1 / $2" | bc -l)"; }

# ---------------------------------------------------------------- the repository
ssh-keygen -q -t ed25519 -N '' -C op -f "$T/op"
"$MCGIT" init "$T/repo" >/dev/null
python3 - "$T/repo/conf" "$FILES" <<'EOF'
import os, random, sys
out, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(7)
words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
         "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa"]
for i in range(n):
    d = os.path.join(out, "d%02d" % (i % 50))
    os.makedirs(d, exist_ok=True)
    lines = ["%s = %s" % (rnd.choice(words), " ".join(rnd.choice(words) for _ in range(6)))
             for _ in range(rnd.randint(20, 80))]
    with open(os.path.join(d, "c%04d.conf" % i), "w") as f:
        f.write("\n".join(lines) + "\n")
EOF
git -C "$T/repo" add -A
git -C "$T/repo" -c gpg.format=ssh -c user.signingkey="$T/op" commit -q -S -m "initial config"
"$B/tests/bench/bench_history" "$T/repo" 120 "$T/gen" >/dev/null
files=$(git -C "$T/repo" ls-tree -r main | wc -l)
load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo ?)
echo "repository: $(git -C "$T/repo" rev-list --count main) commits, $files files, $(nproc) CPUs, load $load"
echo "best of $ROUNDS alternating rounds"
# The floor of every run: starting the process (mcgit loads libgit2, OpenSSL,
# libcurl, libyaml, jansson, libsodium; git nothing of the kind).
ta=() tb=()
for i in $(seq "$ROUNDS"); do
  t0=$(now); "$MCGIT" version >/dev/null; ta+=("$(echo "$(now) - $t0" | bc -l)")
  t0=$(now); git version >/dev/null; tb+=("$(echo "$(now) - $t0" | bc -l)")
done
printf 'process start (`mcgit version` / `git version`): %.3f s / %.3f s\n' "$(min "${ta[@]}")" "$(min "${tb[@]}")"

measure() { # measure LABEL TAG
  echo
  echo "$1"
  printf '%-10s %10s %10s %7s %10s %10s %7s%s\n' range "mcgit (B)" "git (B)" ratio "mcgit (s)" "git (s)" ratio \
    "${BEFORE:+   before (B)}"
  local n since ta tb i t0 s_mc s_git s_old
  for n in 1 10 100; do
    since=$(git -C "$T/repo" rev-parse "main~$n")
    ta=() tb=()
    for i in $(seq "$ROUNDS"); do
      t0=$(now); "$MCGIT" bundle create -q --repo "$T/repo" --since "$since" "$T/mcgit.bundle"
      ta+=("$(echo "$(now) - $t0" | bc -l)")
      t0=$(now); git -C "$T/repo" bundle create -q "$T/git.bundle" HEAD main "^$since" 2>/dev/null
      tb+=("$(echo "$(now) - $t0" | bc -l)")
    done
    s_mc=$(stat -c %s "$T/mcgit.bundle") s_git=$(stat -c %s "$T/git.bundle")
    git -C "$T/repo" bundle verify -q "$T/mcgit.bundle" >/dev/null 2>&1 ||
      { echo "git rejects mcgit's bundle" >&2; exit 1; }
    rm -rf "$T/clone" && git clone -q --bare --no-local "$T/repo" "$T/clone" &&
      git -C "$T/clone" update-ref refs/heads/main "$since"
    git -C "$T/clone" fetch -q "$T/mcgit.bundle" main:refs/heads/got 2>/dev/null &&
      [ "$(git -C "$T/clone" rev-parse got)" = "$(git -C "$T/repo" rev-parse main)" ] ||
      { echo "git cannot fetch mcgit's bundle" >&2; exit 1; }
    s_old=
    if [ -n "${BEFORE:-}" ]; then
      "$BEFORE" bundle create -q --repo "$T/repo" --since "$since" "$T/old.bundle"
      s_old=$(printf '%13d' "$(stat -c %s "$T/old.bundle")")
    fi
    printf '%-10s %10d %10d %7s %10.3f %10.3f %7s%s\n' "$n commit$([ "$n" = 1 ] || echo s)" \
      "$s_mc" "$s_git" "$(ratio "$s_mc" "$s_git")" "$(min "${ta[@]}")" "$(min "${tb[@]}")" \
      "$(ratio "$(min "${ta[@]}")" "$(min "${tb[@]}")")" "$s_old"
    # run-all.sh's table: the size, which is what a thin bundle is for
    echo "TABLE|thin bundle since main~$n, $2|$s_mc B|git bundle create: $s_git B|$(ratio "$s_mc" "$s_git")|time $(ratio "$(min "${ta[@]}")" "$(min "${tb[@]}")")x (best of $ROUNDS)||"
  done
}

measure "loose objects (as the history was written):" loose
git -C "$T/repo" gc -q
measure "after git gc (one pack):" packed
echo
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo ?)"
