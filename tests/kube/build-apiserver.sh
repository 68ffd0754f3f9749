#!/bin/sh
# Build a real kube-apiserver from Debian's own `kubernetes` source package
# (1.20.x, vendored Go dependencies) with Debian's Go, and cache the binary
# outside the clone, keyed by the package version. Prints the binary's path.
#
#   tests/kube/build-apiserver.sh            # build or reuse the cached binary
#   tests/kube/build-apiserver.sh NAME...    # kube-apiserver, kube-controller-manager,
#                                            # kube-scheduler, kubelet: one path
#                                            # a line, in order (tests/kube/cluster.sh)
#   MCGIT_KUBE_CACHE=DIR                     # cache directory (default /var/cache/mcgit-kube)
#
# Needs: golang-go, dpkg-dev, golang-github-modern-go-reflect2-dev,
# golang-github-json-iterator-go-dev (tests/setup.sh installs them). The
# sources list used to fetch the source is private: /etc/apt is not touched.
set -eu

cache=${MCGIT_KUBE_CACHE:-/var/cache/mcgit-kube}
mkdir -p "$cache"
apt_dir="$cache/apt"
# One build at a time per cache (two set-ups at once would share the apt
# directory); each in a work directory of its own, removed on every exit.
exec 9>"$cache/lock"
flock 9
rm -rf "$cache/work" # an older version's shared work directory
work=$(mktemp -d "$cache/work.XXXXXX")
ticker=""
trap '[ -z "$ticker" ] || kill "$ticker" 2>/dev/null; rm -rf "$work"' EXIT

log() { printf 'build-apiserver: %s\n' "$*" >&2; }

# A private apt configuration holding only the deb-src line.
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial"
cat > "$apt_dir/sources.list" <<SRC
deb-src http://deb.debian.org/debian bookworm main
deb-src http://deb.debian.org/debian-security bookworm-security main
SRC
aptq() {
    apt-get -q -o APT::Sandbox::User=root -o Dir::Etc::SourceList="$apt_dir/sources.list" \
        -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists="$apt_dir/lists" \
        -o Dir::Cache::archives="$apt_dir/archives" "$@"
}

version=""
if [ -s "$apt_dir/version" ] && [ -z "${MCGIT_KUBE_REFRESH:-}" ]; then
    version=$(cat "$apt_dir/version")
fi
if [ -z "$version" ]; then
    aptq update >&2
    version=$(apt-cache -o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists="$apt_dir/lists" showsrc kubernetes 2>/dev/null | sed -n 's/^Version: //p' | sort -V | tail -1)
    [ -n "$version" ] || { log "no kubernetes source package found"; exit 1; }
    echo "$version" > "$apt_dir/version"
fi
[ $# -gt 0 ] || set -- kube-apiserver
missing=""
for name in "$@"; do
    case $name in
        kube-apiserver | kube-controller-manager | kube-scheduler | kubelet) ;;
        *) log "unknown binary $name"; exit 1 ;;
    esac
    [ -x "$cache/$name-$version" ] || missing="$missing $name"
done
if [ -z "$missing" ]; then
    for name in "$@"; do log "cached: $cache/$name-$version"; echo "$cache/$name-$version"; done
    exit 0
fi

log "building$missing from Debian's kubernetes $version (about 3 minutes each, once: cached in $cache)"
# progress while Go is silent: the elapsed time every 20 s
started=$(date +%s)
(while sleep 20; do log "still building ($(($(date +%s) - started)) s)"; done) &
ticker=$!
mkdir -p "$work/src"
(cd "$work/src" && aptq source --download-only "kubernetes=$version" >&2 &&
    dpkg-source --no-check -x kubernetes_*.dsc kubernetes >&2)

gopath="$work/gopath"
mkdir -p "$gopath/src/k8s.io"
mv "$work/src/kubernetes" "$gopath/src/k8s.io/kubernetes"
k8s="$gopath/src/k8s.io/kubernetes"

# Go 1.19 crashes the vendored reflect2 1.0.1 on the first custom object:
# use Debian's reflect2 1.0.2 and json-iterator 1.1.12.
for p in github.com/modern-go/reflect2 github.com/json-iterator/go; do
    src=/usr/share/gocode/src/$p
    [ -d "$src" ] || { log "missing $src (install the golang-*-dev packages)"; exit 1; }
    rm -rf "$k8s/vendor/$p"
    mkdir -p "$k8s/vendor/$p"
    (cd "$src" && find . -maxdepth 1 -name '*.go' ! -name '*_test.go' -exec cp {} "$k8s/vendor/$p/" \;)
done

export GOPATH="$gopath" GO111MODULE=off CGO_ENABLED=0 GOPROXY=off GOFLAGS=-mod=vendor
unset GOFLAGS
export GOCACHE="$work/gocache"
cd "$k8s"

# pkg/generated/openapi/zz_generated.openapi.go is not in the tarball:
# generate it with the vendored openapi-gen, inputs as the upstream Makefile
# lists them (every package tagged +k8s:openapi-gen=).
log "step 1 of 3: the OpenAPI generator"
go build -o "$work/openapi-gen" ./vendor/k8s.io/kube-openapi/cmd/openapi-gen
inputs=$(grep -rl --include='*.go' -e '+k8s:openapi-gen=' pkg staging/src vendor/k8s.io 2>/dev/null |
    xargs -n1 dirname | sort -u |
    sed -e 's#^staging/src/##' -e 's#^vendor/##' -e 's#^pkg/#k8s.io/kubernetes/pkg/#' |
    grep -v -e '^k8s.io/kubernetes/vendor' -e '/testdata' -e 'code-generator' | sort -u | paste -sd, -)
log "step 2 of 3: generating OpenAPI definitions"
"$work/openapi-gen" --input-dirs "$inputs" \
    --output-package k8s.io/kubernetes/pkg/generated/openapi -O zz_generated.openapi \
    --go-header-file hack/boilerplate/boilerplate.generatego.txt \
    --output-base "$gopath/src" --report-filename /dev/null >&2

for name in $missing; do
    bin="$cache/$name-$version"
    log "step 3 of 3: compiling $name"
    go build -trimpath -ldflags '-s -w' -o "$bin.tmp" "k8s.io/kubernetes/cmd/$name"
    mv "$bin.tmp" "$bin"
    log "built in $(($(date +%s) - started)) s: $bin"
done
for name in "$@"; do echo "$cache/$name-$version"; done
