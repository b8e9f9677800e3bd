// SPDX-License-Identifier: Apache-2.0
// Sha256Pair: the SHA-256 digests of two messages, computed together.
//
// One SHA-256 is a chain: each round needs the one before, so a single
// message leaves the core's SHA unit idle for most of each instruction's
// latency. Two independent messages interleaved round by round fill those
// gaps: per core, 1.2-1.3x the bytes per second of one message at a time
// on the Intel x86-64 cores this project has been measured on, and 1.9x on
// an AMD EPYC. The ingest pipeline and sequential reads hash chunks two at
// a time this way (Sha256Pair, or Sha256LanesWhile for runs of messages),
// and Sha256Stream pairs an object's running hash with a chunk's.
//
// Where the CPU has no SHA extensions, or the build is not for x86-64, the
// two digests come from OpenSSL one after the other. Either way the result
// is the plain SHA-256 of each message; tests compare the two paths.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "hash/chain.h"
#include "hash/digest.h"

namespace chunkstore::internal {

// Sets *da to the SHA-256 of a[0, na) and *db to that of b[0, nb). The two
// ranges may overlap or be the same; either length may be zero.
// Thread-safe.
void Sha256Pair(const void* a, size_t na, Digest* da, const void* b, size_t nb, Digest* db);

// The raw compression function, for chain states (chain.h): SHA-256's
// initial state, `blocks` 64-byte blocks at p taken into state h, and the
// digest of a message whose chain stood at h with `rest` left to hash and
// `total` bytes in all. With the SHA extensions this library's own rounds
// do it; without, OpenSSL's.
void Sha256InitialState(uint32_t h[8]);
void Sha256Compress(uint32_t h[8], const uint8_t* p, size_t blocks);
Digest Sha256FinishFrom(uint32_t h[8], const uint8_t* rest, size_t n, uint64_t total);

// One message's SHA-256, computed a stretch at a time alongside a
// Sha256Stream (Sha256Stream::UpdateAlongside), so that a running hash
// whose own chunk is already hashed can still share its pass with
// another chunk's. Not thread-safe; the message's bytes must stay put
// until Finish.
class Sha256Partial {
 public:
  // Begins the message data[0, n); forgets any earlier one.
  void Start(const void* data, size_t n);
  // Begins a stretch of a chain instead (chain.h): n (a multiple of 64)
  // bytes at data, taken into the chain from state `from`. FinishChain,
  // not Finish, ends it.
  void StartFrom(const ChainState& from, const void* data, size_t n);
  // Whether whole 64-byte blocks of the message are still unhashed (a
  // Sha256Stream can take them along).
  bool HasBlocks() const { return n_ - done_ >= 64; }
  // Hashes up to `blocks` more whole blocks alone (while no partner has
  // any) and says whether whole blocks are left. A message started
  // without interleaving is only marked as out of blocks: its Finish does
  // all of its work, as after Sha256PairBlocks.
  bool Advance(size_t blocks);
  // Hashes what is left of the message and returns its digest.
  Digest Finish();
  // Hashes what is left of a stretch begun with StartFrom and returns the
  // chain's state after it.
  ChainState FinishChain();

