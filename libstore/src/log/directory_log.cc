// SPDX-License-Identifier: Apache-2.0
// DirectoryLog (directory_log.h): committing, catching up, replaying,
// checkpointing and rebuilding a directory store's index from its log.
#include "log/directory_log.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "base/clock.h"
#include "format/layout.h"
#include "index/apply.h"
#include "log/segment.h"

namespace chunkstore::internal {

namespace {

Status Locate(const Status& s, const std::string& segment, uint64_t seq) {
  return s.WithContext("change " + std::to_string(seq) + " in " + std::string(kLogDir) + "/" + segment);
}

}  // namespace

// ---- the held lock -------------------------------------------------------

class DirectoryLog::HeldLog final : public ChangeLog::Held {
 public:
  HeldLog(DirectoryLog* log, std::unique_ptr<FileLock> lock) : log_(log), lock_(std::move(lock)) {}
  ~HeldLog() override = default;

  Status Commit(ChangeSet& change, Applied* applied, bool* made) override;
  Status Replay(Index& into) override { return log_->ReplayLocked(into, nullptr); }

 private:
  DirectoryLog* log_;
  std::unique_ptr<FileLock> lock_;
};

// ---- creation ------------------------------------------------------------

bool DirectoryLog::Exists(Env* env, const std::string& root) {
  Result<std::vector<std::string>> names = env->ListDir(root + "/" + kLogDir);
  if (!names.ok()) return false;
  for (const std::string& n : *names)
    if (IsSegmentName(n, nullptr)) return true;
  return false;
}

Status DirectoryLog::Create(Env* env, const std::string& root, const std::string& store_id,
                            const ChangeSet& checkpoint, bool sync) {
  const std::string dir = root + "/" + kLogDir;
  CHUNKSTORE_RETURN_IF_ERROR(env->CreateDir(dir));
  if (Exists(env, root)) return Status::InvalidArgument(dir + " already holds a change log");
  const std::string path = dir + "/" + SegmentName(1);
  const std::string fresh = path + ".new";
  env->RemoveFile(fresh);
  Result<std::unique_ptr<File>> f = env->OpenFile(fresh, OpenMode::kCreateNew);
  if (!f.ok()) return f.status();
  const std::string bytes = EncodeSegmentHeader(1, store_id) + EncodeFrame(1, EncodeChangeSet(checkpoint));
  Status s = (*f)->Append(bytes.data(), bytes.size());
  if (s.ok() && sync) s = (*f)->Sync();
  f->reset();
  if (s.ok()) s = env->RenameFile(fresh, path);
  if (s.ok() && sync) s = env->SyncDir(dir);
  if (s.ok() && sync) s = env->SyncDir(root);  // log/ itself may be new
  if (!s.ok()) env->RemoveFile(fresh);
  return s;
}

DirectoryLog::DirectoryLog(Env* env, std::string root, std::string store_id, IndexHandle* index,
                           std::string index_path, DirectoryLogOptions options, bool read_only)
    : env_(env),
      root_(std::move(root)),
      dir_(root_ + "/" + kLogDir),
      store_id_(std::move(store_id)),
      index_(index),
      index_path_(std::move(index_path)),
      options_(options),
      read_only_(read_only) {}

DirectoryLog::~DirectoryLog() = default;

std::string DirectoryLog::SegmentPath(uint64_t first) const { return dir_ + "/" + SegmentName(first); }

Result<std::vector<uint64_t>> DirectoryLog::Segments() {
  Result<std::vector<std::string>> names = env_->ListDir(dir_);
  if (!names.ok()) {
    // Every store made since the log was, holds log/ from its first
    // commit: without it the changes the index shows cannot be proven.
    if (!env_->FileExists(dir_))
      return Status::Corruption("the store's change log (" + dir_ +
                                ") is missing: the store is damaged; put log/ back from a copy of the store");
    return names.status().WithContext("cannot read the store's change log");
  }
  std::vector<uint64_t> out;
  for (const std::string& n : *names) {
    uint64_t first = 0;
    if (IsSegmentName(n, &first)) out.push_back(first);
  }
  std::sort(out.begin(), out.end());
  if (out.empty()) return Status::Corruption("the store's change log (" + dir_ + ") has no segment");
  return out;
}

// ---- positions -----------------------------------------------------------

// One meta row, "log_position": "<seq> <segment> <offset> <base>" (none
// yet: nothing applied).
Result<DirectoryLog::Position> DirectoryLog::IndexPosition(Index& index) {
  Position p;
  Result<std::string> v = index.GetMeta("log_position");
  if (!v.ok()) return v.status();
  if (v->empty()) return p;
  unsigned long long f[4];
  char tail = 0;
  if (std::sscanf(v->c_str(), "%llu %llu %llu %llu%c", &f[0], &f[1], &f[2], &f[3], &tail) != 4 ||
      v->find_first_not_of("0123456789 ") != std::string::npos)
    return Status::Corruption("the index's log position '" + v->substr(0, 80) + "' is malformed; run index rebuild");
  p.seq = f[0];
  p.segment = f[1];
  p.offset = f[2];
  p.base = f[3];
  return p;
}

Status DirectoryLog::RecordPosition(Index& index, uint64_t seq, uint64_t segment, uint64_t offset, uint64_t base) {
  return index.SetMeta("log_position", std::to_string(seq) + " " + std::to_string(segment) + " " +
                                           std::to_string(offset) + " " + std::to_string(base));
}

Result<uint64_t> DirectoryLog::UnappliedBytes() {
  Position p;
  {
    auto db = index_->Lock();
    Result<Position> got = IndexPosition(*db);
    if (!got.ok()) return got.status();
    p = *got;
  }
  Result<std::vector<uint64_t>> segs = Segments();
  if (!segs.ok()) return segs.status();
  uint64_t behind = 0;
  for (uint64_t first : *segs) {
    if (first < p.segment) continue;
    Result<std::unique_ptr<File>> f = env_->OpenFile(SegmentPath(first), OpenMode::kRead);
    if (!f.ok()) return f.status();
    Result<uint64_t> size = (*f)->Size();
    if (!size.ok()) return size.status();
    if (first == p.segment) behind += *size > p.offset ? *size - p.offset : 0;
    else behind += *size;
  }
  if (p.seq == 0 || std::find(segs->begin(), segs->end(), p.segment) == segs->end()) behind = std::max<uint64_t>(behind, 1);
  return behind;
}

// ---- following the log ---------------------------------------------------

Status DirectoryLog::ReplayLocked(Index& into, std::vector<std::string>* problems) {
  Result<std::vector<uint64_t>> segs = Segments();
  if (!segs.ok()) return segs.status();
  Result<Position> pos = IndexPosition(into);
  if (!pos.ok()) return pos.status();
  // Where to start: right after what the index has, if its segment is still
  // there; else from the newest segment's checkpoint (the whole state).
  size_t first_seg = segs->size() - 1;
  bool resume = false;
  if (pos->seq > 0) {
    auto it = std::find(segs->begin(), segs->end(), pos->segment);
    if (it != segs->end()) {
      first_seg = static_cast<size_t>(it - segs->begin());
      resume = true;
    }
  }
  Position at = resume ? *pos : Position{};
  std::optional<WriteTxn> txn;  // opened at the first change to apply
  for (size_t k = first_seg; k < segs->size(); ++k) {
    const uint64_t first = (*segs)[k];
    const std::string name = SegmentName(first);
    Result<std::unique_ptr<File>> f = env_->OpenFile(SegmentPath(first), OpenMode::kRead);
    if (!f.ok()) return f.status();
    const bool from_middle = resume && k == first_seg;
    Result<SegmentScan> scan = ScanSegment(**f, name, from_middle ? at.offset : 0, at.seq + 1);
    if (!scan.ok()) return scan.status();
    if (scan->store_id != store_id_)
      return Status::Corruption("log segment " + name + " belongs to another store (id " + scan->store_id + ")");
    const bool newest = k + 1 == segs->size();
    if (!scan->damage.empty()) {
      // A frame cut short at the end of the newest segment is a commit a
      // crash interrupted before it returned: it never happened. Anything
      // else lost a change that was made.
      const bool torn = scan->damage_at_end && (newest || scan->damage_seq >= (*segs)[k + 1]);
      if (!torn)
        return Status::Corruption("the store's change log is damaged: " + scan->damage + " (log/" + name +
                                  ", offset " + std::to_string(scan->damage_offset) + ")");
      if (problems)
        problems->push_back("log/" + name + " ends with change " + std::to_string(scan->damage_seq) +
                            " cut short (a commit interrupted before it returned; it was not made)");
    }
    if (!from_middle && (scan->frames.empty() || scan->frames.front().seq != first))
      return Status::Corruption("log segment " + name + " does not start with its checkpoint");
    for (Frame& fr : scan->frames) {
      // A later segment starts with the checkpoint of what came before it;
      // applied anyway, so that a replay never depends on that.
      if (from_middle && fr.seq <= at.seq) continue;
      if (at.seq != 0 && fr.seq != at.seq + 1)
        return Status::Corruption("the store's change log skips from change " + std::to_string(at.seq) + " to " +
                                  std::to_string(fr.seq) + " (log/" + name + ")");
      Result<ChangeSet> c = DecodeChangeSet(fr.payload);
      if (!c.ok()) return Locate(c.status(), name, fr.seq);
      if ((fr.seq == first) != (c->kind == ChangeSet::kCheckpoint))
        return Status::Corruption("log segment " + name + " has a checkpoint out of place (change " +
                                  std::to_string(fr.seq) + ")");
      if (!txn) {
        txn.emplace(&into);
        CHUNKSTORE_RETURN_IF_ERROR(txn->status());
      }
      Status applied = ApplyChange(into, *c, nullptr);
      if (!applied.ok()) return Locate(applied, name, fr.seq);
      at.seq = fr.seq;
      at.segment = first;
      at.offset = fr.end;
      if (c->kind == ChangeSet::kCheckpoint) at.base = fr.end;
    }
  }
  if (!txn) return Status::OK();
  CHUNKSTORE_RETURN_IF_ERROR(RecordPosition(into, at.seq, at.segment, at.offset, at.base));
  return txn->Commit();
}

Status DirectoryLog::CatchUpLocked() {
  auto db = index_->Lock();
  // The usual case, in two stats: the index has applied its segment to its
  // end, and no checkpoint started a segment after it.
  Result<Position> pos = IndexPosition(*db);
  if (!pos.ok()) return pos.status();
  if (pos->seq > 0) {
    Result<FileInfo> info = env_->GetFileInfo(SegmentPath(pos->segment));
    if (info.ok() && info->size == pos->offset && !env_->FileExists(SegmentPath(pos->seq + 1))) return Status::OK();
  }
  return ReplayLocked(*db, nullptr);
}

Status DirectoryLog::CatchUp() {
  if (read_only_) return Status::OK();
  Result<uint64_t> behind = UnappliedBytes();
  if (!behind.ok()) return behind.status();
  if (*behind == 0) return Status::OK();
  // Someone committing holds the lock and applies its own change; only a
  // free lock means changes are waiting that nobody will apply.
  Result<std::unique_ptr<FileLock>> lock = env_->TryLockFile(root_ + "/" + kLogLock);
  if (!lock.ok()) return lock.status().IsBusy() ? Status::OK() : lock.status();
  return CatchUpLocked();
}

// ---- holding and committing ----------------------------------------------

Result<std::unique_ptr<FileLock>> DirectoryLog::Lock(int wait_ms) {
  if (read_only_) return Status::IOError("the store is read-only: " + root_ + " cannot be written");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  auto pause = std::chrono::microseconds(50);
  for (;;) {
    Result<std::unique_ptr<FileLock>> lock = env_->TryLockFile(root_ + "/" + kLogLock);
    if (lock.ok() || !lock.status().IsBusy()) return lock;
    if (std::chrono::steady_clock::now() >= deadline)
      return Status::Busy("another process is committing to " + root_ + " and has not finished; try again");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(5000));
  }
}

