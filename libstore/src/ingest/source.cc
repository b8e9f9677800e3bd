// SPDX-License-Identifier: Apache-2.0
// Source implementations. Files are read with plain read(2) in large pieces
// and advised sequential, so the page cache streams ahead of the chunker.
#include "ingest/source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace chunkstore::internal {

Result<size_t> BytesSource::Read(uint8_t* buf, size_t n) {
  const size_t count = std::min(n, n_ - pos_);
  if (count != 0) std::memcpy(buf, data_ + pos_, count);
  pos_ += count;
  return count;
}

namespace {

FileStamp StampOf(const struct stat& st) {
  FileStamp s;
  s.dev = st.st_dev;
  s.ino = st.st_ino;
  s.size = static_cast<uint64_t>(st.st_size);
  s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  s.ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  return s;
}

}  // namespace

Result<std::unique_ptr<FileSource>> FileSource::Open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer only to be
  // refused below (a batch reading files ahead could not even be dropped
  // meanwhile).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return Status::NotFound("no such file: " + path);
    return Status::IOError("cannot open " + path + ": " + std::strerror(err));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::IOError("cannot stat " + path + ": " + std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Status::InvalidArgument(path + " is a directory, not a file");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::InvalidArgument(path + " is not a regular file (publish it through stdin)");
  }
  // Back to blocking reads: O_NONBLOCK was for the open alone, and some
  // file systems (FUSE) pass it on to reads.
  ::fcntl(fd, F_SETFL, 0);
  // Only worth a system call where there is something to stream ahead.
  if (st.st_size > (1 << 20)) ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::unique_ptr<FileSource>(new FileSource(fd, path, StampOf(st)));
}

FileSource::~FileSource() { ::close(fd_); }

Result<size_t> FileSource::Read(uint8_t* buf, size_t n) {
  for (;;) {
    const ssize_t r = ::read(fd_, buf, n);
    if (r >= 0) return static_cast<size_t>(r);
    if (errno != EINTR) return Status::IOError("cannot read " + path_ + ": " + std::strerror(errno));
  }
}

Result<size_t> FileSource::ReadAt(uint64_t offset, uint8_t* buf, size_t n) const {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd_, buf + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return Status::IOError("cannot read " + path_ + ": " + std::strerror(errno));
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

bool FileSource::Rewind(uint64_t offset) {
  return ::lseek(fd_, static_cast<off_t>(offset), SEEK_SET) == static_cast<off_t>(offset);
}

Result<FileStamp> FileSource::Restat() const {
  struct stat st;
  if (::fstat(fd_, &st) != 0) return Status::IOError("cannot stat " + path_ + ": " + std::strerror(errno));
  return StampOf(st);
}

Result<size_t> StreamSource::Read(uint8_t* buf, size_t n) {
  in_.read(reinterpret_cast<char*>(buf), static_cast<std::streamsize>(n));
  const auto got = static_cast<size_t>(in_.gcount());
  if (got == 0 && in_.bad()) return Status::IOError("cannot read the input stream");
  return got;
}

Result<size_t> PullSource::Read(uint8_t* buf, size_t n) {
  if (ended_) return size_t{0};
  Result<size_t> r = pull_(buf, n);
  if (!r.ok()) return r.status();
  if (*r > n) return Status::InvalidArgument("pull callback returned more bytes than asked for");
  if (*r == 0) ended_ = true;
  return r;
}

}  // namespace chunkstore::internal
