# tests/bench/lib.sh — what the benchmarks share (source it). See README.md.
#
#   bench_run LOG CMD...      run CMD as a whole process, timed by the shell
#                             (bash's EPOCHREALTIME: no process start-up of a
#                             timer inside the timing) and by GNU time; appends
#                             "wall cpu rss_kib" to LOG (cpu = user + system)
#   bench_stat COL LOG        "median min max" of column COL of LOG
#   bench_ratios A B COL      per-pair ratios A[i]/B[i] of column COL of two
#                             logs written in the same interleaved loop:
#                             "median min max"
#   bench_table WORK MCGIT PEER RATIO MINMAX RSS
#                             print one row for tests/bench/run-all.sh:
#                             TABLE|work|mcgit|peer|ratio|min–max|peak RSS
#   bench_load                the 1-, 5- and 15-minute load average
#   bench_signed_repo M DIR   a signing identity (DIR/key, its allowed_signers
#                             line in DIR/trust, HOME=DIR/home with git's user
#                             and branch config) and a config repo R=DIR/cfg
#                             made by `M init` that signs with the key
#   bench_mc V                commit (signed) a one-file worker MachineConfig
#                             in R whose /etc/bench.conf holds V
#
# Pairs are interleaved (mcgit and its peer alternate which goes first) and a
# ratio is the median of the per-pair ratios, with their min and max: the two
# sides of a pair ran back to back under the same load.

[ -x /usr/bin/time ] || { echo "needs GNU time (/usr/bin/time)" >&2; exit 2; }

bench_run() {
  local log=$1 t0 t1 rc=0
  shift
  t0=$EPOCHREALTIME
  /usr/bin/time -f '%U %S %M' -o "$log.time" "$@" >/dev/null 2>"$log.err" || rc=$?
  t1=$EPOCHREALTIME
  [ "$rc" = 0 ] || { echo "failed ($rc): $*" >&2; cat "$log.err" >&2; return "$rc"; }
  read -r u s m <"$log.time"
  awk -v a="$t0" -v b="$t1" -v u="$u" -v s="$s" -v m="$m" \
    'BEGIN {printf "%.6f %.3f %d\n", b - a, u + s, m}' >>"$log"
}

bench_stat() {
  awk -v c="$1" '{print $c}' "$2" | sort -g |
    awk '{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
      print m, v[1], v[NR]}'
}

bench_ratios() {
  paste -d' ' <(awk -v c="$3" '{print $c}' "$1") <(awk -v c="$3" '{print $c}' "$2") |
    awk '$2 > 0 {print $1 / $2}' | sort -g |
    awk '{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
      printf "%.3g %.3g %.3g\n", m, v[1], v[NR]}'
}

bench_table() {
  printf 'TABLE|%s|%s|%s|%s|%s|%s\n' "$1" "$2" "$3" "$4" "$5" "$6"
}

bench_load() {
  cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo ?
}

bench_signed_repo() {
  local m=$1 dir=$2
  export HOME="$dir/home" GIT_CONFIG_NOSYSTEM=1 LC_ALL=C TZ=UTC
  mkdir -p "$HOME"
  git config --global user.name Bench; git config --global user.email b@example.com
  git config --global init.defaultBranch main
  ssh-keygen -q -t ed25519 -N '' -f "$dir/key"
  echo "b@example.com $(cut -d' ' -f1,2 "$dir/key.pub")" >"$dir/trust"
  R=$dir/cfg
  "$m" init "$R" >/dev/null 2>&1
  git -C "$R" config gpg.format ssh; git -C "$R" config user.signingkey "$dir/key"
}

bench_mc() {
  mkdir -p "$R/machineconfigs"
  cat >"$R/machineconfigs/10-w.yaml" <<MC
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 10-w
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  config:
    ignition:
      version: 3.4.0
    storage:
      files:
      - path: /etc/bench.conf
        contents:
          source: data:,$1
MC
  git -C "$R" add -A; git -C "$R" commit -qS -m "$1"
}
