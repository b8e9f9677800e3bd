#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the full reliability campaigns and regenerates docs/reliability.md:
# crash (1,000 SIGKILLs), corruption (1,000 damaged stores), concurrency
# (11 processes for 60 s), checkpoint (SIGKILL before every file operation
# of a checkpointing commit), bad input (every case in the table) and fuzzing
# (each libFuzzer target for a minute), and every mutant of
# scripts/mutants.txt. Figures are saved as JSON in
# docs/measurements/reliability-DATE/ (mutants: docs/measurements/mutants-DATE.json).
# Usage: scripts/reliability.sh [--quick]   (--quick: small counts, for trying it out)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[ "${1:-}" = "--quick" ] && quick=1
source scripts/lib/common.sh
release_tools chunkstore chunkstore-torture
out=docs/measurements/reliability-$(date -u +%Y-%m-%d)
mkdir -p "$out"
torture=build-release/tests/chunkstore-torture
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
if [ $quick = 1 ]; then kills=50; trials=100; secs=10; fuzz=10; else kills=1000; trials=1000; secs=60; fuzz=60; fi
"$torture" crash --kills $kills --seed 1 --dir "$scratch/crash" --json "$out/crash.json"
"$torture" corrupt --trials $trials --seed 1 --dir "$scratch/corrupt" --json "$out/corrupt.json"
"$torture" concurrency --seconds $secs --dir "$scratch/concurrency" --json "$out/concurrency.json"
"$torture" checkpoint --dir "$scratch/checkpoint" --json "$out/checkpoint.json"
python3 scripts/bad_input.py build-release/cli/chunkstore "$out/bad-input.json"
scripts/fuzz.sh $fuzz "$out/fuzz.json"
if [ $quick = 1 ]; then
  python3 scripts/mutants.py --quick
else
  python3 scripts/mutants.py --json "docs/measurements/mutants-$(date -u +%Y-%m-%d).json"
fi
python3 scripts/reliability_report.py "$out"
echo "reliability.sh: figures in $out, report in docs/reliability.md"
