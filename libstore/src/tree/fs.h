// SPDX-License-Identifier: Apache-2.0
// What the tree publisher and restorer share about the file system:
// descriptors that close themselves, times in nanoseconds, errors that
// name their path, and the test of whether a directory lies inside another
// (the store's own, which neither may publish nor write into); and, in
// fs.cc, what a restore does to the file system outside its restorer.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <string>

#include "chunkstore/status.h"
#include "hash/digest.h"

namespace chunkstore::internal {

inline int64_t Ns(const struct timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; }

inline struct timespec FromNs(int64_t ns) {
  struct timespec t;
  t.tv_sec = static_cast<time_t>(ns / 1000000000);
  t.tv_nsec = static_cast<long>(ns % 1000000000);
  if (t.tv_nsec < 0) {  // before 1970: the nanoseconds count forward from a whole second
    t.tv_nsec += 1000000000;
    t.tv_sec -= 1;
  }
  return t;
}

// An error about path, with errno's text.
inline Status Errno(const std::string& what, const std::string& path) {
  const int err = errno;
  if (err == ENOSPC || err == EDQUOT) return Status::NoSpace(what + " " + path + ": the disk is full");
  return Status::IOError(what + " " + path + ": " + std::strerror(err));
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

// Whether the directory open at dir_fd is the directory (dev, ino) or lies
// below it, by walking ".." up to the root: no other name for it (a
// symlink, a bind mount of the same directory) gets past.
inline bool InsideDir(int dir_fd, dev_t dev, ino_t ino) {
  int d = ::dup(dir_fd);
  bool inside = false;
  for (int depth = 0; d >= 0 && depth < 4096; ++depth) {
    struct stat here, up;
    if (::fstat(d, &here) != 0) break;
    if (here.st_dev == dev && here.st_ino == ino) {
      inside = true;
      break;
    }
    const int parent = ::openat(d, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ::close(d);
    d = parent;
    if (d < 0 || ::fstat(d, &up) != 0 || (up.st_dev == here.st_dev && up.st_ino == here.st_ino)) break;
  }
  if (d >= 0) ::close(d);
  return inside;
}

// Removes name below dir_fd, a whole directory tree included (no deeper
// than kMaxTreeDepth levels below depth), following no symlink; a name
// already gone is no error. path names it in messages.
Status RemoveEntry(int dir_fd, const std::string& name, const std::string& path, int depth);

// What a caller saw under a name (by fstatat), for a later step that must
// find that same file there again, and the mode to give it if it does.
struct SeenFile {
  dev_t dev = 0;
  ino_t ino = 0;
  bool set_mode = false;
  mode_t mode = 0;
};

// True if the file name below dir_fd is a regular file holding exactly
// size bytes whose SHA-256 is id, opened without following a symlink or
// waiting on a FIFO. False, not an error, when it is something else or
// this process may not read it: the caller writes it anew. With seen, it
// must also still be that file (the same descriptor is hashed and, with
// seen->set_mode, given seen->mode, so no swap between the two can make
// another file take the mode); one whose mode is to be set must have no
// other name, as a hard link may reach a file outside the destination.
Result<bool> HasContent(int dir_fd, const std::string& name, const std::string& path, uint64_t size, const Digest& id,
                        const SeenFile* seen = nullptr);

// Sets the permission bits of name below dir_fd to mode, but only while it
// is still the regular file (dev, ino) the caller looked at: opened
// without following a symlink or waiting on a FIFO that replaced it since.
// False, and nothing changed, when it is not that file, has other names
// (a hard link may reach outside the destination) or cannot be opened to
// tell: the caller writes it anew. An error only when the mode
// of the right file cannot be set.
Result<bool> SetModeIfSame(int dir_fd, const std::string& name, const std::string& path, dev_t dev, ino_t ino,
                           mode_t mode);

}  // namespace chunkstore::internal
