// Log records of bucket stores (bucket.h): their byte encoding, decoded
// with bounds checks so that a damaged or hostile record is an error, never
// a crash or an oversized allocation. The layout is in docs/format.md.
#include <cstring>
#include <string>

#include "bucket/bucket.h"

namespace chunkstore::internal {

namespace {

constexpr char kLogMagic[8] = {'C', 'K', 'L', 'O', 'G', '1', 0, 0};

class Out {
 public:
  void U8(uint8_t v) { s_.push_back(static_cast<char>(v)); }
  void U16(uint16_t v) { Le(v, 2); }
  void U32(uint32_t v) { Le(v, 4); }
  void U64(uint64_t v) { Le(v, 8); }
  void Id(const Digest& d) { s_.append(reinterpret_cast<const char*>(d.bytes.data()), 32); }
  void Str(const std::string& v) {
    U16(static_cast<uint16_t>(v.size()));
    s_ += v;
  }
  void Bytes(const std::string& v) {
    U32(static_cast<uint32_t>(v.size()));
    s_ += v;
  }
  std::string& str() { return s_; }

 private:
  void Le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) s_.push_back(static_cast<char>(v >> (8 * i)));
  }
  std::string s_;
};

class In {
 public:
  In(const std::string& s, size_t end) : s_(s), end_(end) {}
  bool ok() const { return ok_; }
  uint64_t Le(int n) {
    if (!Need(n)) return 0;
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(s_[pos_ + i])) << (8 * i);
    pos_ += n;
    return v;
  }
  uint8_t U8() { return static_cast<uint8_t>(Le(1)); }
  uint32_t U32() { return static_cast<uint32_t>(Le(4)); }
  uint64_t U64() { return Le(8); }
  Digest Id() {
    Digest d;
    if (Need(32)) {
      std::memcpy(d.bytes.data(), s_.data() + pos_, 32);
      pos_ += 32;
    }
    return d;
  }
  std::string Take(size_t n) {
    if (!Need(n)) return {};
    std::string v = s_.substr(pos_, n);
    pos_ += n;
    return v;
  }
  std::string Str() { return Take(static_cast<size_t>(Le(2))); }
  std::string Bytes() { return Take(U32()); }
  // A count of items each at least min_size bytes long; guards allocation.
  uint32_t Count(size_t min_size) {
    const uint32_t n = U32();
    if (ok_ && static_cast<uint64_t>(n) * min_size > end_ - pos_) ok_ = false;
    return ok_ ? n : 0;
  }
  bool at_end() const { return pos_ == end_; }

 private:
  bool Need(size_t n) {
    if (!ok_ || end_ - pos_ < n) ok_ = false;
    return ok_;
  }
  const std::string& s_;
  size_t end_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace

std::string EncodeLogRecord(const LogRecord& r) {
  Out o;
  o.str().append(kLogMagic, sizeof kLogMagic);
  o.U8(r.kind);
  o.U64(static_cast<uint64_t>(r.time));
  o.U32(static_cast<uint32_t>(r.packs.size()));
  for (const auto& p : r.packs) {
    o.Str(p.name);
    o.U64(p.size);
  }
  o.U32(static_cast<uint32_t>(r.chunks.size()));
  for (const auto& c : r.chunks) {
    o.Id(c.id);
    o.U32(c.pack);
    o.U64(c.loc.offset);
    o.U32(c.loc.raw_len);
    o.U32(c.loc.stored_len);
    o.U8(static_cast<uint8_t>(c.loc.codec));
    o.U64(c.loc.xxh64);
  }
  o.U32(static_cast<uint32_t>(r.objects.size()));
  for (const auto& ob : r.objects) {
    o.Id(ob.id);
    o.U64(ob.size);
    o.U32(ob.chunk_count);
    o.Bytes(ob.manifest);
    o.U64(static_cast<uint64_t>(ob.created));
    o.U8(ob.pinned ? 1 : 0);
  }
  o.U32(static_cast<uint32_t>(r.names.size()));
  for (const auto& [name, id] : r.names) {
    o.Str(name);
    o.Id(id);
  }
  o.U32(static_cast<uint32_t>(r.removed_names.size()));
  for (const auto& n : r.removed_names) o.Str(n);
  o.U32(static_cast<uint32_t>(r.removed_objects.size()));
  for (const auto& d : r.removed_objects) o.Id(d);
  o.U32(static_cast<uint32_t>(r.removed_chunks.size()));
  for (const auto& c : r.removed_chunks) {
    o.Id(c.id);
    o.Str(c.pack);
  }
  o.U32(static_cast<uint32_t>(r.removed_packs.size()));
  for (const auto& p : r.removed_packs) o.Str(p);
  o.U64(XxHash64(reinterpret_cast<const uint8_t*>(o.str().data()), o.str().size()));
  return std::move(o.str());
}

