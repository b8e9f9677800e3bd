// SPDX-License-Identifier: Apache-2.0
// Micro benchmarks (Google Benchmark) of the pieces on the hot paths:
// chunker, SHA-256, xxHash64, zlib, index lookups and small-object rows,
// record framing.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <random>

#include <unistd.h>

#include "chunkstore/chunker.h"
#include "format/compress.h"
#include "hash/digest.h"
#include "index/index.h"
#include "format/manifest.h"
#include "format/pack_format.h"
#include "hash/sha256_pair.h"

namespace {

using namespace chunkstore;
using namespace chunkstore::internal;

std::vector<uint8_t> Random(size_t n) {
  std::vector<uint8_t> v(n);
  std::mt19937_64 rng(1);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

std::vector<uint8_t> Text(size_t n) {
  std::vector<uint8_t> v;
  std::mt19937_64 rng(2);
  static const char* words[] = {"store ", "chunk ", "the ", "object ", "hash ", "pack ", "index\n"};
  while (v.size() < n) {
    const char* w = words[rng() % 7];
    v.insert(v.end(), w, w + std::strlen(w));
  }
  v.resize(n);
  return v;
}

void Chunk(benchmark::State& state, const std::vector<uint8_t>& data) {
  const ChunkerParams p;
  for (auto _ : state) benchmark::DoNotOptimize(ChunkBuffer(p, data.data(), data.size()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * data.size()));
}

void BM_ChunkerRandom(benchmark::State& s) { static auto d = Random(64 << 20); Chunk(s, d); }
void BM_ChunkerZeros(benchmark::State& s) { static std::vector<uint8_t> d(64 << 20, 0); Chunk(s, d); }
void BM_ChunkerText(benchmark::State& s) { static auto d = Text(64 << 20); Chunk(s, d); }
BENCHMARK(BM_ChunkerRandom)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ChunkerZeros)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ChunkerText)->Unit(benchmark::kMillisecond);

// A 1 MiB message through Sha256::Of: this library's one-message rounds
// where the CPU has SHA extensions, else OpenSSL's.
void BM_Sha256(benchmark::State& state) {
  static auto d = Random(1 << 20);
  for (auto _ : state) benchmark::DoNotOptimize(Sha256::Of(d.data(), d.size()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * d.size()));
}
BENCHMARK(BM_Sha256);

// The same message through OpenSSL's EVP interface (the Sha256 class),
// which Sha256::Of stands in for where the CPU has SHA extensions.
void BM_Sha256OpenSsl(benchmark::State& state) {
  static auto d = Random(1 << 20);
  Sha256 h;
  for (auto _ : state) {
    h.Reset();
    h.Update(d.data(), d.size());
    benchmark::DoNotOptimize(h.Finish());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * d.size()));
}
BENCHMARK(BM_Sha256OpenSsl);

// A 1 MiB message through Sha256Stream, the running hash an object's id
// comes from (its own rounds where the CPU has SHA extensions, else
// OpenSSL's): the speed of the one chain every ingest waits for. The
// message is one 64 KiB piece sixteen times over, so it is read from the
// nearest cache: the chain's best rate, an upper bound.
void BM_Sha256Stream(benchmark::State& state) {
  static auto d = Random(64 << 10);
  for (auto _ : state) {
    internal::Sha256Stream stream;
    for (int i = 0; i < 16; ++i) stream.Update(d.data(), d.size());
    benchmark::DoNotOptimize(stream.Finish());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 16 * d.size()));
}
BENCHMARK(BM_Sha256Stream);

// Two 1 MiB messages per iteration, interleaved where the CPU allows:
// compare its bytes per second with BM_Sha256's.
void BM_Sha256Pair(benchmark::State& state) {
  static auto d = Random(2 << 20);
  const size_t half = d.size() / 2;
  internal::Digest a, b;
  for (auto _ : state) {
    internal::Sha256Pair(d.data(), half, &a, d.data() + half, half, &b);
    benchmark::DoNotOptimize(a);
    benchmark::DoNotOptimize(b);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * d.size()));
}
BENCHMARK(BM_Sha256Pair);

void BM_Sha256Small(benchmark::State& state) {
  static auto d = Random(256);
  for (auto _ : state) benchmark::DoNotOptimize(Sha256::Of(d.data(), d.size()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_Sha256Small);

void BM_XxHash64(benchmark::State& state) {
  static auto d = Random(1 << 20);
  for (auto _ : state) benchmark::DoNotOptimize(XxHash64(d.data(), d.size()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * d.size()));
}
BENCHMARK(BM_XxHash64);

void BM_ZlibText(benchmark::State& state) {
  static auto d = Text(1 << 20);
  std::vector<uint8_t> out;
  for (auto _ : state) benchmark::DoNotOptimize(TryCompress(d.data(), d.size(), &out, {Compression::Zlib(1)}));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * d.size()));
}
BENCHMARK(BM_ZlibText);

void BM_ZstdText(benchmark::State& state) {
  static auto d = Text(1 << 20);
  std::vector<uint8_t> out;
  for (auto _ : state) benchmark::DoNotOptimize(TryCompress(d.data(), d.size(), &out, {Compression::Zstd(3)}));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * d.size()));
}
BENCHMARK(BM_ZstdText);

