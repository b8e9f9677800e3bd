// SPDX-License-Identifier: Apache-2.0
// Checkpoints of a bucket store's log (bucket.h): writing them, starting a
// cache from the newest one, and dropping the records they cover.
//
// A checkpoint is written under the store's exclusive lock: the whole
// state, replayed from the log (never taken from the cache), as the blob
// checkpoints/<epoch>-<ms> in a new epoch, then its mark, the empty log
// record log/<epoch>-<ms>-checkpoint. Every record written after it sorts
// after the mark (a new epoch), every record before it is covered by it. A
// checkpoint without its mark was cut short and is passed over.
//
// A sequenced log keeps its epoch: the checkpoint and its mark take the
// number of the newest change set they cover, and the mark sorts after
// that change set and before the next. Writers never wait for one (they
// take no lock), and two that write the same checkpoint at once write the
// same state; the first mark stays.
//
// When checkpoint k is written, the records and checkpoints older than
// checkpoint k-1 are deleted: a cache that has seen mark k-1 lacks none
// of what is left, and one that has not sees two new marks when it next
// follows the log and starts again from checkpoint k (Follow's *behind).
#include <algorithm>

#include "base/clock.h"
#include "bucket/bucket.h"
#include "bucket/log_keys.h"
#include "format/layout.h"
#include "index/apply.h"

