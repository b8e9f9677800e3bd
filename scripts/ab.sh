#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Measures two builds side by side in one run: the benchmark binary of a
# base revision and that of the working tree take turns, round after round,
# so drift on a shared machine hits both alike. Prints, for every operation,
# the median and min-max of each side over all rounds and the ratio of
# medians (new/base for rates, base/new for times: above 1 means the
# working tree is faster). The JSON of every round stays in the output
# directory.
#
# Usage: scripts/ab.sh BASE_REV [--rounds N] [--out DIR] [-- BENCH_ARGS...]
#   BASE_REV: a git revision (e.g. HEAD~1, main, a commit id).
#   BENCH_ARGS: passed to chunkstore-bench on both sides, e.g.
#               --size 256MiB --only 'read-verified|range-32k-cold'.
#   Defaults: 5 rounds, 1 warmup and 3 samples per round.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n 2,15p "$0"; exit 2; }
base=$1; shift
rounds=5
out=$(mktemp -d /tmp/chunkstore-ab.XXXXXX)
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --out) out=$2; mkdir -p "$out"; shift 2 ;;
    --) shift; break ;;
    *) echo "ab.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
bench_args=("$@")
source scripts/ab-build.sh
ab_build_both ab.sh "$base" "$out" chunkstore-bench
for r in $(seq 1 "$rounds"); do
  for side in base new; do
    bin=$([ $side = base ] && echo "$out/build-base/bench/chunkstore-bench" || echo build-release/bench/chunkstore-bench)
    "$bin" --warmups 1 --samples 3 "${bench_args[@]}" --json "$out/$side-$r.json" >/dev/null
  done
  echo "ab.sh: round $r of $rounds done" >&2
done
python3 - "$out" "$rounds" "$rev" <<'PY'
import json, statistics, sys
out, rounds, rev = sys.argv[1], int(sys.argv[2]), sys.argv[3]
samples = {"base": {}, "new": {}}
for side in samples:
    for r in range(1, rounds + 1):
        for res in json.load(open(f"{out}/{side}-{r}.json"))["results"]:
            samples[side].setdefault(res["name"], []).extend(res["samples_ms"])
print(f"base {rev} vs working tree, {rounds} alternating rounds; times in ms (median, min-max)")
print(f"{'operation':28} {'base':>24} {'new':>24} {'speed-up':>9}")
for name, a in samples["base"].items():
    b = samples["new"].get(name)
    if not b:
        continue
    ma, mb = statistics.median(a), statistics.median(b)
    fa = f"{ma:.3f} ({min(a):.3f}-{max(a):.3f})"
    fb = f"{mb:.3f} ({min(b):.3f}-{max(b):.3f})"
    print(f"{name:28} {fa:>24} {fb:>24} {ma / mb:8.2f}x")
print(f"(round files in {out})")
PY
