// SPDX-License-Identifier: Apache-2.0
// Bucket stores: a store whose packs and change log live in a BlobStore
// (S3), with the local SQLite index as a cache rebuilt from it.
//
// The bucket holds (docs/format.md, "Bucket layout"):
//   config                 what the store was created with, and its id
//   packs/pack-<hex>.pack  immutable pack files, same format as on disk
//   log/<epoch>-<ms>-<hex> change sets, each a blob written once
//   log/<epoch>-<ms>-checkpoint  marks: a checkpoint of the records before
//   checkpoints/<epoch>-<ms>     the whole state as of its mark
//   locks/<kind>-<hex>     lock blobs: writers take "shared", gc takes
//                          "exclusive"
// A sequenced log (log_keys.h) numbers its change sets instead; a writer
// claims the next number with a conditional write and takes no lock, so
// only gc and repairs take ("exclusive") lock blobs there.
// The newest checkpoint with its mark, then every change set after the
// mark in key order, applied to an empty index give the store's index; a
// cache applies the ones it has not seen yet. Records older than the
// second-newest checkpoint are deleted; a cache that has not seen that
// checkpoint starts again from the newest one. BucketLog
// is the store's ChangeLog, BucketPacks (NewBucketPackSet) its PackSet.
//
// Thread safety: everything here is safe for concurrent use.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "chunkstore/blob_store.h"
#include "base/task_pool.h"
#include "chunkstore/env.h"
#include "format/rows.h"
#include "index/index.h"
#include "log/change_log.h"
#include "packs/pack_set.h"

namespace chunkstore::internal {

// A pack in the bucket, read with ranged GETs.
class RemotePackFile final : public File {
 public:
  RemotePackFile(BlobStore* blobs, std::string key, uint64_t size)
      : blobs_(blobs), key_(std::move(key)), size_(size) {}
  Status Append(const void*, size_t) override { return Unsupported(); }
  Status ReadAt(uint64_t offset, size_t n, void* buf, size_t* got) const override {
    return blobs_->GetRange(key_, offset, n, buf, got);
  }
  Status Sync() override { return Unsupported(); }
  Status Truncate(uint64_t) override { return Unsupported(); }
  Result<uint64_t> Size() const override { return size_; }

 private:
  static Status Unsupported() { return Status::Unsupported("packs in a bucket are immutable"); }
  BlobStore* blobs_;
  std::string key_;
  uint64_t size_;
};

// A lock blob held until destroyed; refreshed in the background so that
// long publishes never look stale to a gc.
class BucketLock {
 public:
  ~BucketLock();
  const std::string& key() const { return key_; }

 private:
  friend class BucketLog;
  BucketLock(BlobStore* blobs, std::string key, std::string body);
  BlobStore* blobs_;
  std::string key_, body_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread keeper_;
};

// Reads or (when create) writes a bucket's config blob. *meta gets the
// store's chunking and compression; *store_id its id; *signed_store
// whether it has a secret (then secret, if given, must be it); *sequenced
// whether its log is sequenced. A store created with conditional set gets
// a sequenced log if the service takes conditional writes.
Status LoadBucketConfig(BlobStore* blobs, bool create, bool conditional, const StoreMeta& wanted,
                        const std::string& secret, StoreMeta* meta, std::string* store_id, bool* signed_store,
                        bool* sequenced);

// Whether blobs keeps the promise of PutIfAbsent: tried twice on a probe
// key (probe/...), which is deleted again.
bool TakesConditionalWrites(BlobStore* blobs);

// Rewrites the config blob of a bucket store of an older format with the
// current one (config.h), keeping everything else; a signed store's needs
// its secret. A no-op when it is current already.
Status RaiseBucketFormat(BlobStore* blobs, const std::string& secret);

// What a log record does that depends on its place in the log order
// (record_order.cc): "" (nothing; it commutes with every record), "r" (it
// removes something), or a line "n:<name>" for each name it gives a version
// and "o:<hex>" for each object it adds. A cache keeps it beside each
// record's key.
std::string RecordEffects(const ChangeSet& c);
// Whether records with these effects leave the same state in either order;
// nullopt (not known) commutes with nothing.
bool EffectsCommute(const std::optional<std::string>& a, const std::optional<std::string>& b);

class BucketLog final : public ChangeLog {
 public:
  // A lock older than this (by the bucket's clock) belongs to a crashed
  // process; holders refresh theirs every kLockRefreshSeconds.
  static constexpr int64_t kLockStaleSeconds = 30 * 60;
  static constexpr int64_t kLockRefreshSeconds = 5 * 60;
  // Log keys are listed from this far before the newest one applied, to
  // pick up records of concurrent writers whose clocks run behind.
  static constexpr int64_t kLogLookbackMs = 15 * 60 * 1000;

