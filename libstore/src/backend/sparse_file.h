// SPDX-License-Identifier: Apache-2.0
// Sparse output: runs of zero bytes written to a regular file as holes.
//
// Disk images and many datasets are mostly zeros; writing them back block
// for block allocates what the original never had. A SparseWriter writes
// data at its offsets (pwrite), skips every whole file-system block of
// zeros and sets the file's length at the end, so the restored file has the
// same bytes and about the blocks of its source. Output that is not a regular
// file written from its end (a pipe, a device, an append, the middle of an
// existing file) is written byte for byte.
#pragma once

#include <cstddef>
#include <cstdint>

namespace chunkstore::internal {

class SparseWriter {
 public:
  // fd: the output, at its current offset. sparse = false writes every
  // byte (as --no-sparse asks). fresh: fd is a regular file this process
  // has just created, empty and not shared, so nothing about it needs
  // asking (a tree restore writes thousands; three system calls each
  // would be a fair share of the work), and its offset is left alone.
  SparseWriter(int fd, bool sparse, bool fresh = false);

  // Whether holes are being made (a regular file, written from its end).
  bool sparse() const { return sparse_; }

  // Writes the next n bytes of the output; false with errno set on error.
  // Thread safety: one writer per descriptor, used by one thread.
  bool Write(const uint8_t* data, size_t n);
  // Sets the file's length over a trailing hole and leaves the file
  // offset after the last byte; false with errno set.
  bool Finish();

 private:
  bool WritePlain(const uint8_t* data, size_t n);
  bool WriteAt(const uint8_t* data, size_t n, uint64_t at);

  int fd_;
  bool sparse_ = false;
  size_t block_ = 4096;
  uint64_t pos_ = 0;     // offset in the file of the next byte
  bool holes_ = false;   // a block was skipped (the length may need setting)
  bool fresh_ = false;
};

// Whether every byte of data[0, n) is zero.
bool AllZero(const uint8_t* data, size_t n);

}  // namespace chunkstore::internal
