// SPDX-License-Identifier: Apache-2.0
// Catalog: stat, list, history, tag, remove, stats, exists.
#include "test_util.h"

namespace chunkstore {
namespace {

using testing::RandomBytes;

class CatalogTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = *Store::OpenInMemory(testing::SmallChunks()); }
  std::string Put(const std::vector<uint8_t>& d, const std::string& name = {}) {
    auto r = store_->PublishBytes(d.data(), d.size(), name);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->id : "";
  }
  std::unique_ptr<Store> store_;
};

TEST_F(CatalogTest, StatReportsSizeChunksStorageAndNames) {
  const auto d = RandomBytes(50000, 1);
  const std::string id = Put(d, "a");
  ASSERT_TRUE(store_->Tag(id, "b").ok());
  auto info = store_->Stat("a");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->id, id);
  EXPECT_EQ(info->size, d.size());
  EXPECT_EQ(info->chunks, store_->Chunks(id)->size());
  EXPECT_EQ(info->stored_bytes, d.size() + 64 * info->chunks);  // random: raw
  EXPECT_EQ(info->compressed_chunks, 0u);
  EXPECT_FALSE(info->pinned);
  EXPECT_EQ(info->names, (std::vector<std::string>{"a", "b"}));
  // A newer version elsewhere means the name no longer points here.
  Put(RandomBytes(10, 2), "b");
  EXPECT_EQ(store_->Stat(id)->names, (std::vector<std::string>{"a"}));
  EXPECT_TRUE(store_->Stat("zzz").status().IsNotFound());
}

TEST_F(CatalogTest, ListIsSortedByNameWithLatestVersions) {
  Put(RandomBytes(10, 1), "dir/b");
  Put(RandomBytes(10, 2), "dir/a");
  const std::string newer = Put(RandomBytes(20, 3), "dir/a");
  Put(RandomBytes(10, 4), "other");
  Put(RandomBytes(10, 5));  // unnamed
  auto all = store_->List();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].name, "dir/a");
  EXPECT_EQ((*all)[0].version, 2);
  EXPECT_EQ((*all)[0].id, newer);
  EXPECT_EQ((*all)[0].size, 20u);
  EXPECT_EQ((*all)[1].name, "dir/b");
  EXPECT_EQ((*all)[2].name, "other");
  auto dir = store_->List("dir/");
  ASSERT_EQ(dir->size(), 2u);
  EXPECT_TRUE(store_->List("nothing")->empty());
  auto unnamed = store_->ListUnnamed();
  ASSERT_TRUE(unnamed.ok());
  // Only the unnamed object: dir/a's first version is still in its history.
  ASSERT_EQ(unnamed->size(), 1u);
  EXPECT_EQ((*unnamed)[0].size, 10u);
  EXPECT_TRUE((*unnamed)[0].pinned);
}

TEST_F(CatalogTest, HistoryIsNewestFirst) {
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(Put(RandomBytes(100, i), "h"));
  auto h = store_->History("h");
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ((*h)[i].version, 5 - i);
    EXPECT_EQ((*h)[i].id, ids[4 - i]);
  }
  EXPECT_TRUE(store_->History("none").status().IsNotFound());
  EXPECT_TRUE(store_->History("bad\nname").status().IsInvalidArgument());
}

TEST_F(CatalogTest, TagAddsAVersionAndRejectsUnknownObjects) {
  const std::string a = Put(RandomBytes(100, 1), "t");
  const std::string b = Put(RandomBytes(100, 2));
  auto e = store_->Tag(b, "t");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->version, 2);
  EXPECT_EQ(*store_->Resolve("t"), b);
  EXPECT_EQ(*store_->Resolve("t@1"), a);
  EXPECT_TRUE(store_->Tag("sha256:" + std::string(64, 'f'), "t").status().IsNotFound());
  EXPECT_TRUE(store_->Tag(a, "").status().IsInvalidArgument());
  EXPECT_EQ(store_->History("t")->size(), 2u);
}

TEST_F(CatalogTest, RemoveNameAndObject) {
  const std::string a = Put(RandomBytes(100, 1), "keep");
  ASSERT_TRUE(store_->Tag(a, "other").ok());
  ASSERT_TRUE(store_->RemoveName("other").ok());
  EXPECT_TRUE(store_->Resolve("other").status().IsNotFound());
  EXPECT_TRUE(store_->RemoveName("other").IsNotFound());
  EXPECT_TRUE(*store_->Exists(a));  // objects outlive their names
  ASSERT_TRUE(store_->RemoveObject("keep").ok());
  EXPECT_FALSE(*store_->Exists(a));
  EXPECT_TRUE(store_->Resolve("keep").status().IsNotFound());
  EXPECT_TRUE(store_->RemoveObject(a).IsNotFound());
  EXPECT_TRUE(store_->Exists("sha256:zz").status().IsInvalidArgument());
}

TEST_F(CatalogTest, StatsCountDedupeAndCompression) {
  const auto d = RandomBytes(40000, 1);
  Put(d, "x");
  Put(d, "y");  // same content: no new chunks
  std::string text;
  while (text.size() < 40000) text += "compressible text line\n";
  ASSERT_TRUE(store_->PublishBytes(text.data(), text.size()).ok());
  auto st = store_->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->objects, 2u);
  EXPECT_EQ(st->names, 2u);
  EXPECT_EQ(st->logical_bytes, d.size() + text.size());
  EXPECT_EQ(st->unique_bytes, d.size() + text.size());
  EXPECT_GT(st->compression_ratio(), 1.2);
  EXPECT_EQ(st->pack_count, 1u);
  EXPECT_EQ(st->garbage_bytes, 0u);
  EXPECT_EQ(st->pack_bytes, st->stored_bytes + 16);
  EXPECT_NEAR(st->dedupe_ratio(), 1.0, 1e-9);  // one copy of each byte so far
  auto edited = d;
  edited.back() ^= 1;  // a second object sharing all but its last chunk
  Put(edited, "z");
  auto after = store_->Stats();
  EXPECT_EQ(after->logical_bytes, 2 * d.size() + text.size());
  EXPECT_EQ(after->unique_bytes, d.size() + text.size() + store_->Chunks("z")->back().length);
  EXPECT_GT(after->dedupe_ratio(), 1.3);
}

}  // namespace
}  // namespace chunkstore
