// SPDX-License-Identifier: Apache-2.0
// Two SHA-256 computations interleaved on one core with the x86 SHA
// extensions (see sha256_pair.h for why), and the OpenSSL fallback.
//
// The round structure follows the published description of the SHA
// extensions: the eight state words live in two registers (ABEF and CDGH),
// sha256rnds2 runs two rounds, sha256msg1/msg2 extend the message
// schedule four words at a time. Interleaving is done at the level of
// four rounds: each step issues the same instructions for both messages,
// which are independent, so the core overlaps them.
#include "hash/sha256_pair.h"

// The fallback takes blocks into a given state, which only OpenSSL's
// low-level interface allows; it is deprecated in OpenSSL 3 but kept.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CHUNKSTORE_SHA_X86 1
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace chunkstore::internal {

namespace {

constexpr uint32_t kInitial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

void StoreDigest(const uint32_t h[8], Digest* d) {
  for (int i = 0; i < 8; ++i) {
    d->bytes[4 * i] = static_cast<uint8_t>(h[i] >> 24);
    d->bytes[4 * i + 1] = static_cast<uint8_t>(h[i] >> 16);
    d->bytes[4 * i + 2] = static_cast<uint8_t>(h[i] >> 8);
    d->bytes[4 * i + 3] = static_cast<uint8_t>(h[i]);
  }
}

#ifdef CHUNKSTORE_SHA_X86

alignas(16) constexpr uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define CHUNKSTORE_SHA_TARGET __attribute__((target("sha,sse4.1,ssse3")))
#define CHUNKSTORE_SHA_INLINE CHUNKSTORE_SHA_TARGET inline __attribute__((always_inline))

bool CpuHasShaExtensions() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool ssse3 = c & (1u << 9), sse41 = c & (1u << 19);
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const bool sha = b & (1u << 29);
  return ssse3 && sse41 && sha;
}

// One message's state in the two registers sha256rnds2 works on, and the
// four schedule registers holding the next sixteen message words.
struct Lane {
  __m128i abef, cdgh;
  __m128i saved_abef, saved_cdgh;
  __m128i w0, w1, w2, w3;
};

CHUNKSTORE_SHA_INLINE void LoadState(Lane& l, const uint32_t h[8]) {
  const __m128i dcba = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h));
  const __m128i hgfe = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 4));
  const __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
  const __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
  l.abef = _mm_alignr_epi8(cdab, efgh, 8);
  l.cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
}

CHUNKSTORE_SHA_INLINE void SaveState(const Lane& l, uint32_t h[8]) {
  const __m128i feba = _mm_shuffle_epi32(l.abef, 0x1B);
  const __m128i dchg = _mm_shuffle_epi32(l.cdgh, 0xB1);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h), _mm_blend_epi16(feba, dchg, 0xF0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 4), _mm_alignr_epi8(dchg, feba, 8));
}

CHUNKSTORE_SHA_INLINE void BeginBlock(Lane& l, const uint8_t* p) {
  const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  l.saved_abef = l.abef;
  l.saved_cdgh = l.cdgh;
  l.w0 = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), swap);
  l.w1 = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)), swap);
  l.w2 = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 32)), swap);
  l.w3 = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 48)), swap);
}

// Rounds 4i to 4i+3, then (for i < 12) the schedule's next four words.
CHUNKSTORE_SHA_INLINE void FourRounds(Lane& l, int i) {
  __m128i t = _mm_add_epi32(l.w0, _mm_load_si128(reinterpret_cast<const __m128i*>(kRound + 4 * i)));
  l.cdgh = _mm_sha256rnds2_epu32(l.cdgh, l.abef, t);
  t = _mm_shuffle_epi32(t, 0x0E);
  l.abef = _mm_sha256rnds2_epu32(l.abef, l.cdgh, t);
  __m128i next = l.w0;
  if (i < 12) {
    next = _mm_sha256msg1_epu32(l.w0, l.w1);
    next = _mm_add_epi32(next, _mm_alignr_epi8(l.w3, l.w2, 4));
    next = _mm_sha256msg2_epu32(next, l.w3);
  }
  l.w0 = l.w1;
  l.w1 = l.w2;
  l.w2 = l.w3;
  l.w3 = next;
}

CHUNKSTORE_SHA_INLINE void EndBlock(Lane& l) {
  l.abef = _mm_add_epi32(l.abef, l.saved_abef);
  l.cdgh = _mm_add_epi32(l.cdgh, l.saved_cdgh);
}

CHUNKSTORE_SHA_TARGET void CompressOne(uint32_t h[8], const uint8_t* p, size_t blocks) {
  Lane l;
  LoadState(l, h);
  for (; blocks > 0; --blocks, p += 64) {
    BeginBlock(l, p);
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) FourRounds(l, i);
    EndBlock(l);
  }
  SaveState(l, h);
}

