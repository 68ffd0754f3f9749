#!/bin/sh
# Print the Debian packages a stage of deploy/Containerfile installs, one a
# line: `packages.sh build|runtime [CONTAINERFILE]`. The first stage is the
# build stage, the last the runtime stage; the packages are the arguments of
# the stage's `apt-get install` (options and shell words after `&&` left out).
# build-image.sh installs the runtime list, and
# tests/integration/test_image_deps.sh checks it against what the binary
# links, so the Containerfile and the registry-free image cannot drift apart.
set -eu
stage=${1:?usage: packages.sh build|runtime [CONTAINERFILE]}
cf=${2:-$(dirname "$0")/../Containerfile}
[ -f "$cf" ] || { echo "packages.sh: $cf: no such file" >&2; exit 1; }
case $stage in build | runtime) ;; *) echo "packages.sh: stage must be build or runtime" >&2; exit 1 ;; esac
# join continuation lines, number the stages, keep the chosen stage's RUN lines
awk -v want="$stage" '
  { line = $0; while (line ~ /\\$/ && (getline nxt) > 0) { sub(/\\$/, " ", line); line = line nxt }
    if (line ~ /^FROM /) { n++; stage_of[n] = 1 } ; lines[NR] = line; st[NR] = n }
  END {
    for (i = 1; i <= NR; i++) {
      if (!(i in lines)) continue
      if (want == "build" && st[i] != 1) continue
      if (want == "runtime" && st[i] != n) continue
      l = lines[i]
      if (l !~ /^RUN /) continue
      k = index(l, "apt-get install")
      if (k == 0) continue
      l = substr(l, k + length("apt-get install"))
      split(l, w, /[ \t]+/)
      for (j = 1; j in w; j++) {
        if (w[j] == "&&" || w[j] == ";" || w[j] == "|") break
        if (w[j] == "" || w[j] ~ /^-/) continue
        print w[j]
      }
    }
  }' "$cf"
