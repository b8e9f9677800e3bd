#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Times reads through `chunkstore mount` against `chunkstore cat` of the
# same object (scripts/measure_mount.py says what runs and how) and writes
# docs/measurements/mount-DATE.json, then regenerates docs/performance.md.
# With --base REV, the mount of that revision's build is timed beside
# this one's in the same rounds (scripts/ab-build.sh builds it).
# Needs FUSE (/dev/fuse, fusermount3).
#
# Usage: scripts/measure-mount.sh [--base REV] [--rounds N] [--size-mib N]
#   Defaults: 5 rounds over 1 GiB of pseudo-random input.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/common.sh
work=$(mktemp -d "${TMPDIR:-/var/tmp}/chunkstore-mount.XXXXXX")
base_args=()
if [ "${1:-}" = "--base" ]; then
  [ $# -ge 2 ] || { echo "measure-mount.sh: --base needs a revision" >&2; exit 2; }
  scripts/install-deps.sh
  ab_cleanup='fusermount3 -u "$work/mnt" 2>/dev/null || true; fusermount3 -u "$work/mnt-base" 2>/dev/null || true; rm -rf "$work"'
  source scripts/ab-build.sh
  ab_build_both measure-mount.sh "$2" "$work" chunkstore
  base_args=(--base-exe "$work/build-base/cli/chunkstore" --base-label "$rev")
  shift 2
  warn_if_busy
else
  release_tools chunkstore
  trap 'fusermount3 -u "$work/mnt" 2>/dev/null || true; rm -rf "$work"' EXIT
fi
python3 scripts/measure_mount.py --exe build-release/cli/chunkstore --work "$work" \
  --commit "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- libstore cli || echo +)" "${base_args[@]}" "$@"
python3 scripts/report.py
