#!/usr/bin/env bash
# The Debian package: built by deploy/debian/build-deb.sh (dpkg-buildpackage),
# clean under lintian (no error or warning tag), and what it holds checked
# after `dpkg-deb -x`: the binary runs, a man page per command, completions,
# the units at /lib/systemd/system verified by systemd-analyze against the
# extracted tree, /etc/default/mcgit a conffile; and apt-get would install
# it (`apt-get install --simulate ./mcgit_*.deb`: its dependencies resolve).
# Installing it for real is left to a person (docs/install.md).
. "$(dirname "$0")/../integration/lib.sh"
need dpkg-buildpackage dh lintian dpkg-deb apt-get systemd-analyze
O=$T/out
rc=0
"$SRC/deploy/debian/build-deb.sh" "$O" >"$T/build" 2>&1 || rc=$?
[ "$rc" = 0 ] && ok "build-deb.sh: built, lintian passes (--fail-on error,warning)" ||
  { bad "build-deb.sh (exit $rc)"; tail -20 "$T/build" | sed 's/^/    /'; }
debs=("$O"/mcgit_*.deb)
deb=${debs[0]}
[ -f "$deb" ] || { bad "no .deb in $O"; finish; }
if grep -E '^[EW]: ' "$T/build"; then bad "lintian errors or warnings"; else ok "no lintian E: or W: tags"; fi
grep -E '^[IPX]: ' "$T/build" | sed 's/^/# lintian: /' || true

X=$T/x
dpkg-deb -x "$deb" "$X"
dpkg-deb -e "$deb" "$T/control"
"$X/usr/bin/mcgit" version >/dev/null && ok "packaged binary runs" || bad "packaged binary does not run"
cmds=$("$MCGIT" help | awk '/^commands:/{f=1;next} f&&/^  [a-z]/{print $1}')
fails=
for c in mcgit $(for c in $cmds; do echo "mcgit-$c"; done); do
  [ -f "$X/usr/share/man/man1/$c.1.gz" ] || fails="$fails $c"
done
[ -z "$fails" ] && ok "a man page for mcgit and each command" || bad "man pages missing:$fails"
zcat "$X/usr/share/man/man1/mcgit-render.1.gz" | mandoc -T lint -W warning >"$T/lint" 2>&1 || true
[ ! -s "$T/lint" ] && ok "packaged man page lints clean" || { bad "mandoc lint"; head "$T/lint"; }
[ -f "$X/usr/share/bash-completion/completions/mcgit" ] && [ -f "$X/usr/share/zsh/vendor-completions/_mcgit" ] &&
  ok "bash and zsh completions packaged" || bad "completions missing"
grep -qx /etc/default/mcgit "$T/control/conffiles" && ok "/etc/default/mcgit is a conffile" ||
  bad "/etc/default/mcgit is not a conffile"
# dh_installsystemd --no-enable --no-start: no start, and an enable only
# when an earlier install of the unit was enabled (the debian-installed guard)
pi=$T/control/postinst
n_enable=$(grep -c 'deb-systemd-helper enable' "$pi" || true)
n_guard=$(grep -c 'deb-systemd-helper debian-installed' "$pi" || true)
if grep -q 'deb-systemd-invoke' "$pi" || [ "$n_enable" != "$n_guard" ]; then
  bad "postinst enables or starts a unit on a first install"
else ok "units installed, not enabled or started"; fi

# the units, verified against the extracted package plus this host's units
units=("$X/lib/systemd/system/mcgit-controller.service" "$X/lib/systemd/system/mcgit-agent.service")
sysunits=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || echo /lib/systemd/system)
mkdir -p "$T/sys"; cp -a "$sysunits/." "$T/sys/"; cp -a "$T/sys/." "$X/lib/systemd/system/"
cp "$deb" "$T/pristine.deb"
for u in "${units[@]}"; do
  grep -q '^ExecStart=/usr/bin/mcgit ' "$u" && ok "$(basename "$u"): ExecStart=/usr/bin/mcgit" ||
    bad "$(basename "$u"): ExecStart is not /usr/bin/mcgit"
  for d in $(sed -n 's|^Documentation=.*file://||p' "$u"); do
    [ -f "$X$d" ] && ok "$(basename "$u"): $d packaged, uncompressed" || bad "$(basename "$u"): $d missing"
  done
done
if SYSTEMD_LOG_COLOR=0 systemd-analyze verify --man=no --root="$X" "${units[@]}" >"$T/verify" 2>&1 &&
   [ ! -s "$T/verify" ]; then ok "systemd-analyze verify on the packaged units: clean"
else bad "systemd-analyze verify"; sed 's/^/    /' "$T/verify"; fi

# dpkg-deb -I: fields, and apt's view of installing it
dpkg-deb -f "$deb" Package Version Architecture Depends >"$T/fields"
expect_grep '^Depends: .*libgit2' "$T/fields" "Depends from the shared libraries (libgit2, ...)"
ver=$(sed -n 's/^project(mcgit VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
expect_grep "^Version: $ver\$" "$T/fields" "package version is the project's ($ver)"
rc=0; apt-get install --simulate "$T/pristine.deb" >"$T/apt" 2>&1 || rc=$?
[ "$rc" = 0 ] && grep -q '^Inst mcgit\|^Conf mcgit\|mcgit is already the newest' "$T/apt" &&
  ok "apt-get install --simulate ./mcgit_*.deb: dependencies resolve" ||
  { bad "apt-get install --simulate (exit $rc)"; tail -5 "$T/apt"; }
finish
