#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The chunkstore CLI against a real S3 service (a local radosgw started by
# scripts/s3-test-server.sh): round trips, range reads, corruption, two
# writers at once, a lost cache, the gateway going away mid-publish, a
# multipart upload the gateway forgot, and bad credentials. Every step
# checks exit codes and bytes.
#
# Usage: tests/s3/cli_s3_test.sh CHUNKSTORE_BINARY
# Needs AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (the
# server script's env file) and CHUNKSTORE_TEST_S3_BUCKET.
set -uo pipefail

BIN=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SERVER="$ROOT/scripts/s3-test-server.sh"
BUCKET=${CHUNKSTORE_TEST_S3_BUCKET:?set CHUNKSTORE_TEST_S3_BUCKET}
WORK=$(mktemp -d /tmp/chunkstore-s3cli-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
RUN=$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')
STORE="s3://$BUCKET/cli-$RUN"
export XDG_CACHE_HOME="$WORK/cache-main"
export CHUNKSTORE_SCRIPTS="$ROOT/scripts"
failures=0
steps=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
step() {
  steps=$((steps + 1))
  echo "--- $*"
}
# expect CODE COMMAND...: runs the command, checks its exit code.
expect() {
  local want=$1
  shift
  "$@" >"$WORK/out" 2>"$WORK/err"
  local got=$?
  if [ "$got" -ne "$want" ]; then
    fail "'$*' exited $got, expected $want; stderr: $(head -c 400 "$WORK/err")"
    return 1
  fi
}
cs() { "$BIN" --store "$STORE" "$@"; }
sha() { sha256sum | cut -d' ' -f1; }

head -c 3000000 /dev/urandom >"$WORK/a.bin"
head -c 700000 /dev/urandom >"$WORK/b.bin"
mkdir -p "$WORK/tree/sub"
echo "hello" >"$WORK/tree/x.txt"
head -c 200000 /dev/urandom >"$WORK/tree/sub/y.bin"

step "init, publish, cat, range reads"
expect 0 cs init --min 65536 --avg 262144 --max 1048576
expect 0 cs publish "$WORK/a.bin" --name a
id_a=$(cut -d' ' -f1 <"$WORK/out")
[ "$id_a" = "sha256:$(sha <"$WORK/a.bin")" ] || fail "publish printed $id_a for a.bin"
expect 0 cs publish "$WORK/tree" --name-prefix tree/
expect 0 sh -c "\"$BIN\" --store \"$STORE\" publish - --name piped <\"$WORK/b.bin\""
for ref in a tree/x.txt tree/sub/y.bin piped; do
  case $ref in a) src=$WORK/a.bin ;; piped) src=$WORK/b.bin ;; *) src=$WORK/${ref} ;; esac
  expect 0 cs cat "$ref" -o "$WORK/back" && cmp -s "$WORK/back" "$src" || fail "cat $ref differs"
done
for range in "0 1" "262143 2" "1000000 300000" "2999990 100"; do
  set -- $range
  expect 0 cs cat a --offset "$1" --length "$2" -o "$WORK/part"
  dd if="$WORK/a.bin" bs=1 skip="$1" count="$2" status=none 2>/dev/null >"$WORK/want" ||
    tail -c +$(($1 + 1)) "$WORK/a.bin" | head -c "$2" >"$WORK/want"
  cmp -s "$WORK/part" "$WORK/want" || fail "range $1+$2 differs"
done
expect 0 cs stat a && grep -q "$id_a" "$WORK/out" || fail "stat a lacks its id"
expect 0 cs tag a a-copy
expect 0 cs log a-copy
expect 0 cs verify && grep -q "^ok:" "$WORK/out" || fail "verify did not say ok: $(cat "$WORK/out")"
expect 0 cs --json stats && grep -q '"objects":4' "$WORK/out" || fail "stats: $(cat "$WORK/out")"

step "publishing the same file again adds no pack"
packs_before=$(cs --json stats | sed 's/.*"pack_count":\([0-9]*\).*/\1/')
expect 0 cs publish "$WORK/a.bin" --name a
packs_after=$(cs --json stats | sed 's/.*"pack_count":\([0-9]*\).*/\1/')
[ "$packs_before" = "$packs_after" ] || fail "republish added packs ($packs_before -> $packs_after)"

