#!/usr/bin/env bash
# Installs, from Debian's packages, what mcgit needs. Run as root.
#   tests/setup.sh          everything to build and test: the demo's build
#                           dependencies, the test tools (cmocka, valgrind,
#                           clang, mandoc, lintian, ...) and the Kubernetes
#                           test bed (a kube-apiserver built from Debian's
#                           source, cached, about 3 minutes the first time)
#   tests/setup.sh --demo   only what building mcgit and `mcgit demo` need
#                           (the README's first command)
#   tests/setup.sh --package  that, and what deploy/debian/build-deb.sh needs
#                           (debhelper, lintian)
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
demo=0
case ${1:-} in
  --demo) demo=1 ;;
  --package) demo=2 ;;
  "") ;;
  *) echo "usage: tests/setup.sh [--demo | --package]" >&2; exit 2 ;;
esac

# install PKG...: apt-get install those not installed yet (one apt-get
# update first, only when something is missing), never what they merely
# recommend. Nothing installed here is left running or enabled: while apt
# runs, a policy-rc.d (unless the host has its own) keeps packages from
# starting their services, and the systemd units of every package this run
# installed are disabled afterwards. The tests start what they need
# themselves, on 127.0.0.1.
updated=0
installed=()
setup_start=$(date +%s)
install() {
  local p missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -gt 0 ] || return 0
  if [ "$updated" = 0 ]; then apt-get update -qq; updated=1; fi
  local before
  before=$(dpkg-query -W -f '${Package}\n' | sort)
  local own_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && own_policy=1
  fi
  local rc=0
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || rc=$?
  [ "$own_policy" = 0 ] || rm -f /usr/sbin/policy-rc.d
  [ "$rc" = 0 ] || return "$rc"
  mapfile -t -O "${#installed[@]}" installed < <(comm -13 <(echo "$before") \
    <(dpkg-query -W -f '${Package}\n' | sort))
}

