#!/usr/bin/env bash
# Runs the README's test command on a fresh Debian 12 root, as a newcomer
# would on a new machine: nothing of this host's can hide a missing
# install step.
#
#   tests/fresh-root.sh [COMMAND]     (as root)
#
# 1. A bare Debian 12 root from `debootstrap --variant=minbase bookworm`.
#    Only that bare base system is cached, as a tarball keyed by the date
#    (MCGIT_FRESH_CACHE, default /var/cache/mcgit-fresh-root); each run
#    unpacks a new copy (MCGIT_FRESH_DIR, default a new directory in /var/tmp).
# 2. /proc, /sys, /dev and /dev/pts bind-mounted; the host's resolv.conf.
# 3. The commit under test (HEAD of this clone, uncommitted changes are not
#    part of it) cloned into /root/mcgit in the root.
# 4. COMMAND (default: the README's second command, as written,
#    `tests/setup.sh && tests/run-all.sh`) run in the clone, with only
#    MCGIT_REQUIRE_ALL, MCGIT_REQUIRE_KUBE and MCGIT_FUZZ_SECONDS passed in.
# Everything is unmounted on every exit path (and the root removed unless
# MCGIT_FRESH_KEEP=1). Exit status: COMMAND's. Where no root can be made
# (no privilege to mount or chroot: a container that is itself a fresh
# Debian 12), it says so on stderr and runs COMMAND in this tree instead.
#
# Needs debootstrap and git on the host: installed here with apt-get when
# missing. MCGIT_DEBIAN_MIRROR (default http://deb.debian.org/debian).
set -euo pipefail
cd "$(dirname "$0")/.."
SRCTREE=$PWD
cmd=${1:-'tests/setup.sh && tests/run-all.sh'}
mirror=${MCGIT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${MCGIT_FRESH_CACHE:-/var/cache/mcgit-fresh-root}
log() { printf 'fresh-root: %s\n' "$*" >&2; }

[ "$(id -u)" = 0 ] || { log "must run as root (debootstrap, chroot, mounts)"; exit 1; }
missing=()
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v git >/dev/null || missing+=(git)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]} on the host"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# in_place REASON: where no root can be made (a container without the
# privilege to mount or chroot, itself a fresh Debian 12), say so loudly and
# run COMMAND in this tree instead.
in_place() {
  log "NOT on a fresh root: $1; running the command in $SRCTREE instead"
  cleanup_mounts
  cd "$SRCTREE"
  trap - EXIT
  exec env -i HOME="${HOME:-/root}" TERM="${TERM:-dumb}" LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    ${MCGIT_REQUIRE_ALL:+MCGIT_REQUIRE_ALL=$MCGIT_REQUIRE_ALL} \
    ${MCGIT_REQUIRE_KUBE:+MCGIT_REQUIRE_KUBE=$MCGIT_REQUIRE_KUBE} \
    ${MCGIT_FUZZ_SECONDS:+MCGIT_FUZZ_SECONDS=$MCGIT_FUZZ_SECONDS} \
    /bin/bash -c "$cmd"
}

root=${MCGIT_FRESH_DIR:-$(mktemp -d /var/tmp/mcgit-fresh-root.XXXXXX)}
mounts=()
# cleanup_mounts: stop what runs in the root, undo the mounts (newest
# first), remove the root unless MCGIT_FRESH_KEEP=1 or a mount is left.
cleanup_mounts() {
  local m p
  # processes a test left running inside the root would keep mounts busy
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -9 "${p#/proc/}" 2>/dev/null
  done
  for ((m = ${#mounts[@]} - 1; m >= 0; m--)); do
    mountpoint -q "${mounts[m]}" || continue
    umount "${mounts[m]}" 2>/dev/null || umount -l "${mounts[m]}" 2>/dev/null ||
      log "could not unmount ${mounts[m]}"
  done
  mounts=()
  if [ "${MCGIT_FRESH_KEEP:-}" != 1 ] && ! grep -q " $root/" /proc/mounts; then rm -rf "$root"; fi
  return 0
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  cleanup_mounts
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# 1. the bare base system, cached as a tarball of debootstrap's own making
tarball="$cache/bookworm-minbase-$(date +%Y%m%d).tgz"
mkdir -p "$cache"
if [ ! -s "$tarball" ]; then
  log "debootstrap: making the base system's tarball ($mirror)"
  find "$cache" -name 'bookworm-minbase-*.tgz' -delete
  tmp=$(mktemp -d /var/tmp/mcgit-debootstrap.XXXXXX)
  debootstrap --variant=minbase --make-tarball="$tarball.part" bookworm "$tmp" "$mirror" >"$tmp.log" 2>&1 ||
    { tail -5 "$tmp.log" >&2; rm -rf "$tmp" "$tmp.log" "$tarball.part"; in_place "debootstrap --make-tarball failed"; }
  rm -f "$tmp.log"
  rm -rf "$tmp"
  mv "$tarball.part" "$tarball"
fi
mkdir -p "$root"
log "debootstrap: a fresh root in $root"
debootstrap --variant=minbase --unpack-tarball="$tarball" bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
  { tail -20 "$root.debootstrap.log" >&2; rm -f "$root.debootstrap.log"; in_place "debootstrap failed"; }
rm -f "$root.debootstrap.log"
# the sources a Debian 12 installation has
cat >"$root/etc/apt/sources.list" <<SRC
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb ${mirror%/debian}/debian-security bookworm-security main
SRC
cp -L /etc/resolv.conf "$root/etc/resolv.conf"

# 2. the kernel's file systems
for m in proc sys dev dev/pts; do
  mkdir -p "$root/$m"
  mount --bind "/$m" "$root/$m" || in_place "cannot bind-mount /$m (no CAP_SYS_ADMIN?)"
  mounts+=("$root/$m")
done
chroot "$root" /bin/true || in_place "cannot chroot into $root"

# 3. the commit under test
rev=$(git -C "$SRCTREE" rev-parse HEAD)
git clone -q --no-local "$SRCTREE" "$root/root/mcgit"
git -C "$root/root/mcgit" checkout -q "$rev"
log "commit $rev"

# 4. the command, in a clean environment
log "running: $cmd"
start=$(date +%s)
rc=0
chroot "$root" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" LANG=C.UTF-8 \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  ${MCGIT_REQUIRE_ALL:+MCGIT_REQUIRE_ALL=$MCGIT_REQUIRE_ALL} \
  ${MCGIT_REQUIRE_KUBE:+MCGIT_REQUIRE_KUBE=$MCGIT_REQUIRE_KUBE} \
  ${MCGIT_FUZZ_SECONDS:+MCGIT_FUZZ_SECONDS=$MCGIT_FUZZ_SECONDS} \
  /bin/bash -c "cd /root/mcgit && $cmd" || rc=$?
log "exit $rc after $(($(date +%s) - start)) s"
exit "$rc"
