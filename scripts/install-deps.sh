#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what chunkstore needs to build and test on Debian 12, with apt-get.
# Idempotent: packages already present are left alone. Needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libssl-dev libsqlite3-dev zlib1g-dev libxxhash-dev libcli11-dev libcurl4-openssl-dev nlohmann-json3-dev libzstd-dev libdeflate-dev libexpat1-dev libmicrohttpd-dev libfuse3-dev
  libgtest-dev libgmock-dev libbenchmark-dev python3
  pybind11-dev python3-dev python3-pytest python3-numpy
  openssl util-linux zsh groff-base curl fuse3
)
# Optional extras for sanitizer/fuzz builds and measurement scripts.
if [ "${CHUNKSTORE_EXTRA_PACKAGES:-0}" = 1 ]; then
  packages+=(clang libclang-rt-14-dev hyperfine)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${missing[*]}"