Result<std::unique_ptr<ChangeLog::Held>> DirectoryLog::Hold(bool, int wait_ms) {
  Result<std::unique_ptr<FileLock>> lock = Lock(wait_ms);
  if (!lock.ok()) return lock.status();
  CHUNKSTORE_RETURN_IF_ERROR(CatchUpLocked());
  return std::unique_ptr<Held>(new HeldLog(this, std::move(*lock)));
}

// Free space below which a change (other than gc's) is refused before it
// is written: room for its log record and the index pages it touches.
constexpr uint64_t kRoomForAChange = 1 << 20;

Status DirectoryLog::HeldLog::Commit(ChangeSet& change, Applied* applied, bool* made) {
  DirectoryLog* log = log_;
  if (made) *made = false;
  bool checkpoint_due = false;
  CHUNKSTORE_RETURN_IF_ERROR(log->RaiseFormatFor(change));
  {
    auto db = log->index_->Lock();
    Result<Position> pos = log->IndexPosition(*db);
    if (!pos.ok()) return pos.status();
    const uint64_t seq = pos->seq + 1;
    const std::string path = log->SegmentPath(pos->segment);
    // A segment's name may not be durable yet: a checkpoint that renamed it
    // into place may have failed (or its process died) before syncing the
    // directory. A change appended to it is only durable with its name.
    if (log->options_.sync && log->named_segment_.load() != pos->segment) {
      CHUNKSTORE_RETURN_IF_ERROR(log->env_->SyncDir(log->dir_).WithContext("cannot sync the store's log directory"));
      log->named_segment_.store(pos->segment);
    }
    // The segment stays open between commits (appends go to its end,
    // whoever wrote last); a checkpoint moves commits to a new one.
    std::lock_guard<std::mutex> open(log->append_mu_);
    if (!log->append_ || log->append_segment_ != pos->segment) {
      log->append_.reset();
      Result<std::unique_ptr<File>> opened = log->env_->OpenFile(path, OpenMode::kAppend);
      if (!opened.ok()) return opened.status().WithContext("cannot open the store's change log");
      log->append_ = std::move(*opened);
      log->append_segment_ = pos->segment;
    }
    std::unique_ptr<File>* f = &log->append_;
    Result<uint64_t> size = (*f)->Size();
    if (!size.ok()) return size.status();
    // Past what the index has applied (after catching up) is only the
    // remains of a commit a crash cut short: the change starts where the
    // last whole one ended.
    if (*size != pos->offset) CHUNKSTORE_RETURN_IF_ERROR((*f)->Truncate(pos->offset));
    const std::string frame = EncodeFrame(seq, EncodeChangeSet(change));
    // On a disk this full a change could reach the log and not the index
    // (made, yet reported as a failure): it is refused whole instead. gc
    // and removals go on, since they are what gives space back. The room
    // asked for grows with the change (its frame, and index rows of about
    // that size again, twice over for the write-ahead log).
    if (change.kind != ChangeSet::kGc && change.kind != ChangeSet::kRemoveName &&
        change.kind != ChangeSet::kRemoveObject) {
      const uint64_t free = log->env_->FreeSpace(log->dir_);
      const uint64_t needed = kRoomForAChange + 4 * static_cast<uint64_t>(frame.size());
      if (free < needed)
        return Status::NoSpace("the disk holding " + log->root_ + " is full (" + std::to_string(free >> 10) +
                               " KiB free; this change needs " + std::to_string(needed >> 10) +
                               " KiB): nothing was changed; rm and gc, or deleting other files, make room");
    }
    // A write that fails (a full disk) leaves at most part of the frame,
    // which no replay ever applies. Once the whole frame is written the
    // change may be made: an fsync that fails leaves the disk in a state
    // nobody can know (the bytes may reach it later; the cut below may
    // not), and a whole frame that turns up there is a change the next
    // catch-up applies. So whatever the change names is kept from then on,
    // failure or not.
    Status s = (*f)->Append(frame.data(), frame.size());
    if (s.ok() && made) *made = true;
    if (s.ok() && log->options_.sync) s = (*f)->Sync();
    if (!s.ok()) {
      // Nothing after the last whole change counts; cut what was written.
      (*f)->Truncate(pos->offset);
      return s.WithContext("cannot write to the store's change log (the change may or may not have been made)");
    }
    // The change is made. What follows brings the index along.
    WriteTxn txn(db.get());
    s = txn.status();
    if (s.ok()) s = ApplyChange(*db, change, applied);
    if (s.ok()) s = RecordPosition(*db, seq, pos->segment, pos->offset + frame.size(), pos->base);
    if (s.ok()) s = txn.Commit();
    if (!s.ok())
      return s.WithContext(std::string(kIndexBehindLog) + " (the next command catches it up)");
    const uint64_t records = pos->offset + frame.size() - pos->base;
    const uint64_t checkpoint = pos->base > kSegmentHeaderSize ? pos->base - kSegmentHeaderSize : 0;
    checkpoint_due = records > std::max(log->options_.checkpoint_bytes, checkpoint);
  }
  // A checkpoint that fails loses nothing (the log is as it was); the next
  // commit tries again.
  if (checkpoint_due) (void)log->CheckpointLocked();
  return Status::OK();
}

