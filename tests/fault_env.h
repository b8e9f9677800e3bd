// FaultEnv: an Env wrapper for tests that fails the Nth mutating file
// operation (append, sync, truncate, open, rename, dir sync) with EIO or
// ENOSPC, can make an append short (half written, then failing), can
// "crash" (fail every operation from the Nth on), and can simulate power
// loss by dropping every byte not yet fsynced and every file created since
// its directory was last fsynced.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "chunkstore/env.h"

namespace chunkstore::testing {

class FaultEnv : public EnvWrapper {
 public:
  explicit FaultEnv(Env* target) : EnvWrapper(target) {}

  // Fails the n-th mutating operation from now on (1-based); 0 disarms.
  void FailAt(int n, bool no_space = false, bool short_write = false) {
    count_ = 0;
    fail_at_ = n;
    no_space_ = no_space;
    short_write_ = short_write;
    crash_ = false;
  }
  // Fails the n-th operation and every one after it, as a crashed process
  // would stop doing anything.
  void CrashAt(int n) {
    FailAt(n);
    crash_ = true;
  }

  // Power loss: cuts every file written through this Env back to the
  // length it had at its last successful Sync, and removes files created
  // since their directory's last SyncDir.
  void DropUnsyncedData() {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [path, synced] : synced_) {
      auto f = target()->OpenFile(path, OpenMode::kAppend);
      if (f.ok()) (*f)->Truncate(synced);
    }
    for (const auto& path : unsynced_entries_) target()->RemoveFile(path);
    unsynced_entries_.clear();
    synced_.clear();
  }

  // Bookkeeping for DropUnsyncedData (called by FaultFile).
  void Track(const std::string& path, uint64_t synced_size) {
    std::lock_guard<std::mutex> l(mu_);
    synced_[path] = synced_size;
  }
  void TrackIfNew(const std::string& path, uint64_t size) {
    std::lock_guard<std::mutex> l(mu_);
    synced_.emplace(path, size);
  }
  int count() const { return count_; }
  bool fired() const { return fired_; }

  // Counts one operation; returns the error when it is the one to fail.
  Status Tick(const std::string& what) {
    const int n = ++count_;
    if (fail_at_ != 0 && (n == fail_at_ || (crash_ && n > fail_at_))) {
      fired_ = true;
      return no_space_ ? Status::IOError("cannot " + what + ": No space left on device (injected)")
                       : Status::IOError("cannot " + what + ": Input/output error (injected)");
    }
    return Status::OK();
  }
  bool short_write() const { return short_write_; }

  Result<std::unique_ptr<File>> OpenFile(const std::string& path, OpenMode mode) override;
  Result<std::unique_ptr<File>> CreateTempFile(const std::string& dir) override;
  Status RenameFile(const std::string& from, const std::string& to) override {
    CHUNKSTORE_RETURN_IF_ERROR(Tick("rename"));
    return EnvWrapper::RenameFile(from, to);
  }
  Status SyncDir(const std::string& path) override {
    CHUNKSTORE_RETURN_IF_ERROR(Tick("sync directory"));
    CHUNKSTORE_RETURN_IF_ERROR(EnvWrapper::SyncDir(path));
    std::lock_guard<std::mutex> l(mu_);
    for (auto it = unsynced_entries_.begin(); it != unsynced_entries_.end();)
      it = it->rfind(path + "/", 0) == 0 ? unsynced_entries_.erase(it) : std::next(it);
    return Status::OK();
  }

 private:
  friend class FaultFile;
  std::atomic<int> count_{0};
  int fail_at_ = 0;
  bool no_space_ = false;
  bool short_write_ = false;
  bool crash_ = false;
  bool fired_ = false;
  std::mutex mu_;
  std::map<std::string, uint64_t> synced_;   // path -> length at its last Sync
  std::set<std::string> unsynced_entries_;   // created since their directory's last SyncDir
};

class FaultFile : public File {
 public:
  FaultFile(FaultEnv* env, std::unique_ptr<File> f, std::string path)
      : env_(env), f_(std::move(f)), path_(std::move(path)) {
    auto size = f_->Size();
    if (!path_.empty() && size.ok()) env_->TrackIfNew(path_, *size);  // what was there is durable
  }
  Status Append(const void* data, size_t n) override {
    Status s = env_->Tick("write");
    if (!s.ok()) {
      if (env_->short_write() && n > 1) f_->Append(data, n / 2);  // torn write, then the error
      return s;
    }
    return f_->Append(data, n);
  }
  Status ReadAt(uint64_t off, size_t n, void* buf, size_t* got) const override {
    return f_->ReadAt(off, n, buf, got);
  }
  Status Sync() override {
    CHUNKSTORE_RETURN_IF_ERROR(env_->Tick("sync"));
    CHUNKSTORE_RETURN_IF_ERROR(f_->Sync());
    auto size = f_->Size();
    if (!path_.empty() && size.ok()) env_->Track(path_, *size);
    return Status::OK();
  }
  void StartWriteBack() override { f_->StartWriteBack(); }
  Status Truncate(uint64_t size) override {
    CHUNKSTORE_RETURN_IF_ERROR(env_->Tick("truncate"));
    return f_->Truncate(size);  // a cut is not durable until the next Sync
  }
  Result<uint64_t> Size() const override { return f_->Size(); }

 private:
  FaultEnv* env_;
  std::unique_ptr<File> f_;
  std::string path_;  // "" for anonymous temporary files
};

inline Result<std::unique_ptr<File>> FaultEnv::CreateTempFile(const std::string& dir) {
  CHUNKSTORE_RETURN_IF_ERROR(Tick("create a temporary file"));
  Result<std::unique_ptr<File>> f = EnvWrapper::CreateTempFile(dir);
  if (!f.ok()) return f.status();
  return std::unique_ptr<File>(new FaultFile(this, std::move(*f), ""));
}

inline Result<std::unique_ptr<File>> FaultEnv::OpenFile(const std::string& path, OpenMode mode) {
  CHUNKSTORE_RETURN_IF_ERROR(Tick(mode == OpenMode::kCreateNew ? "create " + path : "open " + path));
  Result<std::unique_ptr<File>> f = EnvWrapper::OpenFile(path, mode);
  if (!f.ok()) return f.status();
  if (mode == OpenMode::kCreateNew) {
    std::lock_guard<std::mutex> l(mu_);
    unsynced_entries_.insert(path);
  }
  return std::unique_ptr<File>(new FaultFile(this, std::move(*f), path));
}

}  // namespace chunkstore::testing
