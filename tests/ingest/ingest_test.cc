// SPDX-License-Identifier: Apache-2.0
// The ingest pipeline: on inputs that change size under it, and its
// threaded form at several thread counts against the inline one.
#include <atomic>
#include <chrono>
#include <sstream>
#include <thread>

#include "hash/digest.h"
#include "ingest/ingest.h"
#include "hash/sha256_pair.h"
#include "test_util.h"

namespace chunkstore::internal {
namespace {

class CollectSink final : public IngestSink {
 public:
  bool IsKnown(const Digest&, uint32_t) override { return true; }
  Status Accept(IngestedChunk& c) override {
    bytes.insert(bytes.end(), c.data, c.data + c.length);
    return Status::OK();
  }
  std::vector<uint8_t> bytes;
};

TEST(Ingest, AFileThatGrowsAfterItsSizeWasTakenIsReadWhole) {
  testing::TempDir dir;
  const auto first = testing::RandomBytes(3000, 1), more = testing::RandomBytes(70000, 2);
  testing::WriteFile(dir / "f", first);
  auto src = FileSource::Open(dir / "f");
  ASSERT_TRUE(src.ok());
  {
    std::ofstream f(dir / "f", std::ios::binary | std::ios::app);
    f.write(reinterpret_cast<const char*>(more.data()), static_cast<std::streamsize>(more.size()));
  }
  IngestConfig cfg;
  cfg.chunking = testing::SmallChunks().chunking;
  cfg.threads = 1;
  CollectSink sink;
  auto out = Ingest(**src, cfg, &sink);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  auto all = first;
  all.insert(all.end(), more.begin(), more.end());
  EXPECT_EQ(out->size, all.size());
  EXPECT_EQ(sink.bytes, all);
  EXPECT_EQ(out->object_id, Sha256::Of(all.data(), all.size()));
}

TEST(Ingest, AFileThatShrankIsReadToItsNewEnd) {
  testing::TempDir dir;
  const auto data = testing::RandomBytes(50000, 3);
  testing::WriteFile(dir / "f", data);
  auto src = FileSource::Open(dir / "f");
  ASSERT_TRUE(src.ok());
  std::filesystem::resize_file(dir / "f", 1000);
  IngestConfig cfg;
  cfg.chunking = testing::SmallChunks().chunking;
  cfg.threads = 1;
  CollectSink sink;
  auto out = Ingest(**src, cfg, &sink);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(sink.bytes, std::vector<uint8_t>(data.begin(), data.begin() + 1000));
}

// Records every chunk as Accept sees it; can be slow (so the producer
// fills the ring and hands chunks on itself) or fail at a given chunk.
// Either pipeline thread may call Accept, but never two at once.
class RecordingSink final : public IngestSink {
 public:
  bool IsKnown(const Digest&, uint32_t) override { return false; }
  Status Accept(IngestedChunk& c) override {
    if (in_flight.fetch_add(1) != 0) overlapped = true;
    Status s = Record(c);
    in_flight.fetch_sub(1);
    return s;
  }
  std::atomic<int> in_flight{0};
  std::atomic<bool> overlapped{false};
  bool slow = false;
  size_t fail_at = SIZE_MAX;
  std::vector<ChunkBoundary> chunks;
  std::vector<Digest> ids;
  std::vector<uint8_t> bytes;

