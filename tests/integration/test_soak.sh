#!/usr/bin/env bash
# test_soak.sh — daemons hold their memory and descriptors. Side by side,
# for MCGIT_SOAK_SECONDS (default 60) after a 10 s warm-up:
#   * a controller on a local repository (the README's set-up: the repo is
#     watched for pushes every quarter second), its listener scraped;
#   * a controller on a mirror of a remote, its listener scraped and its
#     webhook called;
#   * an idle agent, its listener scraped;
# and `mcgit sync` asks the first controller for a pass now and then;
# each passing every second (--interval 1), so a leak per pass or per
# request shows. Each fails if its resident memory (VmRSS) grows by more
# than 1 MiB, or its open descriptors grow at all, between the 10th second
# and the end; the figures are printed either way. Then each is stopped with
# SIGTERM and must exit 0 — under the ASan build with LeakSanitizer's report
# clean, without the libpcre2 suppression of tests/integration/lsan.supp.
. "$(dirname "$0")/lib.sh"
need curl python3
SECS=${MCGIT_SOAK_SECONDS:-60}
WARM=10
LIMIT=1024 # KiB
if grep -q __asan_init "$MCGIT"; then
  # ASan keeps freed blocks in a quarantine, which looks like growth: none
  # here; leaks are LeakSanitizer's to find, at exit (below)
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
fi
# and without lsan.supp's libpcre2 suppression: these daemons must not reach
# libgit2's leaking regex walks of the configuration at all
export LSAN_OPTIONS=""


R=$T/cfg
fixture_signed_repo "$R"
fixture_v1 "$R"
git init -q --bare "$T/origin.git"
git -C "$R" push -q "$T/origin.git" main
for c in cl1 cl2; do
  "$MCGIT" node add --cluster "local:$T/$c" w0 --labels node-role.kubernetes.io/worker= >/dev/null
done
printf 's3cret-token\n' >"$T/token"

P1=$(freeport) P2=$(freeport) P3=$(freeport)
"$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "local:$T/cl1" --interval 1 \
  --metrics-bind-address "127.0.0.1:$P1" >"$T/ctl-local.log" 2>&1 &
PIDS+=($!)
CTL_LOCAL=$!
"$MCGIT" controller --repo "file://$T/origin.git" --mirror "$T/mirror" --trust "$T/trust" \
  --cluster "local:$T/cl2" --interval 1 --metrics-bind-address "127.0.0.1:$P2" \
  --webhook-token-file "$T/token" >"$T/ctl-mirror.log" 2>&1 &
PIDS+=($!)
CTL_MIRROR=$!
"$MCGIT" agent --node w0 --cluster "local:$T/cl1" --interval 1 \
  --metrics-bind-address "127.0.0.1:$P3" >"$T/agent.log" 2>&1 &
PIDS+=($!)
AGENT=$!

# scrapes every half second, a webhook call every 2 s, `mcgit sync` every 4 s
(
  i=0
  trap 'exit 0' TERM
  while :; do
    for p in $P1 $P2 $P3; do curl -s -m 2 -o /dev/null "http://127.0.0.1:$p/metrics" || true; done
    if [ $((i % 4)) = 0 ]; then
      curl -s -m 2 -o /dev/null -X POST -H 'Authorization: Bearer s3cret-token' \
        "http://127.0.0.1:$P2/hooks/git" || true
    fi
    if [ $((i % 8)) = 2 ]; then "$MCGIT" sync --cluster "local:$T/cl1" >/dev/null 2>&1 || true; fi
    i=$((i + 1))
    sleep 0.5
  done
) &
SCRAPER=$!
PIDS+=($!)

