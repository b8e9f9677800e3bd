#!/usr/bin/env bash
# Installs dependencies, builds with -Wall -Wextra -Werror, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh -DCHUNKSTORE_WERROR=ON
ctest --test-dir build --output-on-failure -j"$(nproc)"
