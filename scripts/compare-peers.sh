#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Measures chunkstore beside restic, borg and casync (from Debian) on the
# same deterministic inputs in the same run, then regenerates
# docs/performance.md. Writes docs/measurements/peers-DATE.json.
# Usage: scripts/compare-peers.sh [--rounds N] [--size-mib N]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/common.sh
missing=()
for p in restic borgbackup casync time; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
release_tools chunkstore
python3 scripts/compare_peers.py --chunkstore build-release/cli/chunkstore "$@"
python3 scripts/report.py