  // The log of the bucket behind blobs, cached in index (which must outlive
  // it, and be a bucket cache: Index::PrepareBucketCache). cache_dir holds
  // the index file (for rebuilds).
  // secret: the store's (empty: it has none, or this machine does not
  // hold it; then signed_store refuses every change).
  // checkpoint_records: a commit after which this many records follow the
  // newest checkpoint writes a new one (0: only gc does).
  // sequenced: the store's log is sequenced (config.h): a change claims
  // the next number with PutIfAbsent, and only gc and repairs take locks.
  BucketLog(Env* env, BlobStore* blobs, IndexHandle* index, std::string cache_dir, StoreMeta meta,
            uint32_t checkpoint_records, std::string secret, bool signed_store, bool sequenced = false,
            int64_t retention_seconds = 3600);

  // A sequenced log's writer that has not followed the log for this long
  // follows it before it claims a number (Options::bucket_log_retention_seconds).
  static constexpr int64_t kClaimFreshSeconds = 60;
  ~BucketLog() override;

  Result<std::unique_ptr<Held>> Hold(bool exclusive, int wait_ms) override;
  Status CatchUp() override;
  Status Checkpoint() override;
  Status Rebuild() override;
  Result<std::vector<Problem>> Check(Index* truth) override;
  Status Quarantine(const std::string& record) override;
  Result<uint64_t> Quarantined() override;
  Result<std::unique_ptr<FileLock>> LockGc() override;
  bool gc_holds_throughout() const override { return true; }

  // The lock blob that proves a hold, for the bucket's own clock ("now" is
  // its modification time).
  Result<int64_t> BucketNow(const Held& held);

 private:
  class HeldBucket;
  // Takes a shared (publishers, catalog changes) or exclusive (gc) lock;
  // Busy when the other kind is held. Shared locks wait up to wait_ms for
  // a gc to finish.
  Result<std::unique_ptr<BucketLock>> Lock(bool exclusive, int wait_ms);
  // Runs fn on scratch, or on the live index (locked) when scratch is null.
  Status WithIndex(Index* scratch, const std::function<Status(Index&)>& fn);
  void NoteEpoch(const std::string& key);
  // The log's keys after start_after; Corruption naming any key that is
  // not one the store writes.
  Result<std::vector<std::string>> ListLog(const std::string& start_after);
  // Applies the log's records the index (scratch, or the live cache when
  // null) lacks; an empty one is bootstrapped. *behind: the index has not
  // seen the second-newest checkpoint, so records it lacks may be gone, or
  // a record listed now sorts before one it applied and the two do not
  // commute (nothing was applied; rebuild it), or a sequenced log skips
  // too many numbers after a checkpoint it has not applied. NotFound: a
  // record, listed or a number the listing skipped, was not there when
  // fetched (rebuild it: a checkpoint may have covered it).
  // known (sequenced logs, may be empty): a key known to be stored, which
  // is fetched even where the listing leaves it out.
  Status Follow(Index* scratch, std::vector<Problem>* problems, bool* behind, const std::string& known = {});
  // Fills an empty index from the newest usable checkpoint and the records
  // after its mark (or the whole log, where no checkpoint was written).
  // problems (optional) gets the checkpoints passed over, and why.
  Status Bootstrap(Index* scratch, std::vector<Problem>* problems);
  // Fetches and applies keys in order, to scratch, or to the live index
  // when scratch is null. *reorder (optional): set, and nothing of the batch
  // applied, when a key meets a record the index applied after it that it
  // does not commute with (the index must be rebuilt).
  // filled (optional): keys put in by FillNumbers; one that is not there
  // is passed over and added to *gone where gone is given, else NotFound
  // (as for a listed key gone when fetched).
  Status ApplyKeys(Index* scratch, const std::vector<std::string>& keys, bool* reorder = nullptr,
                   const std::set<std::string>* filled = nullptr, std::vector<std::string>* gone = nullptr);
  // Sequenced logs: keys (listed after `after`, "" for the whole log) with
  // the change sets the listing left out put in their places
  // (MissingNumbers), each added to *filled; ApplyKeys fetches them by
  // GET, which finds a stored record where a lagging listing does not.
  // Corruption where thousands are missing. Other logs: keys as they are.
  // FillNumbers, then ApplyKeys; problems (optional) gets each record
  // found missing.
  Status ApplyFilled(Index* scratch, const std::string& after, std::vector<std::string> keys,
                     std::vector<Problem>* problems);
  Result<std::vector<std::string>> FillNumbers(const std::string& after, std::vector<std::string> keys,
                                               std::set<std::string>* filled);
  // newest: the newest key applied to the cache ("" if none).
  std::string NewLogKey(int64_t epoch, const std::string& newest) const;
  // Writes a checkpoint and its mark; the store held exclusively, the
  // cache caught up, refresh_mu_ held. *tail gets the new one's tail.
  Status WriteCheckpoint(std::string* tail);
  // Deletes the records and checkpoints older than the checkpoint before
  // tail's.
  Status DropCovered(const std::string& tail);
  // recheck (may be empty): the holder's check, run again after other
  // writers' changes arrived (Held::RecheckWith). decided_at (may be null):
  // the newest record the holder's last replay saw, which a sequenced
  // log's gc decided on.
  Status Write(ChangeSet& change, Applied* applied, bool* made,
               const std::function<Status(Index&, ChangeSet&)>& recheck, const std::string* decided_at = nullptr);
  // Sequenced logs: stores change under the key after newest, and if
  // another writer took that key first, follows the log and (where the
  // change still stands on what it now shows) tries the next one. *key
  // gets the key stored. refresh (refresh_mu_, held) is let go while the
  // cache is rebuilt, where it fell two checkpoints behind.
  Status Claim(ChangeSet& change, std::string newest, bool* made, std::string* key,
               std::unique_lock<std::mutex>& refresh, const std::function<Status(Index&, ChangeSet&)>& recheck);
  // Quarantine of a sequenced log's record that no GET finds: only one a
  // replay of the log finds missing (a lost change); records the loss in
  // quarantine/ (KEY.missing) and takes the number with an empty change
  // set. NotFound for any other.
  Status RecordMissing(const std::string& record);
  // Whether change, checked against what the writer saw, still holds on
  // the cache as it is now (after a lost claim applied others' records).
  Status StillStands(const ChangeSet& change);

