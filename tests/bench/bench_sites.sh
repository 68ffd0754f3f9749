#!/usr/bin/env bash
# bench_sites.sh — a site's status round trip for a cluster of N nodes
# (default 1,000), against what a user would otherwise run with git:
#
#   record   `mcgit site record --force` (status of every pool and node from
#            the cluster, status.json, a commit signed with ssh-keygen)  vs
#            writing the same status.json and `git commit -S` (gpg.format ssh)
#   export   `mcgit site export` (one record, thin against the one before)  vs
#            `git bundle create FILE <ref> ^<previous>`
#   import   `mcgit site import` at HQ (quarantine, each record's signature,
#            source, configs and time checked)  vs  `git fetch` of the same
#            bundle into a copy of HQ (index-pack, connectivity)
#   size     the status.json and the bundle
#
#   tests/bench/bench_sites.sh [N]          ROUNDS=5
#
# mcgit and git alternate which goes first, round by round; each figure is
# the median of the per-pair ratios, with min and max. Uses a Release build
# in build-rel-sites (BUILD=dir for another). Not run by ctest. Results go in
# docs/PERFORMANCE.md, "Sites".
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
N=${1:-1000}
ROUNDS=${ROUNDS:-5}
B=${BUILD:-$SRC/build-rel-sites}
. "$SRC/tests/bench/lib.sh"

[ -f "$B/CMakeCache.txt" ] || cmake -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=Release -DMCGIT_TESTS=OFF >/dev/null
cmake --build "$B" -j2 --target mcgit >/dev/null
M=$B/mcgit

T=$(mktemp -d "${TMPDIR:-/tmp}/mcgit-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
bench_signed_repo "$M" "$T"
ssh-keygen -q -t ed25519 -N '' -f "$T/site"
mkdir -p "$R/sites"
printf 'apiVersion: mcgit.io/v1\nkind: Site\nmetadata:\n  name: a\nspec:\n  statusKey: %s\n' \
  "$(cat "$T/site.pub")" >"$R/sites/a.yaml"
bench_mc v1
HQ=$T/hq.git
git clone -q --bare "$R" "$HQ"
"$M" render --repo "$HQ" --trust "$T/trust" >/dev/null 2>&1
SITE=$T/site.git
git clone -q --bare "$R" "$SITE"
"$M" render --repo "$SITE" --trust "$T/trust" >/dev/null 2>&1
CL=local:$T/cl
echo "# $N nodes..." >&2
for i in $(seq "$N"); do
  "$M" node add --cluster "$CL" "w$i" --labels node-role.kubernetes.io/worker= >/dev/null
done
"$M" controller --repo "$SITE" --trust "$T/trust" --cluster "$CL" --once -q >/dev/null 2>&1
"$M" site record --repo "$SITE" --cluster "$CL" --site a --site-key "$T/site" >/dev/null
"$M" site export --repo "$SITE" --site a "$T/first.status" 2>/dev/null
"$M" site import --repo "$HQ" "$T/first.status" --trust "$T/trust" >/dev/null

# the peer's repository for `git commit -S` of the same document
P=$T/peer
git init -q "$P"
git -C "$P" config gpg.format ssh
git -C "$P" config user.signingkey "$T/site"
git -C "$SITE" show refs/mcgit/status/a:status.json >"$T/status.json"
STATUS_BYTES=$(stat -c %s "$T/status.json")

# each round's document differs (its round number appended), as each record's
# does: the same bytes twice would leave git nothing to commit (exit 1)
peer_record() { cp "$T/status.json" "$P/status.json" && echo "$N_ROUND" >>"$P/status.json" &&
  git -C "$P" add status.json && git -C "$P" commit -q -S -m "status"; }
for round in $(seq "$ROUNDS"); do
  prev=$(git -C "$SITE" rev-parse refs/mcgit/status/a)
  first=$((round % 2))
  for side in $first $((1 - first)); do
    if [ "$side" = 0 ]; then
      bench_run "$T/rec.m" "$M" site record --repo "$SITE" --cluster "$CL" --site a --site-key "$T/site" --force
    else
      bench_run "$T/rec.g" bash -c "$(declare -f peer_record); T=$T P=$P N_ROUND=$round peer_record"
    fi
  done
  for side in $first $((1 - first)); do
    if [ "$side" = 0 ]; then
      bench_run "$T/exp.m" "$M" site export --repo "$SITE" --site a "$T/r.status" --since "$prev"
    else
      bench_run "$T/exp.g" git -C "$SITE" bundle create -q "$T/g.status" refs/mcgit/status/a "^$prev"
    fi
  done
  rm -rf "$T/hq-m" "$T/hq-g"
  cp -a "$HQ" "$T/hq-m"
  cp -a "$HQ" "$T/hq-g"
  for side in $first $((1 - first)); do
    if [ "$side" = 0 ]; then
      bench_run "$T/imp.m" "$M" site import --repo "$T/hq-m" "$T/r.status" --trust "$T/trust"
    else
      bench_run "$T/imp.g" git -C "$T/hq-g" fetch -q "$T/r.status" "refs/mcgit/status/a:refs/mcgit/status/a"
    fi
  done
  git -C "$HQ" fetch -q "$SITE" "+refs/mcgit/status/a:refs/mcgit/status/a"
done
BUNDLE_BYTES=$(stat -c %s "$T/r.status")
GBUNDLE_BYTES=$(stat -c %s "$T/g.status")

echo "# $N nodes, $ROUNDS rounds, load $(bench_load); status.json $STATUS_BYTES bytes," \
  "one record's bundle $BUNDLE_BYTES bytes (git's $GBUNDLE_BYTES)"
for w in rec exp imp; do
  read -r mm _ _ < <(bench_stat 1 "$T/$w.m")
  read -r gm _ _ < <(bench_stat 1 "$T/$w.g")
  read -r rm rmin rmax < <(bench_ratios "$T/$w.m" "$T/$w.g" 1)
  read -r rss _ _ < <(bench_stat 3 "$T/$w.m")
  case $w in rec) what="site record, $N nodes" ;; exp) what="site export, one record" ;;
    imp) what="site import, one record" ;; esac
  bench_table "$what" "$(printf '%.3f s' "$mm")" "$(printf '%.3f s' "$gm")" "${rm}x" "$rmin–$rmax" "$((rss / 1024)) MiB"
done
