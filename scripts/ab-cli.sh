#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Measures two builds of the chunkstore CLI side by side in one run, each
# command a fresh process timed whole, as scripts/compare-peers.sh times
# them: `publish` of a file into a fresh store (durable), `publish` of a
# copy with one byte changed into a store holding the file (re-ingest),
# `cat REF > FILE` (restore, after recycling page-cache pages), and
# `cat REF > /dev/null` (cat-null: a verified read, nothing written). What
# a fresh process pays (start-up, faulting in buffers) shows here and not
# in ab.sh, whose benchmark binary runs every operation in one warm
# process. Sides take turns, round after round; prints median and min-max
# of each side and the ratio of medians (above 1: the working tree is
# faster).
#
# Usage: scripts/ab-cli.sh BASE_REV [--rounds N] [--size-mib M]
#   Defaults: 15 rounds, 256 MiB of pseudo-random input.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n 2,12p "$0"; exit 2; }
base=$1; shift
rounds=15
size=256
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --size-mib) size=$2; shift 2 ;;
    *) echo "ab-cli.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
out=$(mktemp -d /tmp/chunkstore-ab-cli.XXXXXX)
ab_cleanup='rm -rf "$out"'
source scripts/ab-build.sh
ab_build_both ab-cli.sh "$base" "$out" chunkstore
python3 scripts/ab_cli.py --base "$out/build-base/cli/chunkstore" --new build-release/cli/chunkstore \
  --base-label "$rev" --rounds "$rounds" --size-mib "$size" --work "$out"
