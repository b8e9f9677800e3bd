// SPDX-License-Identifier: Apache-2.0
// FastCDC: the reference crate's published vectors, cuts equal to a plain
// single scan (chunker_reference.h), parameter checks, and the streaming
// property (same cuts however the input is split).
#include <openssl/evp.h>

#include <algorithm>

#include "chunker_reference.h"
#include "chunkstore/chunker.h"
#include "hash/digest.h"
#include "format/gear_table.h"
#include "test_util.h"

namespace chunkstore {
namespace {

using internal::Sha256;
using testing::RandomBytes;
using testing::ReferenceCut;

std::vector<uint8_t> LoadSekien() {
  return testing::ReadFile(std::string(CHUNKSTORE_TESTDATA) + "/SekienAkashita.jpg");
}

#define REQUIRE_SEKIEN(data)                                                        \
  auto data = LoadSekien();                                                         \
  if (data.empty())                                                                 \
    GTEST_SKIP() << "SekienAkashita.jpg is not in " CHUNKSTORE_TESTDATA             \
                    " (the reference vectors cannot be checked without it)";        \
  ASSERT_EQ(data.size(), 109466u)

std::vector<uint32_t> Lengths(const ChunkerParams& p, const std::vector<uint8_t>& data) {
  std::vector<uint32_t> out;
  for (const auto& c : ChunkBuffer(p, data.data(), data.size())) out.push_back(c.length);
  return out;
}

ChunkerParams P(uint32_t min, uint32_t avg, uint32_t max, int level) {
  ChunkerParams p;
  p.min_size = min;
  p.avg_size = avg;
  p.max_size = max;
  p.level = level;
  return p;
}

TEST(GearTable, MatchesMd5Construction) {
  for (int i = 0; i < 256; ++i) {
    uint8_t in[64], md[16];
    std::memset(in, i, sizeof in);
    unsigned int len = 0;
    ASSERT_EQ(EVP_Digest(in, sizeof in, md, &len, EVP_md5(), nullptr), 1);
    uint64_t expect = 0;
    for (int b = 0; b < 8; ++b) expect = expect << 8 | md[b];
    EXPECT_EQ(internal::kGear[i], expect) << "entry " << i;
  }
}

TEST(Chunker, SekienImageIsTheReferenceFixture) {
  REQUIRE_SEKIEN(data);
  EXPECT_EQ(Sha256::Of(data.data(), data.size()).Hex(),
            "d9e749d9367fc908876749d6502eb212fee88c9a94892fb07da5ef3ba8bc39ed");
}

TEST(Chunker, SekienLevel1Avg16k) {
  REQUIRE_SEKIEN(data);
  const auto chunks = ChunkBuffer(P(4096, 16384, 65535, 1), data.data(), data.size());
  const std::vector<std::string> expected_ids = {
      "695429afe5937d6c75099f6e587267065a64e9dd83596a3d7386df3ef5a792c2",
      "17119f7abc183375afdb652248aad0c7211618d263335cc4e4ffc9a31e719bcb",
      "1545925739c6bfbd6609752a0e6ab61854f14d1fdb9773f08a7f52a13f9362d8",
      "bbd5b0b284d4e3c2098e92e8e2897e738c669113d06472560188d99a288872a3",
      "ede34e1a6cb287766e857eb0ed45b9f4b5ad83bb93c597be880c3a2ac91cddbe"};
  const std::vector<uint32_t> expected_lengths = {21325, 17140, 28084, 18217, 24700};
  ASSERT_EQ(chunks.size(), expected_lengths.size());
  for (size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i].length, expected_lengths[i]) << "chunk " << i;
    EXPECT_EQ(Sha256::Of(data.data() + chunks[i].offset, chunks[i].length).Hex(), expected_ids[i]);
  }
}

TEST(Chunker, SekienOtherReferenceVectors) {
  REQUIRE_SEKIEN(data);
  EXPECT_EQ(Lengths(P(8192, 32768, 131072, 1), data), (std::vector<uint32_t>{66549, 42917}));
  EXPECT_EQ(Lengths(P(16384, 65536, 262144, 1), data), (std::vector<uint32_t>{109466}));
  EXPECT_EQ(Lengths(P(4096, 16384, 65535, 0), data),
            (std::vector<uint32_t>{6634, 59915, 25597, 5237, 12083}));
  EXPECT_EQ(Lengths(P(8192, 16384, 32768, 3), data),
            (std::vector<uint32_t>{17350, 19911, 17426, 17519, 19940, 17320}));
}

