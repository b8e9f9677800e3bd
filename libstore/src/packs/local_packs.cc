// SPDX-License-Identifier: Apache-2.0
// The packs of a directory store: files in STORE/packs, each with its own
// flock, so that writers in several threads and processes append to
// different packs and gc rewrites or removes only packs nobody writes.
//
// A new pack is created as pack-<hex>.pack.new, locked, given its header,
// and only then renamed to its real name (the lock goes with the file): a
// gc never sees an unlocked new pack under a .pack name, and leaves young
// .new files alone. A writer adopting a pack appends at the file's end,
// wherever that is: bytes past the committed length are a crashed
// writer's, and cutting them off could cut a change the log has and the
// index has not caught up with yet. They stay as garbage a compaction
// drops.
#include <thread>

#include "base/clock.h"
#include "format/layout.h"
#include "format/pack_format.h"
#include "packs/pack_set.h"

namespace chunkstore::internal {

namespace {

class LocalPackSet final : public PackSet {
 public:
  LocalPackSet(Env* env, std::string dir, IndexHandle* index, LocalPackOptions options)
      : PackSet(index), env_(env), dir_(std::move(dir)), options_(options), locks_exact_(env_->LocksAreExact(dir_)) {}

  Result<std::unique_ptr<File>> Open(const std::string& name, uint64_t) override {
    if (!IsPackName(name)) return Status::Corruption("'" + name.substr(0, 64) + "' is not a pack name");
    return env_->OpenFile(Path(name), OpenMode::kRead);
  }
  bool remote() const override { return false; }
  std::string Describe() const override { return dir_; }

  Result<std::unique_ptr<PackWriter>> Acquire() override;
  Result<std::unique_ptr<PackWriter>> New() override;
  uint64_t seal_at() const override { return UINT64_MAX; }
  std::future<Status> Seal(PackWriter& w) override;
  void Release(std::unique_ptr<PackWriter> w, bool committed) override;
  void DropIdleWriters() override {
    std::lock_guard<std::mutex> l(idle_mu_);
    idle_.clear();
  }

  Result<std::vector<PackFile>> List() override;
  Result<std::unique_ptr<FileLock>> LockForMaintenance(const std::string& name) override {
    const bool fresh = name.size() > 4 && name.compare(name.size() - 4, 4, ".new") == 0;
    if (!IsPackName(fresh ? name.substr(0, name.size() - 4) : name))
      return Status::Corruption("'" + name.substr(0, 64) + "' is not a pack name");
    return env_->TryLockExistingFile(Path(name));
  }
  bool LockProvesNoWriter() const override { return locks_exact_; }
  Status CutTail(const std::string& name, uint64_t length) override {
    if (!IsPackName(name)) return Status::Corruption("'" + name.substr(0, 64) + "' is not a pack name");
    Result<std::unique_ptr<File>> f = env_->OpenFile(Path(name), OpenMode::kAppend);
    if (!f.ok()) return f.status();
    CHUNKSTORE_RETURN_IF_ERROR((*f)->Truncate(length));
    return options_.sync ? (*f)->Sync() : Status::OK();
  }
  Status Remove(const std::string& name) override {
    const bool fresh = name.size() > 4 && name.compare(name.size() - 4, 4, ".new") == 0;
    if (!IsPackName(fresh ? name.substr(0, name.size() - 4) : name))
      return Status::Corruption("'" + name.substr(0, 64) + "' is not a pack name");
    return env_->RemoveFile(Path(name));
  }
  Result<int64_t> Now() override { return NowSeconds(); }
  uint64_t FreeBytes() override { return env_->FreeSpace(dir_); }

 private:
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  // w's pack, locked: whether the index still has it with room, and
  // w positioned at the file's end.
  Result<bool> Resume(PackWriter& w);

