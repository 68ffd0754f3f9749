#!/usr/bin/env bash
# Agent benchmark: apply a rendered config vs `cp -a` + `sync` of the same
# files, and a drift check of them vs `sha256sum` (and `cat`), with peak
# memory, on the configs a user can make: "typical" (30 files, 5 units) and
# "largest" (about 1.2 MiB of files, its rendered spec just under the
# 1.5 MiB the renderer accepts), both made by gen_configs.py --agent and
# rendered by mcgit's own renderer. Needs a Release build (BUILD, default
# build-release).
#   tests/bench/bench_agent.sh [BUILD]
#   BENCH_BEFORE=DIR   a second build (e.g. of the branch point), measured in
#                      the same interleaved runs: its rows and after/before
#                      ratios are printed too
#   BENCH_RUNS=N       runs per config (default 9); BENCH_CONFIGS="typical largest"
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRC/tests/bench/lib.sh"
BUILD=${1:-${BUILD:-$SRC/build-release}}
BENCH=$BUILD/tests/bench/bench_agent
BEFORE=${BENCH_BEFORE:-}
[ -x "$BENCH" ] || { echo "no $BENCH: cmake -B $BUILD -DCMAKE_BUILD_TYPE=Release && cmake --build $BUILD" >&2; exit 2; }
[ -z "$BEFORE" ] || [ -x "$BEFORE/tests/bench/bench_agent" ] || { echo "no $BEFORE/tests/bench/bench_agent" >&2; exit 2; }
RUNS=${BENCH_RUNS:-9}
CONFIGS=${BENCH_CONFIGS:-typical largest}
T=$(mktemp -d "${TMPDIR:-/tmp}/mcgit-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
export LC_ALL=C
LOAD0=$(bench_load)

# peak_kb FILE: "Maximum resident set size" from a /usr/bin/time -v log.
peak_kb() { awk -F: '/Maximum resident set size/ {gsub(/ /,"",$2); print $2}' "$1"; }
# children_cpu: user + system seconds of this shell's finished children so
# far (getrusage, finer than /usr/bin/time's 10 ms; `times` is read in this
# shell, not in a command substitution's subshell)
children_cpu() {
  times >"$T/times"
  sed -n 2p "$T/times" | awk '{gsub(/s/, ""); split($1, u, "m"); split($2, s, "m"); printf "%.6f", u[1] * 60 + u[2] + s[1] * 60 + s[2]}'
}
val() { awk -v k="$1" '$1 == k {print $2}' "$2"; } # val KEY FILE: "KEY value" line of a bench output
# The shell's own clock: no process start-up inside a timing. The agent's
# side is timed in its process (bench_agent.c); each peer's figure is its
# whole process minus the median cost of starting one (EXEC, `true` timed
# the same way), so both are the work alone.
exec_cost() {
  local i t0 v=()
  for i in 1 2 3 4 5 6 7; do t0=$EPOCHREALTIME; /bin/true; v+=("$(echo "$EPOCHREALTIME - $t0" | bc -l)"); done
  printf '%s\n' "${v[@]}" | sort -g | sed -n 4p
}
EXEC=$(exec_cost)
since() { echo "$EPOCHREALTIME - $1 - $EXEC" | bc -l; } # seconds since $1, less one start-up

# One config: every run writes into new directories and nothing is deleted
# until the end (ext4 skips inodes freed in the last minutes when it
# allocates new ones, so a tree deleted just before a measurement slows
# whatever is measured next). The sides take turns going first.
bench_config() {
  local w=$1 r b sides
  python3 "$SRC/tests/bench/gen_configs.py" "$T/$w" --agent "$w"
  "$BUILD/mcgit" render "$T/$w" -o names >/dev/null # the product accepts it
  "$BENCH" spec "$T/$w" "$T/$w.json" >"$T/$w.spec"
  mkdir -p "$T/src.$w"
  "$BENCH" apply "$T/src.$w" "$T/$w.json" >/dev/null # the peers' copy of the files
  (cd "$T/src.$w" && find etc -type f -print0 | sort -z >"$T/$w.list")
  sides="after"
  [ -z "$BEFORE" ] || sides="after before"
  : >"$T/$w.runs"
  for r in $(seq 1 "$RUNS"); do
    EXEC=$(exec_cost) # again each run: the load changes
    declare -A v=()
    measure_cp() {
      sync
      local t0 c0 c1
      children_cpu >"$T/cpu0"
      t0=$EPOCHREALTIME
      cp -a "$T/src.$w/etc" "$T/cp.$w.$r"
      sync
      v[cp]=$(echo "$(since "$t0") - $EXEC" | bc -l) # two processes
      children_cpu >"$T/cpu1"
      c0=$(cat "$T/cpu0"); c1=$(cat "$T/cpu1")
      v[cp_cpu]=$(echo "$c1 - $c0" | bc -l)
    }
    measure_apply() { # SIDE: that build applying the config into an empty root
      local s=$1 bin=$BENCH
      [ "$s" = after ] || bin=$BEFORE/tests/bench/bench_agent
      mkdir -p "$T/root.$w.$s.$r"; sync
      "$bin" apply "$T/root.$w.$s.$r" "$T/$w.json" >"$T/apply.out"
      v[${s}_apply]=$(val apply_seconds "$T/apply.out")
      v[${s}_cpu]=$(val apply_cpu_seconds "$T/apply.out")
      v[${s}_parse]=$(val parse_seconds "$T/apply.out")
      v[${s}_kb]=$(val apply_peak_rss_kib "$T/apply.out")
      v[${s}_jr]=$(val json_reader_seconds "$T/apply.out")
      v[${s}_jj]=$(val json_jansson_seconds "$T/apply.out")
      "$bin" spec "$T/$w" "$T/$w.$s.json" >"$T/spec.out"
      cmp -s "$T/$w.json" "$T/$w.$s.json" || { echo "bench_agent: the builds render different specs" >&2; exit 1; }
      v[${s}_name]=$(val render_name_seconds "$T/spec.out")
    }
    measure_drift() { # SIDE: cold (load + parse + compare), warm (the loop's steady state)
      local s=$1 bin=$BENCH
      [ "$s" = after ] || bin=$BEFORE/tests/bench/bench_agent
      /usr/bin/time -v -o "$T/drift.time" "$bin" drift "$T/root.$w.$s.$r" 3 >"$T/drift.out"
      v[${s}_cold]=$(val drift_cold_seconds "$T/drift.out")
      v[${s}_warm]=$(val drift_warm_seconds "$T/drift.out")
      v[${s}_dkb]=$(peak_kb "$T/drift.time")
    }
    measure_read() { # sha256sum and cat of the same files (cat: the floor of reading them): the
      # median of 5 back to back, each less the cost of starting a process
      local i t0 files=() sha=() cat=()
      mapfile -d '' files <"$T/$w.list"
      files=("${files[@]/#/$T/root.$w.after.$r/}")
      for i in 1 2 3 4 5; do
        t0=$EPOCHREALTIME; sha256sum -- "${files[@]}" >/dev/null; sha+=("$(since "$t0")")
        t0=$EPOCHREALTIME; cat -- "${files[@]}" >/dev/null; cat+=("$(since "$t0")")
      done
      v[sha]=$(printf '%s\n' "${sha[@]}" | sort -g | sed -n 3p)
      v[cat]=$(printf '%s\n' "${cat[@]}" | sort -g | sed -n 3p)
    }
    if [ $((r % 2)) = 1 ]; then
      measure_cp; for b in $sides; do measure_apply "$b"; done
      for b in $sides; do measure_drift "$b"; done; measure_read
    else
      for b in $(echo "$sides" | tr ' ' '\n' | tac); do measure_apply "$b"; done; measure_cp
      measure_read; for b in $(echo "$sides" | tr ' ' '\n' | tac); do measure_drift "$b"; done
    fi
    for b in "${!v[@]}"; do printf '%s=%s ' "$b" "${v[$b]}"; done >>"$T/$w.runs"
    echo >>"$T/$w.runs"
    unset v
  done
  python3 - "$w" "$T/$w.runs" "$T/$w.spec" "$BEFORE" <<'PY'
import statistics, sys
w, runs, spec, before = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
rows = [dict(kv.split("=") for kv in line.split()) for line in open(runs) if line.strip()]
rows = [{k: float(x) for k, x in r.items()} for r in rows]
info = dict(line.split(None, 1) for line in open(spec))
med = lambda k: statistics.median(r[k] for r in rows)
def ratio(a, b):
    q = sorted(r[a] / r[b] for r in rows if r[b] > 0)
    if not q:
        return "", ""
    return "%.3g" % statistics.median(q), "%.3g–%.3g" % (q[0], q[-1])
def t(k):
    x = med(k)
    return "%.1f ms" % (x * 1e3) if x < 1 else "%.3f s" % x
def row(work, a, peer, b, rss=""):
    rr, mm = ratio(a, b)
    print("TABLE|%s|%s|%s: %s|%s|%s|%s" % (work, t(a), peer, t(b), rr, mm, rss))
mib = lambda k: "%.1f MiB" % (max(r[k] for r in rows) / 1024)
what = "%s, %d files (%.0f KiB), %d units, spec %.0f KiB" % (
    w, int(info["files"]), int(info["decoded_bytes"]) / 1024, int(info["units"]), int(info["spec_bytes"]) / 1024)
sides = ["after"] + (["before"] if before else [])
for s in sides:
    tag = "" if s == "after" else " (before)"
    row("agent apply%s, %s" % (tag, what), s + "_apply", "cp -a + sync", "cp", mib(s + "_kb"))
    row("agent apply%s, CPU, %s" % (tag, w), s + "_cpu", "cp -a + sync", "cp_cpu")
    row("drift check%s, warm, %s" % (tag, w), s + "_warm", "sha256sum", "sha", mib(s + "_dkb"))
    row("drift check%s, cold (read + parse the kept spec), %s" % (tag, w), s + "_cold", "sha256sum", "sha")
    row("drift check%s, warm, %s" % (tag, w), s + "_warm", "cat", "cat")
    row("drift check%s, cold, %s" % (tag, w), s + "_cold", "cat", "cat")
    row("the apply's parse of the spec%s, %s" % (tag, w), s + "_parse", "the whole apply", s + "_apply")
    row("JSON read of the spec (mcg_json_parse)%s, %s" % (tag, w), s + "_jr", "jansson json_loadb", s + "_jj")
if before:
    for k, name in (("apply", "apply"), ("cpu", "apply, CPU"), ("parse", "parse"), ("warm", "drift warm"),
                    ("cold", "drift cold"), ("name", "canonical spec writer (mcg_render_name)")):
        row("%s, %s: after / before" % (name, w), "after_" + k, "before", "before_" + k)
    print("TABLE|apply peak RSS, %s: after / before|%s|before: %s|%.3g||" % (
        w, mib("after_kb"), mib("before_kb"), max(r["after_kb"] for r in rows) / max(r["before_kb"] for r in rows)))
else:
    print("TABLE|canonical spec writer (mcg_render_name), %s|%s|—|||" % (w, t("after_name")))
PY
}
for w in $CONFIGS; do bench_config "$w"; done
echo "load average: $LOAD0 at the start, $(bench_load) at the end; $RUNS runs per config" >&2
