// Manifest encoding and validating decoder.
#include "manifest.h"

#include <cstring>

#include "pack_format.h"

namespace chunkstore::internal {

std::string EncodeManifest(const std::vector<ManifestEntry>& entries) {
  std::string out(entries.size() * kManifestEntrySize, '\0');
  char* p = out.data();
  for (const auto& e : entries) {
    std::memcpy(p, e.id.bytes.data(), 32);
    for (int i = 0; i < 4; ++i) p[32 + i] = static_cast<char>(e.length >> (8 * i));
    p += kManifestEntrySize;
  }
  return out;
}

Result<std::vector<ManifestEntry>> DecodeManifest(const void* data, size_t n,
                                                  uint64_t expected_size) {
  if (n % kManifestEntrySize != 0)
    return Status::Corruption("manifest has a torn entry (" + std::to_string(n) + " bytes)");
  const auto* p = static_cast<const uint8_t*>(data);
  std::vector<ManifestEntry> entries(n / kManifestEntrySize);
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
  if (total != expected_size)
    return Status::Corruption("manifest chunk lengths sum to " + std::to_string(total) +
                              " bytes, but the object's size is " + std::to_string(expected_size));
  return entries;
}

}  // namespace chunkstore::internal
