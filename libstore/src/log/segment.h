// SPDX-License-Identifier: Apache-2.0
// Log segments: the files a directory store's change log is made of.
//
// A segment is log/<first seq, 20 decimal digits>.log: a 32-byte header
// (magic "CKLOGSG1", the sequence number of its first change, the store's
// id), then frames back to back, each a 24-byte header (magic "CKFR", the
// payload's length, the change's sequence number, a check of those) and an
// encoded change set (format/change_set.h, which carries its own check).
// Every segment begins with a checkpoint, so the newest segment alone
// holds the whole state; the one before it is kept as a second copy until
// the next checkpoint. docs/format.md ("Change log") has the layout and the
// crash rules.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chunkstore/env.h"
#include "chunkstore/status.h"

namespace chunkstore::internal {

constexpr size_t kSegmentHeaderSize = 32;
constexpr size_t kFrameHeaderSize = 24;
// A frame larger than this is taken for damage (a checkpoint of a store
// with tens of millions of chunks stays well below it).
constexpr uint64_t kMaxFrameLength = 1ull << 32;

// "<20 digits>.log", exactly; *first gets the number.
bool IsSegmentName(const std::string& name, uint64_t* first);
std::string SegmentName(uint64_t first_seq);

std::string EncodeSegmentHeader(uint64_t first_seq, const std::string& store_id_hex);
std::string EncodeFrame(uint64_t seq, const std::string& payload);

struct Frame {
  uint64_t seq = 0;
  uint64_t offset = 0;  // of the frame header
  uint64_t end = 0;     // just past the payload
  std::string_view payload;  // into SegmentScan::bytes
};

struct SegmentScan {
  SegmentScan() = default;
  SegmentScan(SegmentScan&&) = default;  // frames keep pointing into bytes
  SegmentScan& operator=(SegmentScan&&) = default;
  SegmentScan(const SegmentScan&) = delete;
  uint64_t first_seq = 0;
  std::vector<char> bytes;       // what was read of the file (a move keeps it in place)
  std::string store_id;          // hex, from the header
  std::vector<Frame> frames;     // every sound frame, in order
  // The first unsound frame: "" when the segment ends cleanly. Frames
  // after damage are found again by their headers (resynced), so one bad
  // frame does not hide the rest.
  std::string damage;
  uint64_t damage_offset = 0;
  uint64_t damage_seq = 0;       // the sequence number it should have had
  // The damage is the last thing in the file: a frame cut short by a
  // crash (or damage there).
  bool damage_at_end = false;
  uint64_t size = 0;             // the file's length
};

// Reads a segment and checks it frame by frame, from its first frame, or
// from from_offset (a frame boundary) where the frame there should be
// number next_seq. Errors only for a file that cannot be read or is not a
// segment at all.
Result<SegmentScan> ScanSegment(const File& file, const std::string& name, uint64_t from_offset = 0,
                                uint64_t next_seq = 0);

}  // namespace chunkstore::internal
