// SPDX-License-Identifier: Apache-2.0
// Chain states: what the object hash records at each chunk is the true
// SHA-256 state there (the digest finished from it is the object's id),
// on both SHA-256 paths, and the version-2 manifest keeps them exactly.
#include <gtest/gtest.h>

#include "format/manifest.h"
#include "hash/chain.h"
#include "hash/sha256_pair.h"
#include "test_util.h"

namespace chunkstore::internal {
namespace {

class ChainTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { SetSha256PairInterleaveForTesting(GetParam()); }
  void TearDown() override { SetSha256PairInterleaveForTesting(true); }
};

INSTANTIATE_TEST_SUITE_P(Paths, ChainTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Interleaved" : "OpenSsl"; });

// Chunk boundaries on and off block boundaries, chunks of a block or less,
// a last chunk too short to hold a boundary.
TEST_P(ChainTest, EveryRecordedStateFinishesToTheObjectsId) {
  const auto data = testing::RandomBytes(20000, 3);
  const std::vector<std::vector<size_t>> cuttings = {
      {64, 64, 64}, {100, 3000, 64, 1}, {63, 65, 128, 5000}, {4096, 4096, 4096}, {1000, 7}, {20000}, {130, 10, 3}};
  for (const auto& lengths : cuttings) {
    size_t total = 0;
    for (size_t l : lengths) total += l;
    Sha256Stream s;
    size_t at = 0;
    for (size_t l : lengths) {
      s.MarkChunk();
      s.Update(data.data() + at, l);
      at += l;
    }
    const Digest id = s.Finish();
    ASSERT_EQ(id, Sha256::Of(data.data(), total));
    const auto& chain = s.chain();
    ASSERT_EQ(chain.size(), lengths.size());
    EXPECT_EQ(chain[0], ChainStart());
    uint64_t start = 0;
    for (size_t i = 0; i < lengths.size(); ++i) {
      const uint64_t boundary = BlockCeil(start);
      ASSERT_EQ(chain[i].valid, boundary <= total) << "chunk " << i;
      if (chain[i].valid) {
        EXPECT_EQ(FinishChain(chain[i], boundary, data.data() + boundary, total - boundary), id) << "chunk " << i;
        // And from it, the whole blocks of the rest by AdvanceChain.
        ChainState z = chain[i];
        const uint64_t end = BlockFloor(total);
        AdvanceChain(&z, data.data() + boundary, (end - boundary) / 64);
        EXPECT_EQ(FinishChain(z, end, data.data() + end, total - end), id) << "chunk " << i;
      }
      start += lengths[i];
    }
    // A version-2 manifest keeps exactly these.
    std::vector<ManifestEntry> entries;
    at = 0;
    for (size_t l : lengths) {
      entries.push_back({Sha256::Of(data.data() + at, l), static_cast<uint32_t>(l)});
      at += l;
    }
    const std::string m = EncodeManifest(id, total, entries, chain);
    auto back = DecodeManifestWithChain(id, total, m.data(), m.size());
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    ASSERT_EQ(back->chain.size(), chain.size());
    for (size_t i = 0; i < chain.size(); ++i) EXPECT_EQ(back->chain[i], chain[i]) << i;
    EXPECT_EQ(back->entries.size(), entries.size());
  }
}

// A chunk's stretch hashed from its state in a lane gives the state the
// stream had at the chunk's last boundary, paired or alone.
TEST_P(ChainTest, LanesStartedFromAStateReachTheStreamsStates) {
  const auto data = testing::RandomBytes(300000, 4);
  const std::vector<size_t> lengths = {70000, 1000, 65, 130000, 98935};
  Sha256Stream s;
  for (size_t at = 0, i = 0; i < lengths.size(); at += lengths[i++]) {
    s.MarkChunk();
    s.Update(data.data() + at, lengths[i]);
  }
  const Digest id = s.Finish();
  const auto chain = s.chain();
  std::vector<uint64_t> starts;
  for (size_t at = 0, i = 0; i < lengths.size(); at += lengths[i++]) starts.push_back(at);
  std::vector<ChainState> z(lengths.size());
  size_t next = 0;
  Sha256LanesWhile(
      [&](Sha256Partial& lane, size_t* k, bool) {
        if (next == lengths.size()) return LaneStart::kNone;
        *k = next++;
        const uint64_t from = BlockCeil(starts[*k]), to = BlockFloor(starts[*k] + lengths[*k]);
        lane.StartFrom(chain[*k], data.data() + from, to - from);
        return LaneStart::kStarted;
      },
      [&](size_t k, Sha256Partial& lane) { z[k] = lane.FinishChain(); });
  for (size_t k = 0; k + 1 < lengths.size(); ++k) {
    // The straddling block from z[k] reaches the next chunk's state.
    const uint64_t end = starts[k] + lengths[k];
    ChainState link = z[k];
    if (BlockCeil(end) != BlockFloor(end)) AdvanceChain(&link, data.data() + BlockFloor(end), 1);
    EXPECT_EQ(link, chain[k + 1]) << k;
  }
  const uint64_t last = lengths.size() - 1, end = BlockFloor(data.size());
  EXPECT_EQ(FinishChain(z[last], end, data.data() + end, data.size() - end), id);
}

}  // namespace
}  // namespace chunkstore::internal
