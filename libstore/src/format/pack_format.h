// SPDX-License-Identifier: Apache-2.0
// Pack files: the on-disk framing of chunk records (see docs/format.md).
//
// A pack is a 16-byte file header followed by records. Each record is a
// 64-byte header and the chunk's stored bytes:
//
//   0  magic "CKR1"        4  codec (0 raw, 1 zlib, 2 zstd)   5  3 bytes zero
//   8  raw length (u32)    12 stored length (u32)
//   16 chunk id (32 bytes, SHA-256 of the raw bytes)
//   48 xxHash64 of the stored bytes (u64)
//   56 header check: low 32 bits of xxHash64 of bytes 0..55 (u32)
//   60 4 bytes zero
//
// All integers are little-endian. Records are self-describing so a pack can
// be scanned without the index (verify, recovery, a second reader).
#pragma once

#include <cstddef>
#include <cstdint>

#include "chunkstore/status.h"
#include "format/compress.h"
#include "format/rows.h"
#include "hash/digest.h"

namespace chunkstore::internal {

constexpr size_t kPackHeaderSize = 16;
constexpr char kPackMagic[8] = {'C', 'H', 'U', 'N', 'K', 'P', 'K', '\0'};
constexpr uint32_t kPackVersion = 1;
constexpr size_t kRecordHeaderSize = 64;
// No chunk can be larger than the largest allowed max chunk size.
constexpr uint32_t kMaxRecordLength = 16u << 20;

struct RecordHeader {
  Codec codec = Codec::kRaw;
  uint32_t raw_len = 0;
  uint32_t stored_len = 0;
  Digest chunk_id;
  uint64_t xxh64 = 0;  // of the stored bytes
};

void EncodePackHeader(uint8_t out[kPackHeaderSize]);
Status DecodePackHeader(const uint8_t* in, size_t n);

void EncodeRecordHeader(const RecordHeader& h, uint8_t out[kRecordHeaderSize]);
// The header of a record that stores chunk id (raw_len bytes) as
// payload[0, stored_len) with codec; the xxHash64 is computed here.
RecordHeader MakeRecordHeader(const Digest& id, uint32_t raw_len, Codec codec, const uint8_t* payload,
                              uint32_t stored_len);
// Where the record with header h, written at offset of pack pack_id, is, as
// the index and change sets keep it.
ChunkLocation RecordLocation(const RecordHeader& h, int64_t pack_id, uint64_t offset);

// Checks magic, header check, codec and length bounds; never trusts a length
// it has not bounded (stored <= raw <= 16 MiB; raw records have stored == raw).
Result<RecordHeader> DecodeRecordHeader(const uint8_t* in, size_t n);

}  // namespace chunkstore::internal
