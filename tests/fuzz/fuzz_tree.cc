// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the tree decoder on arbitrary bytes. Whatever decodes
// must be canonical (re-encode to the same bytes) and hold only names a
// restore can trust: one path component each, strictly increasing.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "format/tree.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chunkstore::internal;
  // Most inputs lack the magic; give half of them a head start.
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (size > 0 && (data[0] & 1)) bytes = std::string("CKTREE1\n") + bytes.substr(1);
  auto t = DecodeTree(bytes);
  if (!t.ok()) return 0;
  for (size_t i = 0; i < t->entries.size(); ++i) {
    const auto& e = t->entries[i];
    if (e.name.empty() || e.name == "." || e.name == ".." || e.name.find('/') != std::string::npos ||
        e.name.find('\0') != std::string::npos)
      std::abort();
    if (i > 0 && !(t->entries[i - 1].name < e.name)) std::abort();
    if (e.mode & ~kModeBits) std::abort();
  }
  auto again = EncodeTree(*t);
  if (!again.ok() || *again != bytes) std::abort();
  return 0;
}
