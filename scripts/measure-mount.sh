#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Times reads through `chunkstore mount` against `chunkstore cat` of the
# same object (scripts/measure_mount.py says what runs and how) and writes
# docs/measurements/mount-DATE.json, then regenerates docs/performance.md.
# Needs FUSE (/dev/fuse, fusermount3).
#
# Usage: scripts/measure-mount.sh [--rounds N] [--size-mib N]
#   Defaults: 5 rounds over 1 GiB of pseudo-random input.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/common.sh
release_tools chunkstore
work=$(mktemp -d "${TMPDIR:-/var/tmp}/chunkstore-mount.XXXXXX")
trap 'fusermount3 -u "$work/mnt" 2>/dev/null || true; rm -rf "$work"' EXIT
python3 scripts/measure_mount.py --exe build-release/cli/chunkstore --work "$work" \
  --commit "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- libstore cli || echo +)" "$@"
python3 scripts/report.py