step "a lost cache is rebuilt from the bucket"
cs ls >"$WORK/ls-before"
rm -rf "$XDG_CACHE_HOME"
expect 0 cs ls && cmp -s "$WORK/out" "$WORK/ls-before" || fail "ls after losing the cache differs"
expect 0 cs index rebuild && grep -q "rebuilt the index of .* from its change log" "$WORK/out" || fail "index rebuild said: $(cat "$WORK/out")"
expect 0 cs ls && cmp -s "$WORK/out" "$WORK/ls-before" || fail "ls after index rebuild differs"
expect 0 cs cat a -o "$WORK/back" && cmp -s "$WORK/back" "$WORK/a.bin" || fail "cat after rebuild differs"

step "two writers at once, each with its own cache"
for w in 1 2; do
  mkdir -p "$WORK/w$w"
  for i in 1 2 3 4 5 6; do head -c $((100000 * i + w)) /dev/urandom >"$WORK/w$w/f$i"; done
  cp "$WORK/a.bin" "$WORK/w$w/shared"  # both store the same chunks at once
  XDG_CACHE_HOME="$WORK/cache-w$w" "$BIN" --store "$STORE" publish "$WORK/w$w" --name-prefix "w$w/" \
    >"$WORK/w$w.out" 2>"$WORK/w$w.err" &
  pids[$w]=$!
done
for w in 1 2; do
  wait "${pids[$w]}" || fail "writer $w failed: $(cat "$WORK/w$w.err")"
done
export XDG_CACHE_HOME="$WORK/cache-reader"
for w in 1 2; do
  for f in f1 f2 f3 f4 f5 f6 shared; do
    expect 0 cs cat "w$w/$f" -o "$WORK/back" && cmp -s "$WORK/back" "$WORK/w$w/$f" || fail "w$w/$f differs"
  done
  # Each writer sees the other's objects after it refreshes (any command does).
  other=$((3 - w))
  XDG_CACHE_HOME="$WORK/cache-w$w" "$BIN" --store "$STORE" stat "w$other/f1" >/dev/null ||
    fail "writer $w does not see w$other/f1"
done
expect 0 cs verify

step "corruption in a pack blob is an error naming object and chunk"
CORRUPT="s3://$BUCKET/cli-$RUN-corrupt"
expect 0 "$BIN" --store "$CORRUPT" publish "$WORK/b.bin" --name victim
id_v=$(cut -d' ' -f1 <"$WORK/out")
python3 - "$BUCKET" "cli-$RUN-corrupt" <<'EOF' || fail "could not damage the pack"
import sys, re
sys.path.insert(0, __import__("os").environ["CHUNKSTORE_SCRIPTS"])
import s3_probe
bucket, prefix = sys.argv[1], sys.argv[2]
_, listing = s3_probe.request("GET", f"/{bucket}", query={"list-type": "2", "prefix": f"{prefix}/packs/"})
key = re.findall(rb"<Key>([^<]+)</Key>", listing)[0].decode()
_, body = s3_probe.request("GET", f"/{bucket}/{key}")
body = bytearray(body)
body[len(body) // 2] ^= 0x10
s3_probe.request("PUT", f"/{bucket}/{key}", bytes(body))
EOF
export XDG_CACHE_HOME="$WORK/cache-fresh"  # nothing cached locally
rm -f "$WORK/back"
expect 4 "$BIN" --store "$CORRUPT" cat victim -o "$WORK/back"
grep -q "$id_v" "$WORK/err" && grep -q "chunk [0-9a-f]\{64\}" "$WORK/err" ||
  fail "corruption message lacks object or chunk: $(cat "$WORK/err")"
[ -e "$WORK/back" ] && fail "cat -o left a file behind after corruption"
expect 4 "$BIN" --store "$CORRUPT" verify
export XDG_CACHE_HOME="$WORK/cache-main"

step "the gateway goes away mid-publish and comes back"
# Down for 1 s: retries may carry the publish through. Down for 10 s:
# longer than the retries last (about 6 s), so it must fail cleanly.
survived=()  # names of the publishes the retries carried through
for down in 1 10; do
  # New bytes each time: a payload already stored would need no uploads.
  head -c 200000000 /dev/urandom >"$WORK/big.bin"
  "$BIN" --store "$STORE" publish "$WORK/big.bin" --name "big$down" >"$WORK/big.out" 2>"$WORK/big.err" &
  pub=$!
  sleep 0.4
  "$SERVER" stop-gateway || fail "could not stop the gateway"
  sleep "$down"
  "$SERVER" start-gateway || fail "could not restart the gateway"
  wait $pub
  rc=$?
  echo "publish with the gateway down ${down}s exited $rc: $(head -c 300 "$WORK/big.err")"
  if [ "$down" = 10 ] && [ $rc -ne 1 ]; then fail "a 10 s outage did not fail the publish (exit $rc)"; fi
  case $rc in
    0) expect 0 cs cat "big$down" -o "$WORK/back" && cmp -s "$WORK/back" "$WORK/big.bin" ||
         fail "big$down differs after retries"
       survived+=("big$down") ;;
    1) grep -q "attempts" "$WORK/big.err" || fail "the failure does not say it retried: $(cat "$WORK/big.err")"
       expect 3 cs stat "big$down" ;;  # nothing half-visible
    *) fail "publish during the outage exited $rc" ;;
  esac
  expect 0 cs cat a -o "$WORK/back" && cmp -s "$WORK/back" "$WORK/a.bin" || fail "a damaged by the outage"
  expect 0 cs verify
