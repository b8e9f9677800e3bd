#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds chunkstore into build/ (Release with debug info).
# Usage: scripts/build.sh [extra cmake arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build build -j"$(nproc)"
