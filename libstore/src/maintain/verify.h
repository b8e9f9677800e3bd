// SPDX-License-Identifier: Apache-2.0
// verify: re-read stored data and check it against everything that can
// vouch for it.
//
// For the whole store: SQLite's integrity check of the index; the change
// log replayed into a scratch index (its own damage reported) and the
// live index compared with that truth; name versions that point at no
// object; every pack against what the log committed; pack files the store
// never committed (a warning). For every object, or the ones asked for:
// its manifest, every chunk it lists (present, the right length), and a
// full read that recomputes the object's SHA-256 and compares it with its
// id, verifying each chunk on the way; chunks no object reached are
// checked record by record. A quick verify checks the xxHash64 of stored
// bytes instead, and recomputes no ids.
#pragma once

#include "chunkstore/store.h"
#include "index/index.h"
#include "log/change_log.h"
#include "packs/pack_set.h"
#include "read/reader.h"

namespace chunkstore::internal {

struct VerifyTarget {
  IndexHandle* index = nullptr;
  PackSet* packs = nullptr;
  ChangeLog* log = nullptr;
  ReadSource read;
  unsigned threads = 1;
};

Result<VerifyReport> VerifyStore(const VerifyTarget& target, const VerifyOptions& options);

}  // namespace chunkstore::internal
