#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Measures chunkstore beside restic, borg and casync (from Debian) on real
# data that it builds from Debian packages itself (scripts/compare_real.py
# says which), then regenerates docs/performance.md. Writes
# docs/measurements/real-DATE.json. Needs about 12 GB free under --cache.
# Usage: scripts/compare-real.sh [--rounds N] [--only kernel-tar,llvm-libs,ext4-image] [--cache DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/common.sh
missing=()
for p in restic borgbackup casync time xz-utils e2fsprogs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
release_tools chunkstore
python3 scripts/compare_real.py --chunkstore build-release/cli/chunkstore "$@"
python3 scripts/report.py