  Env* env_;
  BlobStore* blobs_;
  IndexHandle* index_;
  std::string cache_dir_;
  StoreMeta meta_;
  uint32_t checkpoint_records_;
  std::atomic<bool> checkpoint_due_{false};
  std::string secret_;
  bool signed_store_;
  bool sequenced_;
  int64_t retention_seconds_;
  // When the log was listed by the Follow that last brought the live cache
  // up to it (steady clock, ms).
  std::atomic<int64_t> followed_at_ms_{-1};
  std::mutex refresh_mu_;  // one refresh (or write) at a time
  // Fetches log records (ApplyKeys): each GET a round trip, many in flight.
  TaskPool fetchers_{16};
  std::atomic<int64_t> epoch_{0};
};

// The least retention (BucketLog's retention_seconds) a log keeps: twice
// kClaimFreshSeconds (smaller ones are raised to it), so that no writer
// can claim the number of a record a checkpoint dropped. Tests that need
// dropped records at once lower it.
int64_t MinimumLogRetentionSeconds();
// What verify says of a sequenced log's record found missing at `key`.
std::string MissingRecord(const std::string& where, const std::string& key);
// What to do about the lost change of record `key`.
std::string LostChangeAdvice(const std::string& key);
// Who holds a lock blob, as its body says after "gc " or "writer ": this
// host, the process id and what tells its process ids from other
// machines' and containers' ("on HOST, pid N, boot ID, pidns pid:[INODE]").
std::string LockHolder(int64_t pid);
void SetMinimumLogRetentionForTests(int64_t seconds);

struct BucketPackOptions {
  // A new pack is uploaded once it holds this many bytes.
  uint64_t remote_pack_size = 64ull << 20;
};

// The packs of a bucket store: assembled in staging files under
// staging_dir by the same writer as on disk, uploaded whole when sealed,
// never appended to again, and read with ranged GETs.
// Removes the staged packs in a cache's staging folder that no writer
// holds (a publish killed before its upload ended left them); where locks
// prove nothing, only those an hour old. Returns how many.
uint64_t SweepStagedPacks(Env* env, const std::string& staging_dir);

std::unique_ptr<PackSet> NewBucketPackSet(Env* env, BlobStore* blobs, std::string staging_dir,
                                          IndexHandle* index, BucketPackOptions options);

}  // namespace chunkstore::internal
