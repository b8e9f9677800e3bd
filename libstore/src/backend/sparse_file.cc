// SPDX-License-Identifier: Apache-2.0
// Sparse output (sparse_file.h).
#include "backend/sparse_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace chunkstore::internal {

namespace {
constexpr size_t kReserveRun = 64 << 10;
}  // namespace

bool AllZero(const uint8_t* data, size_t n) {
  // Most blocks of real data have a non-zero byte near their start.
  size_t i = 0;
  for (; i < n && i < 16; ++i)
    if (data[i]) return false;
  uint64_t acc = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, data + i, 8);
    acc |= w;
  }
  for (; i < n; ++i) acc |= data[i];
  return acc == 0;
}

SparseWriter::SparseWriter(int fd, bool sparse, bool fresh) : fd_(fd), fresh_(fresh) {
  if (fresh) {
    sparse_ = sparse;
    return;
  }
  struct stat st;
  if (!sparse || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || (flags & O_APPEND)) return;
  const off_t at = ::lseek(fd, 0, SEEK_CUR);
  // Inside an existing file a skipped block would keep its old bytes.
  if (at < 0 || at != st.st_size) return;
  pos_ = static_cast<uint64_t>(at);
  if (st.st_blksize >= 512 && st.st_blksize <= (1 << 20)) block_ = static_cast<size_t>(st.st_blksize);
  sparse_ = true;
}

bool SparseWriter::WritePlain(const uint8_t* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd_, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool SparseWriter::WriteAt(const uint8_t* data, size_t n, uint64_t at) {
#ifdef __linux__
  // A run's blocks are reserved in one call before it is written, as cat
  // reserves a whole file written in full: ext4 then allocates extents at
  // once instead of page by page under delayed allocation. Only the run:
  // reserved blocks count as allocated whether written or not. A failure
  // only loses the speed-up; the writes report a real shortage.
  if (n >= kReserveRun) ::fallocate(fd_, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(at), static_cast<off_t>(n));
#endif
  // At absolute offsets: nothing else that shares the descriptor's offset
  // (stderr sent to the same file, say) can move where the bytes land.
  while (n > 0) {
    const ssize_t w = ::pwrite(fd_, data, n, static_cast<off_t>(at));
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += w;
    n -= static_cast<size_t>(w);
    at += static_cast<uint64_t>(w);
  }
  return true;
}

bool SparseWriter::Write(const uint8_t* data, size_t n) {
  if (!sparse_) return WritePlain(data, n);
  // Runs of data are written with one call; only whole blocks (aligned to
  // the file's offsets) that are all zeros are skipped.
  size_t run = 0;  // start of the data run not yet written
  size_t i = 0;
  while (i < n) {
    const uint64_t at = pos_ + i;
    const size_t to_boundary = block_ - static_cast<size_t>(at % block_);
    const size_t len = to_boundary < n - i ? to_boundary : n - i;
    if (len == block_ && AllZero(data + i, len)) {
      if (!WriteAt(data + run, i - run, pos_ + run)) return false;
      holes_ = true;
      run = i + len;
    }
    i += len;
  }
  if (!WriteAt(data + run, n - run, pos_ + run)) return false;
  pos_ += n;
  return true;
}

bool SparseWriter::Finish() {
  if (!sparse_) return true;
  // A trailing hole: the length says where the file ends.
  if (holes_) {
    for (;;) {
      if (::ftruncate(fd_, static_cast<off_t>(pos_)) == 0) break;
      if (errno != EINTR) return false;
    }
  }
  // pwrite left the offset where it was; whoever writes next to this
  // descriptor (the next command of `{ cat a; cat b; } > FILE`) goes on
  // after the object.
  return fresh_ || ::lseek(fd_, static_cast<off_t>(pos_), SEEK_SET) >= 0;
}

}  // namespace chunkstore::internal
