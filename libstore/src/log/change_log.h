// SPDX-License-Identifier: Apache-2.0
// ChangeLog: where a store keeps its changes, the truth its index caches.
//
// Every change a store makes is a change set (format/change_set.h) that the
// log makes durable before it is applied to the index. A directory store
// keeps its log in segment files under log/ (directory_log.h); a bucket
// store keeps one blob per change under the bucket's log/ (bucket/). The
// store's verbs (publish, tag, rm, gc) are written once against this
// interface and do not ask which kind of store they run on.
//
// Thread safety: implementations are safe for concurrent use. A Held is
// used by one thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "chunkstore/env.h"
#include "chunkstore/status.h"
#include "format/change_set.h"
#include "index/apply.h"
#include "index/index.h"

namespace chunkstore::internal {

// How a commit's error begins when the change reached the log (durably)
// and only the index could not follow: callers that act on a made change
// (gc deleting what it removed) look for it.
inline constexpr const char* kIndexBehindLog = "the change is in the store's log but the index could not be updated";
inline bool IndexBehindLog(const Status& s) { return s.message().find(kIndexBehindLog) != std::string::npos; }

// Whether a replay's failure is damage to the log (a record that fails
// its checks or cannot be decoded, a gap, a missing piece) rather than a
// failure to read it: an I/O error, a disk or service that refuses, a
// lock not had.
inline bool IsLogDamage(const Status& s) {
  return !(s.ok() || s.IsIOError() || s.IsNoSpace() || s.IsBusy() || s.IsPermissionDenied());
}

class ChangeLog {
 public:
  virtual ~ChangeLog() = default;

  // The log held for a sequence of steps: changes are made through it, one
  // after another, and no other writer's change (in this process or any
  // other) is applied to the index between a check the holder makes and
  // the change it commits after it. A shared hold (publish, tag, rm) lets
  // writers on other machines of a bucket store commit meanwhile, but
  // never a gc; an exclusive one (gc) keeps everything else out. On a
  // directory store both kinds exclude every other writer for as long as
  // they are held, which is only a commit's length for publishers.
  class Held {
   public:
    virtual ~Held() = default;
    // Makes change durable in the log, then applies it to the index
    // (ApplyChange; *applied, when given, as there). Once the log has it the change is
    // made (*made, when given, says so, error or not): an error applying
    // it then says that the index catches up later, and whatever the
    // change names must be kept.
    virtual Status Commit(ChangeSet& change, Applied* applied, bool* made = nullptr) = 0;
    // The check the holder made before its next Commit, which may also
    // complete the change (a tag's resolved object). A log whose holders
    // do not exclude each other (a bucket's sequenced log) runs it again
    // on the change as it was before the check, whenever other writers'
    // changes arrived between the check and the commit.
    void RecheckWith(std::function<Status(Index&, ChangeSet&)> fn) { recheck_ = std::move(fn); }
    // Brings into up to date with the log as it is now: an empty index
    // gets the whole log replayed (the store's true state, whatever the
    // live index says); one that an earlier Replay filled gets only what
    // was committed since (gc follows the truth this way between its
    // steps).
    virtual Status Replay(Index& into) = 0;

   protected:
    std::function<Status(Index&, ChangeSet&)> recheck_;
  };
  // Takes the log and brings the index up to date with it first. Busy
  // after wait_ms if another process keeps it.
  virtual Result<std::unique_ptr<Held>> Hold(bool exclusive, int wait_ms) = 0;

  // Applies what the index lacks of the log: other machines' changes on a
  // bucket; on a directory, changes of a writer that stopped between
  // writing its change and applying it, or commits an index lost with its
  // write-ahead log. Cheap when there is nothing to do.
  virtual Status CatchUp() = 0;

  // Writes a checkpoint (the whole state, from a replay of the log, never
  // from the index) and drops the log it covers. Called by gc and when the
  // log since the last checkpoint has grown past its bound.
  virtual Status Checkpoint() = 0;

  // Replaces the index with a replay of the log (index rebuild).
  virtual Status Rebuild() = 0;

  // What a check of the log found.
  struct Problem {
    bool damage = true;  // false: a note (a commit a crash cut short, which was never made)
    std::string message;
    // The replay stopped here: what the log holds past it is unread, and a
    // change appended now would be one no replay reaches. false for damage
    // the replay went around (a bucket checkpoint passed over for the one
    // before it).
    bool stopped = false;
    // A change the log's state is without: a record gone from the middle
    // of a bucket's sequenced log. gc and checkpoints refuse to go on
    // over it (they would make the loss final), until a repair records it.
    bool lost_change = false;
    std::string record = {};  // with lost_change: the key of the record gone
    // What the replay listed was gone when it came to read it: on a bucket,
    // another machine's newer checkpoint may have deleted it meanwhile.
    bool vanished = false;
  };
  // Replays the whole log into truth (an empty index; may be null) and
  // returns what is wrong with the log itself, for verify: a record that
  // fails its checks, a gap in the sequence. Empty when sound. A log that
  // cannot be read (an I/O error, a failed request) is an error, not a
  // finding (IsLogDamage).
  virtual Result<std::vector<Problem>> Check(Index* truth) = 0;

  // Moves a damaged record out of the log (a bucket's quarantine/), losing
  // only its change, so that the log can be read again. Refuses a record
  // that passes its checks. Unsupported where the log is not made of
  // separate records (a directory's segments: index rebuild reads past
  // nothing, so a damaged segment needs restoring from a copy).
  virtual Status Quarantine(const std::string& record) {
    return Status::Unsupported("only a bucket store's log records can be quarantined (" + record.substr(0, 64) + ")");
  }
  // How many records were quarantined. Their changes may name packs no
  // readable record names, so gc keeps every unnamed pack while there are
  // any.
  virtual Result<uint64_t> Quarantined() { return uint64_t{0}; }

  // The lock that lets one gc run at a time (a directory's GC.lock; on a
  // bucket, gc's exclusive hold of the log does this). Busy if another gc
  // runs.
  virtual Result<std::unique_ptr<FileLock>> LockGc() = 0;
  // Whether gc must hold the log exclusively from its first step to its
  // last. A directory store lets writers commit between gc's steps, since
  // its packs have locks of their own that gc takes before it rewrites or
  // removes one; a bucket's pack blobs have none.
  virtual bool gc_holds_throughout() const = 0;

  // How the store's config is raised to the current format (config.h),
  // set by whoever opened a store of an older one: called, holding the
  // log, before the first change that needs it (NeedsCurrentFormat) is
  // written, so that versions that cannot read such a change refuse the
  // whole store instead of misreading it.
  void SetFormatRaiser(std::function<Status()> raise) {
    std::lock_guard<std::mutex> l(raise_mu_);
    raise_ = std::move(raise);
  }

 protected:
  // Implementations call this while holding the log, before they write c.
  Status RaiseFormatFor(const ChangeSet& c) {
    if (raised_.load() || !NeedsCurrentFormat(c)) return Status::OK();
    std::lock_guard<std::mutex> l(raise_mu_);
    if (raise_) CHUNKSTORE_RETURN_IF_ERROR(raise_().WithContext("cannot raise the store to the current format"));
    raised_.store(true);
    return Status::OK();
  }

 private:
  std::mutex raise_mu_;
  std::function<Status()> raise_;
  std::atomic<bool> raised_{false};
};

}  // namespace chunkstore::internal
