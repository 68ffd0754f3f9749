#!/usr/bin/env bash
# Installs what mcgit needs to build and test, from Debian's packages. Run as root.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
pkgs=(build-essential cmake pkg-config git openssh-client valgrind python3 jq procps gzip coreutils
      libgit2-dev libyaml-dev libjansson-dev libcurl4-openssl-dev libssl-dev
      libsodium-dev libcmocka-dev zlib1g-dev)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi
