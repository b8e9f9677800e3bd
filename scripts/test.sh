#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs dependencies, builds with -Wall -Wextra -Werror, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh -DCHUNKSTORE_WERROR=ON
# The S3 tests (label s3) need a server: scripts/s3-test.sh runs them.
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600 -LE s3