// ---- checkpoints and rebuilds --------------------------------------------

Status DirectoryLog::CheckpointLocked() {
  Result<std::unique_ptr<Index>> scratch = index_->NewScratch();
  if (!scratch.ok()) return scratch.status();
  CHUNKSTORE_RETURN_IF_ERROR(ReplayLocked(**scratch, nullptr));
  Result<Position> truth = IndexPosition(**scratch);
  if (!truth.ok()) return truth.status();
  std::string bytes;
  {
    ReadTxn read(scratch->get());
    CHUNKSTORE_RETURN_IF_ERROR(read.status());
    Result<ChangeSet> state = Snapshot(**scratch, NowSeconds());
    if (!state.ok()) return state.status();
    bytes = EncodeChangeSet(*state);
  }
  const uint64_t seq = truth->seq + 1;
  const std::string path = SegmentPath(seq), fresh = path + ".new";
  env_->RemoveFile(fresh);
  const std::string segment = EncodeSegmentHeader(seq, store_id_) + EncodeFrame(seq, bytes);
  {
    Result<std::unique_ptr<File>> f = env_->OpenFile(fresh, OpenMode::kCreateNew);
    if (!f.ok()) return f.status();
    Status s = (*f)->Append(segment.data(), segment.size());
    if (s.ok() && options_.sync) s = (*f)->Sync();
    if (!s.ok()) {
      f->reset();
      env_->RemoveFile(fresh);
      return s.WithContext("cannot write a checkpoint of the store's change log");
    }
  }
  CHUNKSTORE_RETURN_IF_ERROR(env_->RenameFile(fresh, path));
  if (options_.sync) {
    CHUNKSTORE_RETURN_IF_ERROR(env_->SyncDir(dir_));
    named_segment_.store(seq);
  }
  {
    auto db = index_->Lock();
    Result<Position> live = IndexPosition(*db);
    if (!live.ok()) return live.status();
    // The live index holds the same state (it followed the same changes);
    // from here on it follows the new segment.
    if (live->seq + 1 == seq) {
      WriteTxn txn(db.get());
      CHUNKSTORE_RETURN_IF_ERROR(txn.status());
      CHUNKSTORE_RETURN_IF_ERROR(RecordPosition(*db, seq, seq, segment.size(), segment.size()));
      CHUNKSTORE_RETURN_IF_ERROR(txn.Commit());
    }
  }
  // Keep the segment before the new one as a second copy of the state;
  // older ones are covered twice over.
  Result<std::vector<uint64_t>> segs = Segments();
  if (!segs.ok()) return segs.status();
  bool removed = false;
  for (size_t i = 0; i + 2 < segs->size(); ++i) {
    env_->RemoveFile(SegmentPath((*segs)[i]));
    removed = true;
  }
  if (removed && options_.sync) CHUNKSTORE_RETURN_IF_ERROR(env_->SyncDir(dir_));
  return Status::OK();
}

