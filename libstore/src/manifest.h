// Manifests: the ordered chunk list of an object, as stored in the index.
//
// Encoding: one 36-byte entry per chunk, the 32-byte chunk id then the raw
// length as a little-endian u32. The object's size is the sum of lengths.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chunkstore/status.h"
#include "digest.h"

namespace chunkstore::internal {

struct ManifestEntry {
  Digest id;
  uint32_t length = 0;
};

constexpr size_t kManifestEntrySize = 36;

std::string EncodeManifest(const std::vector<ManifestEntry>& entries);

// Checks the blob's shape, every length (1 byte to 16 MiB) and that the
// lengths sum to expected_size; Corruption otherwise.
Result<std::vector<ManifestEntry>> DecodeManifest(const void* data, size_t n,
                                                  uint64_t expected_size);

}  // namespace chunkstore::internal