 private:
  friend class Sha256Stream;
  friend void Sha256PairBlocks(Sha256Partial& a, Sha256Partial& b);
  bool interleave_ = false;
  bool chain_ = false;
  uint32_t h_[8] = {};
  const uint8_t* p_ = nullptr;
  size_t n_ = 0;
  size_t done_ = 0;  // a multiple of 64
};

// Hashes the whole blocks a and b have in common, interleaved: afterwards
// at least one of them has no whole block left (HasBlocks() is false), and
// the caller finishes it and may start another message in its place, so
// a run of messages keeps both lanes busy to its end. A message started
// without interleaving is only marked as out of blocks: its Finish does
// all of its work (and its partner is left as it was).
void Sha256PairBlocks(Sha256Partial& a, Sha256Partial& b);

// What Sha256LanesWhile's next() did for a lane: began a message in it,
// settled one without hashing (it is asked again), or found none waiting.
enum class LaneStart { kStarted, kSettled, kNone };

// Hashes messages through two lanes (Sha256PairBlocks), each lane
// starting the next message as soon as its own is done, as they arrive
// (a reader's read-ahead queue). next(lane, &k, last) begins message k in
// the lane (lane.Start or lane.StartFrom);
// last says no other lane is busy, so that kNone ends the run (the caller
// may then stop counting this run as active, under the same lock as its
// queue). A lane left alone hashes in stretches of 64 KiB and asks next()
// for its partner between them, so a message that arrives meanwhile is
// hashed beside it. done(k, lane) follows for every message begun, in
// the order they finish, and ends it (lane.Finish or lane.FinishChain).
// Both are called on the calling thread, one at a time.
void Sha256LanesWhile(const std::function<LaneStart(Sha256Partial&, size_t*, bool)>& next,
                      const std::function<void(size_t, Sha256Partial&)>& done);

// A running SHA-256 (an object's) that can hash other messages (chunks)
// in the same pass as it takes its own bytes: UpdateAlongside pairs the
// running hash with another message the way Sha256Pair pairs two.
// Interleaves when Sha256PairInterleaves() held at construction;
// otherwise takes other's blocks alone. It also records the chain states
// a manifest keeps (chain.h): MarkChunk before each chunk's bytes.
// Not copyable; not thread-safe (one thread at a time feeds it).
class Sha256Stream {
 public:
  Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;

  void Update(const void* data, size_t n);
  // Takes the first k bytes of data[0, n) into the stream and returns k,
  // hashing other's next blocks in the same pass: k is n, or less when
  // other ran out of whole blocks first (then the caller finishes other,
  // and passes the rest on with another message or through Update).
  // Without interleaving, takes all n bytes and leaves other untouched.
  size_t UpdateAlongside(const void* data, size_t n, Sha256Partial& other);
  // Whether this stream interleaves (Sha256PairInterleaves() at
  // construction).
  bool Interleaves() const { return interleave_; }
  // The next bytes given begin a chunk: the chain state at the first
  // block boundary at or past here is recorded for it (invalid if the
  // stream ends first).
  void MarkChunk();
  // The states recorded, one for each MarkChunk, in order (after Finish).
  std::vector<ChainState>& chain() { return chain_; }
  // The digest of everything given; the stream is spent afterwards.
  Digest Finish();

 private:
  // Moves up to n bytes of p into the open (incomplete) block, hashing it
  // once full; returns how many. Nothing when no block is open.
  size_t FillOpenBlock(const uint8_t* p, size_t n);
  // The state is at a block boundary: a chunk waiting for one gets it.
  void AtBoundary() {
    if (!waiting_) return;
    ChainState& s = chain_.back();
    std::memcpy(s.h.data(), state_, sizeof state_);
    s.valid = true;
    waiting_ = false;
  }

  bool interleave_;
  uint32_t state_[8];
  uint8_t block_[64];  // bytes of the current, incomplete block
  size_t buffered_ = 0;
  uint64_t total_ = 0;
  std::vector<ChainState> chain_;
  bool waiting_ = false;  // chain_.back() waits for the next boundary
};

// Whether Sha256Pair interleaves on this machine (SHA extensions present
// and not turned off below).
bool Sha256PairInterleaves();

// Whether a message hashed alongside another keeps about the speed it has
// alone: true where two interleaved messages run at least 1.6x the bytes
// per second of one (measured once per process, in about 0.3 ms, the
// first time this is asked). Where they do not (about 1.2x on the Intel
// cores measured), pairing a hash that everything waits for, such as an
// object's running hash, slows it down. False without interleaving.
bool Sha256PairKeepsSpeed();

// Tests only: turns the interleaved path off (false) or back on where the
// CPU has it, so both paths can be checked to give the same digests.
void SetSha256PairInterleaveForTesting(bool enabled);

// Tests only: makes Sha256PairKeepsSpeed() answer `keeps` (0 or 1)
// whatever was measured, or go back to the measurement (-1).
void SetSha256PairKeepsSpeedForTesting(int keeps);

}  // namespace chunkstore::internal
