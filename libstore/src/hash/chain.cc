// SPDX-License-Identifier: Apache-2.0
// Chain states (chain.h).
#include "hash/chain.h"

#include "hash/sha256_pair.h"

namespace chunkstore::internal {

void ChainState::Store(uint8_t out[32]) const {
  for (int i = 0; i < 8; ++i)
    for (int b = 0; b < 4; ++b) out[4 * i + b] = static_cast<uint8_t>(h[i] >> (24 - 8 * b));
}

ChainState ChainState::Load(const uint8_t in[32]) {
  ChainState s;
  for (int i = 0; i < 8; ++i)
    s.h[i] = static_cast<uint32_t>(in[4 * i]) << 24 | static_cast<uint32_t>(in[4 * i + 1]) << 16 |
             static_cast<uint32_t>(in[4 * i + 2]) << 8 | in[4 * i + 3];
  s.valid = true;
  return s;
}

ChainState ChainStart() {
  ChainState s;
  Sha256InitialState(s.h.data());
  s.valid = true;
  return s;
}

void AdvanceChain(ChainState* s, const uint8_t* p, size_t blocks) { Sha256Compress(s->h.data(), p, blocks); }

Digest FinishChain(ChainState s, uint64_t done, const uint8_t* rest, size_t n) {
  return Sha256FinishFrom(s.h.data(), rest, n, done + n);
}

}  // namespace chunkstore::internal