  Env* env_;
  std::string dir_;
  LocalPackOptions options_;
  bool locks_exact_;  // a free flock here proves no writer has the pack
  std::mutex idle_mu_;
  // Writers between publishes: file open, lock released (so a gc in
  // another process may compact the pack meanwhile).
  std::vector<std::unique_ptr<PackWriter>> idle_;
};

Result<bool> LocalPackSet::Resume(PackWriter& w) {
  std::optional<PackRow> row;
  {
    auto db = index_->Lock();
    Result<std::optional<PackRow>> r = db->FindPackByName(w.name);
    if (!r.ok()) return r.status();
    row = *r;
  }
  // Gone (gc removed it), or full.
  if (!row || row->size >= options_.pack_target_size) return false;
  Result<uint64_t> len = w.file->Size();
  if (!len.ok()) return len.status();
  if (*len < row->size) return false;  // damaged pack: never append after a hole
  w.committed = w.size = w.written_back = *len;
  return true;
}

Result<std::unique_ptr<PackWriter>> LocalPackSet::Acquire() {
  for (;;) {
    std::unique_ptr<PackWriter> w;
    {
      std::lock_guard<std::mutex> l(idle_mu_);
      if (idle_.empty()) break;
      w = std::move(idle_.back());
      idle_.pop_back();
    }
    Result<std::unique_ptr<FileLock>> lock = env_->TryLockExistingFile(w->path);
    if (!lock.ok()) continue;  // someone else writes it now, or a gc removed it
    w->lock = std::move(*lock);
    Result<bool> ok = Resume(*w);
    if (!ok.ok()) return ok.status();
    if (*ok) return w;
  }
  // Adopt a committed pack with room that no other writer holds.
  std::vector<PackRow> packs;
  {
    auto db = index_->Lock();
    Result<std::vector<PackRow>> r = db->ListPacks();
    if (!r.ok()) return r.status();
    packs = std::move(*r);
  }
  for (const PackRow& p : packs) {
    if (p.size >= options_.pack_target_size || !IsPackName(p.name)) continue;
    auto w = std::make_unique<PackWriter>();
    w->name = p.name;
    w->path = Path(p.name);
    Result<std::unique_ptr<FileLock>> lock = env_->TryLockExistingFile(w->path);
    if (!lock.ok()) continue;  // busy (someone else writes it) or gone
    w->lock = std::move(*lock);
    Result<std::unique_ptr<File>> f = env_->OpenFile(w->path, OpenMode::kAppend);
    if (!f.ok()) continue;  // a missing pack is verify's business, not ours
    w->file = std::move(*f);
    Result<bool> ok = Resume(*w);
    if (!ok.ok()) return ok.status();
    if (*ok) return w;
  }
  return New();
}

Result<std::unique_ptr<PackWriter>> LocalPackSet::New() {
  auto w = std::make_unique<PackWriter>();
  w->name = NewPackName();
  w->path = Path(w->name);
  const std::string fresh = w->path + ".new";
  Result<std::unique_ptr<File>> f = env_->OpenFile(fresh, OpenMode::kCreateNew);
  if (!f.ok()) return f.status();
  w->file = std::move(*f);
  auto discard = [&](const Status& s) {
    w->lock.reset();
    env_->RemoveFile(fresh);
    return s;
  };
  Result<std::unique_ptr<FileLock>> lock = env_->TryLockFile(fresh);
  if (!lock.ok()) return discard(lock.status());
  w->lock = std::move(*lock);
  uint8_t header[kPackHeaderSize];
  EncodePackHeader(header);
  Status s = w->file->Append(header, sizeof header);
  if (s.ok()) s = env_->RenameFile(fresh, w->path);
  if (!s.ok()) return discard(s);
  w->size = w->written_back = kPackHeaderSize;
  w->is_new = true;
  return w;
}

std::future<Status> LocalPackSet::Seal(PackWriter& w) {
  std::promise<Status> done;
  Status s = w.Flush();
  if (s.ok() && options_.sync) s = w.file->Sync();
  if (s.ok() && options_.sync && w.is_new) s = env_->SyncDir(dir_);
  if (!s.ok()) s = s.WithContext("cannot make chunk data durable");
  done.set_value(s);
  return done.get_future();
}

void LocalPackSet::Release(std::unique_ptr<PackWriter> w, bool committed) {
  if (committed) {
    w->committed = w->size;
    w->is_new = false;
  } else {
    w->buffer.clear();
    if (w->committed == 0) {
      // Never committed: nothing refers to this file.
      w->lock.reset();
      env_->RemoveFile(w->path);
      return;
    }
    // What this writer appended past the committed length is its own.
    if (!w->file->Truncate(w->committed).ok()) return;  // drop it; the bytes are garbage
    w->size = w->committed;
  }
  if (w->size >= options_.pack_target_size) return;  // full: closing releases the lock
  w->lock.reset();
  std::lock_guard<std::mutex> l(idle_mu_);
  idle_.push_back(std::move(w));
}

Result<std::vector<PackFile>> LocalPackSet::List() {
  Result<std::vector<std::string>> names = env_->ListDir(dir_);
  if (!names.ok()) return names.status();
  std::vector<PackFile> out;
  for (const std::string& n : *names) {
    const bool fresh = n.size() > 4 && n.compare(n.size() - 4, 4, ".new") == 0;
    if (!IsPackName(fresh ? n.substr(0, n.size() - 4) : n)) continue;
    Result<FileInfo> info = env_->GetFileInfo(Path(n));
    if (!info.ok()) {
      if (info.status().IsNotFound()) continue;  // gone meanwhile
      return info.status();
    }
    out.push_back({n, info->size, info->modified});
  }
  return out;
}

}  // namespace

std::unique_ptr<PackSet> NewLocalPackSet(Env* env, std::string dir, IndexHandle* index, LocalPackOptions options) {
  return std::make_unique<LocalPackSet>(env, std::move(dir), index, options);
}

}  // namespace chunkstore::internal
