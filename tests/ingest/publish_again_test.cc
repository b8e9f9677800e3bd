// SPDX-License-Identifier: Apache-2.0
// Publishing an input when an object of its size is already stored: the
// earlier object's chunks are checked where they were cut instead of the
// input being cut again. Whether the input is that object again, an edit
// of it or something else, the published object must be exactly what a
// store without that object would make of it, and a damaged or missing
// hint must never fail a publish.

#include "chunkstore/store.h"
#include "hash/digest.h"
#include "index/index.h"
#include "test_util.h"

namespace chunkstore {
namespace {

using testing::RandomBytes;
using testing::TempDir;

// Above the size that is indexed by size (1 MiB) and above two of the
// small test chunks, so publishes run through the threaded pipeline.
constexpr size_t kSize = 1536 * 1024;

class PublishAgain : public ::testing::Test {
 protected:
  void SetUp() override {
    options_ = testing::SmallChunks();
    options_.threads = 2;
    auto s = Store::Open(dir_ / "s", options_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }

  Result<PublishResult> PublishFile(const std::vector<uint8_t>& data, const std::string& file) {
    testing::WriteFile(dir_ / file, data);
    return store_->PublishFile(dir_ / file);
  }

  // The object reads back as `data`, under the id sha256sum would give,
  // cut exactly where the chunker cuts `data`.
  void ExpectStoredAsCut(const PublishResult& r, const std::vector<uint8_t>& data) {
    EXPECT_EQ(r.id, internal::Sha256::Of(data.data(), data.size()).ObjectId());
    auto back = testing::ReadObject(*store_, r.id);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_TRUE(*back == data);
    auto chunks = store_->Chunks(r.id);
    ASSERT_TRUE(chunks.ok()) << chunks.status().ToString();
    const auto cuts = ChunkBuffer(options_.chunking, data.data(), data.size());
    ASSERT_EQ(chunks->size(), cuts.size());
    for (size_t i = 0; i < cuts.size(); ++i) {
      EXPECT_EQ((*chunks)[i].offset, cuts[i].offset) << i;
      EXPECT_EQ((*chunks)[i].length, cuts[i].length) << i;
    }
  }

  // Runs a statement on the index with the store closed, then reopens it.
  void AlterIndex(const std::string& statement) {
    store_.reset();
    testing::Sql(dir_ / "s", statement);
    auto s = Store::Open(dir_ / "s", options_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }

  TempDir dir_;
  Options options_;
  std::unique_ptr<Store> store_;
};

TEST_F(PublishAgain, TheSamePayloadWritesNothingAndKeepsItsId) {
  const auto data = RandomBytes(kSize, 41);
  auto first = PublishFile(data, "a");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto again = PublishFile(data, "b");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->id, first->id);
  EXPECT_EQ(again->new_bytes, 0u);
  EXPECT_EQ(again->chunks, first->chunks);
  EXPECT_EQ(again->reused_chunks, again->chunks);
  ExpectStoredAsCut(*again, data);
}

TEST_F(PublishAgain, AnEditOfTheSameSizeAddsAboutOneChunk) {
  const auto data = RandomBytes(kSize, 42);
  auto first = PublishFile(data, "a");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  // Each edit is the newest object of its size when the next is published
  // (and so the one its chunks are checked against): an edit of an edit.
  auto edited = data;
  for (size_t at : {kSize / 2, size_t{0}, kSize - 1, kSize / 4}) {
    SCOPED_TRACE("edit at " + std::to_string(at));
    edited[at] ^= 0x5a;
    auto r = PublishFile(edited, "edited");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ExpectStoredAsCut(*r, edited);
    EXPECT_GE(r->reused_chunks + 3, r->chunks);
  }
}

TEST_F(PublishAgain, PreparingAnEditGivesTheChunkersCuts) {
  const auto data = RandomBytes(kSize, 48);
  auto first = PublishFile(data, "a");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto edited = data;
  edited[kSize / 2 + 5] ^= 0x5a;
  testing::WriteFile(dir_ / "edited", edited);
  auto prepared = store_->PrepareFile(dir_ / "edited");
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  EXPECT_EQ(prepared->id(), internal::Sha256::Of(edited.data(), edited.size()).ObjectId());
  const auto got = prepared->chunks();
  const auto cuts = ChunkBuffer(options_.chunking, edited.data(), edited.size());
  ASSERT_EQ(got.size(), cuts.size());
  for (size_t i = 0; i < cuts.size(); ++i) {
    EXPECT_EQ(got[i].offset, cuts[i].offset) << i;
    EXPECT_EQ(got[i].length, cuts[i].length) << i;
    EXPECT_EQ(got[i].id, internal::Sha256::Of(edited.data() + cuts[i].offset, cuts[i].length).Hex()) << i;
  }
  auto r = store_->Publish(*prepared);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectStoredAsCut(*r, edited);
}

TEST_F(PublishAgain, ProgressOfAnEditNeverGoesBackAndEndsAtItsSize) {
  // Chunks near the 256 KiB reporting step, so the first phase reads, and
  // reports, well past the point it rewinds to.
  Options o;
  o.chunking.min_size = 64 << 10;
  o.chunking.avg_size = 256 << 10;
  o.chunking.max_size = 1 << 20;
  o.threads = 2;
  auto s = Store::Open(dir_ / "large", o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const size_t size = 8 << 20;
  const auto data = RandomBytes(size, 49);
  testing::WriteFile(dir_ / "a", data);
  ASSERT_TRUE((*s)->PublishFile(dir_ / "a").ok());
  auto edited = data;
  edited[size / 4] ^= 0x5a;
  testing::WriteFile(dir_ / "edited", edited);
  std::vector<uint64_t> seen;
  auto batch = (*s)->NewBatch();
  batch->SetProgress([&](uint64_t bytes) { seen.push_back(bytes); });
  auto r = batch->AddFile(dir_ / "edited");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(batch->Commit().ok());
  EXPECT_EQ(r->id, internal::Sha256::Of(edited.data(), edited.size()).ObjectId());
  ASSERT_FALSE(seen.empty());
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_LE(seen[i - 1], seen[i]) << "report " << i;
  EXPECT_EQ(seen.back(), size);
}

TEST_F(PublishAgain, UnrelatedContentOfTheSameSizeIsCutAsUsual) {
  auto first = PublishFile(RandomBytes(kSize, 43), "a");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const auto other = RandomBytes(kSize, 44);
  auto r = PublishFile(other, "b");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->reused_chunks, 0u);
  ExpectStoredAsCut(*r, other);
}

TEST_F(PublishAgain, ADamagedManifestOfTheSameSizeDoesNotFailThePublish) {
  const auto data = RandomBytes(kSize, 45);
  auto first = PublishFile(data, "a");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  AlterIndex("UPDATE objects SET manifest = x'00112233'");
  auto edited = data;
  edited[kSize / 3] ^= 1;
  auto r = PublishFile(edited, "edited");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectStoredAsCut(*r, edited);
}

TEST_F(PublishAgain, ChunksMissingFromTheIndexAreWrittenAgain) {
  const auto data = RandomBytes(kSize, 46);
  auto first = PublishFile(data, "a");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  AlterIndex("DELETE FROM chunks WHERE id IN (SELECT id FROM chunks LIMIT 5)");
  auto r = PublishFile(data, "b");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->id, first->id);
  EXPECT_GT(r->new_bytes, 0u);  // the chunks the index lost are stored again
  EXPECT_GE(r->reused_chunks + 5, r->chunks);
  ExpectStoredAsCut(*r, data);
}

TEST_F(PublishAgain, AStoreWithoutTheSizeIndexGetsItAtOpen) {
  const auto data = RandomBytes(kSize, 47);
  auto first = PublishFile(data, "a");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  AlterIndex("DROP INDEX objects_by_size");
  auto again = PublishFile(data, "b");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->new_bytes, 0u);
  store_.reset();
  // Fails if the index was not created again.
  testing::Sql(dir_ / "s", "SELECT 1 FROM objects INDEXED BY objects_by_size WHERE size >= 1048576");
}

// Which earlier object a publish checks against: of several objects of the
// input's size, the newest (most likely the version being replaced); none
// below the indexed size.
TEST(EarlierVersion, TheNewestObjectOfTheSizeIsTheOneOffered) {
  TempDir dir;
  internal::StoreMeta meta;
  internal::Index::OpenOptions o;
  o.create = &meta;
  auto index = internal::Index::Open(dir / "index.db", o);
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  auto row = [](uint8_t tag, uint64_t size, int64_t created) {
    internal::ObjectRow r;
    r.id.bytes.fill(tag);
    r.size = size;
    r.chunk_count = 1;
    r.manifest = std::string(40, static_cast<char>(tag));
    r.created = created;
    return r;
  };
  const uint64_t big = internal::kSizeIndexedFrom + 5;
  ASSERT_TRUE((*index)->Begin().ok());
  for (const auto& r : {row(1, big, 100), row(2, big, 300), row(3, big, 200), row(4, big + 1, 400),
                        row(5, internal::kSizeIndexedFrom - 1, 500)})
    ASSERT_TRUE((*index)->InsertObject(r).ok());
  ASSERT_TRUE((*index)->Commit().ok());
  auto found = (*index)->FindObjectOfSize(big);
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->id.bytes[0], 2) << "not the newest of the three objects of that size";
  auto small = (*index)->FindObjectOfSize(internal::kSizeIndexedFrom - 1);
  ASSERT_TRUE(small.ok());
  EXPECT_FALSE(small->has_value()) << "objects below the indexed size are never offered";
  auto none = (*index)->FindObjectOfSize(big + 2);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

}  // namespace
}  // namespace chunkstore