state() { "$MCGIT" status --cluster "local:$T/$1" nodes -o json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["metadata"]["annotations"].get("machineconfiguration.mcgit.io/state",""))'; }
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
# descriptors come and go within a pass (a scrape's connection, a `mcgit
# sync` request, a file read): the fewest of ten samples over a second is the
# process's standing count, and a leak raises even that
fds() {
  local n min=1000000 k
  for k in 1 2 3 4 5 6 7 8 9 10; do
    n=$(ls "/proc/$1/fd" 2>/dev/null | wc -l)
    [ "$n" -lt "$min" ] && min=$n
    sleep 0.1
  done
  echo "$min"
}
names=(ctl-local ctl-mirror agent)
procs=($CTL_LOCAL $CTL_MIRROR $AGENT)
# the warm-up counts from the end of each daemon's first pass (under ASan on a
# loaded machine the first render can take seconds): the controllers have
# published w0's desiredConfig, which the agent has applied
desired() { "$MCGIT" status --cluster "local:$T/$1" nodes -o json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["metadata"]["annotations"].get("machineconfiguration.mcgit.io/desiredConfig",""))' 2>/dev/null; }
settled() { [ -n "$(desired cl1)" ] && [ -n "$(desired cl2)" ] && [ "$(state cl1)" = Done ]; }
for _ in $(seq 1 240); do settled && break; sleep 0.5; done
settled && ok "the daemons finished their first passes" || bad "no first pass within 120 s"
sleep "$WARM"
declare -a rss0 fd0
for i in 0 1 2; do rss0[$i]=$(rss "${procs[$i]}"); fd0[$i]=$(fds "${procs[$i]}"); done
sleep "$SECS"
for i in 0 1 2; do
  p=${procs[$i]} n=${names[$i]}
  if ! kill -0 "$p" 2>/dev/null; then bad "$n died"; sed 's/^/    /' "$T/$n.log" | tail -5; continue; fi
  r1=$(rss "$p") f1=$(fds "$p")
  grow=$((r1 - rss0[i]))
  port=$P1
  [ "$n" = ctl-mirror ] && port=$P2
  [ "$n" = agent ] && port=$P3
  # the process metrics say the same (the scrape's own connection is one more
  # descriptor, and another request may be in flight)
  curl -s -m 2 "http://127.0.0.1:$port/metrics" >"$T/$n.prom" || true
  mf=$(awk '/^process_open_fds / {print $2}' "$T/$n.prom")
  mr=$(awk '/^process_resident_memory_bytes / {printf "%d", $2 / 1024}' "$T/$n.prom")
  [ -n "$mf" ] && [ "$mf" -ge "$f1" ] && [ "$mf" -le $((f1 + 3)) ] && [ -n "$mr" ] \
    && [ "$mr" -ge $((r1 / 2)) ] && [ "$mr" -le $((r1 * 2)) ] \
    && ok "$n: process_open_fds $mf, process_resident_memory_bytes ${mr} kB agree with /proc" \
    || bad "$n: process metrics open_fds '$mf' rss '${mr}' kB against /proc $f1 and $r1 kB"
  echo "# $n: VmRSS ${rss0[$i]} kB -> $r1 kB (${grow} kB in ${SECS} s), fds ${fd0[$i]} -> $f1"
  [ "$grow" -le "$LIMIT" ] && ok "$n: RSS grew ${grow} kB in ${SECS} s (at most $LIMIT)" \
    || bad "$n: RSS grew ${grow} kB in ${SECS} s (more than 1 MiB)"
  [ "$f1" -le "${fd0[$i]}" ] && ok "$n: open descriptors ${fd0[$i]} -> $f1" \
    || bad "$n: open descriptors grew ${fd0[$i]} -> $f1"
done
[ "$(state cl1)" = Done ] && ok "the agent rolled out the local repo's config meanwhile" || bad "cl1: w0 is '$(state cl1)'"
# stopped as an operator stops them (SIGTERM): each exits 0, and in the ASan
# build LeakSanitizer reports at exit whatever was never freed: that fails too
kill "$SCRAPER" 2>/dev/null || true
wait "$SCRAPER" 2>/dev/null || true
for i in 0 1 2; do stop_clean "${names[$i]}" "${procs[$i]}" "$T/${names[$i]}.log"; done
finish
