// SPDX-License-Identifier: Apache-2.0
// AWS Signature Version 4 for S3 requests, signed with OpenSSL.
//
// Kept apart from the HTTP code so the known-answer vectors from AWS's
// documentation can pin it in tests.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace chunkstore::internal {

struct SigV4Request {
  std::string method;         // "GET", "PUT", ...
  std::string canonical_uri;  // already percent-encoded ("/bucket/key")
  // Query parameters, not encoded; sorted while signing.
  std::vector<std::pair<std::string, std::string>> query;
  // Headers to sign, names in lower case; must include "host",
  // "x-amz-date" and "x-amz-content-sha256".
  std::vector<std::pair<std::string, std::string>> headers;
  std::string payload_sha256;  // hex, or "UNSIGNED-PAYLOAD"
  std::string amz_date;        // "YYYYMMDDTHHMMSSZ"
};

struct SigV4Credentials {
  std::string access_key;
  std::string secret_key;
  std::string region;
};

// Percent-encodes s as SigV4 wants: everything but A-Z a-z 0-9 - _ . ~
// (and '/' when keep_slash).
std::string UriEncode(const std::string& s, bool keep_slash);

// The canonical query string: encoded pairs sorted by name, then value.
std::string CanonicalQuery(std::vector<std::pair<std::string, std::string>> query);

// The value of the Authorization header for the request.
std::string SignV4(const SigV4Request& req, const SigV4Credentials& creds);

// Lower-case hex of SHA-256 and of HMAC-SHA256 (tests, payload hashes).
std::string Sha256Hex(const void* data, size_t n);

}  // namespace chunkstore::internal
