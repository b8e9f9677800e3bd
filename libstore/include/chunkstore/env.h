// SPDX-License-Identifier: Apache-2.0
// Env: the file-system interface every store file goes through.
//
// Pack files, spill files, the lock file and the store directory are all
// reached through an Env, never through the OS directly, so that tests can
// swap in an in-memory file system or wrap the real one to inject faults
// (failed writes, failed fsyncs, lost unsynced data). The SQLite index uses
// SQLite's own I/O layer and is not covered by Env.
//
// Thread safety: Env implementations are safe for concurrent use. A File may
// be read (ReadAt) from many threads at once; Append, Sync and Truncate on
// one File must be serialized by the caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chunkstore/status.h"

namespace chunkstore {

class File {
 public:
  virtual ~File() = default;
  // Appends n bytes at the end of the file.
  virtual Status Append(const void* data, size_t n) = 0;
  // Reads up to n bytes at offset into buf; *got is set to the count read,
  // which is short only at end of file.
  virtual Status ReadAt(uint64_t offset, size_t n, void* buf, size_t* got) const = 0;
  // Makes every byte appended so far durable.
  virtual Status Sync() = 0;
  // Starts writing appended bytes to disk without waiting, so that a later
  // Sync has less left to do. A hint: the default does nothing.
  virtual void StartWriteBack() {}
  // Cuts the file to size bytes.
  virtual Status Truncate(uint64_t size) = 0;
  virtual Result<uint64_t> Size() const = 0;
};

// An exclusive lock held until destroyed. Locks exclude other processes and
// other lock holders in this process.
class FileLock {
 public:
  virtual ~FileLock() = default;
};

// What Env::GetFileInfo reports of a file.
struct FileInfo {
  uint64_t size = 0;
  int64_t modified = 0;  // unix seconds of the last change to its bytes
  bool regular = true;   // a regular file (not a FIFO, socket, device or directory)
};

enum class OpenMode {
  kRead,         // existing file, read only
  kAppend,       // existing file, read and append
  kCreateNew,    // create; fails with IOError if it exists (O_EXCL)
};

class Env {
 public:
  virtual ~Env() = default;

  // The process-wide POSIX environment. Never deleted.
  static Env* Posix();
  // A fresh, empty in-memory file system.
  static std::unique_ptr<Env> NewMemory();

  virtual Result<std::unique_ptr<File>> OpenFile(const std::string& path, OpenMode mode) = 0;
  // Creates an anonymous read/write file in dir, mode 0600, that disappears
  // when the returned File is destroyed (O_TMPFILE, or O_EXCL then unlink).
  virtual Result<std::unique_ptr<File>> CreateTempFile(const std::string& dir) = 0;
  virtual Status CreateDir(const std::string& path) = 0;  // mode 0700; OK if it exists
  // Removes an empty directory.
  virtual Status RemoveDir(const std::string& path) {
    return Status::Unsupported("this Env cannot remove directories (" + path + ")");
  }
  virtual bool FileExists(const std::string& path) = 0;
  virtual bool IsDirectory(const std::string& path) = 0;
  virtual Result<std::vector<std::string>> ListDir(const std::string& path) = 0;
  // Size, modification time and kind of a file, without opening it;
  // NotFound if there is none. The default says Unsupported.
  virtual Result<FileInfo> GetFileInfo(const std::string& path) {
    return Status::Unsupported("this Env cannot tell a file's size and time without opening " + path);
  }
  virtual Status RemoveFile(const std::string& path) = 0;
  virtual Status RenameFile(const std::string& from, const std::string& to) = 0;
  // Makes the directory's entries (new, renamed, removed files) durable.
  virtual Status SyncDir(const std::string& path) = 0;
  // Non-blocking: Busy if another holder has it. Creates the file if it
  // does not exist (lock files).
  virtual Result<std::unique_ptr<FileLock>> TryLockFile(const std::string& path) = 0;
  // As TryLockFile, but NotFound instead of creating a missing file (for
  // locking data files that someone else may have deleted).
  virtual Result<std::unique_ptr<FileLock>> TryLockExistingFile(const std::string& path) {
    if (!FileExists(path)) return Status::NotFound("no such file " + path);
    return TryLockFile(path);
  }
  // Blocking until the lock is free.
  virtual Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) = 0;
  // Whether the locks above, on files in dir, exclude every other holder
  // in this and other processes, so that a lock taken proves nobody holds
  // it. False (the default) where that is not known: network and FUSE
  // file systems emulate or skip flock.
  virtual bool LocksAreExact(const std::string& dir) {
    (void)dir;
    return false;
  }
  // Bytes this process may still write on the file system holding path;
  // UINT64_MAX where that is not known. Only a guide: space can go to
  // others between the question and the write.
  virtual uint64_t FreeSpace(const std::string& path) {
    (void)path;
    return UINT64_MAX;
  }
};

// An Env that forwards every call to another; subclass it to override a few
// calls (fault injection, counting) and keep the rest.
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env* target) : target_(target) {}
  Env* target() const { return target_; }

  Result<std::unique_ptr<File>> OpenFile(const std::string& path, OpenMode mode) override {
    return target_->OpenFile(path, mode);
  }
  Result<std::unique_ptr<File>> CreateTempFile(const std::string& dir) override {
    return target_->CreateTempFile(dir);
  }
  Status CreateDir(const std::string& path) override { return target_->CreateDir(path); }
  Status RemoveDir(const std::string& path) override { return target_->RemoveDir(path); }
  bool FileExists(const std::string& path) override { return target_->FileExists(path); }
  bool IsDirectory(const std::string& path) override { return target_->IsDirectory(path); }
  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    return target_->ListDir(path);
  }
  Result<FileInfo> GetFileInfo(const std::string& path) override { return target_->GetFileInfo(path); }
  Status RemoveFile(const std::string& path) override { return target_->RemoveFile(path); }
  Status RenameFile(const std::string& from, const std::string& to) override {
    return target_->RenameFile(from, to);
  }
  Status SyncDir(const std::string& path) override { return target_->SyncDir(path); }
  Result<std::unique_ptr<FileLock>> TryLockFile(const std::string& path) override {
    return target_->TryLockFile(path);
  }
  Result<std::unique_ptr<FileLock>> TryLockExistingFile(const std::string& path) override {
    return target_->TryLockExistingFile(path);
  }
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    return target_->LockFile(path);
  }
  bool LocksAreExact(const std::string& dir) override { return target_->LocksAreExact(dir); }
  uint64_t FreeSpace(const std::string& path) override { return target_->FreeSpace(path); }

 private:
  Env* target_;
};

}  // namespace chunkstore
