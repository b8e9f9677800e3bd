// SPDX-License-Identifier: Apache-2.0
// DirectoryLog: the change log of a directory store, in segment files under
// STORE/log/ (segment.h).
//
// Commit protocol (docs/format.md, "Change log"): a writer takes the
// exclusive lock on log/LOCK, brings the index up to date with the log,
// appends its change as the next frame of the newest segment and fsyncs it
// (the change is now made), then applies it to the index in one transaction
// that also records how far the index has got (log_position in its meta
// table), and lets the lock go. The index is
// therefore never ahead of the log, and at most a crash's worth behind it;
// whoever takes the lock next, or opens the store, applies what it lacks.
// Every frame is applied under the lock, so none is applied twice.
//
// A checkpoint starts a new segment with the whole state (from a replay of
// the log, never from the index), and the segments before the previous one
// are deleted once it is durable.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "chunkstore/env.h"
#include "log/change_log.h"

namespace chunkstore::internal {

struct DirectoryLogOptions {
  bool sync = true;  // fsync each change (and the log directory when it gains a segment)
  // A checkpoint is written once the changes after the last one take more
  // than this many bytes, and more than the checkpoint itself (so its cost
  // is spread over at least as many bytes of changes as it writes).
  uint64_t checkpoint_bytes = 64ull << 20;
};

class DirectoryLog final : public ChangeLog {
 public:
  // Writes the log of a new store (or of a store whose index was its only
  // record, being migrated): log/ with one segment holding checkpoint as
  // change 1, durable when this returns. Refuses a log/ that already holds
  // a segment.
  static Status Create(Env* env, const std::string& root, const std::string& store_id,
                       const ChangeSet& checkpoint, bool sync);
  // Whether root has a log/ with at least one segment.
  static bool Exists(Env* env, const std::string& root);

  // The log under root, for the index in handle (which must outlive it),
  // kept at index_path (":memory:" for an in-memory store). read_only:
  // never takes the lock or writes (Hold, Checkpoint and Rebuild fail;
  // CatchUp does nothing).
  DirectoryLog(Env* env, std::string root, std::string store_id, IndexHandle* index, std::string index_path,
               DirectoryLogOptions options, bool read_only);
  ~DirectoryLog() override;

  Result<std::unique_ptr<Held>> Hold(bool exclusive, int wait_ms) override;
  Status CatchUp() override;
  Status Checkpoint() override;
  Status Rebuild() override;
  // As Rebuild, for a store whose index could not even be opened (its
  // meta comes from the config).
  Status RebuildWith(const StoreMeta& meta);
  Result<std::vector<Problem>> Check(Index* truth) override;
  Result<std::unique_ptr<FileLock>> LockGc() override;
  bool gc_holds_throughout() const override { return false; }

  // Bytes of the log the index has not applied (0 when it is up to date;
  // at least 1 when it has not applied any), without taking the lock.
  Result<uint64_t> UnappliedBytes();

  // Records in a fresh index (made for a rebuild, or at creation) that it
  // holds the log up to change seq, whose frame ends at offset of segment.
  static Status RecordPosition(Index& index, uint64_t seq, uint64_t segment, uint64_t offset, uint64_t base);

 private:
  class HeldLog;
  struct Position {
    uint64_t seq = 0, segment = 0, offset = 0, base = 0;
  };
  Result<Position> IndexPosition(Index& index);
  Result<std::vector<uint64_t>> Segments();
  std::string SegmentPath(uint64_t first) const;
  // With the lock held: applies every change after the index's position.
  Status CatchUpLocked();
  Status ReplayLocked(Index& into, std::vector<std::string>* problems);
  Status CheckpointLocked();
  Status RebuildLocked();
  Status RebuildInto(const StoreMeta& meta);
  Result<std::unique_ptr<FileLock>> Lock(int wait_ms);

  Env* env_;
  std::string root_, dir_, store_id_;
  IndexHandle* index_;
  std::string index_path_;
  DirectoryLogOptions options_;
  bool read_only_;
  // The segment whose name this process has made durable (synced the log
  // directory after it appeared); 0: none yet.
  std::atomic<uint64_t> named_segment_{0};
  // The segment commits append to, kept open (append_mu_ guards both).
  std::mutex append_mu_;
  std::unique_ptr<File> append_;
  uint64_t append_segment_ = 0;
};

}  // namespace chunkstore::internal
