// SPDX-License-Identifier: Apache-2.0
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
//
// Speed: each pair's hash is a shift and two adds on the previous one, so a
// single scan is bound by that chain's latency, not by the core's width.
// Every step shifts the hash two bits, so after 32 pairs nothing of the
// earlier state is left: the hash before any pair can be rebuilt from the
// 32 pairs before it. Long ranges are therefore scanned as two interleaved
// streams (the first and second half of a block), the second started from
// its rebuilt hash; the core runs both chains at once. When either stream
// sees a cut, the scan restarts as one stream where the first stream
// stopped, so the earliest cut is the one returned.
#include "chunkstore/chunker.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "format/gear_table.h"

namespace chunkstore {

namespace {

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

constexpr size_t kNoCut = SIZE_MAX;
// Pairs each of the two streams scans per block. Rebuilding the second
// stream's hash costs 32 pairs a block, and a cut makes the scan redo at
// most one stream's share as one stream: both small against 8 KiB.
constexpr size_t kPairsPerStream = 4096;

// The hash before pair `index` of a scan that started at pair `start` with
// hash 0 (only the last 32 pairs still count).
uint64_t HashBefore(const GearTables& t, const uint8_t* data, size_t start, size_t index) {
  uint64_t hash = 0;
  for (size_t i = index - start > 32 ? index - 32 : start; i < index; ++i)
    hash = (hash << 2) + t.gear_ls[data[2 * i]] + t.gear[data[2 * i + 1]];
  return hash;
}

// Scans pairs [index, end) as one stream. Returns the byte offset of the
// first cut, or kNoCut with index = end and hash its state there.
size_t ScanOneStream(const GearTables& t, const uint8_t* data, size_t& index, uint64_t& hash,
                     size_t end, uint64_t mask, uint64_t mask_ls) {
  size_t i = index;
  uint64_t h = hash;
  // Runs on ranges shorter than a block, on a block's remainder, and to
  // find the exact cut once a block has seen one.
#pragma GCC unroll 8
  for (; i < end; ++i) {
    const size_t a = i * 2;
    h = (h << 2) + t.gear_ls[data[a]];
    if (__builtin_expect((h & mask_ls) == 0, 0)) return a;
    h += t.gear[data[a + 1]];
    if (__builtin_expect((h & mask) == 0, 0)) return a + 1;
  }
  index = i;
  hash = h;
  return kNoCut;
}

// Same contract as ScanOneStream; `start` is the pair the chunk's scan
// began at with hash 0.
size_t Scan(const GearTables& t, const uint8_t* data, size_t start, size_t& index, uint64_t& hash,
            size_t end, uint64_t mask, uint64_t mask_ls) {
  while (end - index >= 2 * kPairsPerStream) {
    const size_t second = index + kPairsPerStream;
    uint64_t ha = hash;
    uint64_t hb = HashBefore(t, data, start, second);
    const uint8_t* pa = data + 2 * index;
    const uint8_t* pb = data + 2 * second;
    size_t k = 0;
    for (; k < kPairsPerStream; ++k, pa += 2, pb += 2) {
      ha = (ha << 2) + t.gear_ls[pa[0]];
      if (__builtin_expect((ha & mask_ls) == 0, 0)) break;
      hb = (hb << 2) + t.gear_ls[pb[0]];
      if (__builtin_expect((hb & mask_ls) == 0, 0)) break;
      ha += t.gear[pa[1]];
      if (__builtin_expect((ha & mask) == 0, 0)) break;
      hb += t.gear[pb[1]];
      if (__builtin_expect((hb & mask) == 0, 0)) break;
    }
    if (k < kPairsPerStream) {
      // Pairs before index + k hold no cut; the first one is at most the
      // one the second stream saw, kPairsPerStream pairs on.
      index += k;
      hash = HashBefore(t, data, start, index);
      return ScanOneStream(t, data, index, hash, end, mask, mask_ls);
    }
    index = second + kPairsPerStream;
    hash = hb;
  }
  return ScanOneStream(t, data, index, hash, end, mask, mask_ls);
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
  mask_s_ = internal::kMasks[bits + params.level];
  mask_l_ = internal::kMasks[bits - params.level];
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
  const GearTables& tables = Tables();
  const size_t start = min / 2;
  size_t index = index_;
  uint64_t hash = hash_;
  // Pairs below avg/2 use mask_s; from there on mask_l. The pair (a, a+1)
  // needs a + 1 < window, i.e. index < window / 2.
  const size_t stop = window / 2;
  const size_t small_stop = avg / 2 < stop ? avg / 2 : stop;
  if (index < small_stop) {
    const size_t cut = Scan(tables, data, start, index, hash, small_stop, mask_s_, mask_s_ls_);
    if (cut != kNoCut) {
      Reset();
      return cut;
    }
  }
  if (index < stop) {
    const size_t cut = Scan(tables, data, start, index, hash, stop, mask_l_, mask_l_ls_);
    if (cut != kNoCut) {
      Reset();
      return cut;
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
