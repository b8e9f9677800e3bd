// SPDX-License-Identifier: Apache-2.0
// Reads of an open file of `chunkstore mount`: each answered with verified
// bytes only, from one reader per open file whose cursor follows reads in
// order (verifying ahead on other threads, and proving the object's id
// over a whole read) while reads elsewhere are taken at random. The
// kernel sends a sequential reader's reads out of order; this file keeps
// them on the cursor's path without waiting for the ones overtaken.
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "chunkstore/store.h"

namespace cli {

// How far ahead of the cursor a read still counts as sequential at least
// (mount_read.cc says why and how it grows).
constexpr uint64_t kMinSequentialWindow = 1 << 20;

// FileHandle::last_end before the first read.
constexpr uint64_t kNoRead = UINT64_MAX;

// Verified bytes the cursor passed on its way to a read that overtook the
// reads for them.
struct Stashed {
  uint64_t offset;
  std::vector<char> bytes;
  size_t handed = 0;  // bytes of it answered (each is asked for once)
};

// An open file: its reader, and the bytes kept for overtaken reads.
struct FileHandle {
  std::mutex mu;
  std::unique_ptr<chunkstore::Reader> reader;
  uint64_t window = kMinSequentialWindow;  // see SequentialWindow
  bool streaming = false;                  // the last read was answered in order
  bool remote = false;                     // the store is a bucket (each chunk fetched is a request)
  uint64_t last_end = kNoRead;             // where the last read answered ended
  bool from_start = false;                 // every read so far began where the one before ended, the first at 0
  uint64_t random_run = 0;                 // reads at random in a row, each where the one before ended
  std::vector<Stashed> stash;              // oldest first; at most a window of bytes
  size_t stashed = 0;                      // bytes in stash
};

// How far ahead of its cursor a file opened now takes a read as
// sequential, from the kernel's read-ahead for the mount (in KiB, in
// read_ahead_file; an administrator may change it at any time). Empty or
// unreadable: the least distance.
uint64_t SequentialWindow(const std::string& read_ahead_file);

// Answers a read of h (whose lock the caller holds) with verified bytes,
// or returns the error, having answered nothing.
chunkstore::Status AnswerRead(fuse_req_t req, FileHandle& h, uint64_t offset, size_t size);

}  // namespace cli
