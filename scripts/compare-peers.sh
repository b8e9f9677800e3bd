#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Measures chunkstore beside restic, borg and casync (from Debian) on the
# same deterministic inputs in the same run, then regenerates
# docs/performance.md. Writes docs/measurements/peers-DATE.json.
# Usage: scripts/compare-peers.sh [--rounds N] [--size-mib N]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/common.sh
install_packages restic borgbackup casync time
release_tools chunkstore
python3 scripts/compare_peers.py --chunkstore build-release/cli/chunkstore "$@"
python3 scripts/report.py
