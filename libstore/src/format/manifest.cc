// Manifest encoding and validating decoder.
#include "format/manifest.h"

#define XXH_STATIC_LINKING_ONLY  // the state may live on the stack
#include <xxhash.h>

#include <cstring>

#include "format/pack_format.h"

namespace chunkstore::internal {

namespace {

uint64_t Check(const Digest& object, uint64_t size, const char* entries, size_t n) {
  XXH64_state_t state;
  XXH64_state_t* st = &state;
  XXH64_reset(st, 0);
  XXH64_update(st, object.bytes.data(), 32);
  uint8_t le[8];
  for (int i = 0; i < 8; ++i) le[i] = static_cast<uint8_t>(size >> (8 * i));
  XXH64_update(st, le, 8);
  if (n) XXH64_update(st, entries, n);
  return XXH64_digest(st);
}

}  // namespace

std::string EncodeManifest(const Digest& object, uint64_t size,
                           const std::vector<ManifestEntry>& entries) {
  const size_t body = entries.size() * kManifestEntrySize;
  std::string out(body + kManifestCheckSize, '\0');
  char* p = out.data();
  for (const auto& e : entries) {
    std::memcpy(p, e.id.bytes.data(), 32);
    for (int i = 0; i < 4; ++i) p[32 + i] = static_cast<char>(e.length >> (8 * i));
    p += kManifestEntrySize;
  }
  const uint64_t check = Check(object, size, out.data(), body);
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(check >> (8 * i));
  return out;
}

Result<std::vector<ManifestEntry>> DecodeManifest(const Digest& object, uint64_t size,
                                                  const void* data, size_t n) {
  if (n < kManifestCheckSize || (n - kManifestCheckSize) % kManifestEntrySize != 0)
    return Status::Corruption("manifest has a torn entry (" + std::to_string(n) + " bytes)");
  const auto* p = static_cast<const uint8_t*>(data);
  const size_t body = n - kManifestCheckSize;
  uint64_t stored = 0;
  for (int i = 7; i >= 0; --i) stored = stored << 8 | p[body + i];
  if (stored != Check(object, size, static_cast<const char*>(data), body))
    return Status::Corruption("manifest fails its check (damaged, or not this object's)");
  std::vector<ManifestEntry> entries(body / kManifestEntrySize);
  uint64_t total = 0;
  for (auto& e : entries) {
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
  return entries;
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