namespace chunkstore::internal {

Status BucketLog::Bootstrap(Index* scratch, std::vector<Problem>* problems) {
  auto note = [&](bool damage, const std::string& message) {
    if (problems) problems->push_back({damage, message});
  };
  Result<std::vector<BlobInfo>> listed = blobs_->List(kCheckpointPrefix);
  if (!listed.ok()) return listed.status().WithContext("cannot list the checkpoints of " + blobs_->Describe());
  std::vector<std::string> tails;
  for (const BlobInfo& b : *listed) {
    const std::string tail = CheckpointTail(b.key);
    if (tail.empty())
      return Status::Corruption(blobs_->Describe() + "/" + b.key.substr(0, 200) +
                                " is not a chunkstore checkpoint key; move it out of checkpoints/");
    tails.push_back(tail);
  }
  std::sort(tails.rbegin(), tails.rend());
  for (const std::string& tail : tails) {
    const std::string key = CheckpointKey(tail), mark = MarkKey(tail);
    Result<std::vector<std::string>> after = ListLog(kLogPrefix + tail);
    if (!after.ok()) return after.status();
    // Before the mark only the change set of its own number can sort (a
    // sequenced log's), which it covers.
    const auto at = std::find(after->begin(), after->end(), mark);
    const bool marked = at != after->end() && at - after->begin() <= (sequenced_ ? 1 : 0);
    if (!marked) {
      note(false, "checkpoint " + key + " has no mark (a checkpoint cut short); passed over");
      continue;
    }
    Result<std::string> bytes = blobs_->Get(key);
    if (!bytes.ok() && problems) {
      // A check reports what is wrong with the log: a request that failed
      // says nothing about it, and a checkpoint another machine removed
      // since the listing (its gc or a newer checkpoint) is no damage.
      if (!IsLogDamage(bytes.status()))
        return bytes.status().WithContext("cannot read checkpoint " + key + " of " + blobs_->Describe());
      if (bytes.status().IsNotFound()) {
        note(false, "checkpoint " + key + " was removed while the log was read; the one before it was used");
        continue;
      }
    }
    Result<ChangeSet> c = bytes.ok() ? DecodeChangeSet(*bytes, secret_, key) : Result<ChangeSet>(bytes.status());
    if (c.ok() && c->kind != ChangeSet::kCheckpoint)
      c = Status::Corruption(std::string("a ") + ChangeKindName(c->kind) + " change set where a checkpoint belongs");
    if (!c.ok()) {
      note(true, blobs_->Describe() + ": checkpoint " + key + ": " + c.status().message() +
                     "; the one before it was used");
      continue;
    }
    CHUNKSTORE_RETURN_IF_ERROR(WithIndex(scratch, [&](Index& index) -> Status {
      WriteTxn txn(&index);
      CHUNKSTORE_RETURN_IF_ERROR(txn.status());
      Status s = ApplyChange(index, *c, nullptr);
      if (!s.ok()) return s.WithContext(blobs_->Describe() + ": checkpoint " + key);
      CHUNKSTORE_RETURN_IF_ERROR(index.MarkApplied(mark, ""));
      CHUNKSTORE_RETURN_IF_ERROR(index.SetMeta(kCheckpointMeta, mark));
      return txn.Commit().WithContext("cannot update the index cache");
    }));
    if (!scratch) NoteEpoch(mark);
    after->erase(after->begin(), at == after->end() ? after->begin() : at + 1);
    return ApplyFilled(scratch, mark, std::move(*after), problems);
  }
  // With two checkpoints or more written, the records the older ones cover
  // may be gone: the log alone no longer tells the state.
  if (tails.size() >= 2)
    return Status::Corruption("no usable checkpoint in " + blobs_->Describe() +
                              ", and the log records the older ones cover are gone (see verify)");
  Result<std::vector<std::string>> all = ListLog("");
  if (!all.ok()) return all.status();
  return ApplyFilled(scratch, "", std::move(*all), problems);
}

Status BucketLog::ApplyFilled(Index* scratch, const std::string& after, std::vector<std::string> keys,
                              std::vector<Problem>* problems) {
  std::set<std::string> filled;
  std::vector<std::string> gone;
  Result<std::vector<std::string>> all = FillNumbers(after, std::move(keys), &filled);
  if (!all.ok()) return all.status();
  Status s = ApplyKeys(scratch, *all, nullptr, &filled, &gone);
  if (problems)
    for (const std::string& key : gone)
      problems->push_back({true, MissingRecord(blobs_->Describe(), key), false, true, key});
  return s;
}

Status BucketLog::WriteCheckpoint(std::string* tail_out) {
  Index::OpenOptions o;
  o.create = &meta_;
  Result<std::unique_ptr<Index>> scratch = Index::Open(":memory:", o);
  if (!scratch.ok()) return scratch.status();
  CHUNKSTORE_RETURN_IF_ERROR((*scratch)->PrepareBucketCache());
  std::vector<Problem> problems;
  CHUNKSTORE_RETURN_IF_ERROR(Bootstrap(scratch->get(), &problems));
  // A checkpoint over a lost change would hide the loss from every later
  // verify, and let the records after it go.
  for (const Problem& p : problems)
    if (p.lost_change) {
      {
        auto db = index_->Lock();
        Result<std::string> newest = db->NewestApplied();
        if (newest.ok()) (void)db->SetMeta(kCheckpointRefusedMeta, *newest);
      }
      return Status::Corruption("no checkpoint written: " + p.message + "; " + LostChangeAdvice(p.record));
    }
  Result<std::string> newest = (*scratch)->NewestApplied();
  if (!newest.ok()) return newest.status();
  std::string bytes;
  int64_t epoch = epoch_.load(), e = 0, ms = 0;
  const bool parsed = ParseLogKey(*newest, &e, &ms);
  std::string tail;
  if (sequenced_) {
    // Nothing since the newest checkpoint: it is this one.
    if (IsCheckpointMark(*newest)) {
      *tail_out = (*newest).substr(4, kLogTailSize);
      return Status::OK();
    }
    tail = parsed ? LogKeyPrefix(e, ms).substr(4) : LogKeyPrefix(1, 0).substr(4);
  } else {
    if (parsed) epoch = std::max(epoch, e);
    ++epoch;
    tail = LogKeyPrefix(epoch, NowMs()).substr(4);
  }
  const std::string key = CheckpointKey(tail), mark = MarkKey(tail);
  {
    ReadTxn read(scratch->get());
    CHUNKSTORE_RETURN_IF_ERROR(read.status());
    Result<ChangeSet> state = Snapshot(**scratch, NowSeconds());
    if (!state.ok()) return state.status();
    bytes = EncodeChangeSet(*state, secret_, key);
  }
  ChangeSet empty;
  empty.kind = ChangeSet::kCheckpointMark;
  empty.time = NowSeconds();
  const std::string mark_bytes = EncodeChangeSet(empty, secret_, mark);
  if (sequenced_) {
    // A checkpoint of the same number written by another process holds
    // the same state; whichever came first stays.
    Result<bool> put = blobs_->PutIfAbsent(key, bytes.data(), bytes.size());
    if (!put.ok()) return put.status().WithContext("cannot write a checkpoint");
    put = blobs_->PutIfAbsent(mark, mark_bytes.data(), mark_bytes.size());
    if (!put.ok()) return put.status().WithContext("cannot write a checkpoint's mark");
  } else {
    CHUNKSTORE_RETURN_IF_ERROR(blobs_->Put(key, bytes.data(), bytes.size()).WithContext("cannot write a checkpoint"));
    CHUNKSTORE_RETURN_IF_ERROR(
        blobs_->Put(mark, mark_bytes.data(), mark_bytes.size()).WithContext("cannot write a checkpoint's mark"));
  }
  {
    auto db = index_->Lock();
    WriteTxn txn(db.get());
    CHUNKSTORE_RETURN_IF_ERROR(txn.status());
    // Where the cache has applied exactly what the checkpoint covers, it
    // holds its state. Otherwise (a sequenced log's writers went on
    // meanwhile) the mark is applied when the cache next follows the log,
    // after the records it lacks: marked applied now, it would hide them.
    Result<std::string> live = db->NewestApplied();
    if (!live.ok()) return live.status();
    if (*live == *newest) {
      CHUNKSTORE_RETURN_IF_ERROR(db->MarkApplied(mark, ""));
      CHUNKSTORE_RETURN_IF_ERROR(db->SetMeta(kCheckpointMeta, mark));
    }
    CHUNKSTORE_RETURN_IF_ERROR(txn.Commit());
  }
  NoteEpoch(mark);
  *tail_out = tail;
  return Status::OK();
}

Status BucketLog::Checkpoint() {
  if (signed_store_ && secret_.empty())
    return Status::PermissionDenied(blobs_->Describe() + " signs its changes: a checkpoint takes its secret");
  std::string tail;
  {
    // A sequenced log's checkpoint needs no lock: it covers a prefix of
    // the log that no writer can add to.
    std::unique_ptr<BucketLock> held;
    if (!sequenced_) {
      Result<std::unique_ptr<BucketLock>> lock = Lock(true, 0);
      if (!lock.ok()) return lock.status();
      held = std::move(*lock);
    }
    CHUNKSTORE_RETURN_IF_ERROR(CatchUp());
    std::lock_guard<std::mutex> refresh(refresh_mu_);
    CHUNKSTORE_RETURN_IF_ERROR(WriteCheckpoint(&tail));
  }
  // Deleting needs no lock: what goes is covered twice over, and a cache
  // still reading it starts again from the newest checkpoint.
  return DropCovered(tail);
}

Status BucketLog::DropCovered(const std::string& tail) {
  Result<std::vector<BlobInfo>> listed = blobs_->List(kCheckpointPrefix);
  if (!listed.ok()) return listed.status();
  // The bucket's clock: when the new checkpoint was stored.
  int64_t now = 0;
  for (const BlobInfo& b : *listed)
    if (CheckpointTail(b.key) == tail) now = b.modified;
  std::vector<std::string> older;
  for (const BlobInfo& b : *listed) {
    const std::string t = CheckpointTail(b.key);
    if (t.empty() || t >= tail) continue;
    // A sequenced log's writer claims the number after the newest record
    // its cache holds; one that followed the log before this checkpoint
    // was written could claim the number of a record it covers, were that
    // deleted already (Claim follows first after kClaimFreshSeconds).
    if (sequenced_ && b.modified > now - retention_seconds_) continue;
    older.push_back(t);
  }
  if (older.empty()) return Status::OK();
  std::sort(older.begin(), older.end());
  Result<std::vector<std::string>> log = ListLog("");
  if (!log.ok()) return log.status();
  // What is kept must be a checkpoint every cache can start from: one cut
  // short (its mark never landed) is passed over by every replay, and a
  // cache that applied the marked one before it would then see one new
  // mark, not two, and take the records deleted here as never written.
  const std::set<std::string> keys(log->begin(), log->end());
  std::string keep;  // the newest marked checkpoint before this one (old enough)
  for (auto it = older.rbegin(); it != older.rend() && keep.empty(); ++it)
    if (keys.count(MarkKey(*it))) keep = *it;
  if (keep.empty()) return Status::OK();
  older.erase(std::upper_bound(older.begin(), older.end(), keep), older.end());
  const std::string bound = kLogPrefix + keep;
  Status first;
  for (const std::string& key : *log) {
    if (key >= bound) break;
    Status s = blobs_->Delete(key);
    if (first.ok() && !s.ok()) first = s;
  }
  for (size_t i = 0; i + 1 < older.size(); ++i) {
    Status s = blobs_->Delete(CheckpointKey(older[i]));
    if (first.ok() && !s.ok()) first = s;
  }
  return first;
}

Status BucketLog::Rebuild() {
  // Built aside and swapped in only once whole: a rebuild that fails
  // keeps the cache as it was.
  const std::string live = cache_dir_ + "/" + kIndexFile, fresh = live + ".rebuild";
  std::string store_id;
  {
    auto db = index_->Lock();
    Result<std::string> id = db->GetMeta("bucket_store_id");
    if (!id.ok()) return id.status();
    store_id = *id;
  }
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) env_->RemoveFile(fresh + suffix);
  {
    Index::OpenOptions o;
    o.create = &meta_;
    o.bulk_load = true;
    Result<std::unique_ptr<Index>> made = Index::Open(fresh, o);
    if (!made.ok()) return made.status();
    CHUNKSTORE_RETURN_IF_ERROR((*made)->PrepareBucketCache());
    CHUNKSTORE_RETURN_IF_ERROR((*made)->SetMeta("bucket_store_id", store_id));
    std::lock_guard<std::mutex> refresh(refresh_mu_);
    CHUNKSTORE_RETURN_IF_ERROR(Bootstrap(made->get(), nullptr));
    CHUNKSTORE_RETURN_IF_ERROR((*made)->FinishBulkLoad());
  }
  index_->Reset(nullptr);
  for (const char* suffix : {"-wal", "-shm", "-journal"}) env_->RemoveFile(live + suffix);
  CHUNKSTORE_RETURN_IF_ERROR(env_->RenameFile(fresh, live).WithContext("cannot put the rebuilt index cache in place"));
  Index::OpenOptions o;
  Result<std::unique_ptr<Index>> reopened = Index::Open(live, o);
  if (!reopened.ok()) return reopened.status();
  CHUNKSTORE_RETURN_IF_ERROR((*reopened)->PrepareBucketCache());
  Result<std::string> newest = (*reopened)->NewestApplied();
  if (newest.ok()) NoteEpoch(*newest);
  index_->Reset(std::move(*reopened));
  return Status::OK();
}

