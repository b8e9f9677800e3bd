// Manifests: the ordered chunk list of an object, as stored in the index.
//
// Encoding: one 36-byte entry per chunk (the 32-byte chunk id, then the raw
// length as a little-endian u32), then an 8-byte little-endian check:
// xxHash64 of the object id (32 bytes), the size (u64 LE) and the entries.
// The check ties the list to its object, so a damaged index row cannot
// make one object's id serve another's chunks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chunkstore/status.h"
#include "hash/digest.h"

namespace chunkstore::internal {

struct ManifestEntry {
  Digest id;
  uint32_t length = 0;
};

constexpr size_t kManifestEntrySize = 36;
constexpr size_t kManifestCheckSize = 8;

std::string EncodeManifest(const Digest& object, uint64_t size,
                           const std::vector<ManifestEntry>& entries);

// Inline objects (stores created with inline_max > 0): a non-empty object
// whose index row has chunk_count 0 keeps its content in place of the
// manifest. Nothing else marks it: the content's SHA-256 must be the
// object id, which is what CheckInline tests (Corruption otherwise, so a
// damaged row never passes for inline content, nor inline content for a
// chunk list).
inline bool IsInline(uint64_t size, uint32_t chunk_count) { return chunk_count == 0 && size > 0; }
Status CheckInline(const Digest& object, uint64_t size, const std::string& content);

// Checks the blob's shape, its check value, every length (1 byte to
// 16 MiB) and that the lengths sum to size; Corruption otherwise.
Result<std::vector<ManifestEntry>> DecodeManifest(const Digest& object, uint64_t size,
                                                  const void* data, size_t n);

}  // namespace chunkstore::internal
