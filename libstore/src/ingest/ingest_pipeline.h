// SPDX-License-Identifier: Apache-2.0
// Steps the single-thread ingest (ingest.cc) and the threaded pipeline
// (ingest_pipeline.cc) share, and the pipeline's entry point.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ingest/ingest.h"

namespace chunkstore::internal {

// Sources that do not sit in memory are read this much at a time.
constexpr size_t kReadBlock = 256 * 1024;

// What follows a chunk's hash (c.id is set): the sink's known-chunk check,
// then a compression attempt for a chunk it does not have. Returns false,
// having done nothing more, if the id is not *expect: a chunk that differs
// from an expected one is cut again.
bool ProcessHashed(IngestedChunk& c, const Compression& with, IngestSink* sink, const Digest* expect);

// Reads from source into buf until it holds `want` bytes or the input ends
// (then sets *eof).
Result<size_t> Fill(Source& source, uint8_t* buf, size_t want, bool* eof);

// Runs the threaded pipeline over source (see ingest.h); expected has been
// checked to describe an input of this size that can be read again, or is
// nullptr.
Result<IngestOutcome> RunPipeline(Source& source, const IngestConfig& cfg, IngestSink* sink,
                                  const std::vector<ManifestEntry>* expected);

}  // namespace chunkstore::internal
