// SPDX-License-Identifier: Apache-2.0
// Log segments (segment.h): naming, framing and the scan that checks every
// frame and tells a crash's cut-off tail from damage.
#include "log/segment.h"

#include <cstdio>
#include <cstring>

#include "hash/digest.h"

namespace chunkstore::internal {

namespace {

constexpr char kSegmentMagic[8] = {'C', 'K', 'L', 'O', 'G', 'S', 'G', '1'};
constexpr char kFrameMagic[4] = {'C', 'K', 'F', 'R'};

void PutLe(std::string* s, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) s->push_back(static_cast<char>(v >> (8 * i)));
}

uint64_t GetLe(const char* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

uint32_t HeaderCheck(const char* p) { return static_cast<uint32_t>(XxHash64(p, 16)); }

// A frame header at p (at least kFrameHeaderSize bytes) that checks out.
bool SoundHeader(const char* p, uint64_t* len, uint64_t* seq) {
  if (std::memcmp(p, kFrameMagic, 4) != 0) return false;
  if (GetLe(p + 16, 4) != HeaderCheck(p) || GetLe(p + 20, 4) != 0) return false;
  *len = GetLe(p + 4, 4);
  *seq = GetLe(p + 8, 8);
  return true;
}

}  // namespace

bool IsSegmentName(const std::string& name, uint64_t* first) {
  if (name.size() != 24 || name.compare(20, 4, ".log") != 0) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < 20; ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  if (first) *first = v;
  return v > 0;
}

std::string SegmentName(uint64_t first_seq) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020llu.log", static_cast<unsigned long long>(first_seq));
  return buf;
}

std::string EncodeSegmentHeader(uint64_t first_seq, const std::string& store_id_hex) {
  std::string h(kSegmentMagic, sizeof kSegmentMagic);
  PutLe(&h, first_seq, 8);
  std::string id = store_id_hex.substr(0, 32);
  for (size_t i = 0; i + 1 < id.size(); i += 2) h.push_back(static_cast<char>(std::stoi(id.substr(i, 2), nullptr, 16)));
  h.resize(kSegmentHeaderSize, '\0');
  return h;
}

std::string EncodeFrame(uint64_t seq, const std::string& payload) {
  std::string f(kFrameMagic, sizeof kFrameMagic);
  PutLe(&f, payload.size(), 4);
  PutLe(&f, seq, 8);
  PutLe(&f, HeaderCheck(f.data()), 4);
  PutLe(&f, 0, 4);
  f += payload;
  return f;
}

Result<SegmentScan> ScanSegment(const File& file, const std::string& name, uint64_t from_offset, uint64_t next_seq) {
  SegmentScan scan;
  if (!IsSegmentName(name, &scan.first_seq)) return Status::Corruption("log segment " + name + " has a name no segment has");
  Result<uint64_t> size = file.Size();
  if (!size.ok()) return size.status();
  scan.size = *size;
  char header[kSegmentHeaderSize];
  size_t got = 0;
  CHUNKSTORE_RETURN_IF_ERROR(file.ReadAt(0, sizeof header, header, &got));
  if (got != sizeof header || std::memcmp(header, kSegmentMagic, sizeof kSegmentMagic) != 0)
    return Status::Corruption("log segment " + name + " has no segment header");
  if (GetLe(header + 8, 8) != scan.first_seq)
    return Status::Corruption("log segment " + name + " says it starts at change " +
                              std::to_string(GetLe(header + 8, 8)));
  scan.store_id = HexEncode(reinterpret_cast<const uint8_t*>(header + 16), 16);
  uint64_t pos = from_offset ? from_offset : kSegmentHeaderSize;
  uint64_t expect = from_offset ? next_seq : scan.first_seq;
  if (pos > scan.size) return Status::Corruption("log segment " + name + " is shorter than the index says it was");
  scan.bytes.assign(scan.size - pos, '\0');
  const std::string_view data(scan.bytes.data(), scan.bytes.size());
  CHUNKSTORE_RETURN_IF_ERROR(file.ReadAt(pos, scan.bytes.size(), scan.bytes.data(), &got));
  if (got != data.size()) return Status::IOError("log segment " + name + " changed while it was read");
  size_t at = 0;
  auto damaged = [&](const std::string& what) {
    if (scan.damage.empty()) {
      scan.damage = what;
      scan.damage_offset = pos + at;
      scan.damage_seq = expect;
    }
  };
  while (at < data.size()) {
    uint64_t len = 0, seq = 0;
    const bool room = data.size() - at >= kFrameHeaderSize;
    bool sound = room && SoundHeader(data.data() + at, &len, &seq);
    if (sound && (seq != expect || len > data.size() - at - kFrameHeaderSize)) sound = false;
    if (sound) {
      Frame f;
      f.seq = seq;
      f.offset = pos + at;
      f.end = f.offset + kFrameHeaderSize + len;
      f.payload = data.substr(at + kFrameHeaderSize, len);
      scan.frames.push_back(std::move(f));
      at += kFrameHeaderSize + len;
      ++expect;
      continue;
    }
    damaged(room ? "change " + std::to_string(expect) + " is damaged" : "change " + std::to_string(expect) + " is cut short");
    // Look for the next sound frame header (the one after the damaged
    // frame, or any later one): whatever follows is read again from there.
    size_t next = std::string::npos;
    for (size_t k = at + 1; k + kFrameHeaderSize <= data.size(); ++k) {
      if (data[k] != kFrameMagic[0]) continue;
      uint64_t l2 = 0, s2 = 0;
      if (SoundHeader(data.data() + k, &l2, &s2) && s2 > expect - 1 && l2 <= data.size() - k - kFrameHeaderSize) {
        next = k;
        expect = s2;
        break;
      }
    }
    if (next == std::string::npos) {
      scan.damage_at_end = true;
      break;
    }
    at = next;
  }
  return scan;
}

}  // namespace chunkstore::internal
