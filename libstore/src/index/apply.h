// SPDX-License-Identifier: Apache-2.0
// Applying change sets to an index: the one set of rules every store
// follows, whatever keeps its log (a directory's log segments or a
// bucket's log blobs), and the snapshot of an index that a checkpoint
// records. Replaying a store's log through ApplyChange into an empty index
// gives its index; that is what a rebuild is, and what gc and verify check
// the live index against (CompareIndexes).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "chunkstore/status.h"
#include "format/change_set.h"
#include "index/index.h"

namespace chunkstore::internal {

// Applies c inside the caller's write transaction:
//  - packs are recorded by name, with the committed size c gives them;
//  - a chunk already indexed in another pack keeps the copy in the pack
//    whose name sorts first (two writers stored it at once; every index
//    agrees whatever order it applied them in), except in a gc change,
//    whose chunks are moves and replace the old row;
//  - objects are added, or pinned if present and c pins them;
//  - each name gets its next version, or the version c gives (checkpoints),
//    unless its object is gone (removed by a change applied before);
//  - then names, objects (with their names), chunks (only the row in the
//    named pack) and packs (with their chunk rows) are removed as listed;
//  - a checkpoint replaces everything the index held.
// What applying a change did, for the writer that made it.
struct Applied {
  std::vector<int64_t> versions;  // per c.names: the version it received, 0 if skipped
  std::vector<bool> added;        // per c.objects: new to the index (not there already)
};
// applied (optional) gets what c did.
Status ApplyChange(Index& index, const ChangeSet& c, Applied* applied);

// The index's whole state as a checkpoint change set (inside the caller's
// transaction).
Result<ChangeSet> Snapshot(Index& index, int64_t time);

// One way an index differs from the truth.
struct IndexDifference {
  std::string message;    // one line naming what differs
  std::string object_id;  // "sha256:<hex>" when it is about an object
};

// Differences between an index and the truth (an index replayed from the
// log): objects, manifests, name versions, chunks and packs one has and
// the other lacks or holds differently, at most limit of them. Empty when
// they agree.
Result<std::vector<IndexDifference>> CompareIndexes(Index& index, Index& truth, size_t limit = 20);

}  // namespace chunkstore::internal
