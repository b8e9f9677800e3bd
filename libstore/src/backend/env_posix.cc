// SPDX-License-Identifier: Apache-2.0
// The POSIX Env: plain file descriptors, pread/write, fsync, flock.
//
// Locks use flock(2), which belongs to the open file description, so two
// opens of the same lock file in one process exclude each other just as two
// processes do (fcntl locks would not).
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "chunkstore/env.h"

namespace chunkstore {

namespace {

Status ErrnoStatus(const std::string& what, const std::string& path, int err) {
  // A full disk is its own code: callers tell it apart (a read can go on
  // without the space a write needs), and people are told it in words.
  if (err == ENOSPC || err == EDQUOT)
    return Status::NoSpace(what + " " + path + ": the disk is full (" + std::strerror(err) + ")");
  return Status::IOError(what + " " + path + ": " + std::strerror(err));
}

class PosixFile final : public File {
 public:
  PosixFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~PosixFile() override { ::close(fd_); }

  Status Append(const void* data, size_t n) override {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("cannot write", path_, errno);
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
    return Status::OK();
  }

  Status ReadAt(uint64_t offset, size_t n, void* buf, size_t* got) const override {
    char* p = static_cast<char*>(buf);
    size_t done = 0;
    while (done < n) {
      const ssize_t r = ::pread(fd_, p + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus("cannot read", path_, errno);
      }
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    *got = done;
    return Status::OK();
  }

  Status Sync() override {
    if (::fdatasync(fd_) != 0) return ErrnoStatus("cannot sync", path_, errno);
    return Status::OK();
  }

  void StartWriteBack() override {
    // Asynchronous: queues the dirty pages for write-back and returns.
    ::sync_file_range(fd_, 0, 0, SYNC_FILE_RANGE_WRITE);
  }

  Status Truncate(uint64_t size) override {
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0)
      return ErrnoStatus("cannot truncate", path_, errno);
    return Status::OK();
  }

  Result<uint64_t> Size() const override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return ErrnoStatus("cannot stat", path_, errno);
    return static_cast<uint64_t>(st.st_size);
  }

 private:
  int fd_;
  std::string path_;
};

class PosixLock final : public FileLock {
 public:
  explicit PosixLock(int fd) : fd_(fd) {}
  ~PosixLock() override { ::close(fd_); }  // closing releases the flock

