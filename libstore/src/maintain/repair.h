// SPDX-License-Identifier: Apache-2.0
// repair: mend damaged chunks from verified copies held elsewhere.
//
// A chunk whose record is damaged (or whose pack is gone) cannot be mended
// by publishing its content again: publish finds the chunk in the index
// and writes nothing. Repair checks the store as verify does, asks a fetch
// function (another store, in practice) for every chunk found damaged or
// missing, checks what comes back against the chunk id itself, writes the
// good copies into new packs, and commits them as a gc change (which
// replaces a chunk's row, format.md), so readers find the new copy from
// then on. It removes nothing; the damaged records are garbage for gc.
#pragma once

#include <functional>
#include <optional>

#include "chunkstore/store.h"
#include "index/index.h"
#include "log/change_log.h"
#include "maintain/verify.h"
#include "packs/pack_set.h"
#include "read/chunk_loader.h"

namespace chunkstore::internal {

struct RepairTarget {
  VerifyTarget verify;  // the store to mend, as verify reads it
  StoreMeta meta;       // how it compresses
  int busy_timeout_ms = 10000;
};

// A chunk's bytes from elsewhere: nullopt when that place does not have
// it; an error (Corruption for a damaged copy) when it could not be read.
// object names an object that needs the chunk, for messages. Repair checks
// the bytes against the id whatever the fetch did.
using ChunkFetch =
    std::function<Result<std::optional<ChunkLoader::Bytes>>(const Digest& id, const std::string& object)>;

Result<RepairReport> RepairStoreChunks(const RepairTarget& target, const ChunkFetch& fetch,
                                       const RepairOptions& options);

}  // namespace chunkstore::internal
