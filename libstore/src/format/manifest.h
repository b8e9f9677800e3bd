// SPDX-License-Identifier: Apache-2.0
// Manifests: the ordered chunk list of an object, as the change log and
// the index keep it.
//
// Version 1: one 36-byte entry per chunk (the 32-byte chunk id, then the
// raw length as a little-endian u32), then an 8-byte little-endian check:
// xxHash64 of the object id (32 bytes), the size (u64 LE) and the entries.
//
// Version 2 (written since the change log): the magic "CKM2", the entries
// as above, then the chain state (hash/chain.h) of every chunk after the
// first, 32 bytes each (zeros for a last chunk that holds no block
// boundary), then the same check over the object id, size and all of it.
// The states let a full read prove the object's id on every core; a
// version-1 object is proven by one running hash instead. The empty object
// has no entries and is always version 1.
//
// The check catches damage, not forgery: anyone can recompute it. What
// proves a manifest is that the bytes it names hash to the object's id,
// which a full read checks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chunkstore/status.h"
#include "hash/chain.h"
#include "hash/digest.h"

namespace chunkstore::internal {

struct ManifestEntry {
  Digest id;
  uint32_t length = 0;
};

constexpr size_t kManifestEntrySize = 36;
constexpr size_t kManifestCheckSize = 8;
constexpr size_t kChainStateSize = 32;

// Version 1.
std::string EncodeManifest(const Digest& object, uint64_t size, const std::vector<ManifestEntry>& entries);
// Version 2: chain holds a state for every entry (chain[0], the initial
// state, is implied and not stored).
std::string EncodeManifest(const Digest& object, uint64_t size, const std::vector<ManifestEntry>& entries,
                           const std::vector<ChainState>& chain);

// Inline objects (stores created with inline_max > 0): a non-empty object
// whose index row has chunk_count 0 keeps its content in place of the
// manifest. Nothing else marks it: the content's SHA-256 must be the
// object id, which is what CheckInline tests (Corruption otherwise, so a
// damaged row never passes for inline content, nor inline content for a
// chunk list).
inline bool IsInline(uint64_t size, uint32_t chunk_count) { return chunk_count == 0 && size > 0; }
Status CheckInline(const Digest& object, uint64_t size, const std::string& content);

struct Manifest {
  std::vector<ManifestEntry> entries;
  // One state per entry (chain[0] the initial state), or empty for a
  // version-1 manifest.
  std::vector<ChainState> chain;
};

// Checks the blob's shape, its check value, every length (1 byte to
// 16 MiB) and that the lengths sum to size; Corruption otherwise.
Result<Manifest> DecodeManifestWithChain(const Digest& object, uint64_t size, const void* data, size_t n);
// The same, entries only.
Result<std::vector<ManifestEntry>> DecodeManifest(const Digest& object, uint64_t size, const void* data, size_t n);

}  // namespace chunkstore::internal