Result<LogRecord> DecodeLogRecord(const std::string& s) {
  if (s.size() < sizeof kLogMagic + 8 || std::memcmp(s.data(), kLogMagic, sizeof kLogMagic) != 0)
    return Status::Corruption("not a chunkstore log record");
  const size_t body = s.size() - 8;
  uint64_t check = 0;
  for (int i = 0; i < 8; ++i) check |= static_cast<uint64_t>(static_cast<uint8_t>(s[body + i])) << (8 * i);
  if (XxHash64(reinterpret_cast<const uint8_t*>(s.data()), body) != check)
    return Status::Corruption("log record fails its xxHash64 check");
  In in(s, body);
  in.Take(sizeof kLogMagic);
  LogRecord r;
  const uint8_t kind = in.U8();
  if (kind < LogRecord::kPublish || kind > LogRecord::kGc)
    return Status::Unsupported("log record of unknown kind " + std::to_string(kind) +
                               " (written by a newer chunkstore?)");
  r.kind = static_cast<LogRecord::Kind>(kind);
  r.time = static_cast<int64_t>(in.U64());
  for (uint32_t n = in.Count(10), i = 0; i < n; ++i) {
    LogRecord::Pack p;
    p.name = in.Str();
    p.size = in.U64();
    r.packs.push_back(std::move(p));
  }
  for (uint32_t n = in.Count(61), i = 0; i < n; ++i) {
    LogRecord::Chunk c;
    c.id = in.Id();
    c.pack = in.U32();
    c.loc.offset = in.U64();
    c.loc.raw_len = in.U32();
    c.loc.stored_len = in.U32();
    const uint8_t codec = in.U8();
    c.loc.codec = static_cast<Codec>(codec);
    c.loc.xxh64 = in.U64();
    if (c.pack >= r.packs.size()) return Status::Corruption("log record names a pack it does not list");
    if (codec != static_cast<uint8_t>(Codec::kRaw) && codec != static_cast<uint8_t>(Codec::kZlib))
      return Status::Corruption("log record has a chunk of unknown codec " + std::to_string(codec));
    r.chunks.push_back(c);
  }
  for (uint32_t n = in.Count(57), i = 0; i < n; ++i) {
    ObjectRow ob;
    ob.id = in.Id();
    ob.size = in.U64();
    ob.chunk_count = in.U32();
    ob.manifest = in.Bytes();
    ob.created = static_cast<int64_t>(in.U64());
    const uint8_t pinned = in.U8();
    if (pinned > 1) return Status::Corruption("log record has a malformed object entry");
    ob.pinned = pinned == 1;
    r.objects.push_back(std::move(ob));
  }
  for (uint32_t n = in.Count(34), i = 0; i < n; ++i) {
    std::string name = in.Str();
    r.names.emplace_back(std::move(name), in.Id());
  }
  for (uint32_t n = in.Count(2), i = 0; i < n; ++i) r.removed_names.push_back(in.Str());
  for (uint32_t n = in.Count(32), i = 0; i < n; ++i) r.removed_objects.push_back(in.Id());
  for (uint32_t n = in.Count(34), i = 0; i < n; ++i) {
    LogRecord::RemovedChunk c;
    c.id = in.Id();
    c.pack = in.Str();
    r.removed_chunks.push_back(std::move(c));
  }
  for (uint32_t n = in.Count(2), i = 0; i < n; ++i) r.removed_packs.push_back(in.Str());
  if (!in.ok() || !in.at_end()) return Status::Corruption("log record is malformed");
  return r;
}

}  // namespace chunkstore::internal
