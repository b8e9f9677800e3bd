// SPDX-License-Identifier: Apache-2.0
// Garbage collection: drop objects no name or pin keeps and chunks no live
// object needs, delete packs nothing uses and compact packs that are
// mostly garbage, and remove pack files the store never committed.
//
// gc decides from the truth, never from the cache: at its start it replays
// the change log into a scratch index, and stops if the live index
// differs from it (run verify, and index rebuild). It follows the log
// between its steps (the scratch catches up with what writers committed
// meanwhile), so no pack a change names is ever deleted, whatever the live
// index says.
//
// Safety rules (docs/format.md, "Garbage collection"):
//  - Each decision and the change that records it happen while gc holds
//    the log, so no writer commits in between. A publish that reused a
//    chunk gc removed notices at its own commit and fails (Busy) instead
//    of recording a dangling reference.
//  - A pack is only removed or rewritten while gc holds its maintenance
//    lock, so no writer is appending to it. A compacted copy is durable
//    (fsynced or uploaded) before the change that moves chunks into it;
//    the old pack's file goes only after that change. Killed at any point,
//    every live chunk is somewhere the log says, and a rerun reclaims
//    what is left.
//  - Pack files no change names are removed only when unlocked and older
//    than the grace period (an hour by default): a writer's new pack is in
//    no change until its publish commits.
#pragma once

#include "chunkstore/store.h"
#include "index/index.h"
#include "log/change_log.h"
#include "packs/pack_set.h"

namespace chunkstore::internal {

struct GcTarget {
  IndexHandle* index = nullptr;
  PackSet* packs = nullptr;
  ChangeLog* log = nullptr;
  int busy_timeout_ms = 10000;
};

Result<GcReport> CollectGarbage(const GcTarget& target, const GcOptions& options);

}  // namespace chunkstore::internal
