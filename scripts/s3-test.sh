#!/usr/bin/env bash
# Runs the S3 tests (ctest label "s3": the bucket store tests and the CLI
# script tests/s3/cli_s3_test.sh) against a local Ceph radosgw that
# scripts/s3-test-server.sh starts, and stops it afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh -DCHUNKSTORE_WERROR=ON
scripts/s3-test-server.sh start >/dev/null
trap 'scripts/s3-test-server.sh stop' EXIT
# shellcheck disable=SC1091
. "${CHUNKSTORE_S3_DIR:-/tmp/chunkstore-s3}/env"
export CHUNKSTORE_TEST_S3_BUCKET=chunkstore-tests
ctest --test-dir build --output-on-failure -L s3
