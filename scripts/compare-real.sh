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
install_packages restic borgbackup casync time xz-utils e2fsprogs
release_tools chunkstore
python3 scripts/compare_real.py --chunkstore build-release/cli/chunkstore "$@"
python3 scripts/report.py
