// SPDX-License-Identifier: Apache-2.0
// Ingest: turn a Source into hashed (and maybe compressed) chunks, in order.
//
// This is the hot path of prepare and publish. Cut points are found on the
// calling thread. The whole-object SHA-256 advances one chunk at a time,
// in order, hashing that chunk's own id in the same pass (sha256_pair.h);
// it and the sink's hand-ons (in input order, one at a time) are taken by
// whichever of the two threads is free (while an earlier version's chunks
// are checked, by the consumer thread alone), and a thread with neither to
// do hashes the newest chunks two at a time; beyond two threads extra
// workers hash the oldest. Queues are bounded by a fixed ring of chunk
// slots, so memory does not grow with the input: at most (2 * threads + 4)
// slots of max-chunk-size bytes plus one read block.
#pragma once

#include <cstdint>
#include <vector>

#include "chunkstore/chunker.h"
#include "chunkstore/status.h"
#include "format/compress.h"
#include "hash/chain.h"
#include "hash/digest.h"
#include "format/manifest.h"
#include "ingest/source.h"

namespace chunkstore::internal {

struct IngestedChunk {
  uint64_t offset = 0;
  uint32_t length = 0;
  Digest id;
  const uint8_t* data = nullptr;  // valid only inside IngestSink::Accept
  bool known = false;             // the sink said it already has this chunk
  bool whole_input = false;       // this chunk is all of the input
  Codec codec = Codec::kRaw;      // not kRaw: packed holds a form worth storing
  std::vector<uint8_t> packed;
};

class IngestSink {
 public:
  virtual ~IngestSink() = default;
  // Called from worker threads, concurrently. true means the chunk's bytes
  // are not needed (already stored): no compression is attempted. A false
  // answer for a chunk that is in fact present only costs work.
  virtual bool IsKnown(const Digest& id, uint32_t length) = 0;
  // Called once per chunk, in input order, one call at a time (not always
  // from the same thread).
  virtual Status Accept(IngestedChunk& chunk) = 0;
};

struct IngestConfig {
  ChunkerParams chunking;
  Compression compress = Compression::None();  // how new chunks are compressed
  unsigned threads = 2;  // total threads to use; 1 = everything inline
  // An input of 1 to inline_max bytes becomes an inline object, stored as
  // it is: no compression is attempted for it.
  uint32_t inline_max = 0;
  // A likely earlier version of the input (same size), or nullptr. Its
  // chunks are checked in order at its cut points instead of being cut
  // again; from the first chunk that differs on, the input is cut as
  // usual. The outcome is the same either way. Used for inputs that run
  // through the pipeline (larger than two maximum chunks) and can be
  // re-read (in memory, or Source::Rewind).
  const std::vector<ManifestEntry>* expected = nullptr;
};

struct IngestOutcome {
  Digest object_id;
  uint64_t size = 0;
  uint64_t chunks = 0;
  // The object hash's chain state at each chunk (hash/chain.h), one per
  // chunk in order: what a version-2 manifest keeps.
  std::vector<ChainState> chain;
};

// Whether an input of this size runs through the threaded pipeline (the
// only path that uses IngestConfig::expected).
bool UsesPipeline(const IngestConfig& config, std::optional<uint64_t> size);

Result<IngestOutcome> Ingest(Source& source, const IngestConfig& config, IngestSink* sink);

}  // namespace chunkstore::internal
