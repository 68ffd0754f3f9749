#!/usr/bin/env bash
# Installs what mcgit needs to build and test, from Debian's packages. Run as root.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
pkgs=(build-essential cmake pkg-config git openssh-client valgrind python3 jq procps gzip coreutils
      libgit2-dev libyaml-dev libjansson-dev libcurl4-openssl-dev libssl-dev
      libsodium-dev libcmocka-dev zlib1g-dev libmicrohttpd-dev
      clang libclang-rt-14-dev  # clang: tests/fuzz/run.sh (libFuzzer, ASan, UBSan)
      prometheus)  # promtool and a real Prometheus server: tests/integration/test_metrics.sh
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The Kubernetes tests run a real kube-apiserver and etcd on 127.0.0.1:
# etcd from Debian's etcd-server, kube-apiserver built from Debian's own
# kubernetes source package with Debian's Go (cached by version, about 3
# minutes the first time; see tests/kube/build-apiserver.sh). kubectl from
# Debian's kubernetes-client unless one is already installed.
kpkgs=(golang-go dpkg-dev golang-github-modern-go-reflect2-dev golang-github-json-iterator-go-dev
       etcd-server curl openssl)
command -v kubectl >/dev/null 2>&1 || kpkgs+=(kubernetes-client)
missing=()
for p in "${kpkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# A systemd host starts the packaged etcd on 2379; the tests use their own.
"$(dirname "$0")"/kube/build-apiserver.sh >/dev/null