 private:
  Status Record(const IngestedChunk& c) {
    if (chunks.size() == fail_at) return Status::IOError("sink fails at chunk " + std::to_string(fail_at));
    if (slow) std::this_thread::sleep_for(std::chrono::microseconds(300));
    chunks.push_back({c.offset, c.length});
    ids.push_back(c.id);
    bytes.insert(bytes.end(), c.data, c.data + c.length);
    return Status::OK();
  }
};

struct PipelineCase {
  unsigned threads;
  int source;  // 0 bytes in memory, 1 file, 2 stream
  bool slow;
};

class IngestPipeline : public ::testing::TestWithParam<PipelineCase> {};

void CheckAgainstInline(const PipelineCase& pc) {
  testing::TempDir dir;
  const auto data = testing::RandomBytes(400000, 11);
  testing::WriteFile(dir / "f", data);
  IngestConfig cfg;
  cfg.chunking = testing::SmallChunks().chunking;
  cfg.threads = pc.threads;
  RecordingSink sink;
  sink.slow = pc.slow;
  std::istringstream stream(std::string(data.begin(), data.end()));
  BytesSource bytes(data.data(), data.size());
  StreamSource streamed(stream);
  std::unique_ptr<FileSource> file;
  Source* src = &bytes;
  if (pc.source == 1) {
    auto f = FileSource::Open(dir / "f");
    ASSERT_TRUE(f.ok());
    file = std::move(*f);
    src = file.get();
  } else if (pc.source == 2) {
    src = &streamed;
  }
  auto out = Ingest(*src, cfg, &sink);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_FALSE(sink.overlapped);
  const auto want = ChunkBuffer(cfg.chunking, data.data(), data.size());
  ASSERT_GT(want.size(), 20u);  // enough chunks to wrap the ring several times
  ASSERT_EQ(sink.chunks.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(sink.chunks[i].offset, want[i].offset) << i;
    EXPECT_EQ(sink.chunks[i].length, want[i].length) << i;
    EXPECT_EQ(sink.ids[i], Sha256::Of(data.data() + want[i].offset, want[i].length)) << i;
  }
  EXPECT_EQ(sink.bytes, data);
  EXPECT_EQ(out->chunks, want.size());
  EXPECT_EQ(out->size, data.size());
  EXPECT_EQ(out->object_id, Sha256::Of(data.data(), data.size()));
}

// Both ways of sharing the object hash's pass (with any unhashed chunk,
// or only with its own chunk: Sha256PairKeepsSpeed) must give the same.
TEST_P(IngestPipeline, GivesTheInlineChunksIdsAndOrder) {
  for (int keeps : {1, 0}) {
    SCOPED_TRACE(keeps ? "object hash paired with any chunk" : "object hash paired with its own");
    SetSha256PairKeepsSpeedForTesting(keeps);
    CheckAgainstInline(GetParam());
    SetSha256PairKeepsSpeedForTesting(-1);
    if (HasFatalFailure()) return;
  }
}

TEST_P(IngestPipeline, StopsAtTheSinksFailure) {
  const PipelineCase pc = GetParam();
  const auto data = testing::RandomBytes(400000, 12);
  IngestConfig cfg;
  cfg.chunking = testing::SmallChunks().chunking;
  cfg.threads = pc.threads;
  RecordingSink sink;
  sink.slow = pc.slow;
  sink.fail_at = 7;
  BytesSource src(data.data(), data.size());
  auto out = Ingest(src, cfg, &sink);
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(out.status().IsIOError()) << out.status().ToString();
  EXPECT_EQ(sink.chunks.size(), 7u);
}

std::string CaseName(const ::testing::TestParamInfo<PipelineCase>& i) {
  const char* const sources[] = {"Bytes", "File", "Stream"};
  return std::to_string(i.param.threads) + "Threads" + sources[i.param.source] +
         (i.param.slow ? "SlowSink" : "");
}

INSTANTIATE_TEST_SUITE_P(Threads, IngestPipeline,
                         ::testing::Values(PipelineCase{2, 0, false}, PipelineCase{2, 1, false},
                                           PipelineCase{2, 2, false}, PipelineCase{2, 0, true},
                                           PipelineCase{2, 1, true}, PipelineCase{3, 1, false},
                                           PipelineCase{4, 0, true}, PipelineCase{8, 2, false},
                                           PipelineCase{8, 1, true}),
                         CaseName);

}  // namespace
}  // namespace chunkstore::internal
