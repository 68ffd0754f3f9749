#!/usr/bin/env bash
# Writes mcgit's manual pages, generated from the help texts of the built
# binary (a new command gets its page with the next build):
#   deploy/install/gen-man.sh build/mcgit OUTDIR [VERSION]
# OUTDIR/mcgit.1 (the command list) and OUTDIR/mcgit-CMD.1 for each command
# `mcgit help` lists, in mdoc(7) (check with `mandoc -T lint`). The date is
# $SOURCE_DATE_EPOCH when set (reproducible builds), else today.
set -euo pipefail
M=$1 out=$2 version=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
export LC_ALL=C
mkdir -p "$out"
rm -f "$out"/*.1  # a removed command loses its page
date=$(date -u ${SOURCE_DATE_EPOCH:+-d "@$SOURCE_DATE_EPOCH"} '+%B %-d, %Y')

"$M" help | awk '/^commands:/{f=1;next} f&&/^  [a-z]/{n=$1; sub(/^  [^ ]+ +/,""); print n "\t" $0} f&&/^$/{f=0}' \
  > "$out/.commands"
[ -s "$out/.commands" ] || { echo "gen-man: $M help lists no commands" >&2; exit 1; }
cmds=$(cut -f1 "$out/.commands" | tr '\n' ' ')

# mcgit(1): its summary is the first sentence of `mcgit help`'s overview
"$M" help | awk -v cmd= -v commands="${cmds% }" -v date="$date" -v version="$version" \
  -v summary="GitOps reconciler for node configuration in a signed git repository" \
  -f "$here/man.awk" > "$out/mcgit.1.tmp"
mv "$out/mcgit.1.tmp" "$out/mcgit.1"
while IFS=$'\t' read -r c summary; do
  "$M" help "$c" | awk -v cmd="$c" -v summary="$summary" -v date="$date" -v version="$version" \
    -f "$here/man.awk" > "$out/mcgit-$c.1.tmp"
  mv "$out/mcgit-$c.1.tmp" "$out/mcgit-$c.1"
done < "$out/.commands"
rm -f "$out/.commands"
