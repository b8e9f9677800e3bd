// SPDX-License-Identifier: Apache-2.0
// Chunk compression: zlib, used only where it pays.
//
// A chunk is stored compressed only when that saves at least 1/16 of its
// size. Most large payloads (model weights, media, archives) do not
// compress, so before compressing a whole chunk we look at a few small
// samples spread over it: if their bytes are as evenly spread as random
// ones, or they do not shrink when compressed together, the chunk is stored
// raw at the cost of a histogram (or a few KiB of deflate work) instead of
// a full pass.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "chunkstore/status.h"

namespace chunkstore::internal {

enum class Codec : uint8_t { kRaw = 0, kZlib = 1 };

struct CompressOptions {
  int level = 1;            // zlib level: fastest; the sample check decides
  bool sample_first = true;  // the cheap incompressibility check
};

// Returns true and fills *out when the compressed form saves >= 1/16.
bool TryCompress(const uint8_t* data, size_t n, std::vector<uint8_t>* out,
                 const CompressOptions& opts = {});

// Inflates exactly raw_len bytes into out (resized). Corruption if the
// stream is malformed or does not produce exactly raw_len bytes.
Status Decompress(const uint8_t* data, size_t n, size_t raw_len, std::vector<uint8_t>* out);
// The same into out[0, raw_len).
Status Decompress(const uint8_t* data, size_t n, size_t raw_len, uint8_t* out);

}  // namespace chunkstore::internal
