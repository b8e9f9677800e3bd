// SPDX-License-Identifier: Apache-2.0
// The packs of a bucket store (NewBucketPackSet, bucket.h): written by the
// same pack writer as on disk into staging files in the cache, uploaded
// whole when sealed (a publish seals each as it fills, and the last at
// commit), never appended to again, and read with ranged GETs.
#include "base/clock.h"
#include "bucket/bucket.h"
#include "format/layout.h"
#include "format/pack_format.h"

namespace chunkstore::internal {

namespace {

// Nothing appends to a bucket's packs, and gc holds the bucket's
// exclusive lock: a maintenance lock has nothing more to exclude.
class NoLock final : public FileLock {};

class BucketPackSet final : public PackSet {
 public:
  BucketPackSet(Env* env, BlobStore* blobs, std::string staging, IndexHandle* index, BucketPackOptions options)
      : PackSet(index), env_(env), blobs_(blobs), staging_(std::move(staging)), options_(options) {}

  Result<std::unique_ptr<File>> Open(const std::string& name, uint64_t size) override {
    if (!IsPackName(name)) return Status::Corruption("'" + name.substr(0, 64) + "' is not a pack name");
    if (size == 0) {
      Result<uint64_t> got = blobs_->Size(PackKey(name));
      if (!got.ok()) return got.status();
      size = *got;
    }
    return std::unique_ptr<File>(new RemotePackFile(blobs_, PackKey(name), size));
  }
  bool remote() const override { return true; }
  std::string Describe() const override { return blobs_->Describe(); }

  Result<std::unique_ptr<PackWriter>> Acquire() override { return New(); }

  Result<std::unique_ptr<PackWriter>> New() override {
    auto w = std::make_unique<PackWriter>();
    w->name = NewPackName();
    w->path = staging_ + "/" + w->name;
    Result<std::unique_ptr<File>> f = env_->OpenFile(w->path, OpenMode::kCreateNew);
    if (!f.ok()) return f.status();
    w->file = std::move(*f);
    // Locked while staged, so that a sweep (SweepStagedPacks) can tell a
    // killed writer's file from one being uploaded.
    Result<std::unique_ptr<FileLock>> lock = env_->TryLockFile(w->path);
    if (lock.ok()) w->lock = std::move(*lock);
    uint8_t header[kPackHeaderSize];
    EncodePackHeader(header);
    Status s = w->file->Append(header, sizeof header);
    if (!s.ok()) {
      w->file.reset();
      env_->RemoveFile(w->path);
      return s;
    }
    w->size = w->written_back = kPackHeaderSize;
    w->is_new = true;
    return w;
  }

  uint64_t seal_at() const override { return options_.remote_pack_size; }

  std::future<Status> Seal(PackWriter& w) override {
    Status flushed = w.Flush();
    if (!flushed.ok()) {
      std::promise<Status> p;
      p.set_value(flushed);
      return p.get_future();
    }
    // The upload runs beside the publish; w's file stays put until it ends.
    PackWriter* pw = &w;
    BlobStore* blobs = blobs_;
    return std::async(std::launch::async, [pw, blobs] {
      Status s = blobs->PutFile(PackKey(pw->name), *pw->file, pw->size);
      return s.ok() ? s : s.WithContext("cannot upload pack " + pw->name);
    });
  }

  // Uploaded or abandoned, the staging copy goes either way.
  void Release(std::unique_ptr<PackWriter> w, bool) override {
    w->file.reset();
    env_->RemoveFile(w->path);
  }
  void DropIdleWriters() override {}

  Result<std::vector<PackFile>> List() override {
    Result<std::vector<BlobInfo>> blobs = blobs_->List(std::string(kPacksDir) + "/");
    if (!blobs.ok()) return blobs.status();
    std::vector<PackFile> out;
    for (const BlobInfo& b : *blobs) {
      const std::string name = b.key.substr(std::string(kPacksDir).size() + 1);
      // A key that is not a pack name is not ours to touch.
      if (IsPackName(name)) out.push_back({name, b.size, b.modified});
    }
    return out;
  }
  Result<std::unique_ptr<FileLock>> LockForMaintenance(const std::string&) override {
    return std::unique_ptr<FileLock>(new NoLock);
  }
  bool LockProvesNoWriter() const override { return false; }  // other machines take no lock here
  Status Remove(const std::string& name) override {
    if (!IsPackName(name)) return Status::Corruption("'" + name.substr(0, 64) + "' is not a pack name");
    return blobs_->Delete(PackKey(name));
  }
  uint64_t FreeBytes() override { return UINT64_MAX; }  // a bucket has no disk to fill
  Result<uint64_t> AbortStaleUploads(int64_t older_than) override {
    Result<std::vector<UploadInfo>> open = blobs_->ListUploads(std::string(kPacksDir) + "/");
    if (!open.ok()) return open.status();
    uint64_t aborted = 0;
    for (const UploadInfo& u : *open) {
      // Only a pack's, and only one older than a writer could still be at.
      const std::string name = u.key.substr(std::min(u.key.size(), std::string(kPacksDir).size() + 1));
      if (u.key.rfind(std::string(kPacksDir) + "/", 0) != 0 || !IsPackName(name) || u.started > older_than) continue;
      CHUNKSTORE_RETURN_IF_ERROR(blobs_->AbortUpload(u));
      ++aborted;
    }
    return aborted;
  }
  Status CutTail(const std::string&, uint64_t) override { return Status::Unsupported("pack blobs are immutable"); }
  Result<int64_t> Now() override {
    // The bucket's clock, not this machine's: the time a probe blob was
    // written, as the bucket reports it.
    const std::string key = "clock/probe-" + RandomHex(8);
    CHUNKSTORE_RETURN_IF_ERROR(blobs_->Put(key, "", 0));
    Result<std::vector<BlobInfo>> seen = blobs_->List(key);
    blobs_->Delete(key);
    if (!seen.ok()) return seen.status();
    return seen->empty() ? NowSeconds() : seen->front().modified;
  }

 private:
  Env* env_;
  BlobStore* blobs_;
  std::string staging_;
  BucketPackOptions options_;
};

}  // namespace

uint64_t SweepStagedPacks(Env* env, const std::string& staging_dir) {
  Result<std::vector<std::string>> names = env->ListDir(staging_dir);
  if (!names.ok()) return 0;
  const bool exact = env->LocksAreExact(staging_dir);
  uint64_t removed = 0;
  for (const std::string& n : *names) {
    if (!IsPackName(n)) continue;  // not a staged pack: not ours to touch
    const std::string path = staging_dir + "/" + n;
    // A writer locks its staged pack just after creating it: a minute's
    // age covers that moment, and where a free lock proves nothing, only
    // an hour's age says the writer is gone.
    Result<FileInfo> info = env->GetFileInfo(path);
    if (!info.ok() || NowSeconds() - info->modified < (exact ? 60 : 3600)) continue;
    Result<std::unique_ptr<FileLock>> lock = env->TryLockExistingFile(path);
    if (!lock.ok()) continue;  // a writer is at it
    if (env->RemoveFile(path).ok()) ++removed;
  }
  return removed;
}

std::unique_ptr<PackSet> NewBucketPackSet(Env* env, BlobStore* blobs, std::string staging_dir, IndexHandle* index,
                                          BucketPackOptions options) {
  return std::make_unique<BucketPackSet>(env, blobs, std::move(staging_dir), index, options);
}

}  // namespace chunkstore::internal
