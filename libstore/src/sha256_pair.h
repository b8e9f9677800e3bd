// Sha256Pair: the SHA-256 digests of two messages, computed together.
//
// One SHA-256 is a chain: each round needs the one before, so a single
// message leaves the core's SHA unit idle for most of each instruction's
// latency. Two independent messages interleaved round by round fill those
// gaps; on this project's x86-64 machines (Intel SHA extensions) that is
// about 1.2-1.3x the bytes per second per core of one message at a time.
// The ingest pipeline and sequential reads hash chunks two at a time this
// way, and Sha256Stream pairs an object's running hash with a chunk's.
//
// Where the CPU has no SHA extensions, or the build is not for x86-64, the
// two digests come from OpenSSL one after the other. Either way the result
// is the plain SHA-256 of each message; tests compare the two paths.
#pragma once

#include <cstddef>
#include <cstdint>

#include "digest.h"

namespace chunkstore::internal {

// Sets *da to the SHA-256 of a[0, na) and *db to that of b[0, nb). The two
// ranges may overlap or be the same; either length may be zero.
// Thread-safe.
void Sha256Pair(const void* a, size_t na, Digest* da, const void* b, size_t nb, Digest* db);

// A running SHA-256 (an object's) that can hash a chunk's own digest in
// the same pass as it takes the chunk's bytes: UpdateAndHash pairs the
// two the way Sha256Pair pairs two messages. Interleaves when
// Sha256PairInterleaves() held at construction; otherwise OpenSSL does
// both. Not copyable; not thread-safe (one thread feeds it).
class Sha256Stream {
 public:
  Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;

  void Update(const void* data, size_t n);
  // Update(data, n), and returns the SHA-256 of data[0, n) alone.
  Digest UpdateAndHash(const void* data, size_t n);
  // The digest of everything given; the stream is spent afterwards.
  Digest Finish();

 private:
  bool interleave_;
  uint32_t state_[8];
  uint8_t block_[64];  // bytes of the current, incomplete block
  size_t buffered_ = 0;
  uint64_t total_ = 0;
  Sha256 openssl_;
};

// Whether Sha256Pair interleaves on this machine (SHA extensions present
// and not turned off below).
bool Sha256PairInterleaves();

// Tests only: turns the interleaved path off (false) or back on where the
// CPU has it, so both paths can be checked to give the same digests.
void SetSha256PairInterleaveForTesting(bool enabled);

}  // namespace chunkstore::internal