Result<std::vector<ChangeLog::Problem>> BucketLog::Check(Index* truth) {
  std::unique_ptr<Index> scratch;
  if (!truth) {
    Index::OpenOptions o;
    o.create = &meta_;
    Result<std::unique_ptr<Index>> made = Index::Open(":memory:", o);
    if (!made.ok()) return made.status();
    scratch = std::move(*made);
    truth = scratch.get();
  }
  CHUNKSTORE_RETURN_IF_ERROR(truth->PrepareBucketCache());
  std::vector<Problem> problems;
  Status s = Bootstrap(truth, &problems);
  // A request that failed (the service down, access denied) found no
  // damage: that is the check's failure, not a finding.
  if (!s.ok() && !IsLogDamage(s)) return s;
  if (!s.ok()) problems.push_back({true, s.message(), true, false, "", s.IsNotFound()});
  // What a repair set aside stays on record: its change is lost.
  Result<std::vector<BlobInfo>> aside = blobs_->List(kQuarantinePrefix);
  if (!aside.ok()) return aside.status();
  const size_t missing_suffix = std::char_traits<char>::length(kMissingSuffix);
  for (const BlobInfo& b : *aside) {
    std::string record = std::string(kLogPrefix) + b.key.substr(std::string(kQuarantinePrefix).size(), 200);
    const bool missing = record.size() > missing_suffix &&
                         record.compare(record.size() - missing_suffix, missing_suffix, kMissingSuffix) == 0;
    if (missing) record.resize(record.size() - missing_suffix);
    problems.push_back({false, missing ? "log record " + record +
                                             " was missing and its number was filled by a repair (its change is lost)"
                                       : "log record " + record +
                                             " was quarantined as damaged (its change is lost; the bytes are kept at " +
                                             b.key.substr(0, 200) + ")"});
  }
  return problems;
}

