// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the chunker's cut points are those of a plain single
// scan written as the reference crate does it, and the same however the
// input is split. The first bytes choose the parameters and the split;
// about half the inputs use chunks long enough for the two-stream scan.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "../support/chunker_reference.h"
#include "chunkstore/chunker.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  chunkstore::ChunkerParams p;
  const bool long_chunks = data[3] & 4;
  p.min_size = long_chunks ? 256 + data[0] * 8u : 64 + data[0] % 64;
  p.avg_size = (long_chunks ? 4096u : 256u) << (data[1] % 3);
  p.max_size = long_chunks ? 65536 : 1024 << (data[2] % 2);
  p.level = data[3] % 4;
  if (!p.Validate().ok()) return 0;
  // Long chunks need long inputs, which libFuzzer grows to only slowly:
  // those inputs are repeated to at least 96 KiB (two windows of the
  // largest chunk and more), each copy xored with its number so that no
  // stretch repeats another.
  std::vector<uint8_t> stretched;
  if (long_chunks && size > 4) {
    stretched.resize((size - 4) * ((98304 + size - 5) / (size - 4)));
    for (size_t i = 0; i < stretched.size(); ++i)
      stretched[i] = static_cast<uint8_t>(data[4 + i % (size - 4)] ^ (i / (size - 4) * 0x9d));
  }
  const uint8_t* in = long_chunks ? stretched.data() : data + 4;
  const size_t n = long_chunks ? stretched.size() : size - 4;
  const auto whole = chunkstore::ChunkBuffer(p, in, n);
  for (size_t i = 0, pos = 0; i < whole.size(); pos += whole[i++].length)
    if (whole[i].offset != pos || whole[i].length != chunkstore::testing::ReferenceCut(p, in + pos, n - pos)) std::abort();
  chunkstore::Chunker c(p);
  std::vector<uint8_t> buf;
  std::vector<uint32_t> cuts;
  size_t fed = 0, step = 1 + data[0] % 97;
  while (fed < n || !buf.empty()) {
    const size_t k = std::min(step, n - fed);
    buf.insert(buf.end(), in + fed, in + fed + k);
    fed += k;
    step = step * 7 % (long_chunks ? 20011 : 131) + 1;
    for (;;) {
      const size_t cut = c.Next(buf.data(), buf.size(), fed == n);
      if (cut == 0) break;
      cuts.push_back(static_cast<uint32_t>(cut));
      buf.erase(buf.begin(), buf.begin() + static_cast<long>(cut));
    }
  }
  if (cuts.size() != whole.size()) std::abort();
  for (size_t i = 0; i < cuts.size(); ++i)
    if (cuts[i] != whole[i].length) std::abort();
  return 0;
}
