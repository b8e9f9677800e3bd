// SPDX-License-Identifier: Apache-2.0
// Change sets (change_set.h): their byte encoding, decoded with bounds
// checks so that a damaged or hostile change set is an error, never a crash
// or an oversized allocation. The layout is in docs/format.md ("Change
// sets"); version 1 is the log record of bucket stores of format 1.
#include "format/change_set.h"

#include <cstring>

#include "chunkstore/store.h"
#include "format/layout.h"

namespace chunkstore::internal {

namespace {

constexpr char kMagicV1[8] = {'C', 'K', 'L', 'O', 'G', '1', 0, 0};
constexpr char kMagicV2[8] = {'C', 'K', 'C', 'H', 'G', '2', 0, 0};
constexpr uint8_t kFlagHmac = 1;
// Objects carry their kind (0 plain, 1 tree) and a tree's refs.
constexpr uint8_t kFlagKinds = 2;
constexpr size_t kHmacSize = 32;

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
  In(std::string_view s, size_t end) : s_(s), end_(end) {}
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
    std::string v(s_.substr(pos_, n));
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
  std::string_view s_;
  size_t end_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// What the HMAC covers ahead of a change set's bytes: where it is kept.
std::string HmacPrefix(const std::string& bound_to) {
  std::string p;
  p.push_back(static_cast<char>(bound_to.size() & 0xff));
  p.push_back(static_cast<char>((bound_to.size() >> 8) & 0xff));
  return p + bound_to;
}

uint64_t LoadU64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

}  // namespace

bool NeedsCurrentFormat(const ChangeSet& c) {
  for (const auto& ob : c.objects)
    if (ob.tree) return true;
  for (const auto& n : c.names)
    if (n.name.find('@') != std::string::npos) return true;
  for (const auto& n : c.removed_names)
    if (n.find('@') != std::string::npos) return true;
  return false;
}

const char* ChangeKindName(ChangeSet::Kind kind) {
  switch (kind) {
    case ChangeSet::kPublish: return "publish";
    case ChangeSet::kTag: return "tag";
    case ChangeSet::kRemoveName: return "remove-name";
    case ChangeSet::kRemoveObject: return "remove-object";
    case ChangeSet::kGc: return "gc";
    case ChangeSet::kCheckpoint: return "checkpoint";
    case ChangeSet::kCheckpointMark: return "checkpoint-mark";
  }
  return "unknown";
}

std::string EncodeChangeSet(const ChangeSet& c, const std::string& secret, const std::string& bound_to) {
  Out o;
  o.str().append(kMagicV2, sizeof kMagicV2);
  bool kinds = false;
  for (const auto& ob : c.objects) kinds = kinds || ob.tree;
  o.U8(static_cast<uint8_t>((secret.empty() ? 0 : kFlagHmac) | (kinds ? kFlagKinds : 0)));
  o.U8(c.kind);
  o.U64(static_cast<uint64_t>(c.time));
  o.U32(static_cast<uint32_t>(c.packs.size()));
  for (const auto& p : c.packs) {
    o.Str(p.name);
    o.U64(p.size);
  }
  o.U32(static_cast<uint32_t>(c.chunks.size()));
  for (const auto& ch : c.chunks) {
    o.Id(ch.id);
    o.U32(ch.pack);
    o.U64(ch.loc.offset);
    o.U32(ch.loc.raw_len);
    o.U32(ch.loc.stored_len);
    o.U8(static_cast<uint8_t>(ch.loc.codec));
    o.U64(ch.loc.xxh64);
  }
  o.U32(static_cast<uint32_t>(c.objects.size()));
  for (const auto& ob : c.objects) {
    o.Id(ob.id);
    o.U64(ob.size);
    o.U32(ob.chunk_count);
    o.Bytes(ob.manifest);
    o.U64(static_cast<uint64_t>(ob.created));
    o.U8(ob.pinned ? 1 : 0);
    if (!kinds) continue;
    o.U8(ob.tree ? 1 : 0);
    o.U32(static_cast<uint32_t>(ob.refs.size()));
    for (const auto& r : ob.refs) o.Id(r);
  }
  o.U32(static_cast<uint32_t>(c.names.size()));
  for (const auto& n : c.names) {
    o.Str(n.name);
    o.Id(n.object);
    o.U64(static_cast<uint64_t>(n.version));
    o.U64(static_cast<uint64_t>(n.created));
  }
  o.U32(static_cast<uint32_t>(c.removed_names.size()));
  for (const auto& n : c.removed_names) o.Str(n);
  o.U32(static_cast<uint32_t>(c.removed_objects.size()));
  for (const auto& d : c.removed_objects) o.Id(d);
  o.U32(static_cast<uint32_t>(c.removed_chunks.size()));
  for (const auto& rc : c.removed_chunks) {
    o.Id(rc.id);
    o.Str(rc.pack);
  }
  o.U32(static_cast<uint32_t>(c.removed_packs.size()));
  for (const auto& p : c.removed_packs) o.Str(p);
  o.U64(XxHash64(o.str().data(), o.str().size()));
  if (!secret.empty()) {
    const Digest mac = HmacSha256(secret, HmacPrefix(bound_to), o.str().data(), o.str().size());
    o.str().append(reinterpret_cast<const char*>(mac.bytes.data()), kHmacSize);
  }
  return std::move(o.str());
}

Result<ChangeSet> DecodeChangeSet(std::string_view s, const std::string& secret, const std::string& bound_to) {
  const bool v1 = s.size() >= 8 && std::memcmp(s.data(), kMagicV1, 8) == 0;
  const bool v2 = s.size() >= 8 && std::memcmp(s.data(), kMagicV2, 8) == 0;
  if (!v1 && !v2) return Status::Corruption("not a chunkstore change set");
  const uint8_t flags = v2 && s.size() > 8 ? static_cast<uint8_t>(s[8]) : 0;
  if (flags & ~(kFlagHmac | kFlagKinds)) return Status::Unsupported("change set with unknown flags (written by a newer chunkstore?)");
  const size_t mac_len = (flags & kFlagHmac) ? kHmacSize : 0;
  if (s.size() < 8 + 8 + mac_len + (v2 ? 1 : 0)) return Status::Corruption("change set is truncated");
  const size_t checked = s.size() - mac_len;  // covered by the HMAC
  const size_t body = checked - 8;            // covered by the xxHash64
  if (XxHash64(s.data(), body) != LoadU64(s.data() + body))
    return Status::Corruption("change set fails its xxHash64 check");
  if (!secret.empty()) {
    if (!mac_len) return Status::Corruption("change set is not signed with the store's secret");
    const Digest mac = HmacSha256(secret, HmacPrefix(bound_to), s.data(), checked);
    if (!ConstantTimeEqual(mac.bytes.data(), s.data() + checked, kHmacSize))
      return Status::Corruption("change set fails its HMAC under the store's secret (forged, or another store's)");
  }
  In in(s, body);
  in.Take(8);
  if (v2) in.U8();
  ChangeSet c;
  const uint8_t kind = in.U8();
  if (kind < ChangeSet::kPublish || kind > (v1 ? ChangeSet::kGc : ChangeSet::kCheckpointMark))
    return Status::Unsupported("change set of unknown kind " + std::to_string(kind) +
                               " (written by a newer chunkstore?)");
  c.kind = static_cast<ChangeSet::Kind>(kind);
  c.time = static_cast<int64_t>(in.U64());
  auto bad_pack = [](const std::string& name) {
    return Status::Corruption("change set names a pack '" + name.substr(0, 64) +
                              "' that is not a chunkstore pack name");
  };
  for (uint32_t n = in.Count(10), i = 0; i < n; ++i) {
    ChangeSet::Pack p;
    p.name = in.Str();
    p.size = in.U64();
    if (in.ok() && !IsPackName(p.name)) return bad_pack(p.name);
    c.packs.push_back(std::move(p));
  }
  for (uint32_t n = in.Count(61), i = 0; i < n; ++i) {
    ChangeSet::Chunk ch;
    ch.id = in.Id();
    ch.pack = in.U32();
    ch.loc.offset = in.U64();
    ch.loc.raw_len = in.U32();
    ch.loc.stored_len = in.U32();
    const uint8_t codec = in.U8();
    ch.loc.codec = static_cast<Codec>(codec);
    ch.loc.xxh64 = in.U64();
    if (!in.ok()) break;
    if (ch.pack >= c.packs.size()) return Status::Corruption("change set names a pack it does not list");
    if (!KnownCodec(codec))
      return Status::Corruption("change set has a chunk of unknown codec " + std::to_string(codec));
    c.chunks.push_back(ch);
  }
  for (uint32_t n = in.Count(57), i = 0; i < n; ++i) {
    ObjectRow ob;
    ob.id = in.Id();
    ob.size = in.U64();
    ob.chunk_count = in.U32();
    ob.manifest = in.Bytes();
    ob.created = static_cast<int64_t>(in.U64());
    const uint8_t pinned = in.U8();
    if (pinned > 1) return Status::Corruption("change set has a malformed object entry");
    ob.pinned = pinned == 1;
    if (flags & kFlagKinds) {
      const uint8_t kind = in.U8();
      if (kind > 1) return Status::Corruption("change set has an object of unknown kind " + std::to_string(kind));
      ob.tree = kind == 1;
      const uint32_t refs = in.Count(32);
      if (refs > 0 && !ob.tree) return Status::Corruption("change set gives refs to an object that is not a tree");
      ob.refs.reserve(refs);
      for (uint32_t r = 0; r < refs; ++r) {
        ob.refs.push_back(in.Id());
        // Sorted and distinct, as TreeRefs gives them: one tree has one list.
        if (in.ok() && r > 0 && !(ob.refs[r - 1] < ob.refs[r]))
          return Status::Corruption("change set has a tree whose refs are not sorted and distinct");
      }
    }
    c.objects.push_back(std::move(ob));
  }
  for (uint32_t n = in.Count(v1 ? 34 : 50), i = 0; i < n; ++i) {
    ChangeSet::Name e;
    e.name = in.Str();
    e.object = in.Id();
    if (v2) {
      e.version = static_cast<int64_t>(in.U64());
      e.created = static_cast<int64_t>(in.U64());
      if (e.version < 0 || e.created < 0) return Status::Corruption("change set has a malformed name version");
    }
    if (in.ok() && !ValidateName(e.name).ok())
      return Status::Corruption("change set has a malformed name: " + ValidateName(e.name).message());
    c.names.push_back(std::move(e));
  }
  for (uint32_t n = in.Count(2), i = 0; i < n; ++i) {
    c.removed_names.push_back(in.Str());
    if (in.ok() && !ValidateName(c.removed_names.back()).ok())
      return Status::Corruption("change set removes a malformed name");
  }
  for (uint32_t n = in.Count(32), i = 0; i < n; ++i) c.removed_objects.push_back(in.Id());
  for (uint32_t n = in.Count(34), i = 0; i < n; ++i) {
    ChangeSet::RemovedChunk rc;
    rc.id = in.Id();
    rc.pack = in.Str();
    if (in.ok() && !IsPackName(rc.pack)) return bad_pack(rc.pack);
    c.removed_chunks.push_back(std::move(rc));
  }
  for (uint32_t n = in.Count(2), i = 0; i < n; ++i) {
    c.removed_packs.push_back(in.Str());
    if (in.ok() && !IsPackName(c.removed_packs.back())) return bad_pack(c.removed_packs.back());
  }
  if (!in.ok() || !in.at_end()) return Status::Corruption("change set is malformed");
  if (c.kind == ChangeSet::kCheckpointMark && !c.empty()) return Status::Corruption("a checkpoint mark that is not empty");
  return c;
}

}  // namespace chunkstore::internal
