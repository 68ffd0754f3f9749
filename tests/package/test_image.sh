#!/usr/bin/env bash
# mcgit's image without a registry (deploy/image/build-image.sh): an OCI
# archive built from Debian's packages and this tree's .deb, which
#   skopeo inspects as an OCI archive with the Containerfile's configuration
#     (entrypoint /usr/bin/mcgit, user 65532:65532);
#   a containerd (Debian's, started here with a private root, state and
#     socket) imports with `ctr images import` under the name
#     docker.io/library/mcgit:latest, that deploy/*.yaml's `mcgit:latest`
#     means;
#   runs under runc (`ctr run`): `mcgit version` as the image's user, and the
#     time zone data the maintenance windows read is there.
# The .deb: MCGIT_IMAGE_DEB, else built (deploy/debian/build-deb.sh, a few
# minutes). The debootstrapped root is cached (/var/cache/mcgit-image).
# MCGIT_TEST_NO_RUNC=1 takes the chroot path even where runc works.
. "$(dirname "$0")/../integration/lib.sh"
[ "$(id -u)" = 0 ] || skip "building the image needs root (debootstrap, chroot)"
need debootstrap umoci skopeo containerd ctr runc python3
A=$T/mcgit.tar
t0=$(date +%s)
rc=0
"$SRC/deploy/image/build-image.sh" "$A" >"$T/build.out" 2>"$T/build.err" || rc=$?
[ "$rc" = 0 ] && ok "build-image.sh: built in $(($(date +%s) - t0)) s ($(du -h "$A" | cut -f1))" ||
  { bad "build-image.sh (exit $rc)"; tail -20 "$T/build.err" | sed 's/^/    /'; finish; }
expect_grep '^image: docker.io/library/mcgit:latest$' "$T/build.out" "it names the image it built"

skopeo inspect --config "oci-archive:$A" >"$T/config.json" 2>"$T/err" || true
python3 - "$T/config.json" >"$T/cfg" <<'PY' || true
import json, sys
c = json.load(open(sys.argv[1]))["config"]
print("entrypoint", " ".join(c.get("Entrypoint") or []))
print("user", c.get("User"))
PY
expect_grep '^entrypoint /usr/bin/mcgit$' "$T/cfg" "skopeo: entrypoint /usr/bin/mcgit"
expect_grep '^user 65532:65532$' "$T/cfg" "skopeo: user 65532:65532, as the Containerfile"

# a private containerd: its own root, state, socket; no CRI
C=$T/containerd
mkdir -p "$C"
cat >"$C/config.toml" <<TOML
version = 2
root = "$C/root"
state = "$C/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$C/sock"
[ttrpc]
  address = "$C/sock.ttrpc"
[debug]
  address = ""
TOML
containerd --config "$C/config.toml" >"$C/log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do ctr --address "$C/sock" version >/dev/null 2>&1 && break; sleep 0.1; done
ctrc() { ctr --address "$C/sock" -n mcgit-test "$@"; }
expect_rc 0 "ctr images import accepts the archive" -- ctrc images import "$A"
ctrc images ls -q >"$T/images" 2>&1 || true
expect_grep '^docker.io/library/mcgit:latest$' "$T/images" "imported as docker.io/library/mcgit:latest"
# runc where it can run containers here (cgroups, overlayfs); otherwise (a
# chroot without cgroups, as CI's fresh root may be) the image's root as
# containerd unpacked it (`ctr images mount`), entered with chroot
echo "MCGIT_TEST_NO_RUNC is set" >"$T/probe"
if [ -z "${MCGIT_TEST_NO_RUNC:-}" ] && ctrc run --rm docker.io/library/mcgit:latest probe /bin/true >"$T/probe" 2>&1; then
  how="ctr run (runc)"
  run() { local id=$1; shift; ctrc run --rm docker.io/library/mcgit:latest "$id" "$@"; }
  runu() { run "$@"; }
else
  echo "# runc cannot run a container here ($(head -1 "$T/probe")): chroot into the unpacked image"
  how="chroot into the image containerd unpacked"
  mkdir -p "$T/mnt"
  ctrc images mount docker.io/library/mcgit:latest "$T/mnt" >/dev/null 2>&1 || bad "ctr images mount"
  run() { shift; if [ $# = 0 ]; then chroot --userspec=65532:65532 "$T/mnt" /usr/bin/mcgit; else chroot --userspec=65532:65532 "$T/mnt" "$@"; fi; }
  runu() { run "$@"; }
fi
run v0 >"$T/usage" 2>&1 || true
expect_grep '^usage: mcgit CMD' "$T/usage" "$how: the entrypoint is mcgit (its usage, given no command)"
run v1 /usr/bin/mcgit --version >"$T/version" 2>"$T/err" || true
expect_grep '^mcgit [0-9]' "$T/version" "$how: mcgit --version runs in the image, every library found"
runu v2 id -u >"$T/uid" 2>&1 || true
expect_grep '^65532$' "$T/uid" "$how: runs as 65532"
run v3 sh -c 'test -s /usr/share/zoneinfo/Europe/Berlin && test -s /etc/ssl/certs/ca-certificates.crt && echo tz-ok' >"$T/tz" 2>&1 || true
expect_grep '^tz-ok$' "$T/tz" "the time zone data and the CA bundle are in the image"
[ -d "$T/mnt/usr" ] && { ctrc images unmount "$T/mnt" >/dev/null 2>&1 || umount "$T/mnt" 2>/dev/null || true; }
finish
