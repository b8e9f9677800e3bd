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
  // Exactly raw_len bytes: ASan reports any write past them.
  std::vector<uint8_t> out(raw_len);
  (void)Decompress(codec, stored, n, raw_len, out.data());
  std::vector<uint8_t> packed, back;
  const chunkstore::Compression with = codec == Codec::kZstd ? chunkstore::Compression::Zstd(1)
                                                             : chunkstore::Compression::Zlib(1);
  const Codec used = TryCompress(stored, n, &packed, {with, false});
  if (used != Codec::kRaw) {
    if (packed.size() + n / 16 > n) std::abort();  // kept only when it saves 1/16
    if (!Decompress(used, packed.data(), packed.size(), n, &back).ok() || back.size() != n ||
        std::memcmp(back.data(), stored, n) != 0)
      std::abort();
  }
  return 0;
}