# quiet_services: disable (and stop, on a running systemd) the services of
# the packages this run installed (etcd-server, prometheus, ...).
quiet_services() {
  command -v systemctl >/dev/null || return 0
  local p u
  for p in "${installed[@]}"; do
    for u in $(dpkg -L "$p" 2>/dev/null | grep -E '^/(usr/)?lib/systemd/system/[^/]+\.(service|socket|timer)$' |
      xargs -r -n1 basename); do
      systemctl disable --quiet "$u" >/dev/null 2>&1 || true
      [ -d /run/systemd/system ] && systemctl stop "$u" >/dev/null 2>&1 || true
    done
  done
}
# finish: the services, then one line saying what this run did
finish() {
  local rc=$?
  quiet_services
  [ "$rc" = 0 ] && [ ${#installed[@]} -gt 0 ] &&
    echo "tests/setup.sh: ${#installed[@]} packages installed, done in $(($(date +%s) - setup_start)) s" >&2
  return "$rc"
}
trap finish EXIT

# Building mcgit (C only: gcc, not build-essential's g++), and `mcgit demo`,
# which needs nothing else to run (it signs and commits through libgit2 and
# libsodium); git for the `git log` and `git verify-commit` lines its end
# suggests, to explore what it made.
install gcc libc6-dev make cmake pkg-config \
        libgit2-dev libyaml-dev libjansson-dev libcurl4-openssl-dev libssl-dev \
        libsodium-dev zlib1g-dev libmicrohttpd-dev git
[ "$demo" = 1 ] && exit 0
# deploy/debian/build-deb.sh: debhelper, lintian, and systemd's pkg-config
# file (the unit directory)
install build-essential debhelper lintian systemd
[ "$demo" = 2 ] && exit 0

# The tests: unit tests, Valgrind, the integration tests' tools, clang
# (tests/fuzz/run.sh: libFuzzer, ASan, UBSan), and the install checks
# (test_install: mandoc, man-db, zsh; test_systemd_units: systemd-analyze,
# installed above with the packaging tools that package/test_deb uses);
# strace: test_fsync counts the fsyncs of repository writes; GNU time:
# test_bundle_bomb and test_kube_backend measure peak RSS (and the benchmarks
# use it); tzdata: maintenance windows name IANA time zones; PyYAML: the
# tests that read YAML back independently of libyaml's C API
# (test_deploy_static, test_import_mco).
install git openssh-client valgrind python3 python3-yaml jq procps gzip coreutils util-linux libcmocka-dev strace time tzdata \
        clang libclang-rt-14-dev clang-format \
        mandoc man-db groff-base zsh \
        prometheus  # promtool and a real Prometheus server: test_metrics.sh
# Real git servers on 127.0.0.1 (test_remote_ssh.sh, test_remote_https.sh):
# OpenSSH's sshd with git-shell, nginx with fcgiwrap and git http-backend,
# tinyproxy as the https_proxy. Their packaged services stay disabled.
install openssh-server nginx fcgiwrap tinyproxy

# Debian's libgit2 without the security update, beside the installed one:
# tests/run-all.sh's libgit2-old phase runs the tests whose outcome depends
# on libgit2's behaviour (fetch, redirects, credentials, packs) again with
# LD_LIBRARY_PATH at it, so mcgit is proven safe on either build (a root
# debootstrapped without bookworm-security gets this one). The exact .deb
# (1.5.1+ds-1+deb12u1, its SHA-256 pinned) from bookworm's archive, else
# from snapshot.debian.org, unpacked into MCGIT_OLD_LIBGIT2 (default
# /var/cache/mcgit-libgit2-deb12u1), never installed.
old_libgit2() {
  local ver=1.5.1+ds-1+deb12u1 arch dir=${MCGIT_OLD_LIBGIT2:-/var/cache/mcgit-libgit2-deb12u1}
  local sum=1fa025157c73990eb3024a4356d15d3625ea9a23dfa88bca9bca05f8a8d4b3af tmp deb
  arch=$(dpkg --print-architecture)
  [ -s "$dir/version" ] && [ "$(cat "$dir/version")" = "$ver" ] && return 0
  tmp=$(mktemp -d)
  chmod 755 "$tmp" # apt-get download writes as _apt
  deb="libgit2-1.5_${ver}_${arch}.deb"
  (cd "$tmp" && { apt-get download -qq "libgit2-1.5=$ver" 2>/dev/null ||
    { apt-get update -qq && apt-get download -qq "libgit2-1.5=$ver" 2>/dev/null; } ||
    curl -fsSLo "$deb" "https://snapshot.debian.org/archive/debian/20240301T000000Z/pool/main/libg/libgit2/libgit2-1.5_${ver//+/%2B}_${arch}.deb"; }) ||
    { echo "tests/setup.sh: cannot download libgit2-1.5=$ver" >&2; rm -rf "$tmp"; return 1; }
  deb=$(ls "$tmp"/libgit2-1.5_*.deb)
  if [ "$arch" = amd64 ] && [ "$(sha256sum <"$deb" | cut -d' ' -f1)" != "$sum" ]; then
    echo "tests/setup.sh: $deb: not the deb12u1 build (SHA-256 differs)" >&2; rm -rf "$tmp"; return 1
  fi
  [ "$(dpkg-deb -f "$deb" Version)" = "$ver" ] || { echo "tests/setup.sh: $deb is not $ver" >&2; rm -rf "$tmp"; return 1; }
  rm -rf "$dir.part" && dpkg-deb -x "$deb" "$dir.part" && echo "$ver" >"$dir.part/version" &&
    rm -rf "$dir" && mv "$dir.part" "$dir"
  rm -rf "$tmp"
}
old_libgit2

# The VM test bed (tests/vm/vm.sh): QEMU (under TCG where KVM does not work;
# its virtiofsd shares the cluster directory), qemu-img, debootstrap for the
# guest's root, mkfs.ext4 -d and e2fsck for its disk.
install qemu-system-x86 qemu-utils debootstrap e2fsprogs

# mcgit's image without a registry (deploy/image/build-image.sh, tested by
# package/test_image: umoci packs it, skopeo inspects it, a containerd of the
# test's own imports it and runc runs it) and the real-cluster test bed
# (tests/kube/cluster.sh: socat carries the guests' connections to this
# host's apiserver and git daemon; the guests' containerd, runc and CNI
# plugins go into their own image). containerd's packaged service is disabled.
install umoci skopeo containerd runc socat

# The Kubernetes tests run a real kube-apiserver and etcd on 127.0.0.1:
# etcd from Debian's etcd-server, kube-apiserver built from Debian's own
# kubernetes source package with Debian's Go (cached by version, about 3
# minutes the first time; see tests/kube/build-apiserver.sh). kubectl from
# Debian's kubernetes-client unless one is already installed.
kpkgs=(golang-go dpkg-dev golang-github-modern-go-reflect2-dev golang-github-json-iterator-go-dev
       etcd-server curl openssl)
command -v kubectl >/dev/null 2>&1 || kpkgs+=(kubernetes-client)
install "${kpkgs[@]}"
# Debian's kubectl as well when the one on PATH is another: test_kube_deploy
# runs docs/kubernetes.md's install steps with both (Debian's 1.20 resolves
# short names from a cache newer ones refresh). Unpacked into the kube cache,
# not installed over the other.
kcache=${MCGIT_KUBE_CACHE:-/var/cache/mcgit-kube}
if ! dpkg -s kubernetes-client >/dev/null 2>&1 && [ ! -x "$kcache/debian-kubectl/usr/bin/kubectl" ]; then
  kdl=$(mktemp -d) && chmod 755 "$kdl" && mkdir -p "$kcache"
  (cd "$kdl" && apt-get download -qq kubernetes-client 2>/dev/null &&
    dpkg-deb -x kubernetes-client_*.deb "$kcache/debian-kubectl")
  rm -rf "$kdl"
fi
# The packaged etcd is disabled (quiet_services); the tests start their own.
"$(dirname "$0")"/kube/build-apiserver.sh >/dev/null
