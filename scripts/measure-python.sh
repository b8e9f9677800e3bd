#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Measures the Python package's verified reads against the C++ reader with
# a release build, in alternating rounds, then regenerates
# docs/performance.md. Writes docs/measurements/python-DATE.json.
# Usage: scripts/measure-python.sh [--rounds N] [--mib M]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/common.sh
release_tools chunkstore-bench chunkstore_python
python3 scripts/measure_python.py --build build-release "$@"
python3 scripts/report.py