 private:
  int fd_;
};

class PosixEnv final : public Env {
 public:
  Result<std::unique_ptr<File>> OpenFile(const std::string& path, OpenMode mode) override {
    int flags = O_CLOEXEC;
    switch (mode) {
      case OpenMode::kRead: flags |= O_RDONLY; break;
      case OpenMode::kAppend: flags |= O_RDWR | O_APPEND; break;
      case OpenMode::kCreateNew: flags |= O_RDWR | O_APPEND | O_CREAT | O_EXCL; break;
    }
    // O_NONBLOCK for the open alone: a FIFO put where a pack should be
    // must be refused, not waited on for a writer that never comes.
    const int fd = ::open(path.c_str(), flags | O_NONBLOCK, 0600);
    if (fd < 0) {
      if (errno == ENOENT) return Status::NotFound("no such file " + path);
      return ErrnoStatus("cannot open", path, errno);
    }
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      return ErrnoStatus("cannot stat", path, err);
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      return Status::IOError(path + " is not a regular file");
    }
    if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
      const int err = errno;
      ::close(fd);
      return ErrnoStatus("cannot open", path, err);
    }
    return std::unique_ptr<File>(new PosixFile(fd, path));
  }

  Result<std::unique_ptr<File>> CreateTempFile(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) return std::unique_ptr<File>(new PosixFile(fd, dir + "/(temporary file)"));
    // File systems without O_TMPFILE: an exclusive random name, unlinked at once.
    std::string templ = dir + "/spill-XXXXXX";
    fd = ::mkostemp(templ.data(), O_CLOEXEC);
    if (fd < 0) return ErrnoStatus("cannot create a temporary file in", dir, errno);
    ::unlink(templ.c_str());
    return std::unique_ptr<File>(new PosixFile(fd, templ));
  }

  Status CreateDir(const std::string& path) override {
    if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
      return ErrnoStatus("cannot create directory", path, errno);
    if (!IsDirectory(path)) return Status::IOError(path + " exists and is not a directory");
    return Status::OK();
  }

  bool FileExists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }

  bool IsDirectory(const std::string& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }

  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    DIR* d = ::opendir(path.c_str());
    if (d == nullptr) return ErrnoStatus("cannot list", path, errno);
    std::vector<std::string> names;
    while (struct dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(d);
    return names;
  }

  Result<FileInfo> GetFileInfo(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) return Status::NotFound("no such file " + path);
      return ErrnoStatus("cannot stat", path, errno);
    }
    FileInfo info;
    info.size = static_cast<uint64_t>(st.st_size);
    info.modified = st.st_mtim.tv_sec;
    info.regular = S_ISREG(st.st_mode);
    return info;
  }

  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) {
      if (errno == ENOENT) return Status::NotFound("no such file " + path);
      return ErrnoStatus("cannot remove", path, errno);
    }
    return Status::OK();
  }

  Status RemoveDir(const std::string& path) override {
    if (::rmdir(path.c_str()) != 0) return ErrnoStatus("cannot remove directory", path, errno);
    return Status::OK();
  }

  Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0)
      return ErrnoStatus("cannot rename " + from + " to", to, errno);
    return Status::OK();
  }

  Status SyncDir(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus("cannot open directory", path, errno);
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) return ErrnoStatus("cannot sync directory", path, err);
    return Status::OK();
  }

  Result<std::unique_ptr<FileLock>> TryLockFile(const std::string& path) override {
    return Lock(path, LOCK_EX | LOCK_NB, true);
  }
  Result<std::unique_ptr<FileLock>> TryLockExistingFile(const std::string& path) override {
    return Lock(path, LOCK_EX | LOCK_NB, false);
  }
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    return Lock(path, LOCK_EX, true);
  }
  uint64_t FreeSpace(const std::string& path) override {
    struct statvfs fs;
    if (::statvfs(path.c_str(), &fs) != 0) return UINT64_MAX;
    // Root may also write the blocks the file system keeps in reserve.
    return static_cast<uint64_t>(::geteuid() == 0 ? fs.f_bfree : fs.f_bavail) * fs.f_frsize;
  }
  bool LocksAreExact(const std::string& dir) override {
    struct statfs fs;
    if (::statfs(dir.c_str(), &fs) != 0) return false;
    // flock is emulated (NFS: POSIX locks, per process, or none with
    // local_lock), passed to a daemon (FUSE, 9p) or cluster-wide with its
    // own rules on these; locks mean "nobody holds it" only elsewhere.
    switch (static_cast<unsigned long>(fs.f_type)) {
      case 0x6969:      // NFS
      case 0x517b:      // SMB
      case 0xff534d42:  // CIFS
      case 0xfe534d42:  // SMB2
      case 0x65735546:  // FUSE
      case 0x00c36400:  // Ceph
      case 0x01021997:  // 9p
      case 0x5346414f:  // AFS
      case 0x6b414653:  // kAFS
      case 0x01161970:  // GFS2
      case 0x7461636f:  // OCFS2
      case 0x0bd00bd0:  // Lustre
        return false;
      default:
        return true;
    }
  }

 private:
  Result<std::unique_ptr<FileLock>> Lock(const std::string& path, int op, bool create) {
    for (int attempt = 0;; ++attempt) {
      const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
      if (fd < 0) {
        if (errno == ENOENT) return Status::NotFound("no such file " + path);
        return ErrnoStatus("cannot open lock file", path, errno);
      }
      int err = 0;
      while (::flock(fd, op) != 0) {
        if (errno == EINTR) continue;
        err = errno;
        break;
      }
      if (err != 0) {
        ::close(fd);
        if (err == EWOULDBLOCK) return Status::Busy(path + " is locked by another writer");
        return ErrnoStatus("cannot lock", path, err);
      }
      // The file locked must still be the one at path: whoever held the
      // lock before may have removed (or replaced) the file while this
      // waited, and a lock on a file nobody can find protects nothing.
      struct stat held, named;
      if (::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
          held.st_dev == named.st_dev)
        return std::unique_ptr<FileLock>(new PosixLock(fd));
      ::close(fd);
      if (!create || attempt >= 100) return Status::NotFound(path + " was removed while it was being locked");
    }
  }
};

}  // namespace

Env* Env::Posix() {
  static PosixEnv* env = new PosixEnv;  // never destroyed: outlives every Store
  return env;
}

}  // namespace chunkstore
