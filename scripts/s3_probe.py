#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that an S3 endpoint takes signed requests: creates BUCKET if
needed, PUTs a small object, GETs it back and compares. Settings come from
AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION.
Exits 0 on success. An independent implementation of AWS Signature
Version 4 (path-style addressing), standard library only, so the test
server can be checked before anything is built."""
import datetime
import hashlib
import hmac
import os
import sys
import urllib.error
import urllib.parse
import urllib.request


def sign(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def request(method, path, body=b"", query=None):
    """Sends a signed request; query is a dict of (unencoded) parameters."""
    endpoint = os.environ["AWS_ENDPOINT_URL"].rstrip("/")
    access = os.environ["AWS_ACCESS_KEY_ID"]
    secret = os.environ["AWS_SECRET_ACCESS_KEY"]
    region = os.environ.get("AWS_REGION", "us-east-1")
    host = urllib.parse.urlparse(endpoint).netloc
    now = datetime.datetime.now(datetime.timezone.utc)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    payload_hash = hashlib.sha256(body).hexdigest()
    canonical_headers = f"host:{host}\nx-amz-content-sha256:{payload_hash}\nx-amz-date:{amz_date}\n"
    signed = "host;x-amz-content-sha256;x-amz-date"
    q = "&".join(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                 for k, v in sorted((query or {}).items()))
    canonical = "\n".join([method, urllib.parse.quote(path), q, canonical_headers, signed, payload_hash])
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    k = sign(("AWS4" + secret).encode(), day)
    for part in (region, "s3", "aws4_request"):
        k = sign(k, part)
    signature = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    headers = {
        "x-amz-date": amz_date,
        "x-amz-content-sha256": payload_hash,
        "Authorization": f"AWS4-HMAC-SHA256 Credential={access}/{scope}, "
                         f"SignedHeaders={signed}, Signature={signature}",
    }
    req = urllib.request.Request(endpoint + urllib.parse.quote(path) + ("?" + q if q else ""), data=body if method == "PUT" else None,
                                 headers=headers, method=method)
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, r.read()


def main():
    bucket = sys.argv[1] if len(sys.argv) > 1 else "chunkstore-probe"
    try:
        request("PUT", f"/{bucket}")
    except urllib.error.HTTPError as e:
        if e.code != 409:  # BucketAlreadyOwnedByYou/Exists
            raise
    body = b"chunkstore probe " + os.urandom(8).hex().encode()
    request("PUT", f"/{bucket}/probe", body)
    status, got = request("GET", f"/{bucket}/probe")
    if got != body:
        print("s3_probe: GET returned different bytes", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # noqa: BLE001 - any failure means "not ready yet"
        print(f"s3_probe: {e}", file=sys.stderr)
        sys.exit(1)
