// SPDX-License-Identifier: Apache-2.0
// PreparedState: what Store::Prepare* computed (the id and chunk list) and
// where to read the content again when it is published (store.h,
// PreparedObject).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chunkstore/env.h"
#include "chunkstore/store.h"
#include "format/manifest.h"
#include "ingest/source.h"

namespace chunkstore::internal {

struct PreparedState {
  enum class Kind { kFile, kBytes, kSpill };
  Digest id;
  std::string id_str;
  uint64_t size = 0;
  std::vector<ManifestEntry> entries;
  std::vector<ChainState> chain;  // one per entry (hash/chain.h)
  Kind kind = Kind::kBytes;
  std::unique_ptr<FileSource> file;
  const uint8_t* bytes = nullptr;
  std::unique_ptr<File> spill;
  const void* owner = nullptr;  // the store that prepared it

  // Reads n bytes of the original content at offset.
  Status ReadContent(uint64_t offset, uint8_t* buf, size_t n) const;
};

}  // namespace chunkstore::internal
