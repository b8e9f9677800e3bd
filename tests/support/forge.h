// SPDX-License-Identifier: Apache-2.0
// Forging a directory store's chunk lists in tests: what a writer with
// access to the store's files could do to make an id name other bytes.
// The manifest of an object gets two of its chunks swapped, with chain
// states recomputed for the swapped content and every check that covers
// the manifest made to hold, in the index and in the change log alike, so
// only reading the content back and hashing it shows the forgery.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "format/manifest.h"
#include "hash/digest.h"
#include "hash/sha256_pair.h"
#include "log_forge.h"
#include "test_util.h"

namespace chunkstore::testing {

inline std::string HexToBytes(const std::string& hex) {
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return bytes;
}

// Swaps chunks 1 and 2 of object `id` (whose content is `data`) in the
// closed store at store_dir. The object must have at least three chunks.
inline void ForgeSwappedChunks(const std::string& store_dir, const std::string& id, const std::vector<uint8_t>& data) {
  const internal::Digest digest = *internal::Digest::FromHex(id.substr(7));
  const std::string where = " WHERE hex(id) = upper('" + id.substr(7) + "')";
  const std::string old_bytes = HexToBytes(Sql(store_dir, "SELECT hex(manifest) FROM objects" + where));
  auto m = internal::DecodeManifestWithChain(digest, data.size(), old_bytes.data(), old_bytes.size());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_GE(m->entries.size(), 3u);
  std::vector<uint64_t> offsets;
  for (uint64_t at = 0; const auto& e : m->entries) offsets.push_back(std::exchange(at, at + e.length));
  std::swap(m->entries[1], m->entries[2]);
  std::swap(offsets[1], offsets[2]);
  internal::Sha256Stream s;
  for (size_t i = 0; i < m->entries.size(); ++i) {
    s.MarkChunk();
    s.Update(data.data() + offsets[i], m->entries[i].length);
  }
  s.Finish();
  const std::string forged = internal::EncodeManifest(digest, data.size(), m->entries, s.chain());
  Sql(store_dir, "UPDATE objects SET manifest = x'" +
                     internal::HexEncode(reinterpret_cast<const uint8_t*>(forged.data()), forged.size()) + "'" + where);
  RewriteLog(store_dir, [&](internal::ChangeSet& c) {
    for (auto& o : c.objects)
      if (o.id == digest) o.manifest = forged;
  });
}

}  // namespace chunkstore::testing
