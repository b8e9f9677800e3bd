// SPDX-License-Identifier: Apache-2.0
// DiskChunkCache: chunks a bucket (or http://) store fetched over the
// network, kept as files on local disk so that the next command, the next
// process or another store reading the same content finds them without a
// request.
//
// A chunk's file is named by its id and holds its raw bytes; nothing in
// it is trusted. A caller verifies every chunk it gets from here against
// its SHA-256, exactly as it would one from a pack, and drops one that
// fails. Files are written under a temporary name and renamed, so a
// reader sees a whole file or none. The cache holds at most max_bytes:
// reads touch a file's mtime, and when a write takes the total past the
// limit the least recently used files go until it is at 90 %. Several
// processes may share one directory; each counts what it knows and the
// directory may be deleted at any time. Failures to read or write the
// cache are never errors: the chunk comes from the network instead.
//
// Thread safety: everything is safe for concurrent use.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "base/buffer.h"
#include "hash/digest.h"

namespace chunkstore::internal {

class DiskChunkCache {
 public:
  DiskChunkCache(std::string dir, uint64_t max_bytes);

  // Reads the cached bytes of chunk id into *out (unverified: the caller
  // checks them). False when there are none, or they cannot be read, or
  // they are not raw_len bytes long.
  bool Get(const Digest& id, size_t raw_len, Buffer* out);
  // Keeps n verified bytes of chunk id, then evicts if over the limit.
  void Put(const Digest& id, const uint8_t* data, size_t n);
  // Removes chunk id's file (it failed its check).
  void Drop(const Digest& id);

  const std::string& dir() const { return dir_; }

 private:
  std::string PathOf(const Digest& id) const;
  void EvictLocked();

  const std::string dir_;
  const uint64_t max_bytes_;
  std::mutex mu_;
  bool counted_ = false;  // bytes_ holds the directory's total (from a scan)
  uint64_t bytes_ = 0;
  uint64_t rescan_above_ = 0;  // bytes_ past which Put scans and evicts again
};

}  // namespace chunkstore::internal
