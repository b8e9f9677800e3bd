// SPDX-License-Identifier: Apache-2.0
// Push streams (push_format.h): the writer and the bounds-checked reader.
#include "format/push_format.h"

#include <cerrno>
#include <cstring>

namespace chunkstore::internal {

PushWriter::PushWriter(std::FILE* f) : f_(f) { error_ = Put(kPushMagic, sizeof kPushMagic); }

Status PushWriter::Put(const void* p, size_t n) {
  if (!error_.ok()) return error_;
  if (n && std::fwrite(p, 1, n, f_) != n)
    error_ = Status::IOError(std::string("cannot write the push: ") + std::strerror(errno));
  bytes_ += n;
  return error_;
}

Status PushWriter::Le(uint64_t v, int n) {
  uint8_t b[8];
  for (int i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
  return Put(b, static_cast<size_t>(n));
}

Status PushWriter::Chunk(const Digest& id, const uint8_t* raw, uint32_t n) {
  ++records_;
  const uint8_t k = static_cast<uint8_t>(PushKind::kChunk);
  Put(&k, 1);
  Put(id.bytes.data(), 32);
  Le(n, 4);
  return Put(raw, n);
}

Status PushWriter::Object(const Digest& id, uint8_t flags, uint64_t size, const std::vector<ManifestEntry>& entries) {
  ++records_;
  const uint8_t k = static_cast<uint8_t>(PushKind::kObject);
  Put(&k, 1);
  Put(id.bytes.data(), 32);
  Put(&flags, 1);
  Le(size, 8);
  Le(entries.size(), 4);
  for (const ManifestEntry& e : entries) {
    Put(e.id.bytes.data(), 32);
    Le(e.length, 4);
  }
  return error_;
}

Status PushWriter::Whole(const Digest& id, uint8_t flags, const std::string& content) {
  ++records_;
  const uint8_t k = static_cast<uint8_t>(PushKind::kWhole);
  Put(&k, 1);
  Put(id.bytes.data(), 32);
  Put(&flags, 1);
  Le(content.size(), 4);
  return Put(content.data(), content.size());
}

Status PushWriter::SourceHeader(const Digest& id, uint8_t flags, uint64_t size) {
  ++records_;
  const uint8_t k = static_cast<uint8_t>(PushKind::kSource);
  Put(&k, 1);
  Put(id.bytes.data(), 32);
  Put(&flags, 1);
  return Le(size, 8);
}

Status PushWriter::Raw(const void* data, size_t n) { return Put(data, n); }

Status PushWriter::Name(const std::string& name, const Digest& object, int64_t created) {
  ++records_;
  const uint8_t k = static_cast<uint8_t>(PushKind::kName);
  Put(&k, 1);
  Le(name.size(), 2);
  Put(name.data(), name.size());
  Put(object.bytes.data(), 32);
  return Le(static_cast<uint64_t>(created), 8);
}

Status PushWriter::End() {
  const uint8_t k = static_cast<uint8_t>(PushKind::kEnd);
  Put(&k, 1);
  Le(records_, 8);
  if (error_.ok() && std::fflush(f_) != 0)
    error_ = Status::IOError(std::string("cannot write the push: ") + std::strerror(errno));
  return error_;
}

Status PushReader::Bad(const std::string& what) const {
  return Status::Corruption("push record " + std::to_string(records_ + 1) + " (at byte " +
                            std::to_string(record_start_) + "): " + what);
}

Status PushReader::Read(void* p, size_t n) {
  if (size_ - pos_ < n) return Bad("the push ends inside it");
  CHUNKSTORE_RETURN_IF_ERROR(read_at_(pos_, p, n));
  pos_ += n;
  return Status::OK();
}

Result<uint64_t> PushReader::Le(int n) {
  uint8_t b[8];
  CHUNKSTORE_RETURN_IF_ERROR(Read(b, static_cast<size_t>(n)));
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(b[i]) << (8 * i);
  return v;
}

Status PushReader::Start() {
  char magic[sizeof kPushMagic];
  if (size_ < sizeof magic) return Status::Corruption("not a push: too short");
  CHUNKSTORE_RETURN_IF_ERROR(read_at_(0, magic, sizeof magic));
  if (std::memcmp(magic, kPushMagic, sizeof magic) != 0) return Status::Corruption("not a push (bad magic)");
  pos_ = sizeof magic;
  return Status::OK();
}

#define PUSH_TRY(var, expr)                          \
  Result<uint64_t> var##_r = (expr);                 \
  if (!var##_r.ok()) return var##_r.status();        \
  const uint64_t var = *var##_r

Result<PushRecord> PushReader::Next() {
  if (ended_) return Status::InvalidArgument("the push has no more records");
  record_start_ = pos_;
  PushRecord r;
  PUSH_TRY(kind, Le(1));
  r.kind = static_cast<PushKind>(kind);
  auto id = [&]() { return Read(r.id.bytes.data(), 32); };
  auto flags = [&]() -> Status {
    PUSH_TRY(f, Le(1));
    if (f & ~uint64_t{kPushFlags}) return Bad("unknown object flags " + std::to_string(f));
    r.flags = static_cast<uint8_t>(f);
    return Status::OK();
  };
  auto bytes = [&](uint64_t n) -> Status {
    if (size_ - pos_ < n) return Bad("the push ends inside it");
    r.data = pos_;
    r.length = n;
    pos_ += n;
    return Status::OK();
  };
  switch (r.kind) {
    case PushKind::kChunk: {
      CHUNKSTORE_RETURN_IF_ERROR(id());
      PUSH_TRY(n, Le(4));
      if (n == 0) return Bad("an empty chunk");
      CHUNKSTORE_RETURN_IF_ERROR(bytes(n));
      break;
    }
    case PushKind::kObject: {
      CHUNKSTORE_RETURN_IF_ERROR(id());
      CHUNKSTORE_RETURN_IF_ERROR(flags());
      PUSH_TRY(size, Le(8));
      PUSH_TRY(count, Le(4));
      if (count * (32 + 4) > size_ - pos_) return Bad("more chunks than the push has room for");
      r.size = size;
      r.entries.resize(count);
      uint64_t sum = 0;
      for (ManifestEntry& e : r.entries) {
        CHUNKSTORE_RETURN_IF_ERROR(Read(e.id.bytes.data(), 32));
        PUSH_TRY(len, Le(4));
        if (len == 0) return Bad("an empty chunk in a chunk list");
        e.length = static_cast<uint32_t>(len);
        sum += len;
      }
      if (sum != size) return Bad("its chunks add up to " + std::to_string(sum) + " bytes, not " + std::to_string(size));
      break;
    }
    case PushKind::kWhole: {
      CHUNKSTORE_RETURN_IF_ERROR(id());
      CHUNKSTORE_RETURN_IF_ERROR(flags());
      PUSH_TRY(n, Le(4));
      CHUNKSTORE_RETURN_IF_ERROR(bytes(n));
      r.size = n;
      break;
    }
    case PushKind::kSource: {
      CHUNKSTORE_RETURN_IF_ERROR(id());
      CHUNKSTORE_RETURN_IF_ERROR(flags());
      PUSH_TRY(n, Le(8));
      CHUNKSTORE_RETURN_IF_ERROR(bytes(n));
      r.size = n;
      break;
    }
    case PushKind::kName: {
      PUSH_TRY(n, Le(2));
      r.name.resize(n);
      CHUNKSTORE_RETURN_IF_ERROR(Read(r.name.data(), n));
      CHUNKSTORE_RETURN_IF_ERROR(id());
      PUSH_TRY(created, Le(8));
      r.created = static_cast<int64_t>(created);
      break;
    }
    case PushKind::kEnd: {
      PUSH_TRY(count, Le(8));
      if (count != records_) return Bad("the end counts " + std::to_string(count) + " records, not " + std::to_string(records_));
      if (pos_ != size_) return Bad(std::to_string(size_ - pos_) + " bytes follow the end");
      ended_ = true;
      return r;
    }
    default:
      return Bad("unknown record kind " + std::to_string(kind));
  }
  ++records_;
  return r;
}

#undef PUSH_TRY

}  // namespace chunkstore::internal
