#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Measures a bucket store on a local radosgw (scripts/s3-test-server.sh)
# next to the local-disk operations, in one run of chunkstore-bench, saves
# docs/measurements/bench-s3-DATE.json and regenerates docs/performance.md.
#
# Usage: scripts/measure-s3.sh [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[ "${1:-}" = "--quick" ] && quick=1
source scripts/lib/common.sh
release_tools chunkstore-bench
scripts/s3-test-server.sh start >/dev/null
trap 'scripts/s3-test-server.sh stop' EXIT
# shellcheck disable=SC1091
. "${CHUNKSTORE_S3_DIR:-/tmp/chunkstore-s3}/env"
date=$(date -u +%Y-%m-%d)
out=docs/measurements
samples=7
[ $quick = 1 ] && samples=3
build-release/bench/chunkstore-bench --size 256MiB --warmups 1 --samples $samples \
  --only 'yardstick|publish-file|publish-again|read-verified|range-32k|s3-' \
  --s3 s3://chunkstore-bench/run --json "$out/bench-s3-$date.json"
python3 scripts/report.py
echo "measure-s3.sh: wrote $out/bench-s3-$date.json and docs/performance.md"
