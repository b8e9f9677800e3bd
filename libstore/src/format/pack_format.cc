// SPDX-License-Identifier: Apache-2.0
// Encoding and bounds-checked decoding of pack and record headers.
#include "format/pack_format.h"

#include <cstring>

namespace chunkstore::internal {

namespace {

void Put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void Put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t Get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | p[i];
  return v;
}
uint64_t Get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

constexpr uint8_t kRecordMagic[4] = {'C', 'K', 'R', '1'};

}  // namespace

void EncodePackHeader(uint8_t out[kPackHeaderSize]) {
  std::memcpy(out, kPackMagic, 8);
  Put32(out + 8, kPackVersion);
  Put32(out + 12, 0);
}

Status DecodePackHeader(const uint8_t* in, size_t n) {
  if (n < kPackHeaderSize || std::memcmp(in, kPackMagic, 8) != 0)
    return Status::Corruption("pack file header is missing or damaged");
  const uint32_t version = Get32(in + 8);
  if (version != kPackVersion)
    return Status::Unsupported("pack file format version " + std::to_string(version) +
                               " is not supported");
  if (Get32(in + 12) != 0) return Status::Corruption("pack file header has non-zero reserved bytes");
  return Status::OK();
}

void EncodeRecordHeader(const RecordHeader& h, uint8_t out[kRecordHeaderSize]) {
  std::memset(out, 0, kRecordHeaderSize);
  std::memcpy(out, kRecordMagic, 4);
  out[4] = static_cast<uint8_t>(h.codec);
  Put32(out + 8, h.raw_len);
  Put32(out + 12, h.stored_len);
  std::memcpy(out + 16, h.chunk_id.bytes.data(), 32);
  Put64(out + 48, h.xxh64);
  Put32(out + 56, static_cast<uint32_t>(XxHash64(out, 56)));
}

Result<RecordHeader> DecodeRecordHeader(const uint8_t* in, size_t n) {
  if (n < kRecordHeaderSize) return Status::Corruption("chunk record header is truncated");
  if (std::memcmp(in, kRecordMagic, 4) != 0)
    return Status::Corruption("chunk record has a bad magic number");
  if (Get32(in + 56) != static_cast<uint32_t>(XxHash64(in, 56)))
    return Status::Corruption("chunk record header fails its check");
  if (Get32(in + 60) != 0) return Status::Corruption("chunk record header has non-zero reserved bytes");
  RecordHeader h;
  if (!KnownCodec(in[4]))
    return Status::Corruption("chunk record names unknown codec " + std::to_string(in[4]));
  h.codec = static_cast<Codec>(in[4]);
  h.raw_len = Get32(in + 8);
  h.stored_len = Get32(in + 12);
  std::memcpy(h.chunk_id.bytes.data(), in + 16, 32);
  h.xxh64 = Get64(in + 48);
  if (h.raw_len > kMaxRecordLength || h.stored_len > h.raw_len ||
      (h.codec == Codec::kRaw && h.stored_len != h.raw_len))
    return Status::Corruption("chunk record lengths are impossible (raw " +
                              std::to_string(h.raw_len) + ", stored " +
                              std::to_string(h.stored_len) + ")");
  return h;
}

RecordHeader MakeRecordHeader(const Digest& id, uint32_t raw_len, Codec codec, const uint8_t* payload,
                              uint32_t stored_len) {
  RecordHeader h;
  h.codec = codec;
  h.raw_len = raw_len;
  h.stored_len = stored_len;
  h.chunk_id = id;
  h.xxh64 = XxHash64(payload, stored_len);
  return h;
}

ChunkLocation RecordLocation(const RecordHeader& h, int64_t pack_id, uint64_t offset) {
  ChunkLocation loc;
  loc.pack_id = pack_id;
  loc.offset = offset;
  loc.raw_len = h.raw_len;
  loc.stored_len = h.stored_len;
  loc.codec = h.codec;
  loc.xxh64 = h.xxh64;
  return loc;
}

}  // namespace chunkstore::internal
