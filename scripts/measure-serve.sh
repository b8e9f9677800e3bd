#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Measures serve (a full GET against cat, 32 KiB range GETs from 8
# keep-alive clients) and copy (1 GiB against a durable publish, a
# one-byte edit) with a release build, in alternating rounds, then
# regenerates docs/performance.md. Writes docs/measurements/serve-DATE.json.
# Usage: scripts/measure-serve.sh [--rounds N] [--wrk-seconds S]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/common.sh
install_packages wrk curl
release_tools chunkstore chunkstore-bench
python3 scripts/measure_serve.py --chunkstore build-release/cli/chunkstore --bench build-release/bench/chunkstore-bench "$@"
python3 scripts/report.py
