#!/usr/bin/env bash
# mcgit's image without a registry: an OCI archive built from Debian's
# packages and this tree's .deb, for `ctr images import`, `podman load` or
# `skopeo copy oci-archive:...` at a site that reaches no container registry
# (docs/kubernetes.md, "Without a registry"). Run as root (debootstrap,
# chroot).
#
#   deploy/image/build-image.sh OUT.tar [--deb FILE] [--tag TAG]
#
# The root file system is `debootstrap --variant=minbase bookworm` with the
# runtime stage's packages of deploy/Containerfile (deploy/image/packages.sh
# reads them, so both images hold the same packages), then the .deb
# (deploy/debian/build-deb.sh, or --deb FILE / MCGIT_IMAGE_DEB=FILE) installed
# by dpkg without any network: a dependency the list lacks fails the build.
# apt's lists, documentation and logs are left out. umoci packs it as one
# layer with the Containerfile's configuration (entrypoint /usr/bin/mcgit,
# user 65532:65532); the archive's one image is named
# docker.io/library/mcgit:TAG (default: latest), which is what `image:
# mcgit:TAG` in deploy/*.yaml means. The debootstrapped root is cached in
# MCGIT_IMAGE_CACHE (default /var/cache/mcgit-image), keyed by the packages'
# candidate versions. Mirror: MCGIT_DEBIAN_MIRROR, else this host's first
# Debian source. Prints `image: REF` and `archive: OUT.tar`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
cache=${MCGIT_IMAGE_CACHE:-/var/cache/mcgit-image}
log() { printf 'build-image: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

out=${1:?usage: build-image.sh OUT.tar [--deb FILE] [--tag TAG]}
shift
deb=${MCGIT_IMAGE_DEB:-}
tag=latest
while [ $# -gt 0 ]; do
  case $1 in
    --deb) deb=${2:?--deb FILE}; shift 2 ;;
    --tag) tag=${2:?--tag TAG}; shift 2 ;;
    *) die "unknown option $1" ;;
  esac
done
[[ $tag =~ ^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$ ]] || die "--tag $tag: not a valid image tag"
[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, chroot)"
for t in debootstrap umoci python3; do command -v "$t" >/dev/null || die "$t not found (apt-get install $t)"; done

mirror() {
  if [ -n "${MCGIT_DEBIAN_MIRROR:-}" ]; then echo "$MCGIT_DEBIAN_MIRROR"; return; fi
  local u
  u=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -n 's/^URIs: *\([^ ]*\/debian\)$/\1/p' | head -1)
  [ -n "$u" ] || u=$(grep -hs '^deb ' /etc/apt/sources.list | awk '$2 ~ /\/debian$/ {print $2; exit}')
  [ -n "$u" ] || die "no Debian mirror: set MCGIT_DEBIAN_MIRROR"
  echo "$u"
}

pkgs=$("$here/packages.sh" runtime "$src/deploy/Containerfile")
[ -n "$pkgs" ] || die "deploy/Containerfile: no runtime packages found"
t0=$(date +%s)
work=$(mktemp -d /var/tmp/mcgit-image.XXXXXX)
trap 'mountpoint -q "$work/root/proc" 2>/dev/null && umount "$work/root/proc"; rm -rf "$work"' EXIT

if [ -z "$deb" ]; then
  log "building the .deb (deploy/debian/build-deb.sh)"
  deb=$(MCGIT_DEB_NO_LINTIAN=1 "$src/deploy/debian/build-deb.sh" "$work/deb" | tail -1)
fi
[ -f "$deb" ] || die "no .deb: $deb"

# the debootstrapped root, cached by the packages' candidate versions
mkdir -p "$cache"
key=$( (echo image-root-v1; echo "$pkgs"; apt-cache policy $pkgs 2>/dev/null |
  awk '/^[^ ]/{p=$1} /Candidate:/{print p, $2}') | sha256sum | cut -c1-16)
tarball=$cache/root-$key.tgz
if [ ! -s "$tarball" ]; then
  m=$(mirror)
  log "debootstrap --variant=minbase bookworm ($m) with $(echo $pkgs | tr '\n' ' '), a few minutes, once"
  mkdir "$work/boot"
  if ! debootstrap --variant=minbase --include="$(echo $pkgs | tr ' ' ,)" bookworm "$work/boot" "$m" \
      >"$work/debootstrap.log" 2>&1; then
    tail -20 "$work/debootstrap.log" >&2; die "debootstrap failed"
  fi
  chroot "$work/boot" apt-get clean
  find "$cache" -name 'root-*.tgz' -delete
  tar -C "$work/boot" --numeric-owner -czf "$tarball.part" . && mv "$tarball.part" "$tarball"
  rm -rf "$work/boot"
fi

r=$work/root
mkdir "$r"
tar -C "$r" --numeric-owner -xzf "$tarball"
cp "$deb" "$r/tmp/mcgit.deb"
mount -t proc proc "$r/proc"
rc=0
chroot "$r" dpkg -i /tmp/mcgit.deb >"$work/dpkg.log" 2>&1 || rc=$?
umount "$r/proc"
[ "$rc" = 0 ] || { tail -20 "$work/dpkg.log" >&2; die "installing the .deb failed: deploy/Containerfile's runtime packages miss a dependency"; }
chroot "$r" /usr/bin/mcgit version >/dev/null || die "mcgit does not run in the image's root"
rm -rf "$r/tmp/mcgit.deb" "$r"/var/lib/apt/lists/* "$r"/var/cache/apt/* "$r"/var/cache/debconf/*-old \
  "$r"/usr/share/doc/* "$r"/usr/share/man/* "$r"/usr/share/info/* "$r"/var/log/* "$r"/root/.bash_history
: >"$r/etc/machine-id"

# one layer, the Containerfile's configuration
l=$work/oci
umoci init --layout "$l"
umoci new --image "$l:$tag"
umoci unpack --image "$l:$tag" "$work/bundle" >/dev/null
rm -rf "$work/bundle/rootfs"
mv "$r" "$work/bundle/rootfs"
umoci repack --image "$l:$tag" "$work/bundle"
umoci config --image "$l:$tag" --author "mcgit build-image.sh" --os linux --architecture amd64 \
  --config.entrypoint /usr/bin/mcgit --config.user 65532:65532 \
  --config.label "org.opencontainers.image.title=mcgit" \
  --config.label "org.opencontainers.image.version=$(chroot "$work/bundle/rootfs" /usr/bin/mcgit version | awk '{print $NF}')"
umoci gc --layout "$l"
# the full name in the index, as containerd's and podman's importers read it
ref=docker.io/library/mcgit:$tag
python3 - "$l/index.json" "$ref" <<'PY'
import json, sys
p, ref = sys.argv[1:]
idx = json.load(open(p))
for m in idx["manifests"]:
    a = m.setdefault("annotations", {})
    a["org.opencontainers.image.ref.name"] = ref
    a["io.containerd.image.name"] = ref
json.dump(idx, open(p, "w"))
PY
mkdir -p "$(dirname "$out")"
tar -C "$l" --numeric-owner -cf "$out.part" . && mv "$out.part" "$out"
log "built in $(($(date +%s) - t0)) s: $(du -h "$out" | cut -f1)"
echo "image: $ref"
echo "archive: $out"