CHUNKSTORE_SHA_TARGET void CompressTwo(uint32_t ha[8], const uint8_t* pa, uint32_t hb[8],
                                       const uint8_t* pb, size_t blocks) {
  Lane a, b;
  LoadState(a, ha);
  LoadState(b, hb);
  for (; blocks > 0; --blocks, pa += 64, pb += 64) {
    BeginBlock(a, pa);
    BeginBlock(b, pb);
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) {
      FourRounds(a, i);
      FourRounds(b, i);
    }
    EndBlock(a);
    EndBlock(b);
  }
  SaveState(a, ha);
  SaveState(b, hb);
}

// Hashes the rest of a message: its remaining whole blocks, then the
// padding (0x80, zeros, the bit length) in one or two final blocks.
void FinishMessage(uint32_t h[8], const uint8_t* rest, size_t rest_len, uint64_t total_len) {
  const size_t whole = rest_len / 64;
  CompressOne(h, rest, whole);
  uint8_t tail[128] = {};
  const size_t left = rest_len % 64;
  if (left > 0) std::memcpy(tail, rest + 64 * whole, left);
  tail[left] = 0x80;
  const size_t tail_len = left < 56 ? 64 : 128;
  const uint64_t bits = total_len * 8;
  for (int i = 0; i < 8; ++i) tail[tail_len - 1 - i] = static_cast<uint8_t>(bits >> (8 * i));
  CompressOne(h, tail, tail_len / 64);
}

void InterleavedPair(const uint8_t* a, size_t na, Digest* da, const uint8_t* b, size_t nb,
                     Digest* db) {
  uint32_t ha[8], hb[8];
  std::memcpy(ha, kInitial, sizeof ha);
  std::memcpy(hb, kInitial, sizeof hb);
  const size_t both = std::min(na, nb) / 64;
  CompressTwo(ha, a, hb, b, both);
  FinishMessage(ha, a + 64 * both, na - 64 * both, na);
  FinishMessage(hb, b + 64 * both, nb - 64 * both, nb);
  StoreDigest(ha, da);
  StoreDigest(hb, db);
}

#else  // !CHUNKSTORE_SHA_X86

bool CpuHasShaExtensions() { return false; }

// Never called: Sha256PairInterleaves() is false without the extensions.
void InterleavedPair(const uint8_t*, size_t, Digest*, const uint8_t*, size_t, Digest*) { std::abort(); }
void CompressOne(uint32_t*, const uint8_t*, size_t) { std::abort(); }
void CompressTwo(uint32_t*, const uint8_t*, uint32_t*, const uint8_t*, size_t) { std::abort(); }
void FinishMessage(uint32_t*, const uint8_t*, size_t, uint64_t) { std::abort(); }

#endif

// Blocks into a state through OpenSSL, for CPUs without the extensions
// (and the tests that turn them off).
void CompressOpenSsl(uint32_t h[8], const uint8_t* p, size_t blocks) {
  SHA256_CTX c;
  SHA256_Init(&c);
  std::memcpy(c.h, h, 32);
  for (; blocks > 0; --blocks, p += 64) SHA256_Transform(&c, p);
  std::memcpy(h, c.h, 32);
}

void FinishOpenSsl(uint32_t h[8], const uint8_t* rest, size_t rest_len, uint64_t total_len) {
  const size_t whole = rest_len / 64;
  CompressOpenSsl(h, rest, whole);
  uint8_t tail[128] = {};
  const size_t left = rest_len % 64;
  if (left > 0) std::memcpy(tail, rest + 64 * whole, left);
  tail[left] = 0x80;
  const size_t tail_len = left < 56 ? 64 : 128;
  const uint64_t bits = total_len * 8;
  for (int i = 0; i < 8; ++i) tail[tail_len - 1 - i] = static_cast<uint8_t>(bits >> (8 * i));
  CompressOpenSsl(h, tail, tail_len / 64);
}

const bool kCpuHasSha = CpuHasShaExtensions();
std::atomic<bool> interleave_enabled{true};
std::atomic<int> keeps_speed_override{-1};

