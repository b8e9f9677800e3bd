#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for a
# bounded time. Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [JSON_OUT]
# Prints, and optionally saves, each target's execution count.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
json=${2:-}
CHUNKSTORE_EXTRA_PACKAGES=1 scripts/install-deps.sh >/dev/null
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCHUNKSTORE_FUZZ=ON -DCHUNKSTORE_BUILD_TESTS=OFF -DCHUNKSTORE_BUILD_BENCH=OFF \
  -DCHUNKSTORE_BUILD_EXAMPLES=OFF -DCHUNKSTORE_WERROR=OFF \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzz_record fuzz_manifest fuzz_ref fuzz_chunker fuzz_log fuzz_segment fuzz_sha256_pair fuzz_decompress fuzz_tree fuzz_push >/dev/null
results=()
for t in record manifest ref chunker log segment sha256_pair decompress tree push; do
  corpus=build-fuzz/corpus-$t
  mkdir -p "$corpus"
  log=build-fuzz/fuzz-$t.log
  if ! build-fuzz/tests/fuzz/fuzz_$t -max_total_time="$seconds" -print_final_stats=1 -max_len=65536 \
       "$corpus" >"$log" 2>&1; then
    echo "fuzz.sh: fuzz_$t found a failure:"; tail -40 "$log"; exit 1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  echo "fuzz_$t: $runs executions in ${seconds}s, no failure"
  results+=("\"fuzz_$t\": {\"seconds\": $seconds, \"executions\": $runs, \"failures\": 0}")
done
if [ -n "$json" ]; then
  (IFS=,; echo "{${results[*]}}") > "$json"
fi
