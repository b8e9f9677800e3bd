// SPDX-License-Identifier: Apache-2.0
// Reads a whole file's bytes, for tests and the campaigns (no GoogleTest
// here, so the campaign binary can use it too).
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace chunkstore::testing {

// In blocks, not through istreambuf_iterator: the ASan build runs unoptimized,
// where a per-byte iterator costs seconds per file. A file that cannot be
// opened reads as empty.
inline std::vector<uint8_t> ReadFileBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  while (f.read(reinterpret_cast<char*>(buf), sizeof buf) || f.gcount() > 0)
    out.insert(out.end(), buf, buf + f.gcount());
  return out;
}

}  // namespace chunkstore::testing
