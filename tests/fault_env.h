// FaultEnv: an Env wrapper for tests that fails the Nth mutating file
// operation (append, sync, truncate, create, rename, dir sync) with EIO or
// ENOSPC, and can make an append short (half written, then failing).
#pragma once

#include <atomic>
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
  }
  int count() const { return count_; }
  bool fired() const { return fired_; }

  // Counts one operation; returns the error when it is the one to fail.
  Status Tick(const std::string& what) {
    const int n = ++count_;
    if (fail_at_ != 0 && n == fail_at_) {
      fired_ = true;
      return no_space_ ? Status::IOError("cannot " + what + ": No space left on device (injected)")
                       : Status::IOError("cannot " + what + ": Input/output error (injected)");
    }
    return Status::OK();
  }
  bool short_write() const { return short_write_; }

  Result<std::unique_ptr<File>> OpenFile(const std::string& path, OpenMode mode) override;
  Result<std::unique_ptr<File>> CreateTempFile(const std::string& dir) override {
    CHUNKSTORE_RETURN_IF_ERROR(Tick("create a temporary file"));
    return EnvWrapper::CreateTempFile(dir);
  }
  Status RenameFile(const std::string& from, const std::string& to) override {
    CHUNKSTORE_RETURN_IF_ERROR(Tick("rename"));
    return EnvWrapper::RenameFile(from, to);
  }
  Status SyncDir(const std::string& path) override {
    CHUNKSTORE_RETURN_IF_ERROR(Tick("sync directory"));
    return EnvWrapper::SyncDir(path);
  }

 private:
  std::atomic<int> count_{0};
  int fail_at_ = 0;
  bool no_space_ = false;
  bool short_write_ = false;
  bool fired_ = false;
};

class FaultFile : public File {
 public:
  FaultFile(FaultEnv* env, std::unique_ptr<File> f) : env_(env), f_(std::move(f)) {}
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
    return f_->Sync();
  }
  void StartWriteBack() override { f_->StartWriteBack(); }
  Status Truncate(uint64_t size) override {
    CHUNKSTORE_RETURN_IF_ERROR(env_->Tick("truncate"));
    return f_->Truncate(size);
  }
  Result<uint64_t> Size() const override { return f_->Size(); }

 private:
  FaultEnv* env_;
  std::unique_ptr<File> f_;
};

inline Result<std::unique_ptr<File>> FaultEnv::OpenFile(const std::string& path, OpenMode mode) {
  if (mode == OpenMode::kCreateNew) CHUNKSTORE_RETURN_IF_ERROR(Tick("create " + path));
  Result<std::unique_ptr<File>> f = EnvWrapper::OpenFile(path, mode);
  if (!f.ok()) return f.status();
  return std::unique_ptr<File>(new FaultFile(this, std::move(*f)));
}

}  // namespace chunkstore::testing
