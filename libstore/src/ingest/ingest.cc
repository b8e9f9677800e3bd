// SPDX-License-Identifier: Apache-2.0
// Ingest on the calling thread (small inputs, one thread), and the choice
// between it and the threaded pipeline (ingest_pipeline.cc).
//
// Sources that already sit in memory are chunked in place; others are read
// in kReadBlock pieces.
#include "ingest/ingest.h"

#include <cstring>
#include <memory>
#include <optional>

#include "format/compress.h"
#include "hash/sha256_pair.h"
#include "ingest/ingest_pipeline.h"

namespace chunkstore::internal {

bool ProcessHashed(IngestedChunk& c, const Compression& with, IngestSink* sink, const Digest* expect) {
  if (expect && c.id != *expect) return false;
  c.known = sink->IsKnown(c.id, c.length);
  c.codec = c.known ? Codec::kRaw : TryCompress(c.data, c.length, &c.packed, {with});
  if (c.codec == Codec::kRaw) c.packed.clear();
  return true;
}

Result<size_t> Fill(Source& source, uint8_t* buf, size_t want, bool* eof) {
  size_t have = 0;
  while (have < want) {
    Result<size_t> r = source.Read(buf + have, want - have);
    if (!r.ok()) return r.status();
    if (*r == 0) {
      *eof = true;
      break;
    }
    have += *r;
  }
  return have;
}

namespace {

void ProcessChunk(IngestedChunk& c, const Compression& with, IngestSink* sink) {
  c.id = Sha256::Of(c.data, c.length);
  ProcessHashed(c, with, sink, nullptr);
}

// Everything on the calling thread: small inputs and threads == 1.
Result<IngestOutcome> IngestInline(Source& source, const IngestConfig& cfg, IngestSink* sink) {
  Chunker chunker(cfg.chunking);
  // Used only for inputs of more than one chunk: for a single chunk the
  // object id is the chunk id, and small files are often many.
  Sha256Stream object_hash;
  IngestOutcome out;
  IngestedChunk c;
  // whole_input: this chunk is all of the input (first chunk, input ended).
  auto emit = [&](const uint8_t* data, size_t n, bool whole_input) -> Status {
    c.offset = out.size;
    c.length = static_cast<uint32_t>(n);
    c.data = data;
    c.whole_input = whole_input;
    ProcessChunk(c, whole_input && n <= cfg.inline_max ? Compression::None() : cfg.compress, sink);
    if (whole_input) {
      out.object_id = c.id;
      out.chain = {ChainStart()};
    } else {
      object_hash.MarkChunk();
      object_hash.Update(data, n);
    }
    out.size += n;
    ++out.chunks;
    return sink->Accept(c);
  };
  if (const uint8_t* whole = source.Whole()) {
    const size_t n = static_cast<size_t>(*source.Size());
    size_t pos = 0;
    if (n > 0 && chunker.Next(whole, n, true) == n) {
      // One chunk: the object id is the chunk id; hash once.
      c.offset = 0;
      c.length = static_cast<uint32_t>(n);
      c.data = whole;
      c.whole_input = true;
      ProcessChunk(c, n > cfg.inline_max ? cfg.compress : Compression::None(), sink);
      out.size = n;
      out.chunks = 1;
      out.object_id = c.id;
      out.chain = {ChainStart()};
      CHUNKSTORE_RETURN_IF_ERROR(sink->Accept(c));
      return out;
    }
    chunker.Reset();
    while (pos < n) {
      const size_t len = chunker.Next(whole + pos, n - pos, true);
      CHUNKSTORE_RETURN_IF_ERROR(emit(whole + pos, len, false));
      pos += len;
    }
  } else {
    const size_t max = cfg.chunking.max_size;
    // An input of known small size gets a buffer of its size (and a byte
    // more, to see its end), not one of the largest chunk: small files are
    // often many.
    size_t capacity = max;
    if (const auto size = source.Size(); size && *size + 1 < max) capacity = static_cast<size_t>(*size) + 1;
    std::unique_ptr<uint8_t[]> buf(new uint8_t[capacity]);
    size_t filled = 0;
    bool eof = false;
    for (;;) {
      if (!eof && filled < max) {
        if (filled == capacity) {  // it grew while being read: widen
          std::unique_ptr<uint8_t[]> wider(new uint8_t[max]);
          std::memcpy(wider.get(), buf.get(), filled);
          buf = std::move(wider);
          capacity = max;
        }
        Result<size_t> r = Fill(source, buf.get() + filled, std::min(kReadBlock, capacity - filled), &eof);
        if (!r.ok()) return r.status();
        filled += *r;
      }
      if (filled == 0 && eof) break;
      const size_t len = chunker.Next(buf.get(), filled, eof);
      if (len == 0) continue;
      CHUNKSTORE_RETURN_IF_ERROR(emit(buf.get(), len, out.chunks == 0 && eof && len == filled));
      std::memmove(buf.get(), buf.get() + len, filled - len);
      filled -= len;
    }
  }
  if (out.chunks == 0) {
    out.object_id = Sha256::Of(nullptr, 0);  // empty input
  } else if (out.chain.empty()) {
    out.object_id = object_hash.Finish();
    out.chain = std::move(object_hash.chain());
  }
  return out;
}

}  // namespace

bool UsesPipeline(const IngestConfig& config, std::optional<uint64_t> size) {
  // Thread start-up costs more than it saves on inputs of a few chunks.
  const bool small = size && *size <= 2ull * config.chunking.max_size;
  return config.threads > 1 && !small;
}

Result<IngestOutcome> Ingest(Source& source, const IngestConfig& config, IngestSink* sink) {
  const std::optional<uint64_t> size = source.Size();
  if (!UsesPipeline(config, size)) return IngestInline(source, config, sink);
  const std::vector<ManifestEntry>* expected = config.expected;
  if (expected) {
    // Only a candidate of this input's size and chunk limits is worth
    // checking, and only on an input that can be read again from where it
    // first differs.
    uint64_t total = 0;
    for (const ManifestEntry& e : *expected) {
      if (e.length > config.chunking.max_size) expected = nullptr;
      total += e.length;
    }
    if (!size || total != *size || total == 0) expected = nullptr;
    if (expected && !source.Whole() && !source.Rewind(0)) expected = nullptr;
  }
  return RunPipeline(source, config, sink, expected);
}

}  // namespace chunkstore::internal
