// SPDX-License-Identifier: Apache-2.0
// Ingest given an expected chunk list (an earlier version of the input):
// chunks are taken at the expected cut points while their ids match, and
// the input is cut as usual from the first chunk that differs. Whatever
// the expected list, the bytes, their order and the object id are those of
// the input.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "hash/digest.h"
#include "ingest/ingest.h"
#include "test_util.h"

namespace chunkstore::internal {
namespace {

class Sink final : public IngestSink {
 public:
  bool IsKnown(const Digest&, uint32_t) override { return false; }
  Status Accept(IngestedChunk& c) override {
    if (got.size() == fail_at) return Status::IOError("sink fails at chunk " + std::to_string(fail_at));
    if (slow) std::this_thread::sleep_for(std::chrono::microseconds(300));
    if (c.id != Sha256::Of(c.data, c.length)) return Status::Corruption("a chunk's id is not its hash");
    got.push_back({c.offset, c.length});
    bytes.insert(bytes.end(), c.data, c.data + c.length);
    return Status::OK();
  }
  bool slow = false;
  size_t fail_at = SIZE_MAX;
  std::vector<ChunkBoundary> got;
  std::vector<uint8_t> bytes;
};

using Cuts = std::vector<ChunkBoundary>;

// The manifest of `data` cut at the given boundaries.
std::vector<ManifestEntry> Expect(const std::vector<uint8_t>& data, const Cuts& cuts) {
  std::vector<ManifestEntry> e;
  for (const ChunkBoundary& c : cuts) e.push_back({Sha256::Of(data.data() + c.offset, c.length), c.length});
  return e;
}

// Cuts of n bytes into pieces of `piece` bytes (not where the chunker
// would cut, so a result made of them shows they were used).
Cuts Pieces(size_t n, uint32_t piece) {
  Cuts c;
  for (size_t off = 0; off < n; off += piece)
    c.push_back({off, static_cast<uint32_t>(std::min<size_t>(piece, n - off))});
  return c;
}

// The expected cuts before the chunk before `differs` (whose cut depends
// on differs' first byte), then the chunker's cuts of the rest.
Cuts ThenCut(const ChunkerParams& p, const std::vector<uint8_t>& data, const Cuts& expected, size_t differs) {
  const size_t keep = differs == 0 ? 0 : differs - 1;
  Cuts c(expected.begin(), expected.begin() + static_cast<std::ptrdiff_t>(keep));
  const size_t from = keep == 0 ? 0 : c.back().offset + c.back().length;
  for (ChunkBoundary b : ChunkBuffer(p, data.data() + from, data.size() - from)) {
    b.offset += from;
    c.push_back(b);
  }
  return c;
}

struct Case {
  unsigned threads;
  bool file;  // a file (read in blocks, rewound) rather than bytes in memory
  bool slow;  // a slow sink: the producer fills the ring and hashes ahead
};

class IngestExpected : public ::testing::TestWithParam<Case> {
 protected:
  IngestExpected() {
    cfg_.chunking = testing::SmallChunks().chunking;
    cfg_.threads = GetParam().threads;
    sink_.slow = GetParam().slow;
  }

  // Ingests `data` (written to a file first when the case says so), with
  // `expected` as the earlier version; `after_open` may change the file.
  Result<IngestOutcome> Run(const std::vector<uint8_t>& data, const std::vector<ManifestEntry>* expected,
                            const std::function<void(const std::string&)>& after_open = nullptr) {
    cfg_.expected = expected;
    if (!GetParam().file) {
      BytesSource src(data.data(), data.size());
      return Ingest(src, cfg_, &sink_);
    }
    const std::string path = dir_ / "f";
    testing::WriteFile(path, data);
    auto src = FileSource::Open(path);
    if (!src.ok()) return src.status();
    if (after_open) after_open(path);
    return Ingest(**src, cfg_, &sink_);
  }

