#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A bucket store behind HTTPS with a private CA: the certificate chain is
# refused unless AWS_CA_BUNDLE (or SSL_CERT_FILE) names the CA, and trusted
# when it does. The endpoint is `openssl s_server -www` with a server
# certificate the test's own CA signed; it speaks TLS and HTTP but not S3,
# so with the CA trusted the command gets as far as an answer it cannot
# use, and fails for that reason instead of the certificate.
#
# Usage: tests/s3/ca_bundle_test.sh CHUNKSTORE_BINARY
set -uo pipefail

BIN=$(realpath "$1")
WORK=$(mktemp -d /tmp/chunkstore-ca-XXXXXX)
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$WORK"' EXIT
cd "$WORK"
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=chunkstore test CA" \
  -keyout ca.key -out ca.pem >/dev/null 2>&1 || { echo "cannot make a CA" >&2; exit 1; }
openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout srv.key -out srv.csr >/dev/null 2>&1
printf 'subjectAltName=IP:127.0.0.1\n' >san.ext
openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile san.ext \
  -out srv.pem >/dev/null 2>&1 || { echo "cannot sign the server certificate" >&2; exit 1; }

port=
for try in 1 2 3 4 5; do
  port=$((20000 + RANDOM % 20000))
  openssl s_server -quiet -accept "$port" -cert srv.pem -key srv.key -www >server.log 2>&1 </dev/null &
  server=$!
  for _ in $(seq 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
  done
  if kill -0 "$server" 2>/dev/null; then break; fi
  server=
done
[ -n "$server" ] || { echo "cannot start openssl s_server" >&2; exit 1; }

export AWS_ENDPOINT_URL="https://127.0.0.1:$port" AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
export XDG_CACHE_HOME="$WORK/cache"
unset AWS_CA_BUNDLE SSL_CERT_FILE
store=s3://bucket/p

# The system's store does not know the CA.
err=$("$BIN" --store "$store" ls 2>&1 >/dev/null)
code=$?
[ $code -ne 0 ] || fail "ls against an unknown CA exited 0"
grep -qi 'certificate' <<<"$err" || fail "ls against an unknown CA: no word of the certificate: $err"

for var in AWS_CA_BUNDLE SSL_CERT_FILE; do
  err=$(env "$var=$WORK/ca.pem" "$BIN" --store "$store" ls 2>&1 >/dev/null)
  code=$?
  [ $code -ne 0 ] || fail "$var: ls against a server that is not S3 exited 0"
  if grep -qi 'certificate' <<<"$err"; then fail "$var: the CA it names was not trusted: $err"; fi
  [ -n "$err" ] || fail "$var: no message"
  trusted=$err
done

# A bundle that does not exist is an error, never a fallback to no checks.
err=$(AWS_CA_BUNDLE="$WORK/missing.pem" "$BIN" --store "$store" ls 2>&1 >/dev/null)
[ $? -ne 0 ] || fail "a missing CA bundle exited 0"

if [ $failures -ne 0 ]; then
  echo "ca_bundle_test: $failures failures" >&2
  exit 1
fi
echo "ca_bundle_test: ok (with the CA trusted: $trusted)"