TEST(Chunker, AllZerosCutAtMax) {
  std::vector<uint8_t> zeros(10240, 0);
  EXPECT_EQ(Lengths(P(64, 256, 1024, 1), zeros), std::vector<uint32_t>(10, 1024));
}

TEST(Chunker, EmptyAndTinyInputs) {
  const ChunkerParams p = P(64, 256, 1024, 1);
  EXPECT_TRUE(ChunkBuffer(p, nullptr, 0).empty());
  std::vector<uint8_t> one(1, 7);
  EXPECT_EQ(Lengths(p, one), (std::vector<uint32_t>{1}));
  std::vector<uint8_t> at_min = RandomBytes(64, 1);
  EXPECT_EQ(Lengths(p, at_min), (std::vector<uint32_t>{64}));
}

TEST(Chunker, ChunksRespectBoundsAndCoverInput) {
  const ChunkerParams p = P(1024, 4096, 16384, 1);
  const auto data = RandomBytes(1 << 20, 42);
  const auto chunks = ChunkBuffer(p, data.data(), data.size());
  uint64_t pos = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i].offset, pos);
    EXPECT_LE(chunks[i].length, p.max_size);
    if (i + 1 < chunks.size()) {
      EXPECT_GE(chunks[i].length, p.min_size - 1);
    }
    pos += chunks[i].length;
  }
  EXPECT_EQ(pos, data.size());
  // Level-1 normalization keeps the mean near avg on random data.
  const double mean = static_cast<double>(data.size()) / chunks.size();
  EXPECT_GT(mean, 2500);
  EXPECT_LT(mean, 8000);
}

// Feeds the chunker through a growing buffer, `split` deciding each piece.
template <typename Split>
std::vector<uint32_t> StreamLengths(const ChunkerParams& p, const std::vector<uint8_t>& data,
                                    Split split) {
  Chunker chunker(p);
  std::vector<uint32_t> out;
  std::vector<uint8_t> buf;
  size_t fed = 0;
  while (fed < data.size() || !buf.empty()) {
    const bool eof = fed == data.size();
    size_t n = eof ? 0 : std::min(split(), data.size() - fed);
    buf.insert(buf.end(), data.begin() + fed, data.begin() + fed + n);
    fed += n;
    for (;;) {
      const size_t cut = chunker.Next(buf.data(), buf.size(), fed == data.size());
      if (cut == 0) break;
      out.push_back(static_cast<uint32_t>(cut));
      buf.erase(buf.begin(), buf.begin() + cut);
    }
  }
  return out;
}

TEST(Chunker, StreamingMatchesWholeForOneBytePieces) {
  const ChunkerParams p = P(256, 1024, 4096, 1);
  const auto data = RandomBytes(200000, 7);
  EXPECT_EQ(StreamLengths(p, data, [] { return size_t{1}; }), Lengths(p, data));
}

TEST(Chunker, StreamingMatchesWholeForRandomSplits) {
  for (int level = 0; level <= 3; ++level) {
    const ChunkerParams p = P(512, 2048, 8192, level);
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      const auto data = RandomBytes(300000 + seed * 977, seed);
      std::mt19937_64 rng(seed * 31);
      auto split = [&] { return static_cast<size_t>(rng() % 20000); };
      EXPECT_EQ(StreamLengths(p, data, split), Lengths(p, data)) << "level " << level << " seed " << seed;
    }
  }
}

TEST(Chunker, StreamingMatchesOnSekien) {
  REQUIRE_SEKIEN(data);
  const ChunkerParams p = P(4096, 16384, 65535, 1);
  std::mt19937_64 rng(99);
  EXPECT_EQ(StreamLengths(p, data, [&] { return static_cast<size_t>(rng() % 5000 + 1); }),
            (std::vector<uint32_t>{21325, 17140, 28084, 18217, 24700}));
}

std::vector<uint32_t> ReferenceLengths(const ChunkerParams& p, const std::vector<uint8_t>& data) {
  std::vector<uint32_t> out;
  for (size_t pos = 0; pos < data.size();) {
    const size_t n = ReferenceCut(p, data.data() + pos, data.size() - pos);
    out.push_back(static_cast<uint32_t>(n));
    pos += n;
  }
  return out;
}