// Two interleaved 16 KiB messages against the same two one after the
// other, the quickest of nine tries each, taken in turn (the machine may
// be busy; a try takes 10-20 us, short enough to fall between others'
// time slices).
bool MeasurePairKeepsSpeed() {
#ifdef CHUNKSTORE_SHA_X86
  if (!kCpuHasSha) return false;
  constexpr size_t kBlocks = 256;
  static uint8_t data[2][kBlocks * 64];
  for (size_t i = 0; i < kBlocks * 64; ++i) {
    data[0][i] = static_cast<uint8_t>(i * 131);
    data[1][i] = static_cast<uint8_t>(i * 137);
  }
  uint32_t ha[8], hb[8];
  std::memcpy(ha, kInitial, sizeof ha);
  std::memcpy(hb, kInitial, sizeof hb);
  using Clock = std::chrono::steady_clock;
  auto alone = Clock::duration::max(), paired = Clock::duration::max();
  for (int i = 0; i < 9; ++i) {
    const auto t0 = Clock::now();
    CompressOne(ha, data[0], kBlocks);
    CompressOne(hb, data[1], kBlocks);
    const auto t1 = Clock::now();
    CompressTwo(ha, data[0], hb, data[1], kBlocks);
    const auto t2 = Clock::now();
    alone = std::min(alone, t1 - t0);
    paired = std::min(paired, t2 - t1);
  }
  // 1.6: between the 1.2-1.3 of the Intel cores and the 1.9 of the AMD
  // ones this project has been measured on.
  return paired.count() > 0 && alone.count() >= 1.6 * paired.count();
#else
  return false;
#endif
}

}  // namespace

bool Sha256PairInterleaves() {
  return kCpuHasSha && interleave_enabled.load(std::memory_order_relaxed);
}

void Sha256Pair(const void* a, size_t na, Digest* da, const void* b, size_t nb, Digest* db) {
  if (Sha256PairInterleaves()) {
    InterleavedPair(static_cast<const uint8_t*>(a), na, da, static_cast<const uint8_t*>(b), nb,
                    db);
    return;
  }
  *da = Sha256::Of(a, na);
  *db = Sha256::Of(b, nb);
}

void Sha256InitialState(uint32_t h[8]) { std::memcpy(h, kInitial, sizeof kInitial); }

void Sha256Compress(uint32_t h[8], const uint8_t* p, size_t blocks) {
  if (blocks == 0) return;
  if (kCpuHasSha) CompressOne(h, p, blocks);
  else CompressOpenSsl(h, p, blocks);
}

Digest Sha256FinishFrom(uint32_t h[8], const uint8_t* rest, size_t n, uint64_t total) {
  if (kCpuHasSha) FinishMessage(h, rest, n, total);
  else FinishOpenSsl(h, rest, n, total);
  Digest d;
  StoreDigest(h, &d);
  return d;
}

Sha256Stream::Sha256Stream() : interleave_(Sha256PairInterleaves()) { std::memcpy(state_, kInitial, sizeof state_); }

void Sha256Stream::MarkChunk() {
  // A chunk that ended before a boundary never got one.
  waiting_ = false;
  chain_.emplace_back();
  waiting_ = true;
  if (buffered_ == 0) AtBoundary();
}

size_t Sha256Stream::FillOpenBlock(const uint8_t* p, size_t n) {
  if (buffered_ == 0) return 0;
  const size_t take = std::min(64 - buffered_, n);
  std::memcpy(block_ + buffered_, p, take);
  buffered_ += take;
  total_ += take;
  if (buffered_ == 64) {
    Sha256Compress(state_, block_, 1);
    buffered_ = 0;
    AtBoundary();
  }
  return take;
}

void Sha256Stream::Update(const void* data, size_t n) {
  if (n == 0) return;  // data may be null
  const uint8_t* p = static_cast<const uint8_t*>(data);
  const size_t head = FillOpenBlock(p, n);
  if (buffered_ > 0) return;  // all of data fit in the open block
  p += head;
  n -= head;
  total_ += n;
  Sha256Compress(state_, p, n / 64);
  buffered_ = n % 64;
  std::memcpy(block_, p + n - buffered_, buffered_);
}

size_t Sha256Stream::UpdateAlongside(const void* data, size_t n, Sha256Partial& other) {
  if (!interleave_ || !other.interleave_) {
    Update(data, n);
    return n;
  }
  if (n == 0) return 0;  // data may be null
  const uint8_t* p = static_cast<const uint8_t*>(data);
  // The stream's open block is completed alone first.
  size_t used = FillOpenBlock(p, n);
  if (buffered_ > 0) return used;  // all of data fit in the open block
  const size_t both = std::min((n - used) / 64, (other.n_ - other.done_) / 64);
  CompressTwo(state_, p + used, other.h_, other.p_ + other.done_, both);
  used += 64 * both;
  total_ += 64 * both;
  other.done_ += 64 * both;
  if (other.HasBlocks()) {  // the stream has less than a block left: keep it
    std::memcpy(block_, p + used, n - used);
    buffered_ = n - used;
    total_ += n - used;
    used = n;
  }
  return used;
}