void BM_CompressRandomSampled(benchmark::State& state) {
  static auto d = Random(1 << 20);
  std::vector<uint8_t> out;
  for (auto _ : state) benchmark::DoNotOptimize(TryCompress(d.data(), d.size(), &out, {Compression()}));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * d.size()));
}
BENCHMARK(BM_CompressRandomSampled);

void IndexLookup(benchmark::State& state, bool hit) {
  StoreMeta meta;
  Index::OpenOptions o;
  o.create = &meta;
  auto index = std::move(Index::Open(":memory:", o)).value();
  std::vector<Digest> ids;
  index->Begin();
  for (int i = 0; i < 100000; ++i) {
    const Digest d = Sha256::Of(&i, sizeof i);
    ids.push_back(d);
    index->InsertChunk(d, ChunkLocation{1, static_cast<uint64_t>(i) * 100, 100, 100, Codec::kRaw, 7});
  }
  index->Commit();
  size_t k = 0;
  for (auto _ : state) {
    Digest d = ids[k++ % ids.size()];
    if (!hit) d.bytes[0] ^= 0xff;
    benchmark::DoNotOptimize(index->FindChunk(d));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
void BM_IndexLookupHit(benchmark::State& s) { IndexLookup(s, true); }
void BM_IndexLookupMiss(benchmark::State& s) { IndexLookup(s, false); }
BENCHMARK(BM_IndexLookupHit);
BENCHMARK(BM_IndexLookupMiss);

// The index rows of small objects, alone: what the small-object targets
// can reach at most with SQLite as the index. 2,000 inline objects of
// 256 bytes (one object row each, content included), through the index's
// own prepared statements, in one durable transaction on an on-disk WAL
// database.
constexpr int kSmallObjects = 2000;

struct SmallIndex {
  std::filesystem::path dir;
  std::unique_ptr<Index> index;
  std::vector<ObjectRow> rows;
  explicit SmallIndex(const char* tag) {
    dir = std::filesystem::temp_directory_path() / ("chunkstore-micro-" + std::string(tag) + "-" +
                                                    std::to_string(::getpid()));
    for (int i = 0; i < kSmallObjects; ++i) {
      ObjectRow r;
      r.id = Sha256::Of(&i, sizeof i);
      r.size = 256;
      r.chunk_count = 0;  // inline
      r.manifest.assign(256, static_cast<char>(i));
      r.created = 1700000000;
      r.pinned = true;
      rows.push_back(std::move(r));
    }
  }
  ~SmallIndex() {
    index.reset();
    std::filesystem::remove_all(dir);
  }
  void Fresh() {
    index.reset();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    StoreMeta meta;
    Index::OpenOptions o;
    o.create = &meta;
    o.durable = true;
    o.busy_timeout_ms = 1000;
    index = std::move(Index::Open((dir / "index.db").string(), o)).value();
  }
  void InsertAll() {
    if (!index->Begin().ok()) std::abort();
    for (int i = 0; i < kSmallObjects; ++i)
      if (!index->InsertObject(rows[i]).ok()) std::abort();
    if (!index->Commit().ok()) std::abort();
  }
};

void BM_IndexSmallObjectRows(benchmark::State& state) {
  SmallIndex s("rows");
  for (auto _ : state) {
    state.PauseTiming();
    s.Fresh();
    state.ResumeTiming();
    s.InsertAll();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kSmallObjects);
}
BENCHMARK(BM_IndexSmallObjectRows)->Unit(benchmark::kMillisecond)->UseRealTime();

// The lookup an open of a small object makes (its object row, with the
// first chunk's location when it has one, in one statement outside any
// explicit transaction).
void BM_IndexSmallObjectOpen(benchmark::State& state) {
  SmallIndex s("open");
  s.Fresh();
  s.InsertAll();
  size_t k = 0;
  for (auto _ : state) {
    auto r = s.index->FindObjectAndFirstChunk(s.rows[k++ % kSmallObjects].id);
    if (!r.ok() || !r->has_value()) std::abort();
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_IndexSmallObjectOpen)->UseRealTime();

// The same lookups made by one Store::OpenReaders call: all 2,000 inside one
// read transaction.
void BM_IndexSmallObjectOpenBatch(benchmark::State& state) {
  SmallIndex s("open-batch");
  s.Fresh();
  s.InsertAll();
  for (auto _ : state) {
    if (!s.index->BeginRead().ok()) std::abort();
    for (int i = 0; i < kSmallObjects; ++i) {
      auto r = s.index->FindObjectAndFirstChunk(s.rows[i].id);
      if (!r.ok() || !r->has_value()) std::abort();
      benchmark::DoNotOptimize(r);
    }
    s.index->Rollback();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kSmallObjects);
}
BENCHMARK(BM_IndexSmallObjectOpenBatch)->UseRealTime();

void BM_RecordEncodeDecode(benchmark::State& state) {
  RecordHeader h;
  h.raw_len = 1 << 20;
  h.stored_len = 1 << 20;
  h.chunk_id = Sha256::Of("x", 1);
  uint8_t buf[kRecordHeaderSize];
  for (auto _ : state) {
    EncodeRecordHeader(h, buf);
    benchmark::DoNotOptimize(DecodeRecordHeader(buf, sizeof buf));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_RecordEncodeDecode);

}  // namespace

BENCHMARK_MAIN();
