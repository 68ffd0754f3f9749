#!/usr/bin/env bash
# bench_verify.sh — verify a long SSH-signed history three ways, in one run:
#
#   mcgit   `mcgit verify` over every commit (libgit2 + libsodium, in process)
#   git     `git log --show-signature` over the same commits (ssh-keygen per commit)
#   raw     one libsodium crypto_sign_verify_detached + one SHA-512 per commit
#           (tests/bench/bench_crypto.c): the floor
#
# and print the ratios git/mcgit (target >= 100) and mcgit/raw (target <= 1.0,
# which takes both cores), as medians of interleaved per-pair ratios.
# The history (N commits, default 10,000) is written by bench_history.c with
# real SSHSIG ed25519 signatures; the run fails unless mcgit and git both call
# every commit good.
#
#   tests/bench/bench_verify.sh [N]        ROUNDS=5 (pairs mcgit + floor), GIT_ROUNDS=3 (pairs mcgit + git;
#                                          0: none, only the floor is compared)
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

. "$SRC/tests/bench/lib.sh"
now() { date +%s.%N; }
elapsed() { echo "$2 - $1" | bc -l; }

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

# ---------------------------------------------------------------- mcgit, raw, git
# Interleaved pairs (the order alternates), each side timed the same way as
# a whole process (lib.sh) — except raw, whose own timer covers only its
# verification pass (not its start-up nor the signing it does first): that
# is the floor, and mcgit's start-up counts against mcgit. Caches: every
# side reads the same repository, which one untimed run of each warms.
"$MCGIT" verify --repo "$R" --trust "$T/signers" >"$T/mcgit.out"
good=$(grep -c '^good ' "$T/mcgit.out" || true)
[ "$good" = "$N" ] || { echo "mcgit verify: $good of $N good" >&2; exit 1; }
GIT_ROUNDS=${GIT_ROUNDS:-3}
gitlog() { git -C "$R" -c gpg.ssh.allowedSignersFile="$T/signers" log --show-signature main; }
gitlog >"$T/git.out" 2>&1
good=$(grep -c '^Good "git" signature for bench@example.com' "$T/git.out" || true)
[ "$good" = "$N" ] || { echo "git log --show-signature: $good of $N good" >&2; exit 1; }
raw() { # appends "seconds 0 0" (the in-process pass) to $1
  local out
  out=$("$B/tests/bench/bench_crypto" "$N" 1)
  out=${out#raw_seconds=}; echo "${out%% *} 0 0" >>"$1"
}
: >"$T/m.log"; : >"$T/r.log"; : >"$T/mg.log"; : >"$T/g.log"
for i in $(seq "$ROUNDS"); do
  if [ $((i % 2)) = 1 ]; then
    bench_run "$T/m.log" "$MCGIT" verify --repo "$R" --trust "$T/signers"; raw "$T/r.log"
  else
    raw "$T/r.log"; bench_run "$T/m.log" "$MCGIT" verify --repo "$R" --trust "$T/signers"
  fi
done
for i in $(seq "$GIT_ROUNDS"); do
  if [ $((i % 2)) = 1 ]; then
    bench_run "$T/mg.log" "$MCGIT" verify --repo "$R" --trust "$T/signers"
    bench_run "$T/g.log" git -C "$R" -c gpg.ssh.allowedSignersFile="$T/signers" log --show-signature main
  else
    bench_run "$T/g.log" git -C "$R" -c gpg.ssh.allowedSignersFile="$T/signers" log --show-signature main
    bench_run "$T/mg.log" "$MCGIT" verify --repo "$R" --trust "$T/signers"
  fi
done
read -r mcgit_s _ _ < <(bench_stat 1 "$T/m.log")
read -r mcgit_cpu _ _ < <(bench_stat 2 "$T/m.log")
read -r mcgit_kb _ _ < <(bench_stat 3 "$T/m.log")
read -r raw_s _ _ < <(bench_stat 1 "$T/r.log")
read -r git_s _ _ < <(bench_stat 1 "$T/g.log")
read -r r_med r_min r_max < <(bench_ratios "$T/m.log" "$T/r.log" 1)
read -r g_med g_min g_max < <(bench_ratios "$T/g.log" "$T/mg.log" 1)
paste -d' ' <(awk '{print $2}' "$T/m.log") <(awk '{print $1}' "$T/r.log") | awk '{print $1 / $2}' >"$T/cpu.ratio"
read -r c_med _ _ < <(bench_stat 1 "$T/cpu.ratio")

# ---------------------------------------------------------------- report
per() { echo "$1 * 1000000 / $N" | bc -l; }
printf '\n%-34s %10s %14s\n' "verify $N commits (medians)" "seconds" "per commit µs"
printf '%-34s %10.3f %14.1f\n' "mcgit verify ($ROUNDS runs)" "$mcgit_s" "$(per "$mcgit_s")"
printf '%-34s %10.3f %14.1f\n' "git log --show-signature ($GIT_ROUNDS)" "$git_s" "$(per "$git_s")"
printf '%-34s %10.3f %14.1f\n' "libsodium verify + SHA-512 ($ROUNDS)" "$raw_s" "$(per "$raw_s")"
printf '\nmcgit / raw = %s (per-pair min %s, max %s; target <= 1.0); CPU / raw = %.2f\n' "$r_med" "$r_min" "$r_max" "$c_med"
printf 'git / mcgit = %s (per-pair min %s, max %s; target >= 100); mcgit peak RSS %d MiB\n' "$g_med" "$g_min" "$g_max" $((mcgit_kb / 1024))
printf 'load average %s\n' "$(bench_load)"
printf 'machine: %s, %s cpus; %s; %s; libgit2 %s; libsodium %s\n' \
  "$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)" "$(nproc)" \
  "$(git --version)" "$(ssh -V 2>&1 | cut -d, -f1)" \
  "$(pkg-config --modversion libgit2 2>/dev/null)" "$(pkg-config --modversion libsodium 2>/dev/null)"
bench_table "verify $N signed commits (CPU $(printf '%.2f' "$mcgit_cpu") s)" "$(printf '%.3f s' "$mcgit_s")" \
  "raw ed25519 + SHA-512, one core: $(printf '%.3f s' "$raw_s")" "$r_med" "$r_min–$r_max" "$((mcgit_kb / 1024)) MiB"
ok=0
if [ "$GIT_ROUNDS" -gt 0 ]; then  # GIT_ROUNDS=0: the floor only, no git pairs
  read -r gm_s _ _ < <(bench_stat 1 "$T/mg.log")
  gi_med=$(echo "1 / $g_med" | bc -l)
  bench_table "verify $N signed commits" "$(printf '%.3f s' "$gm_s")" \
    "git log --show-signature: $(printf '%.1f s' "$git_s")" "$(printf '%.4f (git %.0fx slower)' "$gi_med" "$g_med")" \
    "$(printf '%.4f–%.4f' "$(echo "1 / $g_max" | bc -l)" "$(echo "1 / $g_min" | bc -l)")" ""
  [ "$(echo "$g_med >= 100" | bc)" = 1 ] || { echo "below target: git/mcgit < 100" >&2; ok=1; }
fi
[ "$(echo "$r_med <= 1.0" | bc)" = 1 ] || { echo "below target: mcgit/raw > 1.0" >&2; ok=1; }
exit $ok