void Sha256PairBlocks(Sha256Partial& a, Sha256Partial& b) {
  if (!a.interleave_ || !b.interleave_) {
    // A message that does not interleave is hashed whole by Finish,
    // through OpenSSL: only its count moves, so that HasBlocks() ends the
    // caller's loop. Its partner, if it does interleave, is left as it is
    // (its Finish hashes what is left).
    if (!a.interleave_) a.done_ = a.n_ - a.n_ % 64;
    if (!b.interleave_) b.done_ = b.n_ - b.n_ % 64;
    return;
  }
  const size_t both = std::min((a.n_ - a.done_) / 64, (b.n_ - b.done_) / 64);
  CompressTwo(a.h_, a.p_ + a.done_, b.h_, b.p_ + b.done_, both);
  a.done_ += 64 * both;
  b.done_ += 64 * both;
}

void Sha256LanesWhile(const std::function<LaneStart(Sha256Partial&, size_t*, bool)>& next,
                      const std::function<void(size_t, Sha256Partial&)>& done) {
  // 64 KiB: a lane alone asks for a partner about every 40 us, a lock
  // and a look at a queue each time, and waits at most that long for one.
  constexpr size_t kAloneBlocks = 1024;
  Sha256Partial lane[2];
  size_t at[2] = {0, 0};
  bool busy[2] = {false, false};
  auto fill = [&](int l) {
    for (;;) {
      const LaneStart s = next(lane[l], &at[l], !busy[1 - l]);
      if (s == LaneStart::kSettled) continue;
      busy[l] = s == LaneStart::kStarted;
      return;
    }
  };
  auto end = [&](int l) {
    done(at[l], lane[l]);
    busy[l] = false;
    fill(l);
  };
  fill(0);
  if (busy[0]) fill(1);
  while (busy[0] || busy[1]) {
    if (busy[0] && busy[1]) {
      Sha256PairBlocks(lane[0], lane[1]);  // leaves at least one lane out of blocks
      for (int l = 0; l < 2; ++l)
        if (busy[l] && !lane[l].HasBlocks()) end(l);
      continue;
    }
    const int l = busy[0] ? 0 : 1;
    if (lane[l].Advance(kAloneBlocks)) fill(1 - l);
    else end(l);
  }
}

void Sha256Partial::Start(const void* data, size_t n) {
  interleave_ = Sha256PairInterleaves();
  chain_ = false;
  std::memcpy(h_, kInitial, sizeof h_);
  p_ = static_cast<const uint8_t*>(data);
  n_ = n;
  done_ = 0;
}

void Sha256Partial::StartFrom(const ChainState& from, const void* data, size_t n) {
  interleave_ = Sha256PairInterleaves();
  chain_ = true;
  std::memcpy(h_, from.h.data(), sizeof h_);
  p_ = static_cast<const uint8_t*>(data);
  n_ = n - n % 64;
  done_ = 0;
}

bool Sha256Partial::Advance(size_t blocks) {
  if (!interleave_) {
    done_ = n_ - n_ % 64;
    return false;
  }
  const size_t k = std::min(blocks, (n_ - done_) / 64);
  Sha256Compress(h_, p_ + done_, k);
  done_ += 64 * k;
  return HasBlocks();
}

Digest Sha256Partial::Finish() {
  if (!interleave_) return Sha256::Of(p_, n_);
  FinishMessage(h_, p_ + done_, n_ - done_, n_);
  Digest d;
  StoreDigest(h_, &d);
  return d;
}

ChainState Sha256Partial::FinishChain() {
  // A lane that does not interleave only had its count moved: its blocks
  // are all still to do, from the state it started from.
  if (!interleave_) done_ = 0;
  Sha256Compress(h_, p_ + done_, (n_ - done_) / 64);
  done_ = n_;
  ChainState s;
  std::memcpy(s.h.data(), h_, sizeof h_);
  s.valid = true;
  return s;
}

Digest Sha256Stream::Finish() {
  waiting_ = false;
  Digest d = Sha256FinishFrom(state_, block_, buffered_, total_);
  return d;
}

bool Sha256PairKeepsSpeed() {
  const int forced = keeps_speed_override.load(std::memory_order_relaxed);
  if (forced >= 0) return forced == 1 && Sha256PairInterleaves();
  static const bool measured = MeasurePairKeepsSpeed();
  return measured && Sha256PairInterleaves();
}

void SetSha256PairKeepsSpeedForTesting(int keeps) {
  keeps_speed_override.store(keeps, std::memory_order_relaxed);
}

void SetSha256PairInterleaveForTesting(bool enabled) {
  interleave_enabled.store(enabled, std::memory_order_relaxed);
}

}  // namespace chunkstore::internal
