// SPDX-License-Identifier: Apache-2.0
// SHA-256 via OpenSSL EVP (one-shot digests via this library's own code
// where the CPU has SHA extensions), xxHash64 via libxxhash, hex
// formatting and random hex names.
#include "hash/digest.h"

#include <openssl/evp.h>
#include <xxhash.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <random>
#include <vector>

#include "hash/sha256_pair.h"

namespace chunkstore::internal {

namespace {

// Fetching the algorithm once avoids OpenSSL 3's per-init provider lookup,
// which dominates the cost of hashing small objects.
const EVP_MD* Sha256Md() {
  static const EVP_MD* md = [] {
    const EVP_MD* m = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return m ? m : EVP_sha256();
  }();
  return md;
}

constexpr std::array<int8_t, 256> kHexValue = [] {
  std::array<int8_t, 256> t{};
  for (auto& v : t) v = -1;
  for (int i = 0; i < 10; ++i) t['0' + i] = static_cast<int8_t>(i);
  for (int i = 0; i < 6; ++i) t['a' + i] = t['A' + i] = static_cast<int8_t>(10 + i);
  return t;
}();

int HexValue(char c) { return kHexValue[static_cast<unsigned char>(c)]; }

}  // namespace

std::string HexEncode(const uint8_t* data, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out(n * 2, '\0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 15];
  }
  return out;
}

std::string Digest::Hex() const { return HexEncode(bytes.data(), bytes.size()); }

std::optional<Digest> Digest::FromHex(std::string_view hex) {
  if (hex.size() != 64) return std::nullopt;
  Digest d;
  for (size_t i = 0; i < 32; ++i) {
    const int hi = HexValue(hex[2 * i]), lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    d.bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return d;
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr) std::abort();  // out of memory at construction
  Reset();
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::Reset() {
  if (EVP_DigestInit_ex2(ctx_, Sha256Md(), nullptr) != 1) std::abort();
}

void Sha256::Update(const void* data, size_t n) {
  if (n != 0) EVP_DigestUpdate(ctx_, data, n);
}

Digest Sha256::Finish() {
  Digest d;
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx_, d.bytes.data(), &len);
  return d;
}

Digest Sha256::Of(const void* data, size_t n) {
  // Where the CPU has SHA extensions this library's own code (the lane
  // sha256_pair.cc runs alone) is as fast as OpenSSL's (BM_Sha256 against
  // BM_Sha256OpenSsl in the micro benchmarks), and it spares a process
  // OpenSSL's initialization on its first digest (reading the
  // configuration file, loading the default provider), which would sit on
  // the critical path of a command's first chunk.
  if (Sha256PairInterleaves()) {
    Sha256Partial one;
    one.Start(data, n);
    return one.Finish();
  }
  thread_local Sha256 hasher;
  hasher.Reset();
  hasher.Update(data, n);
  return hasher.Finish();
}

uint64_t XxHash64(const void* data, size_t n) { return XXH64(data, n, 0); }

std::string RandomHex(size_t n) {
  static std::mutex mu;
  static std::mt19937_64 rng(std::random_device{}() ^
                             static_cast<uint64_t>(
                                 std::chrono::steady_clock::now().time_since_epoch().count()));
  std::vector<uint8_t> b(n);
  {
    std::lock_guard<std::mutex> l(mu);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
  }
  return HexEncode(b.data(), b.size());
}

}  // namespace chunkstore::internal

namespace chunkstore::internal {

Digest HmacSha256(const std::string& key, const void* data, size_t n) { return HmacSha256(key, {}, data, n); }

Digest HmacSha256(const std::string& key, const std::string& prefix, const void* data, size_t n) {
  // RFC 2104 over a 64-byte block: a longer key is hashed first.
  std::array<uint8_t, 64> k{};
  if (key.size() > k.size()) {
    const Digest d = Sha256::Of(key.data(), key.size());
    std::memcpy(k.data(), d.bytes.data(), d.bytes.size());
  } else {
    std::memcpy(k.data(), key.data(), key.size());
  }
  std::array<uint8_t, 64> pad;
  Sha256 inner;
  for (size_t i = 0; i < pad.size(); ++i) pad[i] = k[i] ^ 0x36;
  inner.Update(pad.data(), pad.size());
  inner.Update(prefix.data(), prefix.size());
  inner.Update(data, n);
  const Digest in = inner.Finish();
  Sha256 outer;
  for (size_t i = 0; i < pad.size(); ++i) pad[i] = k[i] ^ 0x5c;
  outer.Update(pad.data(), pad.size());
  outer.Update(in.bytes.data(), in.bytes.size());
  return outer.Finish();
}

bool ConstantTimeEqual(const void* a, const void* b, size_t n) {
  const auto* x = static_cast<const volatile uint8_t*>(a);
  const auto* y = static_cast<const volatile uint8_t*>(b);
  uint8_t diff = 0;
  for (size_t i = 0; i < n; ++i) diff |= x[i] ^ y[i];
  return diff == 0;
}

}  // namespace chunkstore::internal
