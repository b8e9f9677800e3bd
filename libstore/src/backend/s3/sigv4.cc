// SPDX-License-Identifier: Apache-2.0
// AWS Signature Version 4 (see sigv4.h): canonical request, string to sign,
// derived key, signature.
#include "backend/s3/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cstdint>

#include "hash/digest.h"

namespace chunkstore::internal {

namespace {

std::string Hmac(const std::string& key, const std::string& msg) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string Hex(const std::string& bytes) {
  return HexEncode(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

std::string Trim(const std::string& v) {
  const size_t b = v.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const size_t e = v.find_last_not_of(" \t");
  return v.substr(b, e - b + 1);
}

}  // namespace

std::string Sha256Hex(const void* data, size_t n) {
  return Sha256::Of(static_cast<const uint8_t*>(data), n).Hex();
}

std::string UriEncode(const std::string& s, bool keep_slash) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/');
    if (plain) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string CanonicalQuery(std::vector<std::pair<std::string, std::string>> query) {
  for (auto& [k, v] : query) {
    k = UriEncode(k, false);
    v = UriEncode(v, false);
  }
  std::sort(query.begin(), query.end());
  std::string out;
  for (const auto& [k, v] : query) {
    if (!out.empty()) out += '&';
    out += k + "=" + v;
  }
  return out;
}

std::string SignV4(const SigV4Request& req, const SigV4Credentials& creds) {
  std::vector<std::pair<std::string, std::string>> headers = req.headers;
  std::sort(headers.begin(), headers.end());
  std::string canonical_headers, signed_headers;
  for (const auto& [name, value] : headers) {
    canonical_headers += name + ":" + Trim(value) + "\n";
    if (!signed_headers.empty()) signed_headers += ';';
    signed_headers += name;
  }
  const std::string canonical = req.method + "\n" + req.canonical_uri + "\n" +
                                CanonicalQuery(req.query) + "\n" + canonical_headers + "\n" +
                                signed_headers + "\n" + req.payload_sha256;
  const std::string day = req.amz_date.substr(0, 8);
  const std::string scope = day + "/" + creds.region + "/s3/aws4_request";
  const std::string to_sign = "AWS4-HMAC-SHA256\n" + req.amz_date + "\n" + scope + "\n" +
                              Sha256Hex(canonical.data(), canonical.size());
  std::string key = Hmac("AWS4" + creds.secret_key, day);
  key = Hmac(key, creds.region);
  key = Hmac(key, "s3");
  key = Hmac(key, "aws4_request");
  return "AWS4-HMAC-SHA256 Credential=" + creds.access_key + "/" + scope +
         ", SignedHeaders=" + signed_headers + ", Signature=" + Hex(Hmac(key, to_sign));
}

}  // namespace chunkstore::internal
