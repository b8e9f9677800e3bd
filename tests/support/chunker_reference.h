// SPDX-License-Identifier: Apache-2.0
// The FastCDC v2020 cut as the reference crate writes it: one scan of byte
// pairs from min, hash 0 at the start, no blocks and no resuming. The unit
// tests and the chunker fuzz target hold the chunker's cuts against it.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "chunkstore/chunker.h"
#include "format/gear_table.h"

namespace chunkstore::testing {

// The length of the first chunk of src[0, len).
inline size_t ReferenceCut(const ChunkerParams& p, const uint8_t* src, size_t len) {
  using internal::kGear;
  using internal::kMasks;
  if (len <= p.min_size) return len;
  const size_t window = len < p.max_size ? len : p.max_size;
  const int bits = static_cast<int>(std::lround(std::log2(static_cast<double>(p.avg_size))));
  const uint64_t mask_s = kMasks[bits + p.level], mask_l = kMasks[bits - p.level];
  uint64_t hash = 0;
  for (size_t index = p.min_size / 2; index < window / 2; ++index) {
    const uint64_t mask = index < p.avg_size / 2 ? mask_s : mask_l;
    const size_t a = index * 2;
    hash = (hash << 2) + (kGear[src[a]] << 1);
    if ((hash & (mask << 1)) == 0) return a;
    hash += kGear[src[a + 1]];
    if ((hash & mask) == 0) return a + 1;
  }
  return window;
}

}  // namespace chunkstore::testing
