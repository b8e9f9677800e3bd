// SPDX-License-Identifier: Apache-2.0
// FastCDC (2020 variant) content-defined chunking.
//
// Cut points are identical to the reference `fastcdc` crate's v2020 module:
// its gear table, its mask table, normalized chunking, hashing from `min`
// with two bytes per step. The chunker is incremental: it can be fed the
// input in pieces of any size and finds the same cut points as when it sees
// the input whole.
//
// Thread safety: a Chunker is a small mutable state machine; use one per
// thread. ChunkerParams is a plain value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "chunkstore/status.h"

namespace chunkstore {

struct ChunkerParams {
  // Smallest chunk, except the last one of an input (64 B to 1 MiB).
  uint32_t min_size = 256 * 1024;
  // Target average chunk size (256 B to 4 MiB).
  uint32_t avg_size = 1024 * 1024;
  // Largest chunk (1 KiB to 16 MiB). Must satisfy min < avg < max.
  uint32_t max_size = 4 * 1024 * 1024;
  // Normalization level, 0 to 3: higher keeps sizes closer to avg.
  int level = 1;

  // OK, or InvalidArgument saying which parameter is wrong and why.
  Status Validate() const;
};

// Finds chunk boundaries one chunk at a time.
//
// Usage: keep a buffer whose first byte is the first byte of the current
// chunk. Call Next(buffer, length, eof). It returns the chunk's length once
// the boundary is known, or 0 when it needs more bytes (never 0 when eof is
// true and length > 0). After a non-zero answer, drop that many bytes from
// the front of the buffer and call again. Between calls that return 0, the
// buffer may only grow at its end; the chunker remembers how far it scanned,
// so feeding one byte at a time costs no rescanning.
class Chunker {
 public:
  // params must be valid (see ChunkerParams::Validate).
  explicit Chunker(const ChunkerParams& params);

  size_t Next(const uint8_t* data, size_t length, bool eof);

  // Forget any partial scan (start over at a new chunk).
  void Reset() {
    index_ = 0;
    hash_ = 0;
  }

  const ChunkerParams& params() const { return params_; }

 private:
  ChunkerParams params_;
  uint64_t mask_s_, mask_l_, mask_s_ls_, mask_l_ls_;
  size_t index_ = 0;  // next pair index to examine; 0 = not started
  uint64_t hash_ = 0;
};

struct ChunkBoundary {
  uint64_t offset;
  uint32_t length;
};

// Cuts a whole buffer. params must be valid.
std::vector<ChunkBoundary> ChunkBuffer(const ChunkerParams& params, const uint8_t* data,
                                       size_t length);

}  // namespace chunkstore
