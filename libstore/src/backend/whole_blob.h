// SPDX-License-Identifier: Apache-2.0
// GetWholeBlob: a blob's content read through its store's Size and
// GetRange, for BlobStores whose Get has no cheaper way (a directory of
// files, a served view of one).
#pragma once

#include <string>

#include "chunkstore/blob_store.h"

namespace chunkstore::internal {

// The whole blob at key: NotFound if there is none; cut short (to what
// GetRange found) if it shrank since its size was read.
inline Result<std::string> GetWholeBlob(BlobStore& blobs, const std::string& key) {
  Result<uint64_t> size = blobs.Size(key);
  if (!size.ok()) return size.status();
  std::string out(*size, '\0');
  size_t got = 0;
  CHUNKSTORE_RETURN_IF_ERROR(blobs.GetRange(key, 0, out.size(), out.data(), &got));
  out.resize(got);
  return out;
}

}  // namespace chunkstore::internal
