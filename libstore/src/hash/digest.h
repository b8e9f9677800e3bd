// SPDX-License-Identifier: Apache-2.0
// Digest: a 32-byte SHA-256 value, with hex and id formatting and a fast
// OpenSSL-backed hasher. Chunk ids and object ids are both Digests.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

struct evp_md_ctx_st;

namespace chunkstore::internal {

struct Digest {
  std::array<uint8_t, 32> bytes{};

  bool operator==(const Digest& o) const { return bytes == o.bytes; }
  bool operator!=(const Digest& o) const { return bytes != o.bytes; }
  bool operator<(const Digest& o) const { return bytes < o.bytes; }

  std::string Hex() const;
  // "sha256:<hex>", the public form of an object id.
  std::string ObjectId() const { return "sha256:" + Hex(); }
  // Parses exactly 64 hex digits (either case).
  static std::optional<Digest> FromHex(std::string_view hex);
};

struct DigestHash {
  size_t operator()(const Digest& d) const {
    size_t h;
    std::memcpy(&h, d.bytes.data(), sizeof h);  // already uniformly distributed
    return h;
  }
};

std::string HexEncode(const uint8_t* data, size_t n);
// n random bytes as hex, for names that must not collide across processes
// and machines (pack names, log keys, lock blobs, store ids). Thread-safe.
std::string RandomHex(size_t n);

// Incremental SHA-256 through OpenSSL EVP (which uses the CPU's SHA
// extensions). Not copyable; reusable after Finish() via Reset().
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Reset();
  void Update(const void* data, size_t n);
  Digest Finish();

  // The digest of data[0, n), in one call. Thread-safe. Where the CPU has
  // SHA extensions (Sha256PairInterleaves()), computed without OpenSSL.
  static Digest Of(const void* data, size_t n);

 private:
  evp_md_ctx_st* ctx_;
};

// HMAC-SHA256 of data[0, n) under key (RFC 2104). Thread-safe.
Digest HmacSha256(const std::string& key, const void* data, size_t n);
// HMAC-SHA256 of prefix followed by data[0, n), without joining them.
Digest HmacSha256(const std::string& key, const std::string& prefix, const void* data, size_t n);
// Whether a[0, n) equals b[0, n), in a time that does not depend on where
// they differ (for comparing MACs).
bool ConstantTimeEqual(const void* a, const void* b, size_t n);

// xxHash64 (seed 0) of the stored bytes of a chunk: a cheap check that the
// bytes read from a pack are the bytes written, before the full SHA-256.
uint64_t XxHash64(const void* data, size_t n);

}  // namespace chunkstore::internal
