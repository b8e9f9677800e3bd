// SPDX-License-Identifier: Apache-2.0
// Manifest encodings (manifest.h) and their validating decoder.
#include "format/manifest.h"

#define XXH_STATIC_LINKING_ONLY  // the state may live on the stack
#include <xxhash.h>

#include <cstring>

#include "format/pack_format.h"

namespace chunkstore::internal {

namespace {

constexpr char kMagicV2[4] = {'C', 'K', 'M', '2'};

uint64_t Check(const Digest& object, uint64_t size, const char* body, size_t n) {
  XXH64_state_t state;
  XXH64_state_t* st = &state;
  XXH64_reset(st, 0);
  XXH64_update(st, object.bytes.data(), 32);
  uint8_t le[8];
  for (int i = 0; i < 8; ++i) le[i] = static_cast<uint8_t>(size >> (8 * i));
  XXH64_update(st, le, 8);
  if (n) XXH64_update(st, body, n);
  return XXH64_digest(st);
}

void PutEntries(char* p, const std::vector<ManifestEntry>& entries) {
  for (const auto& e : entries) {
    std::memcpy(p, e.id.bytes.data(), 32);
    for (int i = 0; i < 4; ++i) p[32 + i] = static_cast<char>(e.length >> (8 * i));
    p += kManifestEntrySize;
  }
}

void PutCheck(std::string* out, const Digest& object, uint64_t size) {
  const size_t body = out->size() - kManifestCheckSize;
  const uint64_t check = Check(object, size, out->data(), body);
  for (int i = 0; i < 8; ++i) (*out)[body + i] = static_cast<char>(check >> (8 * i));
}

Status ReadEntries(const uint8_t* p, size_t count, uint64_t size, std::vector<ManifestEntry>* entries) {
  entries->resize(count);
  uint64_t total = 0;
  for (auto& e : *entries) {
    std::memcpy(e.id.bytes.data(), p, 32);
    e.length = 0;
    for (int i = 3; i >= 0; --i) e.length = e.length << 8 | p[32 + i];
    if (e.length == 0 || e.length > kMaxRecordLength)
      return Status::Corruption("manifest lists chunk " + e.id.Hex() + " with impossible length " +
                                std::to_string(e.length));
    total += e.length;
    p += kManifestEntrySize;
  }
  if (total != size)
    return Status::Corruption("manifest chunk lengths sum to " + std::to_string(total) +
                              " bytes, but the object's size is " + std::to_string(size));
  return Status::OK();
}

uint64_t StoredCheck(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

}  // namespace

std::string EncodeManifest(const Digest& object, uint64_t size, const std::vector<ManifestEntry>& entries) {
  std::string out(entries.size() * kManifestEntrySize + kManifestCheckSize, '\0');
  PutEntries(out.data(), entries);
  PutCheck(&out, object, size);
  return out;
}

std::string EncodeManifest(const Digest& object, uint64_t size, const std::vector<ManifestEntry>& entries,
                           const std::vector<ChainState>& chain) {
  if (entries.empty() || chain.size() != entries.size()) return EncodeManifest(object, size, entries);
  const size_t n = entries.size();
  std::string out(sizeof kMagicV2 + n * kManifestEntrySize + (n - 1) * kChainStateSize + kManifestCheckSize, '\0');
  std::memcpy(out.data(), kMagicV2, sizeof kMagicV2);
  char* p = out.data() + sizeof kMagicV2;
  PutEntries(p, entries);
  p += n * kManifestEntrySize;
  for (size_t i = 1; i < n; ++i, p += kChainStateSize)
    if (chain[i].valid) chain[i].Store(reinterpret_cast<uint8_t*>(p));
  PutCheck(&out, object, size);
  return out;
}

Result<Manifest> DecodeManifestWithChain(const Digest& object, uint64_t size, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  Manifest m;
  // Version 2, when it says so and checks out; a version-1 list whose
  // first chunk id happens to begin with the magic is tried as that.
  if (n >= sizeof kMagicV2 + kManifestEntrySize + kManifestCheckSize &&
      std::memcmp(p, kMagicV2, sizeof kMagicV2) == 0 && (n + kChainStateSize - sizeof kMagicV2 - kManifestCheckSize) %
                                                            (kManifestEntrySize + kChainStateSize) ==
                                                        0) {
    const size_t count =
        (n + kChainStateSize - sizeof kMagicV2 - kManifestCheckSize) / (kManifestEntrySize + kChainStateSize);
    const size_t body = n - kManifestCheckSize;
    if (StoredCheck(p + body) == Check(object, size, static_cast<const char*>(data), body)) {
      CHUNKSTORE_RETURN_IF_ERROR(ReadEntries(p + sizeof kMagicV2, count, size, &m.entries));
      m.chain.resize(count);
      m.chain[0] = ChainStart();
      const uint8_t* s = p + sizeof kMagicV2 + count * kManifestEntrySize;
      uint64_t start = 0;
      for (size_t i = 0; i < count; ++i) {
        if (i > 0) {
          // A state exists where the chunk holds a block boundary, and
          // only there.
          if (BlockCeil(start) <= size) m.chain[i] = ChainState::Load(s);
          s += kChainStateSize;
        }
        start += m.entries[i].length;
      }
      return m;
    }
  }
  if (n < kManifestCheckSize || (n - kManifestCheckSize) % kManifestEntrySize != 0)
    return Status::Corruption("manifest has a torn entry (" + std::to_string(n) + " bytes)");
  const size_t body = n - kManifestCheckSize;
  if (StoredCheck(p + body) != Check(object, size, static_cast<const char*>(data), body))
    return Status::Corruption("manifest fails its check (damaged, or not this object's)");
  CHUNKSTORE_RETURN_IF_ERROR(ReadEntries(p, body / kManifestEntrySize, size, &m.entries));
  return m;
}

Result<std::vector<ManifestEntry>> DecodeManifest(const Digest& object, uint64_t size, const void* data, size_t n) {
  Result<Manifest> m = DecodeManifestWithChain(object, size, data, n);
  if (!m.ok()) return m.status();
  return std::move(m->entries);
}

Status CheckInline(const Digest& object, uint64_t size, const std::string& content) {
  if (content.size() != size)
    return Status::Corruption("inline content has " + std::to_string(content.size()) +
                              " bytes, but the object's size is " + std::to_string(size));
  if (Sha256::Of(content.data(), content.size()) != object)
    return Status::Corruption("inline content does not match its SHA-256");
  return Status::OK();
}

}  // namespace chunkstore::internal
