// SPDX-License-Identifier: Apache-2.0
// LegacyLog: the stand-in for a change log in a store of schema version 1
// or 2 (whose index was its only record) opened where it cannot be
// migrated (read-only media). Reads work from the index; every change is
// refused; a check finds the index to be its own truth.
#pragma once

#include <string>

#include "log/change_log.h"

namespace chunkstore::internal {

class LegacyLog final : public ChangeLog {
 public:
  LegacyLog(IndexHandle* index, std::string where) : index_(index), where_(std::move(where)) {}
  Result<std::unique_ptr<Held>> Hold(bool, int) override { return Refused(); }
  Status CatchUp() override { return Status::OK(); }
  Status Checkpoint() override { return Refused(); }
  Status Rebuild() override { return Refused(); }
  Result<std::vector<Problem>> Check(Index* truth) override;
  Result<std::unique_ptr<FileLock>> LockGc() override { return Refused(); }
  bool gc_holds_throughout() const override { return false; }

 private:
  Status Refused() const {
    return Status::IOError(where_ + " is read-only and written by an older chunkstore: it can be read, not changed");
  }
  IndexHandle* index_;
  std::string where_;
};

}  // namespace chunkstore::internal