Result<uint64_t> BucketLog::Quarantined() {
  Result<std::vector<BlobInfo>> aside = blobs_->List(kQuarantinePrefix);
  if (!aside.ok()) return aside.status();
  return static_cast<uint64_t>(aside->size());
}

Status BucketLog::Quarantine(const std::string& record) {
  if (!IsLogKey(record, sequenced_))
    return Status::InvalidArgument("'" + record.substr(0, 200) + "' is not a log record key (log/...)");
  if (sequenced_ && signed_store_ && secret_.empty())
    return Status::PermissionDenied(blobs_->Describe() + " signs its changes: a repair takes its secret");
  // Taken as gc takes it: no writer and no other repair meanwhile.
  Result<std::unique_ptr<BucketLock>> lock = Lock(true, 0);
  if (!lock.ok()) return lock.status();
  Result<std::string> bytes = blobs_->Get(record);
  if (!bytes.ok() && bytes.status().IsNotFound() && sequenced_ && !IsCheckpointMark(record))
    return RecordMissing(record);
  if (!bytes.ok()) return bytes.status().WithContext("cannot read log record " + record);
  Result<ChangeSet> c = DecodeChangeSet(*bytes, secret_, record);
  if (c.ok() && !(c->kind == ChangeSet::kCheckpoint ||
                  (c->kind == ChangeSet::kCheckpointMark) != IsCheckpointMark(record)))
    return Status::InvalidArgument("log record " + record + " passes its checks: only a damaged record is quarantined");
  // Only damage: a record this version cannot read (a newer one's) is
  // sound, and moving it aside would lose a good change for every machine.
  if (!c.ok() && !c.status().IsCorruption())
    return Status::InvalidArgument("log record " + record + " is not damaged (" + c.status().message() +
                                   "): not quarantining it");
  const std::string aside = kQuarantinePrefix + record.substr(std::string(kLogPrefix).size());
  CHUNKSTORE_RETURN_IF_ERROR(blobs_->Put(aside, bytes->data(), bytes->size()));
  if (!sequenced_) return blobs_->Delete(record);
  // A sequenced log keeps the number taken, or the next writer would
  // claim it again behind records that came after it: the record becomes
  // an empty change set (the mark of a checkpoint stays a mark).
  ChangeSet none;
  none.kind = IsCheckpointMark(record) ? ChangeSet::kCheckpointMark : ChangeSet::kPublish;
  none.time = NowSeconds();
  const std::string empty = EncodeChangeSet(none, secret_, record);
  return blobs_->Put(record, empty.data(), empty.size());
}

