// SPDX-License-Identifier: Apache-2.0
// Sparse output (sparse_output.h).
#include "sparse_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cli {

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

SparseWriter::SparseWriter(int fd, bool sparse) : fd_(fd) {
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
  if (n == 0) return true;
  if (pending_ > 0) {
    if (::lseek(fd_, static_cast<off_t>(pending_), SEEK_CUR) < 0) return false;
    pending_ = 0;
  }
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
      if (!WritePlain(data + run, i - run)) return false;
      pending_ += len;
      run = i + len;
    }
    i += len;
  }
  if (!WritePlain(data + run, n - run)) return false;
  pos_ += n;
  return true;
}

bool SparseWriter::Finish() {
  if (pending_ == 0) return true;
  // The trailing hole: the length says where the file ends.
  for (;;) {
    if (::ftruncate(fd_, static_cast<off_t>(pos_)) == 0) break;
    if (errno != EINTR) return false;
  }
  if (::lseek(fd_, static_cast<off_t>(pos_), SEEK_SET) < 0) return false;
  pending_ = 0;
  return true;
}

}  // namespace cli
