// SPDX-License-Identifier: Apache-2.0
// Byte ranges and multipart/byteranges bodies (http_range.h).
#include "http_range.h"

#include <cctype>

namespace cli {

namespace {

std::string Trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t')) --b;
  return s.substr(a, b - a);
}

// Digits only, no overflow; false otherwise.
bool Number(const std::string& s, uint64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

RangeRequest ParseRange(const std::string& header, uint64_t size) {
  RangeRequest r;
  const std::string h = Trim(header);
  if (h.size() < 6 || h.compare(0, 6, "bytes=") != 0) return r;  // another unit, or none: ignored
  std::vector<ByteRange> ranges;
  size_t asked = 0;
  size_t pos = 6;
  while (pos <= h.size()) {
    size_t comma = h.find(',', pos);
    if (comma == std::string::npos) comma = h.size();
    const std::string spec = Trim(h.substr(pos, comma - pos));
    pos = comma + 1;
    if (spec.empty()) {
      if (comma == h.size()) break;
      continue;  // "a-b, , c-d": empty elements are allowed
    }
    ++asked;
    const size_t dash = spec.find('-');
    if (dash == std::string::npos) return RangeRequest{};  // malformed: ignored whole
    const std::string a = spec.substr(0, dash), b = spec.substr(dash + 1);
    uint64_t first = 0, last = 0;
    if (a.empty()) {  // suffix: the last b bytes
      if (!Number(b, &last)) return RangeRequest{};
      if (last == 0 || size == 0) continue;  // unsatisfiable on its own
      first = last >= size ? 0 : size - last;
      ranges.push_back({first, size - 1});
      continue;
    }
    if (!Number(a, &first)) return RangeRequest{};
    if (b.empty()) {
      last = UINT64_MAX;
    } else if (!Number(b, &last) || last < first) {
      return RangeRequest{};
    }
    if (first >= size) continue;
    ranges.push_back({first, last >= size ? size - 1 : last});
  }
  if (asked == 0) return RangeRequest{};
  if (asked > kMaxRanges || ranges.empty()) {
    r.outcome = RangeRequest::kUnsatisfiable;
    return r;
  }
  r.outcome = RangeRequest::kRanges;
  r.ranges = std::move(ranges);
  return r;
}

std::vector<BodyPart> MultipartLayout(const std::vector<ByteRange>& ranges, uint64_t size, const std::string& boundary,
                                      const std::string& content_type) {
  std::vector<BodyPart> parts;
  for (size_t i = 0; i < ranges.size(); ++i) {
    BodyPart p;
    p.text = std::string(i == 0 ? "" : "\r\n") + "--" + boundary + "\r\nContent-Type: " + content_type +
             "\r\nContent-Range: bytes " + std::to_string(ranges[i].first) + "-" + std::to_string(ranges[i].last) +
             "/" + std::to_string(size) + "\r\n\r\n";
    p.range = ranges[i];
    p.has_range = true;
    parts.push_back(std::move(p));
  }
  BodyPart end;
  end.text = "\r\n--" + boundary + "--\r\n";
  parts.push_back(std::move(end));
  return parts;
}

uint64_t BodyLength(const std::vector<BodyPart>& parts) {
  uint64_t n = 0;
  for (const BodyPart& p : parts) n += p.text.size() + (p.has_range ? p.range.length() : 0);
  return n;
}

}  // namespace cli
