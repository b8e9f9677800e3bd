// SPDX-License-Identifier: Apache-2.0
// Chunk compression: zstd or zlib, used only where it pays.
//
// A chunk is stored compressed only when that saves at least 1/16 of its
// size. Most large payloads (model weights, media, archives) do not
// compress, so before compressing a whole chunk we look at a few small
// samples spread over it: if their bytes are as evenly spread as random
// ones, or they do not shrink when compressed together, the chunk is stored
// raw at the cost of a histogram (or a few KiB of compression work) instead
// of a full pass.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "chunkstore/compression.h"
#include "chunkstore/status.h"

namespace chunkstore::internal {

// A stored chunk's codec, as pack records and change sets carry it. The
// values are the on-disk bytes; they match Compression::Codec.
enum class Codec : uint8_t { kRaw = 0, kZlib = 1, kZstd = 2 };
constexpr uint8_t kNewestCodec = 2;
static_assert(static_cast<uint8_t>(Codec::kZlib) == static_cast<uint8_t>(Compression::Codec::kZlib));
static_assert(static_cast<uint8_t>(Codec::kZstd) == static_cast<uint8_t>(Compression::Codec::kZstd));

// Whether a byte read from storage names a codec this version decodes.
inline bool KnownCodec(uint8_t c) { return c <= kNewestCodec; }

struct CompressOptions {
  Compression with;          // codec and level (kNone: never compress)
  bool sample_first = true;  // the cheap incompressibility check
};

// Returns the codec used, having filled *out with the compressed form, when
// that saves >= 1/16; kRaw (and *out unspecified) otherwise.
Codec TryCompress(const uint8_t* data, size_t n, std::vector<uint8_t>* out, const CompressOptions& opts);

// Decodes exactly raw_len bytes into out[0, raw_len). Corruption if the
// stream is malformed or does not produce exactly raw_len bytes;
// InvalidArgument for kRaw.
Status Decompress(Codec codec, const uint8_t* data, size_t n, size_t raw_len, uint8_t* out);
// The same into *out, resized to raw_len.
Status Decompress(Codec codec, const uint8_t* data, size_t n, size_t raw_len, std::vector<uint8_t>* out);

// The text a config file and the index record: "zlib" for zlib level 1
// (the form every version reads), Compression::ToString() otherwise.
// Compression::Parse reads both.
std::string CompressionText(const Compression& c);

// A short name for messages and stats: "raw", "zlib", "zstd".
const char* CodecName(Codec c);

}  // namespace chunkstore::internal
