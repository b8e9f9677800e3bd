// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the chunk decoders (zlib through libdeflate, zstd)
// given any stored bytes and any claimed raw length either fail or fill
// exactly that many bytes, never writing past them; and what TryCompress
// makes of the input decodes back to it.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "format/compress.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chunkstore::internal;
  if (size < 3) return 0;
  // First two bytes: the claimed raw length (up to 64 KiB), then a codec.
  const size_t raw_len = static_cast<size_t>(data[0]) << 8 | data[1];
  const Codec codec = data[2] & 1 ? Codec::kZstd : Codec::kZlib;
  const uint8_t* stored = data + 3;
  const size_t n = size - 3;
  // raw_len bytes and a guard after them: the system's libzstd and
  // libdeflate are not instrumented, so a write past raw_len shows only as
  // a changed guard byte.
  constexpr size_t kGuard = 256;
  std::vector<uint8_t> out(raw_len + kGuard, 0xa5);
  (void)Decompress(codec, stored, n, raw_len, out.data());
  for (size_t i = raw_len; i < out.size(); ++i)
    if (out[i] != 0xa5) std::abort();
  std::vector<uint8_t> packed, back;
  // The level from the input too (zstd 1-19, zlib 1-12).
  const int level = 1 + (data[2] >> 1) % (codec == Codec::kZstd ? 19 : 12);
  const chunkstore::Compression with = codec == Codec::kZstd ? chunkstore::Compression::Zstd(level)
                                                             : chunkstore::Compression::Zlib(level);
  const Codec used = TryCompress(stored, n, &packed, {with, false});
  if (used != Codec::kRaw) {
    if (packed.size() + n / 16 > n) std::abort();  // kept only when it saves 1/16
    if (!Decompress(used, packed.data(), packed.size(), n, &back).ok() || back.size() != n ||
        std::memcmp(back.data(), stored, n) != 0)
      std::abort();
  }
  return 0;
}
