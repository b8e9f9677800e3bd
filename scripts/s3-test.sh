#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the S3 tests (ctest label "s3": the bucket store tests and the CLI
# script tests/s3/cli_s3_test.sh) against a local Ceph radosgw that
# scripts/s3-test-server.sh starts, then the bucket store tests again
# against a second S3 implementation, OpenStack Swift's s3api
# (scripts/swift-test-server.sh), so behaviour specific to one server is
# caught. Each server is stopped afterwards. The CLI script runs against
# radosgw only: it stops and restarts the gateway mid-request.
#
# Usage: scripts/s3-test.sh [--radosgw-only | --swift-only]
set -euo pipefail
cd "$(dirname "$0")/.."
radosgw=1 swift=1
case "${1:-}" in
  --radosgw-only) swift=0 ;;
  --swift-only) radosgw=0 ;;
  "") ;;
  *) echo "s3-test.sh: unknown argument $1" >&2; exit 2 ;;
esac
scripts/install-deps.sh
scripts/build.sh -DCHUNKSTORE_WERROR=ON
export CHUNKSTORE_TEST_S3_BUCKET=chunkstore-tests
if [ $radosgw = 1 ]; then
  scripts/s3-test-server.sh start >/dev/null
  trap 'scripts/s3-test-server.sh stop' EXIT
  # shellcheck disable=SC1091
  # radosgw takes conditional writes: its stores get sequenced logs.
  (. "${CHUNKSTORE_S3_DIR:-/tmp/chunkstore-s3}/env" && CHUNKSTORE_TEST_S3_CONDITIONAL=1 \
    ctest --test-dir build --output-on-failure -L s3)
  scripts/s3-test-server.sh stop
  trap - EXIT
fi
if [ $swift = 1 ]; then
  scripts/swift-test-server.sh start >/dev/null
  trap 'scripts/swift-test-server.sh stop' EXIT
  # shellcheck disable=SC1091
  # Swift's s3api answers a conditional PUT with 501: its stores take lock
  # blobs, and the tests of sequenced logs have nothing to run on there.
  (. "${CHUNKSTORE_SWIFT_DIR:-/tmp/chunkstore-swift}/env" && CHUNKSTORE_TEST_S3_CONDITIONAL=0 \
    ctest --test-dir build --output-on-failure -L s3 -E '^s3\.cli$|BucketSequencedTest|BucketListingTest')
fi
