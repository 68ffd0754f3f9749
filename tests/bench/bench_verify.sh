#!/usr/bin/env bash
# bench_verify.sh — verify a long SSH-signed history three ways, in one run:
#
#   mcgit   `mcgit verify` over every commit (libgit2 + libsodium, in process)
#   git     `git log --show-signature` over the same commits (ssh-keygen per commit)
#   raw     one libsodium crypto_sign_verify_detached + one SHA-512 per commit
#           (tests/bench/bench_crypto.c): the floor
#
# and print the ratios git/mcgit (target >= 100) and mcgit/raw (target <= 3).
# The history (N commits, default 10,000) is written by bench_history.c with
# real SSHSIG ed25519 signatures; the run fails unless mcgit and git both call
# every commit good.
#
#   tests/bench/bench_verify.sh [N]        ROUNDS=5 (timed runs of mcgit and the floor)
#
# Configures and builds a Release build in build-release first (BUILD=dir uses
# an already configured build instead). Not run by ctest. Results go in
# docs/PERFORMANCE.md, "Signature verification".
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
N=${1:-10000}
ROUNDS=${ROUNDS:-5}
B=${BUILD:-$SRC/build-release}

[ -n "${BUILD:-}" ] || cmake -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$B" -j"$(nproc)" --target mcgit bench_history bench_crypto >/dev/null 2>&1 ||
  cmake --build "$B" --target mcgit bench_history bench_crypto
MCGIT=$B/mcgit

T=$(mktemp -d "${TMPDIR:-/tmp}/mcgit-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
export HOME="$T/home" GIT_CONFIG_NOSYSTEM=1 LC_ALL=C TZ=UTC
mkdir -p "$HOME"
git config --global user.name Bench
git config --global user.email bench@example.com
git config --global init.defaultBranch main

# seconds since the epoch, with nanoseconds
now() { date +%s.%N; }
elapsed() { echo "$2 - $1" | bc -l; }
min() { printf '%s\n' "$@" | sort -g | head -1; }

# ---------------------------------------------------------------- history
R=$T/repo
"$MCGIT" init "$R" >/dev/null 2>&1
git -C "$R" add -A
t0=$(now)
# One small file rewritten per commit, all in one pack: the cost is the signatures.
tip=$("$B/tests/bench/bench_history" --pack --files 1 --bytes 60 "$R" "$N" "$T/signers")
t1=$(now)
printf 'history: %d signed commits (ed25519, SSHSIG sha512, one pack) in %.1f s, tip %s\n' \
  "$N" "$(elapsed "$t0" "$t1")" "${tip:0:12}"

# ---------------------------------------------------------------- mcgit and raw
# Alternating rounds, so a noisy neighbour slows both alike; the best of each.
"$MCGIT" verify --repo "$R" --trust "$T/signers" >"$T/mcgit.out"
good=$(grep -c '^good ' "$T/mcgit.out" || true)
[ "$good" = "$N" ] || { echo "mcgit verify: $good of $N good" >&2; exit 1; }
runs=() raws=()
for _ in $(seq "$ROUNDS"); do
  t0=$(now); "$MCGIT" verify --repo "$R" --trust "$T/signers" >/dev/null; t1=$(now)
  runs+=("$(elapsed "$t0" "$t1")")
  raw=$("$B/tests/bench/bench_crypto" "$N" 1)
  raw=${raw#raw_seconds=}; raws+=("${raw%% *}")
done
mcgit_s=$(min "${runs[@]}")
raw_s=$(min "${raws[@]}")

# ---------------------------------------------------------------- git
t0=$(now)
git -C "$R" -c gpg.ssh.allowedSignersFile="$T/signers" log --show-signature main >"$T/git.out" 2>&1
t1=$(now)
git_s=$(elapsed "$t0" "$t1")
good=$(grep -c '^Good "git" signature for bench@example.com' "$T/git.out" || true)
[ "$good" = "$N" ] || { echo "git log --show-signature: $good of $N good" >&2; exit 1; }

# ---------------------------------------------------------------- report
per() { echo "$1 * 1000000 / $N" | bc -l; }
printf '\n%-34s %10s %14s\n' "verify $N commits" "seconds" "per commit µs"
printf '%-34s %10.3f %14.1f\n' "mcgit verify (best of $ROUNDS)" "$mcgit_s" "$(per "$mcgit_s")"
printf '%-34s %10.3f %14.1f\n' "git log --show-signature" "$git_s" "$(per "$git_s")"
printf '%-34s %10.3f %14.1f\n' "libsodium verify + SHA-512 (best)" "$raw_s" "$(per "$raw_s")"
speedup=$(echo "$git_s / $mcgit_s" | bc -l)
overhead=$(echo "$mcgit_s / $raw_s" | bc -l)
printf '\ngit / mcgit = %.0fx (target >= 100x)\nmcgit / raw = %.2fx (target <= 3x)\n' "$speedup" "$overhead"
printf 'machine: %s, %s cpus; %s; %s; libgit2 %s; libsodium %s\n' \
  "$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)" "$(nproc)" \
  "$(git --version)" "$(ssh -V 2>&1 | cut -d, -f1)" \
  "$(pkg-config --modversion libgit2 2>/dev/null)" "$(pkg-config --modversion libsodium 2>/dev/null)"
ok=0
[ "$(echo "$speedup >= 100" | bc)" = 1 ] || { echo "below target: git/mcgit < 100" >&2; ok=1; }
[ "$(echo "$overhead <= 3" | bc)" = 1 ] || { echo "below target: mcgit/raw > 3" >&2; ok=1; }
exit $ok
