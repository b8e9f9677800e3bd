// SPDX-License-Identifier: Apache-2.0
// Push streams: what Store::CopyTo sends a store served over HTTP (serve's
// POST /push), and what Store::Receive takes in. The layout is in
// docs/format.md ("Push streams").
//
// A push is a magic and a sequence of records: chunks the receiver lacks,
// objects (by their chunk lists, or whole when small, or as a byte stream
// to be cut by the receiver when the two stores cut differently), name
// versions, and an end record that counts the records before it, so that
// a stream cut short is never taken for a whole one. The writer appends to
// a file; the reader reads through a positional read with bounds checks,
// so that a hostile stream is an error, never a crash or a large
// allocation.
//
// Thread safety: one thread at a time per writer or reader.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "chunkstore/status.h"
#include "format/manifest.h"
#include "hash/digest.h"

namespace chunkstore::internal {

inline constexpr char kPushMagic[8] = {'C', 'K', 'P', 'U', 'S', 'H', '1', 0};

enum class PushKind : uint8_t {
  kChunk = 'C',   // id, length u32, raw bytes
  kObject = 'O',  // id, flags, size u64, count u32, count x (chunk id, length u32)
  kWhole = 'I',   // id, flags, length u32, the whole content
  kSource = 'S',  // id, flags, length u64, the whole content, to be cut by the receiver
  kName = 'N',    // name (u16 length), object id, created (ns since the epoch, i64)
  kEnd = 'E',     // records before this one, u64
};

// Object flags.
inline constexpr uint8_t kPushMember = 1;  // kept alive by a tree, not pinned
inline constexpr uint8_t kPushTree = 2;    // a tree object (format/tree.h)
inline constexpr uint8_t kPushFlags = kPushMember | kPushTree;

// Appends records to f (which it does not own), magic first.
class PushWriter {
 public:
  explicit PushWriter(std::FILE* f);
  Status Chunk(const Digest& id, const uint8_t* raw, uint32_t n);
  Status Object(const Digest& id, uint8_t flags, uint64_t size, const std::vector<ManifestEntry>& entries);
  Status Whole(const Digest& id, uint8_t flags, const std::string& content);
  // A source record's header; exactly size bytes must follow through Raw.
  Status SourceHeader(const Digest& id, uint8_t flags, uint64_t size);
  Status Raw(const void* data, size_t n);
  Status Name(const std::string& name, const Digest& object, int64_t created);
  Status End();
  uint64_t bytes() const { return bytes_; }
  uint64_t records() const { return records_; }

 private:
  Status Put(const void* p, size_t n);
  Status Le(uint64_t v, int n);
  std::FILE* f_;
  uint64_t bytes_ = 0;
  uint64_t records_ = 0;
  Status error_;
};

// One record as read; bytes of chunk, whole and source records are left
// in the stream at [data, data + length).
struct PushRecord {
  PushKind kind = PushKind::kEnd;
  Digest id;  // the chunk's or object's
  uint8_t flags = 0;
  uint64_t size = 0;                    // an object's
  std::vector<ManifestEntry> entries;   // kObject
  uint64_t data = 0, length = 0;        // kChunk, kWhole, kSource
  std::string name;                     // kName
  int64_t created = 0;                  // kName
};

// Reads exactly n bytes at offset, or fails.
using ReadAt = std::function<Status(uint64_t offset, void* buf, size_t n)>;

class PushReader {
 public:
  PushReader(ReadAt read_at, uint64_t size) : read_at_(std::move(read_at)), size_(size) {}
  // Checks the magic.
  Status Start();
  // The next record, its bytes skipped over. After kEnd, which must count
  // the records before it and end the stream, there is none. Corruption
  // (naming the record by its number and offset) for anything malformed.
  Result<PushRecord> Next();
  uint64_t records() const { return records_; }

 private:
  Status Read(void* p, size_t n);
  Result<uint64_t> Le(int n);
  Status Bad(const std::string& what) const;
  ReadAt read_at_;
  uint64_t size_;
  uint64_t pos_ = 0;
  uint64_t record_start_ = 0;
  uint64_t records_ = 0;
  bool ended_ = false;
};

}  // namespace chunkstore::internal
