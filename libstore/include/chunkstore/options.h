// Options: how a store is opened (and, when it is created, shaped).
//
// A plain struct; every field has a default that suits most uses. Fields
// marked "creation" only matter when the store is created: an existing
// store keeps what was recorded in it then.
#pragma once

#include <cstddef>
#include <cstdint>

#include "chunkstore/chunker.h"

namespace chunkstore {

class Env;

struct Options {
  // Creation: FastCDC parameters (default 256 KiB / 1 MiB / 4 MiB, level 1).
  ChunkerParams chunking;
  // Creation: store chunks zlib-compressed when that saves >= 1/16.
  bool compression = true;
  // Create the store when the directory is missing or empty (default true).
  // A non-empty directory that is not a store is never touched.
  bool create_if_missing = true;
  // Fail with InvalidArgument if the store already exists (default false).
  bool error_if_exists = false;
  // fsync pack data and the index before a publish returns (default true).
  // With false, a crash may lose recent publishes, but never corrupts older
  // ones.
  bool sync = true;
  // Threads a publish or prepare uses (0 = one per core, the default).
  unsigned threads = 0;
  // Bytes of verified chunks kept for repeated reads (default 64 MiB).
  size_t cache_bytes = 64u << 20;
  // Prepare of a byte buffer larger than this copies it to a spill file so
  // the caller's buffer need not outlive the call (default 64 MiB).
  size_t spill_threshold = 64u << 20;
  // A pack file stops taking new chunks past this size (default 1 GiB).
  uint64_t pack_target_size = 1ull << 30;
  // How long to wait for another process holding the index (default 10 s).
  int busy_timeout_ms = 10000;
  // File-system access for packs, spill files and locks (default: POSIX).
  // Not owned; must outlive the store.
  Env* env = nullptr;
};

}  // namespace chunkstore
