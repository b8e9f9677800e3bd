// SPDX-License-Identifier: Apache-2.0
// Sequential reads verify read-ahead chunks two at a time (ChunkLoader::
// LoadRun: a run on a worker takes queued chunks into two lanes, a lane
// refilled with the queue's next chunk as its own ends): damage to any
// chunk, in its payload (caught by the paired SHA-256, or by a lone one
// when the queue is empty) or its record header (caught before hashing,
// the lane going on with the next chunk), must stop the read exactly at
// that chunk with an error naming it, after every byte before it; with
// pairing on and off. A reader dropped while its runs are busy must wait
// for them (the sanitizer builds see a run that outlives its reader).
#include <atomic>
#include <thread>

#include "hash/sha256_pair.h"
#include "test_util.h"

namespace chunkstore {
namespace {

using testing::RandomBytes;
using testing::SmallChunks;

class ReadPairsTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { internal::SetSha256PairInterleaveForTesting(GetParam()); }
  void TearDown() override { internal::SetSha256PairInterleaveForTesting(true); }
};

TEST_P(ReadPairsTest, ADamagedChunkStopsTheReadThereWhicheverHalfOfAPairItIs) {
  const auto data = RandomBytes(120000, 21);
  for (size_t damaged = 1; damaged <= 6; ++damaged) {
    // 0: the payload; 1: the record header; 2: the payload, and the
    // header of the chunk after it (so the chunk's lane partner changes
    // mid-way, or at a group's end it is hashed alone). Chunk 0 is read
    // alone; the chunks after it are queued eight at a time, so chunks
    // 1-6 take either lane of either run, first or refilled.
    for (int how : {0, 1, 2}) {
      SCOPED_TRACE("chunk " + std::to_string(damaged) + ", damage " + std::to_string(how));
      testing::TempDir dir;
      std::string id;
      std::vector<ChunkInfo> chunks;
      {
        auto s = *Store::Open(dir / "s", SmallChunks());
        id = s->PublishBytes(data.data(), data.size())->id;
        chunks = *s->Chunks(id);
      }
      ASSERT_GT(chunks.size(), damaged + 2);
      // Records follow one another from offset 16, each a 64-byte header
      // and the chunk (raw: random data does not compress).
      uint64_t record = 16;
      for (size_t k = 0; k < damaged; ++k) record += 64 + chunks[k].length;
      testing::FlipPackByte(dir / "s", record + (how == 1 ? 20 : 64 + 5));
      if (how == 2) testing::FlipPackByte(dir / "s", record + 64 + chunks[damaged].length + 20);
      auto s = *Store::Open(dir / "s");
      auto reader = std::move(*s->OpenReader(id));
      std::vector<uint8_t> got, buf(3000);
      Status failure;
      for (;;) {
        auto n = reader->Read(buf.data(), buf.size());
        if (!n.ok()) {
          failure = n.status();
          break;
        }
        if (*n == 0) break;
        got.insert(got.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(*n));
      }
      ASSERT_TRUE(failure.IsCorruption()) << failure.ToString();
      EXPECT_EQ(failure.object_id(), id);
      EXPECT_EQ(failure.chunk_id(), chunks[damaged].id);
      ASSERT_EQ(got.size(), chunks[damaged].offset);
      EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin()));
      // The chunks after the damage are intact and still read.
      const ChunkInfo& after = chunks[damaged + (how == 2 ? 2 : 1)];
      std::vector<uint8_t> later(after.length);
      auto r = reader->ReadAt(after.offset, later.data(), later.size());
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_TRUE(std::equal(later.begin(), later.end(), data.begin() + static_cast<std::ptrdiff_t>(after.offset)));
    }
  }
}