Status BucketLog::RecordMissing(const std::string& record) {
  // Only a change a replay of the log finds lost: not a number past the
  // newest (unclaimed yet), nor one a checkpoint covers (its cleanup
  // deleted it, and the checkpoint holds its change).
  Result<std::vector<Problem>> problems = Check(nullptr);
  if (!problems.ok()) return problems.status();
  bool lost = false;
  for (const Problem& p : *problems) lost = lost || (p.lost_change && p.record == record);
  if (!lost)
    return Status::NotFound("log record " + record + " is not in the log, and a replay of the log misses nothing there");
  // The loss is put on record first (verify lists quarantine/ from then
  // on), then the number is taken by an empty change set, so that gc and
  // checkpoints go on.
  const std::string aside = kQuarantinePrefix + record.substr(std::string(kLogPrefix).size()) + kMissingSuffix;
  Result<bool> noted = blobs_->PutIfAbsent(aside, "", 0);
  if (!noted.ok()) return noted.status().WithContext("cannot write " + aside);
  // (Already there: a repair whose write of the record failed before.)
  ChangeSet none;
  none.kind = ChangeSet::kPublish;
  none.time = NowSeconds();
  const std::string empty = EncodeChangeSet(none, secret_, record);
  Result<bool> put = blobs_->PutIfAbsent(record, empty.data(), empty.size());
  // An error may still have stored it (the answer was lost): the note
  // stays, and running the repair again says which.
  if (!put.ok()) return put.status().WithContext("cannot write log record " + record + " (run the repair again)");
  if (*put) return Status::OK();
  (void)blobs_->Delete(aside);
  return Status::InvalidArgument("log record " + record +
                                 " was written since the replay that found it missing: not quarantining it");
}

}  // namespace chunkstore::internal
