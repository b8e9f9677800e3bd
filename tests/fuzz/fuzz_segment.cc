// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: scanning a directory store's log segment, whose frames
// may be cut short, damaged or hostile. The input follows a valid segment
// header, so the fuzzer explores the frames.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "chunkstore/env.h"
#include "log/segment.h"

namespace {

class BytesFile final : public chunkstore::File {
 public:
  explicit BytesFile(std::string s) : s_(std::move(s)) {}
  chunkstore::Status Append(const void*, size_t) override { return chunkstore::Status::OK(); }
  chunkstore::Status ReadAt(uint64_t off, size_t n, void* buf, size_t* got) const override {
    *got = off >= s_.size() ? 0 : std::min<size_t>(n, s_.size() - off);
    if (*got) std::memcpy(buf, s_.data() + off, *got);
    return chunkstore::Status::OK();
  }
  chunkstore::Status Sync() override { return chunkstore::Status::OK(); }
  chunkstore::Status Truncate(uint64_t) override { return chunkstore::Status::OK(); }
  chunkstore::Result<uint64_t> Size() const override { return static_cast<uint64_t>(s_.size()); }

 private:
  std::string s_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chunkstore::internal;
  std::string bytes = EncodeSegmentHeader(5, "00112233445566778899aabbccddeeff");
  bytes.append(reinterpret_cast<const char*>(data), size);
  BytesFile f(bytes);
  auto scan = ScanSegment(f, SegmentName(5));
  if (!scan.ok()) return 0;
  uint64_t next = 5, end = kSegmentHeaderSize;
  for (const Frame& fr : scan->frames) {
    // Frames come in order, inside the file, never overlapping.
    if (fr.seq < next || fr.offset < end || fr.end > bytes.size() || fr.end - fr.offset != kFrameHeaderSize + fr.payload.size())
      std::abort();
    next = fr.seq + 1;
    end = fr.end;
  }
  return 0;
}
