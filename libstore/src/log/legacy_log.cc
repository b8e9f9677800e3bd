// SPDX-License-Identifier: Apache-2.0
// LegacyLog (legacy_log.h).
#include "log/legacy_log.h"

#include "base/clock.h"
#include "index/apply.h"

namespace chunkstore::internal {

Result<std::vector<ChangeLog::Problem>> LegacyLog::Check(Index* truth) {
  if (!truth) return std::vector<Problem>{};
  ChangeSet state;
  {
    auto db = index_->Lock();
    ReadTxn read(db.get());
    CHUNKSTORE_RETURN_IF_ERROR(read.status());
    Result<ChangeSet> s = Snapshot(*db, NowSeconds());
    if (!s.ok()) return s.status();
    state = std::move(*s);
  }
  WriteTxn txn(truth);
  CHUNKSTORE_RETURN_IF_ERROR(txn.status());
  CHUNKSTORE_RETURN_IF_ERROR(ApplyChange(*truth, state, nullptr));
  CHUNKSTORE_RETURN_IF_ERROR(txn.Commit());
  return std::vector<Problem>{};
}

}  // namespace chunkstore::internal
