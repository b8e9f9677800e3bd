#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job, end to end: install, build, publish a sample file into the
# default store and read it back, checking that the bytes are identical.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
sample=$(mktemp)
trap 'rm -f "$sample" "$sample.out"' EXIT
head -c 20000000 /dev/urandom > "$sample"
printf 'a sample payload of %s bytes\n' "$(stat -c %s "$sample")"
id=$(build/cli/chunkstore publish "$sample" | cut -d' ' -f1)
echo "published as $id"
build/cli/chunkstore cat "$id" > "$sample.out"
cmp "$sample" "$sample.out"
[ "$id" = "sha256:$(sha256sum "$sample" | cut -d' ' -f1)" ]
echo "read back $(stat -c %s "$sample.out") bytes: identical, and the id matches sha256sum"
