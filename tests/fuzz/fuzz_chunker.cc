// libFuzzer target: the streaming chunker gives the same cut points however
// the input is split. The first bytes choose the parameters and the split.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "chunkstore/chunker.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  chunkstore::ChunkerParams p;
  p.min_size = 64 + data[0] % 64;
  p.avg_size = 256 << (data[1] % 3);
  p.max_size = 1024 << (data[2] % 2);
  p.level = data[3] % 4;
  if (!p.Validate().ok()) return 0;
  const uint8_t* in = data + 4;
  const size_t n = size - 4;
  const auto whole = chunkstore::ChunkBuffer(p, in, n);
  chunkstore::Chunker c(p);
  std::vector<uint8_t> buf;
  std::vector<uint32_t> cuts;
  size_t fed = 0, step = 1 + data[0] % 97;
  while (fed < n || !buf.empty()) {
    const size_t k = std::min(step, n - fed);
    buf.insert(buf.end(), in + fed, in + fed + k);
    fed += k;
    step = step * 7 % 131 + 1;
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
