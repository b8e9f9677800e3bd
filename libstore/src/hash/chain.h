// SPDX-License-Identifier: Apache-2.0
// Chain states: SHA-256 midstates of an object at block boundaries, the
// links that let a full read prove the object's id chunk by chunk, on
// several cores at once.
//
// An object's id is the SHA-256 of its whole content: one chain of
// compression steps over 64-byte blocks, which cannot be split. But the
// state of that chain after any whole number of blocks is 32 bytes that
// anyone can carry. The manifest records, for each chunk after the first,
// the state after the first block boundary at or past the chunk's start
// (A_i, after C(b_i) bytes, where b_i is the chunk's offset and C rounds
// up to a multiple of 64). Then:
//   - the blocks wholly inside chunk i, [C(b_i), B(b_{i+1})), advance A_i
//     to Z_i: work that needs only chunk i's bytes, for any chunk, in any
//     order, on any core;
//   - the one block that straddles chunks i and i+1, [B(b_{i+1}),
//     C(b_{i+1})), advances Z_i to a state that must equal A_{i+1};
//   - the last chunk's Z, its last partial block and the padding give the
//     digest, which must equal the object's id.
// If every link holds, the bytes read are the object's, whatever the
// manifest claims: the states are the manifest's, but only the true
// content reproduces the id at the end. A forged or damaged manifest
// fails a link or the final digest; a damaged chunk fails its link.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hash/digest.h"

namespace chunkstore::internal {

struct ChainState {
  std::array<uint32_t, 8> h{};
  bool valid = false;  // false: no block boundary falls inside this chunk (a short last chunk)

  bool operator==(const ChainState& o) const { return valid == o.valid && h == o.h; }
  bool operator!=(const ChainState& o) const { return !(*this == o); }
  // The 32 bytes a manifest stores (big-endian words, as a digest is).
  void Store(uint8_t out[32]) const;
  static ChainState Load(const uint8_t in[32]);
};

// The state before any byte (SHA-256's initial values).
ChainState ChainStart();

// The offsets around a chunk that starts at `start` (block-rounded down
// and up).
inline uint64_t BlockFloor(uint64_t x) { return x & ~uint64_t{63}; }
inline uint64_t BlockCeil(uint64_t x) { return (x + 63) & ~uint64_t{63}; }

// Advances s over `blocks` whole 64-byte blocks at p.
void AdvanceChain(ChainState* s, const uint8_t* p, size_t blocks);
// The digest of a message whose first `done` bytes (a multiple of 64) left
// the chain at s, and whose remaining bytes are rest[0, n).
Digest FinishChain(ChainState s, uint64_t done, const uint8_t* rest, size_t n);

}  // namespace chunkstore::internal