// Chunks of tens of KiB: long enough that the scan runs as two streams
// (blocks of 16 KiB), with cuts landing in either stream and in the
// single-stream tail, in both mask regions, at every level.
TEST(Chunker, LongScansMatchTheSingleScanReference) {
  for (int level = 0; level <= 3; ++level) {
    const ChunkerParams p = P(4096, 65536, 262144, level);
    const auto data = RandomBytes(6 << 20, 100 + level);
    const auto expected = ReferenceLengths(p, data);
    ASSERT_GT(expected.size(), 40u);
    EXPECT_EQ(Lengths(p, data), expected) << "level " << level;
  }
  // Default sizes, and text-like data whose hashes repeat.
  const ChunkerParams defaults;
  const auto random = RandomBytes(24 << 20, 5);
  EXPECT_EQ(Lengths(defaults, random), ReferenceLengths(defaults, random));
  std::vector<uint8_t> text(8 << 20);
  for (size_t i = 0; i < text.size(); ++i) text[i] = "lorem ipsum dolor sit amet "[(i * 7 + i / 4093) % 27];
  EXPECT_EQ(Lengths(P(4096, 65536, 262144, 1), text), ReferenceLengths(P(4096, 65536, 262144, 1), text));
}

TEST(Chunker, StreamingMatchesTheReferenceOnLongScans) {
  const ChunkerParams p = P(4096, 65536, 262144, 2);
  const auto data = RandomBytes(4 << 20, 17);
  std::mt19937_64 rng(17);
  // Pieces from a byte to 40 KiB: a scan resumes inside blocks, just
  // before them and in the tail.
  auto split = [&] { return static_cast<size_t>(rng() % 3 == 0 ? rng() % 64 + 1 : rng() % 40000 + 1); };
  EXPECT_EQ(StreamLengths(p, data, split), ReferenceLengths(p, data));
}

// The smallest parameters the chunker accepts, where every chunk is a
// short scan in the single-stream path and the minimum, normal-size and
// maximum boundaries fall within a few hundred bytes of each other.
TEST(Chunker, SmallParametersMatchTheReference) {
  const auto random = RandomBytes(1 << 20, 23);
  std::vector<uint8_t> text(1 << 20);
  for (size_t i = 0; i < text.size(); ++i) text[i] = "lorem ipsum dolor sit amet "[(i * 7 + i / 509) % 27];
  std::mt19937_64 rng(23);
  auto split = [&] { return static_cast<size_t>(rng() % 2000 + 1); };
  for (int level = 0; level <= 3; ++level) {
    for (const ChunkerParams& p : {P(64, 256, 1024, level), P(128, 512, 4096, level), P(1024, 2048, 16384, level)}) {
      const std::string what = std::to_string(p.min_size) + "/" + std::to_string(p.avg_size) + "/" +
                               std::to_string(p.max_size) + " level " + std::to_string(level);
      for (const std::vector<uint8_t>* data : std::vector<const std::vector<uint8_t>*>{&random, &text}) {
        const auto expected = ReferenceLengths(p, *data);
        ASSERT_GT(expected.size(), 50u) << what;
        EXPECT_EQ(Lengths(p, *data), expected) << what;
        EXPECT_EQ(StreamLengths(p, *data, split), expected) << what << ", streamed";
      }
    }
  }
}

TEST(ChunkerParams, DefaultsAreTheDocumentedOnes) {
  ChunkerParams p;
  EXPECT_EQ(p.min_size, 256u * 1024);
  EXPECT_EQ(p.avg_size, 1024u * 1024);
  EXPECT_EQ(p.max_size, 4u * 1024 * 1024);
  EXPECT_EQ(p.level, 1);
  EXPECT_TRUE(p.Validate().ok());
}

TEST(ChunkerParams, RejectsOutOfRangeWithReason) {
  struct Case {
    ChunkerParams p;
    const char* needle;
  } cases[] = {
      {P(63, 256, 1024, 1), "min size 63 is out of range"},
      {P(2 << 20, 3 << 20, 4 << 20, 1), "min size 2097152 is out of range"},
      {P(64, 255, 1024, 1), "avg size 255 is out of range"},
      {P(64, 8 << 20, 16 << 20, 1), "avg size 8388608 is out of range"},
      {P(64, 256, 1023, 1), "max size 1023 is out of range"},
      {P(64, 256, (16 << 20) + 1, 1), "max size 16777217 is out of range"},
      {P(4096, 4096, 8192, 1), "must be smaller than avg size"},
      {P(1024, 8192, 8192, 1), "must be smaller than max size"},
      {P(1024, 4096, 8192, 4), "normalization level 4"},
      {P(1024, 4096, 8192, -1), "normalization level -1"},
  };
  for (const auto& c : cases) {
    Status s = c.p.Validate();
    EXPECT_TRUE(s.IsInvalidArgument()) << c.needle;
    EXPECT_NE(s.message().find(c.needle), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace chunkstore
