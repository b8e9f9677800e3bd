#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The codec frontier on real data: chunkstore-bench's codec-* operations
# (every chunk compressed and decoded on one core, each codec and level) on
# the first version of each data set scripts/compare_real.py builds, then
# regenerates docs/performance.md. Writes docs/measurements/codecs-DATE.json.
# Usage: scripts/measure-codecs.sh [--samples N] [--codecs "zlib:1 zstd:1 ..."]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/common.sh
samples=3
codecs="zlib:1 zlib:6 zstd:1 zstd:2 zstd:3 zstd:6 zstd:12"
while [ $# -gt 0 ]; do
  case "$1" in
    --samples) samples=$2; shift 2 ;;
    --codecs) codecs=$2; shift 2 ;;
    *) echo "measure-codecs: unknown argument $1" >&2; exit 2 ;;
  esac
done
release_tools chunkstore-bench
cache=${CHUNKSTORE_REALDATA:-/var/tmp/chunkstore-realdata}
mkdir -p "$cache"
inputs=$(python3 - "$cache" <<'PY'
import sys
sys.path.insert(0, "scripts")
from compare_real import datasets
for name, versions in datasets(sys.argv[1]).items():
    print(name, versions[0])
PY
)
out=docs/measurements/codecs-$(date -u +%Y-%m-%d).json
parts=()
while read -r name path; do
  part=$(mktemp)
  # shellcheck disable=SC2086
  build-release/bench/chunkstore-bench --only '^codec-' --codec-input "$path" --codecs $codecs \
    --warmups 0 --samples "$samples" --json "$part" >&2
  parts+=("$name=$part")
done <<< "$inputs"
python3 - "$out" "${parts[@]}" <<'PY'
import json, sys
out = {"datasets": {}}
for arg in sys.argv[2:]:
    name, path = arg.split("=", 1)
    with open(path) as f:
        rep = json.load(f)
    out["environment"] = rep["environment"]
    out["datasets"][name] = rep["results"]
with open(sys.argv[1], "w") as f:
    json.dump(out, f, indent=1)
print("measure-codecs: wrote", sys.argv[1])
PY
python3 scripts/report.py
