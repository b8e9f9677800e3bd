// FastCDC v2020 cut-point search, bit-for-bit compatible with the reference
// crate, made resumable so the same cuts come out however input is split.
//
// The reference examines byte pairs (a, a+1), a = 2*index, from
// index = min/2. Pairs below avg/2 use the stricter mask (mask_s), later
// pairs the looser one (mask_l). A pair is only examined when both bytes lie
// inside the window min(max, rest of input), so with the input's end unknown
// a pair can be examined as soon as both of its bytes have arrived: the
// result never depends on bytes after the pair. That is what lets this
// implementation keep (index, hash) between calls instead of rescanning.
#include "chunkstore/chunker.h"

#include <cmath>
#include <string>

#include "gear_table.h"

namespace chunkstore {

namespace {

constexpr uint64_t kMasks[26] = {
    0,                      0,                      0,
    0,                      0,                      0x0000000001804110ULL,
    0x0000000001803110ULL,  0x0000000018035100ULL,  0x0000001800035300ULL,
    0x0000019000353000ULL,  0x0000590003530000ULL,  0x0000d90003530000ULL,
    0x0000d90103530000ULL,  0x0000d90303530000ULL,  0x0000d90313530000ULL,
    0x0000d90f03530000ULL,  0x0000d90303537000ULL,  0x0000d90703537000ULL,
    0x0000d90707537000ULL,  0x0000d91707537000ULL,  0x0000d91747537000ULL,
    0x0000d91767537000ULL,  0x0000d93767537000ULL,  0x0000d93777537000ULL,
    0x0000d93777577000ULL,  0x0000db3777577000ULL,
};

struct GearTables {
  uint64_t gear[256];
  uint64_t gear_ls[256];
  GearTables() {
    for (int i = 0; i < 256; ++i) {
      gear[i] = internal::kGear[i];
      gear_ls[i] = internal::kGear[i] << 1;
    }
  }
};

const GearTables& Tables() {
  static const GearTables tables;
  return tables;
}

std::string Range(uint64_t lo, uint64_t hi) {
  return std::to_string(lo) + " to " + std::to_string(hi);
}

}  // namespace

Status ChunkerParams::Validate() const {
  if (min_size < 64 || min_size > 1048576)
    return Status::InvalidArgument("chunk min size " + std::to_string(min_size) +
                                   " is out of range: it must be " + Range(64, 1048576));
  if (avg_size < 256 || avg_size > 4194304)
    return Status::InvalidArgument("chunk avg size " + std::to_string(avg_size) +
                                   " is out of range: it must be " + Range(256, 4194304));
  if (max_size < 1024 || max_size > 16777216)
    return Status::InvalidArgument("chunk max size " + std::to_string(max_size) +
                                   " is out of range: it must be " + Range(1024, 16777216));
  if (!(min_size < avg_size))
    return Status::InvalidArgument("chunk min size " + std::to_string(min_size) +
                                   " must be smaller than avg size " + std::to_string(avg_size));
  if (!(avg_size < max_size))
    return Status::InvalidArgument("chunk avg size " + std::to_string(avg_size) +
                                   " must be smaller than max size " + std::to_string(max_size));
  if (level < 0 || level > 3)
    return Status::InvalidArgument("normalization level " + std::to_string(level) +
                                   " is out of range: it must be 0 to 3");
  return Status::OK();
}

Chunker::Chunker(const ChunkerParams& params) : params_(params) {
  const int bits = static_cast<int>(std::lround(std::log2(static_cast<double>(params.avg_size))));
  mask_s_ = kMasks[bits + params.level];
  mask_l_ = kMasks[bits - params.level];
  mask_s_ls_ = mask_s_ << 1;
  mask_l_ls_ = mask_l_ << 1;
}

size_t Chunker::Next(const uint8_t* data, size_t length, bool eof) {
  if (length == 0) return 0;
  const size_t min = params_.min_size, avg = params_.avg_size, max = params_.max_size;
  if (length <= min) {
    if (!eof) return 0;
    Reset();
    return length;
  }
  // The window the reference would see: min(max, rest). Only known to be
  // final when it is capped by max or the input has ended.
  const size_t window = length > max ? max : length;
  const bool final_window = eof || length >= max;
  if (index_ == 0) {
    index_ = min / 2;
    hash_ = 0;
  }
  const uint64_t* gear = Tables().gear;
  const uint64_t* gear_ls = Tables().gear_ls;
  size_t index = index_;
  uint64_t hash = hash_;
  // Pairs below avg/2 use mask_s; from there on mask_l. The pair (a, a+1)
  // needs a + 1 < window, i.e. index < window / 2.
  const size_t stop = window / 2;
  const size_t small_stop = avg / 2 < stop ? avg / 2 : stop;
  // Unrolled: loop overhead, not the hash, is what limits a scalar gear
  // loop here (about one cycle per byte; see docs/performance.md).
#pragma GCC unroll 8
  for (; index < small_stop; ++index) {
    const size_t a = index * 2;
    hash = (hash << 2) + gear_ls[data[a]];
    if (__builtin_expect((hash & mask_s_ls_) == 0, 0)) {
      Reset();
      return a;
    }
    hash += gear[data[a + 1]];
    if (__builtin_expect((hash & mask_s_) == 0, 0)) {
      Reset();
      return a + 1;
    }
  }
#pragma GCC unroll 8
  for (; index < stop; ++index) {
    const size_t a = index * 2;
    hash = (hash << 2) + gear_ls[data[a]];
    if (__builtin_expect((hash & mask_l_ls_) == 0, 0)) {
      Reset();
      return a;
    }
    hash += gear[data[a + 1]];
    if (__builtin_expect((hash & mask_l_) == 0, 0)) {
      Reset();
      return a + 1;
    }
  }
  if (final_window) {
    Reset();
    return window;
  }
  index_ = index;
  hash_ = hash;
  return 0;
}

std::vector<ChunkBoundary> ChunkBuffer(const ChunkerParams& params, const uint8_t* data,
                                       size_t length) {
  std::vector<ChunkBoundary> out;
  Chunker chunker(params);
  size_t pos = 0;
  while (pos < length) {
    const size_t n = chunker.Next(data + pos, length - pos, true);
    out.push_back({pos, static_cast<uint32_t>(n)});
    pos += n;
  }
  return out;
}

}  // namespace chunkstore