Status DirectoryLog::Checkpoint() {
  Result<std::unique_ptr<FileLock>> lock = Lock(10000);
  if (!lock.ok()) return lock.status();
  CHUNKSTORE_RETURN_IF_ERROR(CatchUpLocked());
  return CheckpointLocked();
}

Status DirectoryLog::RebuildLocked() {
  StoreMeta meta;
  {
    auto db = index_->Lock();
    if (db.get()) meta = db->meta();
  }
  return RebuildInto(meta);
}

Status DirectoryLog::RebuildInto(const StoreMeta& meta) {
  Index::OpenOptions o;
  o.create = &meta;
  if (index_path_ == ":memory:") {
    Result<std::unique_ptr<Index>> made = Index::Open(":memory:", o);
    if (!made.ok()) return made.status();
    CHUNKSTORE_RETURN_IF_ERROR(ReplayLocked(**made, nullptr));
    CHUNKSTORE_RETURN_IF_ERROR((*made)->SetMeta("store_id", store_id_));
    index_->Reset(std::move(*made));
    return Status::OK();
  }
  const std::string& live = index_path_;
  const std::string fresh = live + ".rebuild";
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) env_->RemoveFile(fresh + suffix);
  {
    Index::OpenOptions bulk = o;
    bulk.bulk_load = true;
    Result<std::unique_ptr<Index>> made = Index::Open(fresh, bulk);
    if (!made.ok()) return made.status();
    CHUNKSTORE_RETURN_IF_ERROR(ReplayLocked(**made, nullptr));
    CHUNKSTORE_RETURN_IF_ERROR((*made)->SetMeta("store_id", store_id_));
    CHUNKSTORE_RETURN_IF_ERROR((*made)->FinishBulkLoad());
  }
  // The old index's write-ahead log must not meet the new file.
  index_->Reset(nullptr);
  for (const char* suffix : {"-wal", "-shm", "-journal"}) env_->RemoveFile(live + suffix);
  CHUNKSTORE_RETURN_IF_ERROR(env_->RenameFile(fresh, live));
  if (options_.sync) CHUNKSTORE_RETURN_IF_ERROR(env_->SyncDir(root_));
  Result<std::unique_ptr<Index>> reopened = Index::Open(live, Index::OpenOptions{});
  if (!reopened.ok()) return reopened.status();
  index_->Reset(std::move(*reopened));
  return Status::OK();
}

