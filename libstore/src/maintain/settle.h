// SPDX-License-Identifier: Apache-2.0
// The index against its log, on a store writers go on changing: the
// comparison verify and gc --dry-run make without holding the log.
//
// A replay of the log into a scratch index is the truth the live index is
// compared with. Writers commit meanwhile, so a change committed between
// the replay and the comparison shows as a difference that is not there.
// Such a difference is gone on the next comparison (the index caught up,
// the next replay has the change), where damage stays: only what every one
// of a few comparisons finds counts. Holding the log instead would make
// writers wait out a comparison that on a large store takes long enough
// for them to give up.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "index/apply.h"
#include "index/index.h"
#include "log/change_log.h"

namespace chunkstore::internal {

struct SettledComparison {
  std::vector<ChangeLog::Problem> log_problems;  // the log's own, from the last replay
  bool log_damaged = false;                      // damage anywhere in the log
  bool log_stopped = false;                      // the replay stopped at it: nothing was compared
  Status walk_failed;                            // an index too damaged to compare
  std::vector<IndexDifference> differences;      // found by every comparison
  std::unique_ptr<Index> truth;                  // the last replay
};

// Compares index with fresh replays of log up to `attempts` times (at
// least 1), catching the index up between them; keeps the differences
// (at most `limit` per comparison) that every comparison found, or the
// last comparison's where every one reached the limit. A replay that
// finds a record it listed gone (ChangeLog::Problem vanished or
// lost_change) is made again, up to `attempts` replays in all for that
// reason, and the last one's findings stand: a bucket's records deleted
// under a replay by newer checkpoints are gone for that replay only. A
// failure to catch up is returned as the error it is.
Result<SettledComparison> CompareSettled(IndexHandle& index, ChangeLog& log, int attempts, size_t limit);

}  // namespace chunkstore::internal
