#!/usr/bin/env bash
# The render benchmark of docs/PERFORMANCE.md ("## Render"):
# 1,000 and 10,000 MachineConfigs x 10 files over 3 pools, timed against the
# jansson floor, in a Release build. Prints a Markdown table.
#
#   tests/bench/bench_render.sh            # build build-release/, run, print
#   BUILD=dir REPEAT=7 POOLS=3 SIZES="1000 10000" FILES=10 tests/bench/bench_render.sh
#   BENCH=/path/to/bench_render ...      # use an existing binary, skip the build
#
# Needs python3 (for gen_configs.py; not timed). Not run by ctest. The ratio
# is bench_render's median over REPEAT fresh processes of each side.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build-release}
REPEAT=${REPEAT:-5}
POOLS=${POOLS:-3}
FILES=${FILES:-10}
SIZES=${SIZES:-"1000 10000"}
if [ -z "${BENCH:-}" ]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD" --target bench_render -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
  BENCH="$BUILD/tests/bench/bench_render"
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mcgit-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

echo "machine: $(nproc 2>/dev/null || echo ?) CPUs, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
echo "libraries: libyaml $(pkg-config --modversion yaml-0.1 2>/dev/null || echo ?), jansson $(pkg-config --modversion jansson 2>/dev/null || echo ?)"
echo "runs: median of $REPEAT, each in a fresh process; CPU = user + system time"
echo
echo "| MCs x files | input | render CPU | floor CPU | render / floor | render wall | render peak RSS | floor peak RSS |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for n in $SIZES; do
  dir="$WORK/mcs-$n"
  python3 tests/bench/gen_configs.py "$dir" --mcs "$n" --pools "$POOLS" --files "$FILES"
  "$BENCH" "$dir" --repeat "$REPEAT" >"$WORK/result-$n"
  r="$WORK/result-$n"
  awk -v n="$n" -v f="$FILES" '
    { v[$1] = $2 }
    END {
      printf "| %s x %s | %.1f MB | %.3f s | %.3f s | %.2f | %.3f s | %.1f MiB | %.1f MiB |\n",
        n, f, v["input_bytes"] / 1e6, v["render_cpu_s"], v["floor_cpu_s"], v["ratio"],
        v["render_wall_s"], v["render_rss_kib"] / 1024, v["floor_rss_kib"] / 1024
    }' "$r"
  awk -v n="$n" -v f="$FILES" '
    { v[$1] = $2 }
    END {
      printf "TABLE|render, %s MCs x %s files (%.1f MB), CPU|%.3f s (wall %.3f s)|jansson parse + dump: %.3f s|%.2f|%.2f–%.2f|%.1f MiB\n",
        n, f, v["input_bytes"] / 1e6, v["render_cpu_s"], v["render_wall_s"], v["floor_cpu_s"], v["ratio"], v["ratio_min"], v["ratio_max"],
        v["render_rss_kib"] / 1024
    }' "$r" >>"$WORK/table"
done
[ ! -f "$WORK/table" ] || cat "$WORK/table"
