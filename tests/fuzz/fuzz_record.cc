// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the pack record header decoder must reject or accept
// any 64 bytes without reading out of bounds, and what it accepts must
// respect the length bounds.
#include <cstdint>
#include <cstdlib>

#include "format/pack_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chunkstore::internal;
  auto h = DecodeRecordHeader(data, size);
  if (h.ok() && (h->raw_len > kMaxRecordLength || h->stored_len > h->raw_len)) std::abort();
  (void)DecodePackHeader(data, size);
  return 0;
}
