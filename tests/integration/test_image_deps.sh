#!/usr/bin/env bash
# deploy/Containerfile against what the binary needs, so the image cannot
# drift from the build again (it once lacked libmicrohttpd-dev, so it did not
# build, and libmicrohttpd12 and tzdata, so the binary exited 127):
#   runtime stage: every library mcgit links directly (readelf NEEDED) comes
#     from a package the stage installs by name (or from the base image's
#     essential set); every library it loads (ldd) from a package apt pulls in
#     with those (their Depends, recursively); tzdata for the time zones the
#     maintenance windows read;
#   build stage: every pkg-config module CMakeLists.txt requires comes from a
#     package it installs (the .pc file, `dpkg -S`).
# Each failure names the library or module and the package missing. The
# checks are shown to fail first, on copies with one package taken out.
# deploy/image/build-image.sh installs the same runtime list
# (deploy/image/packages.sh).
. "$(dirname "$0")/lib.sh"
need readelf ldd dpkg dpkg-query apt-cache pkg-config awk
PK=$SRC/deploy/image/packages.sh
CF=$SRC/deploy/Containerfile

# closure PKG...: the packages apt installs for PKG... (Depends and
# Pre-Depends, recursively), one a line
closure() {
  apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances "$@" 2>/dev/null | grep -v '^[ <]' | sed 's/:[a-z0-9]*$//' | sort -u
}
# pkg_of FILE: the package that owns FILE (trying its resolved name, and the
# /usr and / forms of a merged-/usr path)
pkg_of() {
  local f p c
  for c in "$1" "$(readlink -f "$1")" "/usr${1#/usr}" "${1#/usr}"; do
    p=$(dpkg -S "$c" 2>/dev/null | head -1 | cut -d: -f1) && [ -n "$p" ] && { echo "$p"; return 0; }
  done
  return 1
}
# the base image's own packages: the essential set and what it depends on
base=$(closure $(dpkg-query -W -f '${Package} ${Essential}\n' | awk '$2 == "yes" {print $1}'))

# An ASan+UBSan build (tests/run-all.sh's asan phase) loads the sanitizers'
# runtimes and the libstdc++ they need: the image's Release binary does not
sanitizers='^$'
case $(readelf -d "$MCGIT") in *libasan*) sanitizers='^lib(asan|ubsan|lsan|stdc\+\+)\.so' ;; esac
# check_runtime CONTAINERFILE: prints one line per missing package; exit 1 if any
check_runtime() {
  local cf=$1 pkgs all miss=0 lib path p
  pkgs=$("$PK" runtime "$cf")
  all=$(closure $pkgs)
  # direct: readelf's NEEDED, resolved through ldd
  for lib in $(readelf -d "$MCGIT" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    [[ $lib =~ $sanitizers ]] && continue
    path=$(ldd "$MCGIT" | awk -v l="$lib" '$1 == l {print $3}')
    p=$(pkg_of "$path") || { echo "runtime: $lib ($path) belongs to no package"; miss=1; continue; }
    grep -qx "$p" <<<"$pkgs" && continue
    grep -qx "$p" <<<"$base" && continue
    echo "runtime: $lib is linked directly but its package $p is not installed by the runtime stage"
    miss=1
  done
  # everything loaded: in the closure of the stage's packages
  while read -r lib path; do
    [[ $lib =~ $sanitizers ]] && continue
    p=$(pkg_of "$path") || { echo "runtime: $lib ($path) belongs to no package"; miss=1; continue; }
    grep -qx "$p" <<<"$all" || grep -qx "$p" <<<"$base" ||
      { echo "runtime: $lib (package $p) is not pulled in by the runtime stage's packages"; miss=1; }
  done < <(ldd "$MCGIT" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
  if grep -qa /usr/share/zoneinfo "$MCGIT" && ! grep -qx tzdata <<<"$all"; then
    echo "runtime: mcgit reads /usr/share/zoneinfo but the runtime stage does not install tzdata"
    miss=1
  fi
  return $miss
}

# check_build CONTAINERFILE: every REQUIRED pkg-config module of CMakeLists.txt
check_build() {
  local cf=$1 pkgs all miss=0 m pc p
  pkgs=$("$PK" build "$cf")
  all=$(closure $pkgs)
  for m in $(sed -n 's/^pkg_check_modules([A-Z0-9_]* REQUIRED IMPORTED_TARGET \([^ )]*\)).*/\1/p' "$SRC/CMakeLists.txt"); do
    pc=$(pkg-config --variable=pcfiledir "$m" 2>/dev/null)/$m.pc
    p=$(pkg_of "$pc") || { echo "build: pkg-config module $m ($pc) belongs to no package here"; miss=1; continue; }
    grep -qx "$p" <<<"$all" || { echo "build: CMake requires $m, from package $p, which the build stage does not install"; miss=1; }
  done
  return $miss
}

n=$(sed -n 's/^pkg_check_modules([A-Z0-9_]* REQUIRED IMPORTED_TARGET \([^ )]*\)).*/\1/p' "$SRC/CMakeLists.txt" | wc -l)
[ "$n" -ge 8 ] && ok "CMakeLists.txt: $n required pkg-config modules found" || bad "CMakeLists.txt: only $n pkg-config modules parsed"
[ "$("$PK" runtime "$CF" | wc -l)" -ge 5 ] && ok "packages.sh reads the runtime stage" || bad "packages.sh runtime: too few packages"

# the checks fail first: a copy without libmicrohttpd12, one without tzdata,
# one without libmicrohttpd-dev
sed 's/ libmicrohttpd12//' "$CF" >"$T/no-mhd"
expect_rc 1 "runtime check refuses a Containerfile without libmicrohttpd12" -- check_runtime "$T/no-mhd"
expect_grep 'libmicrohttpd\.so\.12 is linked directly but its package libmicrohttpd12' "$T/out" "the refusal names the library and the package"
sed 's/ tzdata//' "$CF" >"$T/no-tz"
expect_rc 1 "runtime check refuses a Containerfile without tzdata" -- check_runtime "$T/no-tz"
expect_grep 'does not install tzdata' "$T/out" "the refusal names tzdata"
sed 's/ libmicrohttpd-dev//' "$CF" >"$T/no-mhd-dev"
expect_rc 1 "build check refuses a Containerfile without libmicrohttpd-dev" -- check_build "$T/no-mhd-dev"
expect_grep 'requires libmicrohttpd, from package libmicrohttpd-dev' "$T/out" "the refusal names the module and the package"

# the real one
expect_rc 0 "deploy/Containerfile's runtime stage covers every library mcgit links" -- check_runtime "$CF"
sed 's/^/    /' "$T/out"
expect_rc 0 "deploy/Containerfile's build stage installs every module CMake requires" -- check_build "$CF"
sed 's/^/    /' "$T/out"
finish
