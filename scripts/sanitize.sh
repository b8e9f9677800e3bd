#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds and runs the test suite under AddressSanitizer + UndefinedBehavior-
# Sanitizer (build-asan/) and ThreadSanitizer (build-tsan/). Any report fails.
# Usage: scripts/sanitize.sh [asan|tsan]...   (default: both)
# The S3 tests (label s3) run too when CHUNKSTORE_TEST_S3_BUCKET and the AWS
# variables name a server (scripts/s3-test-server.sh start prints them).
set -euo pipefail
cd "$(dirname "$0")/.."
kinds=("$@")
[ ${#kinds[@]} -eq 0 ] && kinds=(asan tsan)
for kind in "${kinds[@]}"; do
  case "$kind" in
    asan) flags="address,undefined"; opt="-O0 -g" ;;
    tsan) flags="thread"; opt="-O1 -g1" ;;
    *) echo "sanitize.sh: unknown kind $kind (asan or tsan)" >&2; exit 2 ;;
  esac
  # Assertions stay on in both. TSan at -O1 with line tables only: its
  # suite runs about four times faster than at -O0, which pays for the
  # slower build; ASan's does not, so it stays at -O0.
  cmake -S . -B "build-$kind" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="$opt" \
    -DCHUNKSTORE_SANITIZE="$flags" -DCHUNKSTORE_BUILD_BENCH=OFF >/dev/null
  cmake --build "build-$kind" -j"$(nproc)"
  labels=(-LE s3)
  [ -n "${CHUNKSTORE_TEST_S3_BUCKET:-}" ] && labels=()
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    ctest --test-dir "build-$kind" --output-on-failure -j"$(nproc)" --timeout 600 "${labels[@]}"
done
