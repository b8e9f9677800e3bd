// SPDX-License-Identifier: Apache-2.0
// Opening verified readers (store.h, Reader) over a store's index and
// chunk loader.
#pragma once

#include <memory>
#include <string>

#include "chunkstore/store.h"
#include "index/index.h"
#include "read/chunk_loader.h"

namespace chunkstore::internal {

// What readers read from. keep_alive owns the index and the loader (the
// store's internals): readers hold it, so they stay valid after the Store
// object is gone.
struct ReadSource {
  std::shared_ptr<void> keep_alive;
  ChunkLoader* loader = nullptr;
  // Whether chunks may come from, and go to, the loader's disk cache (a
  // bucket store's): not for verify, which checks what the bucket holds,
  // nor for copy, which reads each chunk once.
  bool disk_cache = true;
};

// Opens a reader for ref: resolves it, checks the manifest (it decodes,
// its chunk count and lengths agree with the index, every chunk is
// indexed) and, for an inline object, its content. The caller holds the
// index's lock; in_read: and a read transaction (else one is taken here
// when more than one query is needed).
Result<std::unique_ptr<Reader>> OpenObjectReader(const ReadSource& source, Index& index, const std::string& ref,
                                                 bool in_read);

}  // namespace chunkstore::internal