  // A new sink for another run in the same test.
  void NewSink() {
    sink_ = Sink{};
    sink_.slow = GetParam().slow;
  }

  void ExpectChunks(const Cuts& want) {
    ASSERT_EQ(sink_.got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(sink_.got[i].offset, want[i].offset) << "chunk " << i;
      EXPECT_EQ(sink_.got[i].length, want[i].length) << "chunk " << i;
    }
  }

  void ExpectWhole(const Result<IngestOutcome>& out, const std::vector<uint8_t>& data) {
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(sink_.bytes, data);
    EXPECT_EQ(out->size, data.size());
    EXPECT_EQ(out->chunks, sink_.got.size());
    EXPECT_EQ(out->object_id, Sha256::Of(data.data(), data.size()));
  }

  testing::TempDir dir_;
  IngestConfig cfg_;
  Sink sink_;
};

const size_t kSize = 300000;
const uint32_t kPiece = 10000;  // the chunker cuts at 1-16 KiB, never at every 10,000 bytes

TEST_P(IngestExpected, TheSameInputAtItsOwnCutsGivesTheSameChunks) {
  const auto data = testing::RandomBytes(kSize, 21);
  const Cuts cuts = ChunkBuffer(cfg_.chunking, data.data(), data.size());
  const auto expected = Expect(data, cuts);
  auto out = Run(data, &expected);
  ExpectWhole(out, data);
  ExpectChunks(cuts);
}

// The chunker decides a cut by the byte after it (the next chunk's
// first): an edit there can move the cut before it, and the result must
// still be the chunker's.
TEST_P(IngestExpected, AnEditOfAChunksFirstByteGivesTheChunkersCuts) {
  const auto data = testing::RandomBytes(kSize, 30);
  const Cuts cuts = ChunkBuffer(cfg_.chunking, data.data(), data.size());
  const auto expected = Expect(data, cuts);
  for (size_t j : {size_t{1}, size_t{2}, cuts.size() / 2, cuts.size() - 1}) {
    SCOPED_TRACE("edit at the first byte of chunk " + std::to_string(j));
    auto edited = data;
    edited[cuts[j].offset] ^= 0x5a;
    NewSink();
    auto out = Run(edited, &expected);
    ExpectWhole(out, edited);
    ExpectChunks(ChunkBuffer(cfg_.chunking, edited.data(), edited.size()));
  }
}

TEST_P(IngestExpected, ExpectedCutsAreKeptWhileTheBytesMatch) {
  const auto data = testing::RandomBytes(kSize, 22);
  const Cuts pieces = Pieces(data.size(), kPiece);
  const auto expected = Expect(data, pieces);
  auto out = Run(data, &expected);
  ExpectWhole(out, data);
  ExpectChunks(pieces);
}

TEST_P(IngestExpected, AnEditIsCutFromTheStartOfTheChunkThatDiffers) {
  const auto original = testing::RandomBytes(kSize, 23);
  const Cuts pieces = Pieces(original.size(), kPiece);
  const auto expected = Expect(original, pieces);
  for (size_t at : {size_t{0}, kSize / 2 + 17, kSize - 1}) {
    SCOPED_TRACE("edit at " + std::to_string(at));
    auto edited = original;
    edited[at] ^= 0x5a;
    NewSink();
    auto out = Run(edited, &expected);
    ExpectWhole(out, edited);
    ExpectChunks(ThenCut(cfg_.chunking, edited, pieces, at / kPiece));
  }
}

// Files only: bytes in memory cannot change size under the ingest.
class IngestExpectedFile : public IngestExpected {};

TEST_P(IngestExpectedFile, AnInputThatGoesOnPastTheLastExpectedChunkIsCutFromIt) {
  const auto data = testing::RandomBytes(kSize, 24), more = testing::RandomBytes(5000, 25);
  const Cuts pieces = Pieces(data.size(), kPiece);
  const auto expected = Expect(data, pieces);
  // The size is taken at open; the file then grows.
  auto out = Run(data, &expected, [&](const std::string& path) {
    std::ofstream f(path, std::ios::binary | std::ios::app);
    f.write(reinterpret_cast<const char*>(more.data()), static_cast<std::streamsize>(more.size()));
  });
  auto all = data;
  all.insert(all.end(), more.begin(), more.end());
  ExpectWhole(out, all);
  ExpectChunks(ThenCut(cfg_.chunking, all, pieces, pieces.size() - 1));
}

TEST_P(IngestExpectedFile, AnInputThatEndsEarlyIsCutFromTheChunkItEndsIn) {
  const auto data = testing::RandomBytes(kSize, 26);
  const Cuts pieces = Pieces(data.size(), kPiece);
  const auto expected = Expect(data, pieces);
  const size_t cut_to = kSize / 3 + 123;
  auto out = Run(data, &expected, [&](const std::string& path) { std::filesystem::resize_file(path, cut_to); });
  const std::vector<uint8_t> left(data.begin(), data.begin() + cut_to);
  ExpectWhole(out, left);
  ExpectChunks(ThenCut(cfg_.chunking, left, pieces, cut_to / kPiece));
}

TEST_P(IngestExpected, AListThatCannotDescribeTheInputIsIgnored) {
  const auto data = testing::RandomBytes(kSize, 27);
  const Cuts own = ChunkBuffer(cfg_.chunking, data.data(), data.size());
  // One byte short of the input's size.
  auto short_list = Expect(data, Pieces(data.size(), kPiece));
  --short_list.back().length;
  // Pieces above the store's largest chunk.
  auto too_large = Expect(data, Pieces(data.size(), cfg_.chunking.max_size + 1));
  std::vector<ManifestEntry> empty;
  for (const std::vector<ManifestEntry>* list : {&short_list, &too_large, &empty}) {
    NewSink();
    auto out = Run(data, list);
    ExpectWhole(out, data);
    ExpectChunks(own);
  }
}

TEST_P(IngestExpected, StopsAtTheSinksFailureWhileChecking) {
  const auto data = testing::RandomBytes(kSize, 28);
  const auto expected = Expect(data, Pieces(data.size(), kPiece));
  sink_.fail_at = 5;
  auto out = Run(data, &expected);
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(out.status().IsIOError()) << out.status().ToString();
  EXPECT_EQ(sink_.got.size(), 5u);
}

std::string CaseName(const ::testing::TestParamInfo<Case>& i) {
  return std::to_string(i.param.threads) + "Threads" + (i.param.file ? "File" : "Bytes") +
         (i.param.slow ? "SlowSink" : "");
}

INSTANTIATE_TEST_SUITE_P(Sources, IngestExpected,
                         ::testing::Values(Case{2, false, false}, Case{2, true, false}, Case{2, true, true},
                                           Case{3, false, true}, Case{3, true, false}),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(Sources, IngestExpectedFile,
                         ::testing::Values(Case{2, true, false}, Case{2, true, true}, Case{3, true, false}),
                         CaseName);

// Bytes served through Read only (not in place), that can fail to read
// past a given offset or fail to rewind after its first rewind (the one
// Ingest makes to check that it can).
class FlakySource final : public Source {
 public:
  explicit FlakySource(const std::vector<uint8_t>& data) : data_(data) {}
  Result<size_t> Read(uint8_t* buf, size_t n) override {
    if (pos_ >= fail_at) return Status::IOError("read fails at " + std::to_string(fail_at));
    n = std::min({n, data_.size() - pos_, fail_at - pos_});
    std::memcpy(buf, data_.data() + pos_, n);
    pos_ += n;
    return n;
  }
  std::optional<uint64_t> Size() const override { return data_.size(); }
  std::string Describe() const override { return "flaky source"; }
  bool Rewind(uint64_t offset) override {
    if (++rewinds > 1 && !rewind_again) return false;
    pos_ = static_cast<size_t>(offset);
    return true;
  }
  size_t fail_at = SIZE_MAX;
  bool rewind_again = true;
  int rewinds = 0;

 private:
  const std::vector<uint8_t>& data_;
  size_t pos_ = 0;
};

class IngestExpectedFailure : public ::testing::Test {
 protected:
  IngestExpectedFailure() : original_(testing::RandomBytes(kSize, 31)), edited_(original_) {
    cfg_.chunking = testing::SmallChunks().chunking;
    cfg_.threads = 2;
    pieces_ = Pieces(original_.size(), kPiece);
    expected_ = Expect(original_, pieces_);
    cfg_.expected = &expected_;
    edited_[kSize / 2] ^= 0x5a;  // in piece 15: pieces 0-13 are kept
  }
  std::vector<uint8_t> original_, edited_;
  Cuts pieces_;
  std::vector<ManifestEntry> expected_;
  IngestConfig cfg_;
  Sink sink_;
};

TEST_F(IngestExpectedFailure, AReadErrorWhileCheckingIsTheIngestsError) {
  FlakySource src(edited_);
  src.fail_at = kSize / 4;
  auto out = Ingest(src, cfg_, &sink_);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().ToString().find("read fails"), std::string::npos) << out.status().ToString();
  EXPECT_LE(sink_.bytes.size(), kSize / 4);
}

TEST_F(IngestExpectedFailure, AReadErrorAfterTheRewindIsTheIngestsError) {
  FlakySource src(edited_);
  // Beyond what the first phase can read ahead of the difference (a ring
  // of 2 x threads + 4 pieces), so only the second phase meets it.
  src.fail_at = kSize - kPiece;
  auto out = Ingest(src, cfg_, &sink_);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().ToString().find("read fails"), std::string::npos) << out.status().ToString();
  EXPECT_EQ(src.rewinds, 2);
}

TEST_F(IngestExpectedFailure, ASourceThatCannotRewindAtTheDifferenceFailsClearly) {
  FlakySource src(edited_);
  src.rewind_again = false;
  auto out = Ingest(src, cfg_, &sink_);
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(out.status().IsIOError()) << out.status().ToString();
  EXPECT_NE(out.status().ToString().find("cannot read flaky source again"), std::string::npos)
      << out.status().ToString();
  // Everything handed on before the difference was the input's.
  ASSERT_LE(sink_.bytes.size(), edited_.size());
  EXPECT_TRUE(std::equal(sink_.bytes.begin(), sink_.bytes.end(), edited_.begin()));
}

TEST_F(IngestExpectedFailure, TheSameSourceRewindingAsAskedGivesTheEdit) {
  FlakySource src(edited_);
  auto out = Ingest(src, cfg_, &sink_);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(sink_.bytes, edited_);
  EXPECT_EQ(out->object_id, Sha256::Of(edited_.data(), edited_.size()));
  EXPECT_EQ(src.rewinds, 2);  // the check, then the return to the chunk held back
}

TEST(IngestExpected, AStreamCannotBeReadAgainSoItsListIsIgnored) {
  const auto data = testing::RandomBytes(kSize, 29);
  IngestConfig cfg;
  cfg.chunking = testing::SmallChunks().chunking;
  cfg.threads = 2;
  const auto expected = Expect(data, Pieces(data.size(), kPiece));
  cfg.expected = &expected;
  std::istringstream in(std::string(data.begin(), data.end()));
  StreamSource src(in);
  Sink sink;
  auto out = Ingest(src, cfg, &sink);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(sink.bytes, data);
  // A stream has no known size: nothing says the list describes it.
  const Cuts own = ChunkBuffer(cfg.chunking, data.data(), data.size());
  ASSERT_EQ(sink.got.size(), own.size());
  for (size_t i = 0; i < own.size(); ++i) EXPECT_EQ(sink.got[i].length, own[i].length) << i;
}

}  // namespace
}  // namespace chunkstore::internal
