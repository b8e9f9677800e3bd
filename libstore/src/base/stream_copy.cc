// SPDX-License-Identifier: Apache-2.0
// Non-temporal copies (stream_copy.h).
#include "base/stream_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define CHUNKSTORE_STREAM_STORES 1
#endif

namespace chunkstore::internal {

void StreamCopy(void* dst, const void* src, size_t n) {
#ifdef CHUNKSTORE_STREAM_STORES
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  // The stores take 16-byte aligned addresses, and a whole cache line at
  // a time is what they write best: the head, up to a line boundary,
  // goes by memcpy.
  size_t head = (64 - (reinterpret_cast<uintptr_t>(d) & 63)) & 63;
  if (n < 256) head = n;  // too short to gain anything
  std::memcpy(d, s, head);
  d += head;
  s += head;
  n -= head;
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  std::memcpy(d + i, s + i, n - i);
  // Non-temporal stores are weakly ordered: fence them before whoever
  // reads the buffer next (another thread, once told) can look.
  _mm_sfence();
#else
  std::memcpy(dst, src, n);
#endif
}

}  // namespace chunkstore::internal
