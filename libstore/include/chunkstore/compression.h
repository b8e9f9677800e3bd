// SPDX-License-Identifier: Apache-2.0
// Compression: how a store compresses the chunks it writes.
//
// A store picks its codec and level when it is created and keeps them. A
// chunk is stored compressed only when that saves at least 1/16 of it, so
// incompressible data costs a cheap sample check, not a compression pass.
// Reading never depends on this setting: every chunk records its own codec,
// and chunks written with zlib by any version stay readable.
//
// Thread safety: a plain value.
#pragma once

#include <cstdint>
#include <string>

#include "chunkstore/status.h"

namespace chunkstore {

struct Compression {
  enum class Codec : uint8_t {
    kNone = 0,  // store every chunk as it is
    kZlib = 1,  // zlib format (RFC 1950), written with libdeflate
    kZstd = 2,  // Zstandard frames (RFC 8878)
  };
  // The default: zstd at level 3 (see docs/design.md for the measurements
  // behind it).
  Codec codec = Codec::kZstd;
  // zlib: 1 (fastest) to 12 (libdeflate's scale; 1-9 as zlib's); zstd: 1 to
  // 19. Ignored for kNone.
  int level = 3;

  static Compression None() { return {Codec::kNone, 0}; }
  static Compression Zlib(int level = 1) { return {Codec::kZlib, level}; }
  static Compression Zstd(int level = 3) { return {Codec::kZstd, level}; }

  bool enabled() const { return codec != Codec::kNone; }
  // OK, or InvalidArgument naming the level range.
  Status Validate() const;
  // "none", "zlib", "zlib:LEVEL", "zstd" or "zstd:LEVEL" (a codec alone
  // takes its default level: zlib 1, zstd 3). InvalidArgument otherwise.
  static Result<Compression> Parse(const std::string& text);
  // The form Parse reads: "none", "zlib:1", "zstd:3".
  std::string ToString() const;

  bool operator==(const Compression& o) const {
    return codec == o.codec && (codec == Codec::kNone || level == o.level);
  }
  bool operator!=(const Compression& o) const { return !(*this == o); }
};

}  // namespace chunkstore