done
expect 0 cs publish "$WORK/big.bin" --name big
expect 0 cs cat big -o "$WORK/back" && cmp -s "$WORK/back" "$WORK/big.bin" || fail "big differs"

step "a multipart upload the gateway forgot is started over"
# The proxy answers the first completion of a multipart upload with
# NoSuchUpload, as a gateway restarted between the parts and the completion
# may. 40 MB of new bytes make one pack of three upload parts.
head -c 40000000 /dev/urandom >"$WORK/multi.bin"
python3 "$HERE/fault_proxy.py" "$AWS_ENDPOINT_URL" 1 "$WORK/proxy.port" "$WORK/proxy.log" &
proxy=$!
for _ in $(seq 100); do [ -s "$WORK/proxy.port" ] && break; sleep 0.1; done
AWS_ENDPOINT_URL="http://127.0.0.1:$(cat "$WORK/proxy.port")" expect 0 cs publish "$WORK/multi.bin" --name multi
kill "$proxy"
wait "$proxy" 2>/dev/null
grep -q "refused completion" "$WORK/proxy.log" 2>/dev/null || fail "the proxy refused no completion"
expect 0 cs cat multi -o "$WORK/back" && cmp -s "$WORK/back" "$WORK/multi.bin" || fail "multi differs"
expect 0 cs verify

step "gc on the bucket"
# A 1 s outage may or may not have failed its publish (both are right).
expect 0 cs rm big multi "${survived[@]}"
expect 0 cs gc && grep -q "reclaimed\|removed" "$WORK/out" || fail "gc said: $(cat "$WORK/out")"
expect 3 cs stat big
expect 0 cs cat a -o "$WORK/back" && cmp -s "$WORK/back" "$WORK/a.bin" || fail "a damaged by gc"

step "bad credentials, missing stores, malformed URLs"
AWS_SECRET_ACCESS_KEY=wrong expect 5 cs ls
grep -q "AWS_SECRET_ACCESS_KEY" "$WORK/err" || fail "bad-credentials message: $(cat "$WORK/err")"
expect 3 "$BIN" --store "s3://$BUCKET/never-created-$RUN" ls
expect 3 "$BIN" --store "s3://no-such-bucket-$RUN/x" ls
expect 1 "$BIN" --store "s3://Bad_Bucket/x" ls
grep -q "malformed bucket name" "$WORK/err" || fail "malformed URL message: $(cat "$WORK/err")"
env -u AWS_ACCESS_KEY_ID "$BIN" --store "$STORE" ls >/dev/null 2>"$WORK/err"
[ $? -eq 1 ] && grep -q "AWS_ACCESS_KEY_ID" "$WORK/err" || fail "missing credentials: $(cat "$WORK/err")"

echo "$steps steps, $failures failures"
[ "$failures" -eq 0 ]
