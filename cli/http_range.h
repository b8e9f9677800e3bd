// SPDX-License-Identifier: Apache-2.0
// HTTP byte ranges (RFC 9110, section 14) for `serve`: a Range header read
// against a representation's size, and the layout of a
// multipart/byteranges body answering several ranges at once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cli {

struct ByteRange {
  uint64_t first = 0, last = 0;  // inclusive
  uint64_t length() const { return last - first + 1; }
};

struct RangeRequest {
  enum Outcome {
    kWhole,          // no Range header, or one to ignore (not bytes, malformed): 200 with everything
    kRanges,         // satisfiable ranges: 206
    kUnsatisfiable,  // none of them lies inside the representation (or too many asked): 416
  };
  Outcome outcome = kWhole;
  std::vector<ByteRange> ranges;  // in the order asked, clipped to the size
};

// More ranges than this in one request are refused (416) rather than
// served: each costs a part header and a seek.
constexpr size_t kMaxRanges = 100;

RangeRequest ParseRange(const std::string& header, uint64_t size);

// A multipart/byteranges body, as the parts it is written from: text to
// send as it is, then a range of the representation, and so on, ending
// with the closing boundary (range.length() == 0 marks a text-only part).
struct BodyPart {
  std::string text;
  ByteRange range;
  bool has_range = false;
};
std::vector<BodyPart> MultipartLayout(const std::vector<ByteRange>& ranges, uint64_t size, const std::string& boundary,
                                      const std::string& content_type);
// The body's whole length.
uint64_t BodyLength(const std::vector<BodyPart>& parts);

}  // namespace cli
