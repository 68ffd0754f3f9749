#!/usr/bin/env bash
# The systemd units as `cmake --install` puts them in place, checked by
# systemd itself: `systemd-analyze verify --root` over a DESTDIR holding
# the install (so ExecStart names a binary that exists there) and a copy of
# this host's own units (the targets the units order against). Any message
# fails, and so does a unit whose binary is missing (the negative control).
. "$(dirname "$0")/lib.sh"
need cmake systemd-analyze
BUILD=$(dirname "$MCGIT")
[ -f "$BUILD/CMakeCache.txt" ] || skip "$BUILD is not a CMake build directory"
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$BUILD/CMakeCache.txt")
unitdir=$(sed -n 's/^MCGIT_SYSTEMD_UNITDIR:PATH=//p' "$BUILD/CMakeCache.txt")

[ -n "$unitdir" ] || bad "MCGIT_SYSTEMD_UNITDIR not in the build's cache"
R=$T/root
expect_rc 0 "cmake --install into a DESTDIR" -- env DESTDIR="$R" cmake --install "$BUILD"
units=("$R$unitdir/mcgit-controller.service" "$R$unitdir/mcgit-agent.service")
for u in "${units[@]}"; do
  [ -f "$u" ] && ok "installed: ${u#"$R"}" || bad "not installed: ${u#"$R"}"
done

# what systemd's own units provide (sysinit.target, network-online.target, ...)
sysunits=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || echo /lib/systemd/system)
[ -d "$sysunits" ] || skip "no systemd unit directory on this host"
mkdir -p "$R/lib/systemd"
cp -a "$sysunits/." "$R/lib/systemd/system/"

# each path a unit names exists in the install
for u in "${units[@]}"; do
  for p in $(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p; s/^EnvironmentFile=-\{0,1\}\(.*\)/\1/p' "$u"); do
    [ -e "$R$p" ] && ok "$(basename "$u") names ${p}, installed" || bad "$(basename "$u"): $p is not installed"
  done
  for d in $(sed -n 's/^Documentation=//p' "$u"); do
    case $d in
      file://*) f=${d#file://} ;;
      man:*) n=${d#man:}; f=$prefix/share/man/man${n##*(}; f=${f%)}/${n%(*}.${n##*(}; f=${f%)} ;;
      *) f= ;;
    esac
    [ -n "$f" ] && [ -f "$R$f" ] && ok "$(basename "$u"): Documentation $d installed" ||
      bad "$(basename "$u"): Documentation $d not installed"
  done
done

verify() { SYSTEMD_LOG_COLOR=0 systemd-analyze verify --man=no --root="$R" "$@" >"$T/verify" 2>&1; }
if verify "${units[@]}" && [ ! -s "$T/verify" ]; then ok "systemd-analyze verify: clean"
else bad "systemd-analyze verify"; sed 's/^/    /' "$T/verify"; fi

# negative controls: systemd does look
mv "$R$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "${units[1]}")" "$T/mcgit.moved"
if verify "${units[1]}"; then bad "verify passes with the binary missing"
else ok "verify fails when ExecStart's binary is missing"; fi
mv "$T/mcgit.moved" "$R$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "${units[1]}")"
sed -i 's/^Restart=/Restrat=/' "${units[0]}"
verify "${units[0]}" || true
[ -s "$T/verify" ] && ok "verify reports a misspelt key" || bad "a misspelt key passes unnoticed"

finish
