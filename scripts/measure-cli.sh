#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Times the chunkstore command as people run it, one fresh process per
# operation, against `openssl dgst -sha256` of the same file in the same
# round (scripts/measure_cli.py says what runs and how), and writes
# docs/measurements/cli-DATE.json; then `python3 scripts/report.py` puts
# the figures into docs/performance.md.
#
# Usage: scripts/measure-cli.sh [--rounds N] [--sizes-mib 256,1024]
#   Defaults: 7 rounds of 256 MiB and of 1 GiB pseudo-random input.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/common.sh
install_packages time
release_tools chunkstore
work=$(mktemp -d "${TMPDIR:-/var/tmp}/chunkstore-cli.XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 scripts/measure_cli.py --exe build-release/cli/chunkstore --work "$work" \
  --commit "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- libstore cli || echo +)" "$@"
