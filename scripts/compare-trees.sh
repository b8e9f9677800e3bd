#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Measures chunkstore's trees beside restic, borg and casync (from Debian)
# on the Linux 6.1 source tree, which it unpacks from Debian's
# linux-source-6.1 itself (scripts/compare_trees.py says how), then
# regenerates docs/performance.md. Writes docs/measurements/trees-DATE.json.
# Needs root (each restore goes to a freshly made ext4 file system) and
# about 8 GB free under --cache.
# Usage: scripts/compare-trees.sh [--rounds N] [--cache DIR] [--tools chunkstore,restic,...]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/common.sh
install_packages restic borgbackup casync time xz-utils e2fsprogs diffutils
release_tools chunkstore chunkstore-bench
python3 scripts/compare_trees.py --chunkstore build-release/cli/chunkstore --bench build-release/bench/chunkstore-bench "$@"
python3 scripts/report.py
