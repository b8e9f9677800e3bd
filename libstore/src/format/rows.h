// SPDX-License-Identifier: Apache-2.0
// Rows: what a store records about chunks, packs, objects and names, as
// plain values. The change log carries them (change_set.h) and the index
// holds them (index/); neither owns their meaning alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chunkstore/chunker.h"
#include "format/compress.h"
#include "hash/digest.h"

namespace chunkstore::internal {

// Where a chunk's record lives.
struct ChunkLocation {
  int64_t pack_id = 0;  // the index's pack row id (a change set's pack index)
  uint64_t offset = 0;  // of the record header within the pack
  uint32_t raw_len = 0;
  uint32_t stored_len = 0;
  Codec codec = Codec::kRaw;
  uint64_t xxh64 = 0;
};

struct ObjectRow {
  Digest id;
  uint64_t size = 0;
  uint32_t chunk_count = 0;
  // The manifest (format/manifest.h), or an inline object's content.
  std::string manifest;
  int64_t created = 0;  // unix seconds
  bool pinned = false;  // published without a name: live until removed
  // A tree object (format/tree.h): its content lists a directory, and
  // refs are the distinct objects it names, sorted, which live as long
  // as it does.
  bool tree = false;
  std::vector<Digest> refs;
};

struct PackRow {
  int64_t id = 0;
  std::string name;
  uint64_t size = 0;  // committed length; bytes beyond are garbage
};

struct NameRow {
  std::string name;
  int64_t version = 0;
  Digest object;
  int64_t created = 0;
};

// What a store is created with, and keeps.
struct StoreMeta {
  ChunkerParams chunking;
  // Stores from before the setting was recorded compressed with zlib.
  Compression compression = Compression::Zlib(1);
  // Objects of 1 to inline_max bytes are stored inline: their row has
  // chunk_count 0 and the content itself in place of the manifest.
  uint32_t inline_max = 0;
};

}  // namespace chunkstore::internal
