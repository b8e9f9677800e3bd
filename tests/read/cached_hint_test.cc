// SPDX-License-Identifier: Apache-2.0
// Reader::Cached: true exactly when every chunk under a range is in the
// store's cache of verified chunks, so that ReadAt of the range reads no
// pack (a damaged pack does not matter to it then). Random reads fill the
// cache; sequential ones leave it alone; a store without a cache never
// says true but for an inline object, whose content the reader holds.
// Reader::IdProven: true only after a whole read in order reached the end
// (or for an object of one chunk, or inline), and from then on.
#include "test_util.h"

namespace chunkstore {
namespace {

using testing::RandomBytes;
using testing::TempDir;

TEST(CachedHintTest, TrueExactlyForTheChunksRandomReadsBroughtIn) {
  TempDir dir;
  const auto data = RandomBytes(120000, 7);
  std::string id;
  std::vector<ChunkInfo> chunks;
  {
    auto s = *Store::Open(dir / "s", testing::SmallChunks());
    id = s->PublishBytes(data.data(), data.size())->id;
    chunks = *s->Chunks(id);
  }
  ASSERT_GE(chunks.size(), 4u);
  auto s = *Store::Open(dir / "s", testing::SmallChunks());
  auto reader = std::move(*s->OpenReader(id));
  EXPECT_FALSE(reader->Cached(0, data.size()));
  EXPECT_TRUE(reader->Cached(0, 0)) << "an empty range needs no chunk";
  EXPECT_TRUE(reader->Cached(data.size(), 10)) << "nor does one past the end";

  // A whole sequential read streams past the cache.
  std::vector<uint8_t> buf(data.size());
  size_t pos = 0;
  while (pos < buf.size()) {
    auto n = reader->Read(buf.data() + pos, buf.size() - pos);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    ASSERT_GT(*n, 0u);
    pos += *n;
  }
  EXPECT_EQ(buf, data);
  EXPECT_FALSE(reader->Cached(chunks[1].offset, 1));

  // A random read of chunk 1 brings in chunk 1 alone.
  uint8_t one[16];
  ASSERT_EQ(*reader->ReadAt(chunks[1].offset + 3, one, sizeof one), sizeof one);
  EXPECT_TRUE(reader->Cached(chunks[1].offset, chunks[1].length));
  EXPECT_TRUE(reader->Cached(chunks[1].offset + 5, 1));
  EXPECT_FALSE(reader->Cached(chunks[1].offset, chunks[1].length + 1)) << "the range reaches chunk 2";
  EXPECT_FALSE(reader->Cached(chunks[0].offset + chunks[0].length - 1, 2)) << "the range starts in chunk 0";
  EXPECT_FALSE(reader->Cached(0, data.size()));

  // Every chunk read at random: the whole object is cached, for any
  // reader of this store, and ReadAt no longer needs the packs.
  for (const auto& c : chunks) ASSERT_EQ(*reader->ReadAt(c.offset, one, 1), 1u);
  EXPECT_TRUE(reader->Cached(0, data.size()));
  auto other = std::move(*s->OpenReader(id));
  EXPECT_TRUE(other->Cached(0, data.size()));
  testing::FlipPackByte(dir / "s", 16 + 64 + 5);  // chunk 0's payload
  std::vector<uint8_t> again(data.size());
  ASSERT_EQ(*other->ReadAt(0, again.data(), again.size()), data.size());
  EXPECT_EQ(again, data);

  // Another store's cache is its own: there chunk 0 is read, and damaged.
  auto fresh = *Store::Open(dir / "s", testing::SmallChunks());
  auto cold = std::move(*fresh->OpenReader(id));
  EXPECT_FALSE(cold->Cached(0, 1));
  auto n = cold->ReadAt(0, again.data(), 1);
  ASSERT_FALSE(n.ok());
  EXPECT_TRUE(n.status().IsCorruption()) << n.status().ToString();
  EXPECT_FALSE(cold->Cached(0, 1)) << "a chunk that failed its check is not cached";
}

// KeepInCache: a sequential read that keeps what it checks brings every
// chunk in (and leaves IdProven as it was); switched off, a read from the
// start proves the id again.
TEST(CachedHintTest, AReadThatKeepsBringsTheWholeObjectIn) {
  TempDir dir;
  const auto data = RandomBytes(200000, 10);
  std::string id;
  {
    auto s = *Store::Open(dir / "s", testing::SmallChunks());
    id = s->PublishBytes(data.data(), data.size())->id;
  }
  auto s = *Store::Open(dir / "s", testing::SmallChunks());
  auto r = std::move(*s->OpenReader(id));
  r->KeepInCache(true);
  std::vector<uint8_t> got(data.size());
  size_t pos = 0;
  while (pos < got.size()) {
    auto n = r->Read(got.data() + pos, std::min<size_t>(5000, got.size() - pos));
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    ASSERT_GT(*n, 0u);
    pos += *n;
  }
  EXPECT_EQ(got, data);
  EXPECT_TRUE(r->Cached(0, data.size())) << "every chunk kept";
  EXPECT_FALSE(r->IdProven()) << "a read that keeps checks chunks, not the object";
  r->KeepInCache(false);
  ASSERT_TRUE(r->Seek(0).ok());
  pos = 0;
  while (pos < got.size()) {
    auto n = r->Read(got.data() + pos, got.size() - pos);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    ASSERT_GT(*n, 0u);
    pos += *n;
  }
  EXPECT_TRUE(r->IdProven()) << "a whole read without keeping proves the id";
  // Kept chunks are verified ones: with the pack damaged, another reader
  // of this store still reads every byte right, at random.
  testing::FlipPackByte(dir / "s", 16 + 64 + 5);
  auto other = std::move(*s->OpenReader(id));
  std::vector<uint8_t> again(data.size());
  ASSERT_EQ(*other->ReadAt(0, again.data(), again.size()), data.size());
  EXPECT_EQ(again, data);
}

TEST(CachedHintTest, WithoutACacheOnlyAnInlineObjectIsHeld) {
  TempDir dir;
  Options o = testing::SmallChunks();
  o.cache_bytes = 0;
  auto s = *Store::Open(dir / "s", o);
  const auto data = RandomBytes(50000, 8);
  const std::string big = s->PublishBytes(data.data(), data.size())->id;
  const std::string small = s->PublishBytes("tiny", 4)->id;
  auto reader = std::move(*s->OpenReader(big));
  uint8_t b[8];
  ASSERT_EQ(*reader->ReadAt(100, b, sizeof b), sizeof b);
  EXPECT_FALSE(reader->Cached(100, 8));
  auto inline_reader = std::move(*s->OpenReader(small));
  EXPECT_TRUE(inline_reader->Cached(0, 4));
}

std::vector<uint8_t> ReadFrom(Reader& r, size_t limit) {
  std::vector<uint8_t> out;
  uint8_t buf[7000];
  while (out.size() < limit) {
    auto n = r.Read(buf, std::min(sizeof buf, limit - out.size()));
    EXPECT_TRUE(n.ok()) << n.status().ToString();
    if (!n.ok() || *n == 0) break;
    out.insert(out.end(), buf, buf + *n);
  }
  return out;
}

TEST(IdProvenTest, OnlyAWholeReadInOrderProvesTheIdAndThenItStays) {
  TempDir dir;
  auto s = *Store::Open(dir / "s", testing::SmallChunks());
  const auto data = RandomBytes(90000, 9);
  const std::string id = s->PublishBytes(data.data(), data.size())->id;
  ASSERT_GE(s->Chunks(id)->size(), 3u);

  auto r = std::move(*s->OpenReader(id));
  EXPECT_FALSE(r->IdProven());
  uint8_t b[100];
  for (uint64_t at = 0; at < data.size(); at += sizeof b) ASSERT_TRUE(r->ReadAt(at, b, sizeof b).ok());
  EXPECT_FALSE(r->IdProven()) << "random reads of every byte prove chunks, not the object";
  EXPECT_EQ(ReadFrom(*r, data.size() / 2).size(), data.size() / 2);
  EXPECT_FALSE(r->IdProven()) << "half a read in order";
  ASSERT_TRUE(r->Seek(100).ok());
  EXPECT_EQ(ReadFrom(*r, data.size()).size(), data.size() - 100);
  EXPECT_FALSE(r->IdProven()) << "a read in order to the end, but from a seek";
  ASSERT_TRUE(r->Seek(0).ok());
  r->LimitReadAhead(data.size() - 1);
  EXPECT_EQ(ReadFrom(*r, data.size()), data);
  EXPECT_FALSE(r->IdProven()) << "a read told it would stop early proves chunks only";

  ASSERT_TRUE(r->Seek(0).ok());
  EXPECT_EQ(ReadFrom(*r, data.size()), data);
  EXPECT_TRUE(r->IdProven()) << "a whole read from the start, in order";
  ASSERT_TRUE(r->Seek(500).ok());
  EXPECT_EQ(ReadFrom(*r, 10).size(), 10u);
  EXPECT_TRUE(r->IdProven()) << "the proof is of the chunk list, which a seek does not change";
  EXPECT_FALSE((*s->OpenReader(id))->IdProven()) << "each reader proves it for itself";

  const std::string one = s->PublishBytes(data.data(), 1000)->id;  // one chunk (under the minimum), in a pack
  const std::string tiny = s->PublishBytes(data.data(), 40)->id;    // inline
  ASSERT_EQ(s->Chunks(one)->size(), 1u);
  EXPECT_TRUE((*s->OpenReader(one))->IdProven()) << "its chunk's id is the object's";
  EXPECT_TRUE((*s->OpenReader(tiny))->IdProven()) << "checked whole when opened";
}

}  // namespace
}  // namespace chunkstore
