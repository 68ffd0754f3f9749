#!/usr/bin/env bash
# Runs the README's test command on a fresh Debian 12 root, as a newcomer
# would on a new machine: nothing of this host's can hide a missing
# install step.
#
#   tests/fresh-root.sh [COMMAND]     (as root)
#
# 1. A Debian 12 root as the installer leaves one: `debootstrap bookworm`
#    (the default variant: priorities required and important, not minbase)
#    plus every package of priority standard (what tasksel's "standard
#    system utilities" task installs), apt's sources as an installed system
#    has them (bookworm, bookworm-updates, bookworm-security) and upgraded
#    from them (so libgit2 and the rest are the security builds), and
#    Debian's own /etc/hosts (127.0.0.1 localhost, 127.0.1.1 the host name,
#    ::1 localhost ip6-localhost ip6-loopback, ...). That root is cached as
#    a tarball keyed by the date (MCGIT_FRESH_CACHE, default
#    /var/cache/mcgit-fresh-root); each run unpacks a new copy
#    (MCGIT_FRESH_DIR, default a new directory in /var/tmp).
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
# cleanup_mounts_of DIR: undo the mounts under DIR (preparing the cached root)
cleanup_mounts_of() {
  local m
  for m in dev/pts dev sys proc; do
    mountpoint -q "$1/$m" && { umount "$1/$m" 2>/dev/null || umount -l "$1/$m"; }
  done
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

# Debian's /etc/hosts, as the installer writes it, for root $1
debian_hosts() {
  printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n\n' "$(hostname)"
  printf '# The following lines are desirable for IPv6 capable hosts\n'
  printf '::1     localhost ip6-localhost ip6-loopback\nff02::1 ip6-allnodes\nff02::2 ip6-allrouters\n'
}
# prepare DIR: the installed system in DIR (debootstrap, sources, upgrade,
# the standard task's packages); the kernel's file systems mounted meanwhile
prepare() {
  local dir=$1 m
  debootstrap bookworm "$dir" "$mirror" >"$dir.log" 2>&1 || { tail -20 "$dir.log" >&2; return 1; }
  cat >"$dir/etc/apt/sources.list" <<SRC
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb ${mirror%/debian}/debian-security bookworm-security main
SRC
  debian_hosts >"$dir/etc/hosts"
  cp -L /etc/resolv.conf "$dir/etc/resolv.conf"
  for m in proc sys dev dev/pts; do
    mount --bind "/$m" "$dir/$m" || return 1
    mounts+=("$dir/$m")
  done
  printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d" && chmod 755 "$dir/usr/sbin/policy-rc.d"
  # the standard task: every package of priority standard in bookworm's main
  chroot "$dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    /bin/sh -ec 'apt-get update -qq
      apt-get -y -qq upgrade
      std=$(for f in /var/lib/apt/lists/*_dists_bookworm_main_binary-*_Packages*; do
        /usr/lib/apt/apt-helper cat-file "$f"; done |
        awk "/^Package:/ { p = \$2 } /^Priority: standard/ { print p }" | sort -u)
      [ -n "$std" ]
      apt-get install -y -qq $std
      apt-get clean' >>"$dir.log" 2>&1 || { tail -20 "$dir.log" >&2; return 1; }
  rm -f "$dir/usr/sbin/policy-rc.d"
}

# 1. the installed system, cached as a tarball of the prepared root
tarball="$cache/bookworm-standard-$(date +%Y%m%d).tgz"
mkdir -p "$cache"
if [ ! -s "$tarball" ]; then
  log "debootstrap: preparing a Debian 12 as installed, standard task, upgraded ($mirror)"
  find "$cache" -name 'bookworm-*.tgz' -delete
  tmp=$(mktemp -d /var/tmp/mcgit-debootstrap.XXXXXX)
  prepared=0
  prepare "$tmp" && prepared=1
  cleanup_mounts_of "$tmp"
  # never remove a tree with the host's /dev or /proc still mounted in it
  grep -q " $tmp/" /proc/mounts && { log "mounts left under $tmp"; exit 1; }
  [ "$prepared" = 1 ] && tar -C "$tmp" -czf "$tarball.part" . && mv "$tarball.part" "$tarball"
  rm -rf "$tmp" "$tmp.log"
  [ -s "$tarball" ] || in_place "preparing the root failed"
fi
mkdir -p "$root"
log "a fresh root in $root"
tar -C "$root" -xzf "$tarball" || in_place "cannot unpack $tarball"
debian_hosts >"$root/etc/hosts" # this host's name
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
