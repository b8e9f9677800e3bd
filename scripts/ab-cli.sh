#!/usr/bin/env bash
# Measures two builds of the chunkstore CLI side by side in one run, each
# command a fresh process timed whole, as scripts/compare-peers.sh times
# them: `publish` of a file into a fresh store (durable) and `cat REF >
# FILE` (restore, after recycling page-cache pages). What a fresh process
# pays (start-up, faulting in buffers) shows here and not in ab.sh, whose
# benchmark binary runs every operation in one warm process. Sides take
# turns, round after round; prints median and min-max of each side and the
# ratio of medians (above 1: the working tree is faster).
#
# Usage: scripts/ab-cli.sh BASE_REV [--rounds N] [--size-mib M]
#   Defaults: 15 rounds, 256 MiB of pseudo-random input.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n 2,12p "$0"; exit 2; }
base=$1; shift
rounds=15
size=256
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --size-mib) size=$2; shift 2 ;;
    *) echo "ab-cli.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
out=$(mktemp -d /tmp/chunkstore-ab-cli.XXXXXX)
rev=$(git rev-parse --short "$base")
tree=$out/base-$rev
git worktree add --detach "$tree" "$rev" >/dev/null 2>&1 || { echo "ab-cli.sh: cannot check out $base" >&2; exit 1; }
trap 'git worktree remove --force "$tree" >/dev/null 2>&1 || true; rm -rf "$out"' EXIT
build() {  # source dir, build dir
  cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DCHUNKSTORE_BUILD_TESTS=OFF >/dev/null
  cmake --build "$2" -j"$(nproc)" --target chunkstore >/dev/null
}
echo "ab-cli.sh: building base $rev and the working tree" >&2
build "$tree" "$out/build-base"
build . build-release
python3 scripts/ab_cli.py --base "$out/build-base/cli/chunkstore" --new build-release/cli/chunkstore \
  --base-label "$rev" --rounds "$rounds" --size-mib "$size" --work "$out"
