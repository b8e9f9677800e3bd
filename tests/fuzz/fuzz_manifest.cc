// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the manifest decoder on arbitrary blobs, sizes and ids.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "format/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chunkstore::internal;
  if (size < 40) return 0;
  Digest object;
  std::memcpy(object.bytes.data(), data, 32);
  uint64_t claimed = 0;
  std::memcpy(&claimed, data + 32, 8);
  auto m = DecodeManifest(object, claimed, data + 40, size - 40);
  if (m.ok()) {
    uint64_t total = 0;
    for (const auto& e : *m) total += e.length;
    if (total != claimed) std::abort();
    // What decodes must re-encode to the same bytes.
    if (EncodeManifest(object, claimed, *m) != std::string(reinterpret_cast<const char*>(data + 40), size - 40))
      std::abort();
  }
  return 0;
}
