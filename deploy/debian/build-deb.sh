#!/usr/bin/env bash
# Builds the Debian package of this source tree and checks it with lintian:
#   deploy/debian/build-deb.sh [OUTDIR]        (default: build-deb)
#   apt-get install ./build-deb/mcgit_*.deb
# The tree (git's tracked and untracked, not ignored, files) is copied to a
# scratch directory with deploy/debian as its debian/, built there with
# `dpkg-buildpackage -b` (Release, the tests off: they run in CI), and
# OUTDIR receives mcgit_<version>_<arch>.deb. Then `lintian` runs on it:
# exit 1 on any error or warning tag; info and pedantic tags are printed.
# MCGIT_DEB_NO_LINTIAN=1 skips lintian. Needs the Build-Depends of
# deploy/debian/control plus debhelper and lintian (tests/setup.sh).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-build-deb}
mkdir -p "$out"
out=$(cd "$out" && pwd)
version=$(sed -n 's/^project(mcgit VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
debver=$(sed -n '1s/^mcgit (\([^)]*\)).*/\1/p' "$src/deploy/debian/changelog")
if [ "$version" != "${debver%%-*}" ]; then
  echo "build-deb: CMakeLists.txt says $version, deploy/debian/changelog $debver: add a changelog entry" >&2
  exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/mcgit-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
tree=$work/mcgit-$version
mkdir -p "$tree"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$src" && git ls-files -z -co --exclude-standard | xargs -0 -r tar -cf - --no-recursion) |
    tar -xf - -C "$tree"
else
  tar -C "$src" --exclude='./build*' -cf - . | tar -xf - -C "$tree"
fi
rm -rf "$tree/debian"
cp -a "$src/deploy/debian" "$tree/debian"
rm -f "$tree/debian/build-deb.sh"
jobs=$(nproc 2>/dev/null || echo 2)
(cd "$tree" && DEB_BUILD_OPTIONS="parallel=$jobs ${DEB_BUILD_OPTIONS:-}" \
   dpkg-buildpackage -b -us -uc) >"$work/build.log" 2>&1 ||
  { tail -40 "$work/build.log" >&2; echo "build-deb: dpkg-buildpackage failed" >&2; exit 1; }
deb=$(cd "$work" && ls mcgit_"$debver"_*.deb)
cp "$work/$deb" "$out/$deb"
echo "$out/$deb"
[ "${MCGIT_DEB_NO_LINTIAN:-}" = 1 ] && exit 0
lintian --fail-on error,warning --display-info --pedantic "$out/$deb"
