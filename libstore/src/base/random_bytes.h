// SPDX-License-Identifier: Apache-2.0
// Deterministic pseudo-random bytes from a seed, shared by the benchmark
// tool and the tests so both describe their inputs the same way.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace chunkstore {

inline std::vector<uint8_t> SeededRandomBytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> out(n);
  std::mt19937_64 rng(seed);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t v = rng();
    std::memcpy(out.data() + i, &v, 8);
  }
  for (; i < n; ++i) out[i] = static_cast<uint8_t>(rng());
  return out;
}

}  // namespace chunkstore