TEST_P(ReadPairsTest, WholeObjectsOfOddAndEvenChunkCountsReadBack) {
  testing::TempDir dir;
  auto s = *Store::Open(dir / "s", SmallChunks());
  for (size_t size : {5000, 9000, 40000, 120001}) {
    const auto data = RandomBytes(size, 22 + size);
    const std::string id = s->PublishBytes(data.data(), data.size())->id;
    EXPECT_EQ(testing::ReadObject(*s, id).value(), data) << size << " bytes, "
                                                          << s->Chunks(id)->size() << " chunks";
  }
}

TEST_P(ReadPairsTest, AReaderDroppedWhileItReadsAheadLeavesNothingBehind) {
  testing::TempDir dir;
  auto s = *Store::Open(dir / "s", SmallChunks());
  const auto data = RandomBytes(400000, 23);
  const std::string id = s->PublishBytes(data.data(), data.size())->id;
  ASSERT_GT(s->Chunks(id)->size(), 20u);
  for (int round = 0; round < 40; ++round) {
    auto reader = std::move(*s->OpenReader(id));
    std::vector<uint8_t> buf(1000 + 997 * static_cast<size_t>(round));
    for (size_t got = 0; got < buf.size();) {
      auto n = reader->Read(buf.data() + got, buf.size() - got);
      ASSERT_TRUE(n.ok()) << n.status().ToString();
      ASSERT_GT(*n, 0u);
      got += *n;
    }
    ASSERT_TRUE(std::equal(buf.begin(), buf.end(), data.begin())) << round;
    // Dropped with read-ahead queued and running.
  }
  EXPECT_EQ(testing::ReadObject(*s, id).value(), data);
}

// A read bound by verifying keeps its reader's read-ahead queue full, so
// its run on the store's one worker would never end; it makes way after a
// few chunks (ObjectReader::Run), and a second reader's read goes on in
// the meantime instead of waiting for the first read's end.
TEST_P(ReadPairsTest, AReadBoundByVerifyingLeavesTheWorkersToOtherReadersInTurn) {
  testing::TempDir dir;
  // Chunks long enough that hashing one takes longer than the reading
  // thread's turn around its loop: the queue stays full.
  Options o;
  o.chunking.min_size = 16384;
  o.chunking.avg_size = 65536;
  o.chunking.max_size = 262144;
  o.threads = 1;
  auto s = *Store::Open(dir / "s", o);
  const auto big = RandomBytes(32 << 20, 24), small = RandomBytes(600000, 25);
  const std::string big_id = s->PublishBytes(big.data(), big.size())->id;
  const std::string small_id = s->PublishBytes(small.data(), small.size())->id;
  std::atomic<uint64_t> big_read{0};
  std::atomic<bool> big_done{false};
  Status big_status;
  std::thread reading([&] {
    // Views, not copies: the reading thread takes each chunk as soon as
    // it is verified, so the queue stays full.
    auto r = std::move(*s->OpenReader(big_id));
    for (;;) {
      auto v = r->ReadView(SIZE_MAX);
      if (!v.ok()) big_status = v.status();
      if (!v.ok() || v->size == 0) {
        big_done = true;
        return;
      }
      big_read += v->size;
    }
  });
  while (big_read.load() < (1u << 20) && !big_done.load()) std::this_thread::yield();
  EXPECT_EQ(testing::ReadObject(*s, small_id).value(), small);
  const uint64_t when_small_was_read = big_read.load();
  reading.join();
  EXPECT_TRUE(big_status.ok()) << big_status.ToString();
  EXPECT_EQ(big_read.load(), big.size());
  ASSERT_GT(s->Chunks(small_id)->size(), 4u);
  // Without the turns the small read mostly ends only once the big one
  // has queued its last chunks; with them, after a few of the big read's
  // turns. Half the big read (about 10 ms of hashing) is the margin for a
  // busy machine.
  EXPECT_LT(when_small_was_read, big.size() / 2);
}

INSTANTIATE_TEST_SUITE_P(Paths, ReadPairsTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Paired" : "OneAtATime"; });

}  // namespace
}  // namespace chunkstore