Status DirectoryLog::Rebuild() {
  Result<std::unique_ptr<FileLock>> lock = Lock(10000);
  if (!lock.ok()) return lock.status();
  return RebuildLocked();
}

Status DirectoryLog::RebuildWith(const StoreMeta& meta) {
  Result<std::unique_ptr<FileLock>> lock = Lock(10000);
  if (!lock.ok()) return lock.status();
  return RebuildInto(meta);
}

Result<std::vector<ChangeLog::Problem>> DirectoryLog::Check(Index* truth) {
  // Held, so that no checkpoint drops a segment while it is read; a
  // read-only store (nobody writes it) is checked without.
  std::unique_ptr<FileLock> lock;
  if (!read_only_) {
    Result<std::unique_ptr<FileLock>> held = Lock(10000);
    if (!held.ok()) return held.status();
    lock = std::move(*held);
  }
  std::unique_ptr<Index> scratch;
  if (!truth) {
    Result<std::unique_ptr<Index>> made = index_->NewScratch();
    if (!made.ok()) return made.status();
    scratch = std::move(*made);
    truth = scratch.get();
  }
  std::vector<std::string> notes;
  Status s = ReplayLocked(*truth, &notes);
  // A log that could not be read (EIO, no memory) was not found damaged:
  // that is the check's failure, not a finding.
  if (!s.ok() && !IsLogDamage(s)) return s;
  std::vector<Problem> problems;
  for (std::string& n : notes) problems.push_back({false, std::move(n)});
  if (!s.ok()) problems.push_back({true, s.message(), true});
  return problems;
}

Result<std::unique_ptr<FileLock>> DirectoryLog::LockGc() {
  if (read_only_) return Status::IOError("the store is read-only: " + root_ + " cannot be written");
  Result<std::unique_ptr<FileLock>> lock = env_->TryLockFile(root_ + "/" + kGcLock);
  if (!lock.ok() && lock.status().IsBusy()) return Status::Busy("another gc or repair is running on this store");
  return lock;
}

}  // namespace chunkstore::internal
