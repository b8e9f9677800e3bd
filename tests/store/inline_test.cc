// SPDX-License-Identifier: Apache-2.0
// Inline objects: objects of at most Options::inline_max bytes keep their
// content in their index row, with no chunk row and no pack record. They
// read back verified like any object, damage to them is found and named,
// and stores made without them (inline_max 0, older stores, bucket stores)
// keep storing small objects as chunks.

#include <cstring>
#include <sstream>

#include "hash/digest.h"
#include <set>

#include "test_util.h"

namespace chunkstore {
namespace {

using testing::RandomBytes;
using testing::GcNow;
using testing::ReadObject;
using testing::TempDir;

class InlineTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }
  void Reopen() {
    store_.reset();
    auto s = Store::Open(dir_ / "s", options_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }
  size_t PackFiles() {
    size_t n = 0;
    for (auto& e : std::filesystem::directory_iterator(dir_ / "s/packs")) n += e.is_regular_file();
    return n;
  }
  // Runs a statement on the index of the store in `store_dir` (default:
  // the fixture's); returns its first column, concatenated.
  std::string Sql(const std::string& statement, const std::string& store_dir = {}) {
    return testing::Sql(store_dir.empty() ? std::string(dir_ / "s") : store_dir, statement);
  }
  // Runs a statement with the store closed, then reopens it.
  void AlterIndex(const std::string& statement) {
    store_.reset();
    Sql(statement);
    Reopen();
  }

  TempDir dir_;
  Options options_;
  std::unique_ptr<Store> store_;
};

TEST_F(InlineTest, ASmallObjectLivesInItsIndexRowAndReadsBack) {
  const auto data = RandomBytes(256, 1);
  auto r = store_->PublishBytes(data.data(), data.size(), "small");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->id, internal::Sha256::Of(data.data(), data.size()).ObjectId());
  EXPECT_EQ(r->chunks, 0u);
  EXPECT_EQ(r->new_bytes, 256u);
  EXPECT_EQ(PackFiles(), 0u);
  EXPECT_EQ(Sql("SELECT count(*) FROM chunks"), "0");
  EXPECT_TRUE(store_->Chunks(r->id)->empty());
  auto info = store_->Stat("small");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_TRUE(info->stored_inline);
  EXPECT_EQ(info->chunks, 0u);
  EXPECT_EQ(info->stored_bytes, 256u);
  // Every way of opening it: full id, bare hex, prefix, name.
  for (const std::string& ref : {r->id, r->id.substr(7), r->id.substr(7, 12), std::string("small")}) {
    auto back = ReadObject(*store_, ref);
    ASSERT_TRUE(back.ok()) << ref << ": " << back.status().ToString();
    EXPECT_TRUE(*back == data) << ref;
  }
  auto reader = store_->OpenReader(r->id);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->size(), 256u);
  uint8_t buf[300];
  EXPECT_EQ(*(*reader)->ReadAt(250, buf, sizeof buf), 6u);
  EXPECT_EQ(0, std::memcmp(buf, data.data() + 250, 6));
  EXPECT_EQ(*(*reader)->ReadAt(256, buf, sizeof buf), 0u);
  ASSERT_TRUE((*reader)->Seek(100).ok());
  EXPECT_EQ(*(*reader)->Read(buf, 10), 10u);
  EXPECT_EQ(0, std::memcmp(buf, data.data() + 100, 10));
  EXPECT_EQ((*reader)->Tell(), 110u);
  EXPECT_EQ((*reader)->id(), r->id);
  EXPECT_TRUE((*reader)->Seek(257).IsInvalidArgument());
  EXPECT_EQ((*reader)->Tell(), 110u);
  auto view = (*reader)->ReadView(100);
  ASSERT_TRUE(view.ok());
  ASSERT_EQ(view->size, 100u);
  EXPECT_EQ(0, std::memcmp(view->data, data.data() + 110, 100));
  view = (*reader)->ReadView(1000);
  ASSERT_TRUE(view.ok());
  ASSERT_EQ(view->size, 46u);
  EXPECT_EQ(0, std::memcmp(view->data, data.data() + 210, 46));
  EXPECT_EQ((*reader)->ReadView(10)->size, 0u);
  EXPECT_EQ(*(*reader)->Read(buf, 10), 0u);
  ASSERT_TRUE((*reader)->Seek(256).ok());
  // The reader outlives the store.
  ASSERT_TRUE((*reader)->Seek(0).ok());
  store_.reset();
  EXPECT_EQ(*(*reader)->Read(buf, sizeof buf), 256u);
  EXPECT_EQ(0, std::memcmp(buf, data.data(), 256));
  // It survives the store being closed and opened again.
  Reopen();
  EXPECT_TRUE(*ReadObject(*store_, "small") == data);
}

TEST_F(InlineTest, TheLimitIsInclusiveAndOneByteMoreIsAChunk) {
  options_.inline_max = 100;
  TempDir other;
  auto s = *Store::Open(other / "s", options_);
  EXPECT_EQ(s->inline_max(), 100u);
  const auto at = RandomBytes(100, 2), over = RandomBytes(101, 3);
  auto a = s->PublishBytes(at.data(), at.size());
  auto b = s->PublishBytes(over.data(), over.size());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->chunks, 0u);
  EXPECT_EQ(b->chunks, 1u);
  EXPECT_EQ(b->new_bytes, 64u + 101u);  // record header and payload
  EXPECT_TRUE(*ReadObject(*s, a->id) == at);
  EXPECT_TRUE(*ReadObject(*s, b->id) == over);
}

TEST_F(InlineTest, TheEmptyObjectIsNotInline) {
  auto r = store_->PublishBytes("", 0, "empty");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->chunks, 0u);
  EXPECT_FALSE(store_->Stat("empty")->stored_inline);
  EXPECT_TRUE(ReadObject(*store_, "empty")->empty());
}

TEST_F(InlineTest, PublishingAgainAddsNothing) {
  const auto data = RandomBytes(300, 4);
  auto first = store_->PublishBytes(data.data(), data.size(), "a");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->new_bytes, 300u);
  auto again = store_->PublishBytes(data.data(), data.size(), "b");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->id, first->id);
  EXPECT_EQ(again->new_bytes, 0u);
  // The same content twice in one batch: added once.
  const auto fresh = RandomBytes(300, 5);
  auto batch = store_->NewBatch();
  ASSERT_TRUE(batch->AddBytes(fresh.data(), fresh.size(), "c").ok());
  ASSERT_TRUE(batch->AddBytes(fresh.data(), fresh.size(), "d").ok());
  auto results = batch->Commit();
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  EXPECT_EQ((*results)[0].new_bytes + (*results)[1].new_bytes, 300u);
  EXPECT_EQ(Sql("SELECT count(*) FROM objects"), "2");
  auto stats = store_->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->inline_objects, 2u);
  EXPECT_EQ(stats->inline_bytes, 600u);
  EXPECT_EQ(stats->logical_bytes, 600u);
  EXPECT_EQ(stats->unique_bytes, 600u);
  EXPECT_EQ(stats->garbage_bytes, 0u);
}

TEST_F(InlineTest, AnUnnamedPublishPinsAnInlineObjectAlreadyStoredUnderAName) {
  const auto data = RandomBytes(200, 6);
  ASSERT_TRUE(store_->PublishBytes(data.data(), data.size(), "a").ok());
  EXPECT_FALSE(store_->Stat("a")->pinned);
  auto r = store_->PublishBytes(data.data(), data.size());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(store_->Stat(r->id)->pinned);
  auto unnamed = store_->ListUnnamed();
  ASSERT_TRUE(unnamed.ok());
  EXPECT_TRUE(unnamed->empty());  // it still has a name
  ASSERT_TRUE(store_->RemoveName("a").ok());
  unnamed = store_->ListUnnamed();
  ASSERT_TRUE(unnamed.ok());
  ASSERT_EQ(unnamed->size(), 1u);
  EXPECT_EQ((*unnamed)[0].id, r->id);
  EXPECT_TRUE((*unnamed)[0].stored_inline);
  EXPECT_EQ((*unnamed)[0].chunks, 0u);
  ASSERT_TRUE(store_->Gc(GcNow()).ok());
  EXPECT_TRUE(*ReadObject(*store_, r->id) == data);
}

TEST_F(InlineTest, StreamsPreparedObjectsAndBatchesAreInlinedToo) {
  const auto a = RandomBytes(500, 7), b = RandomBytes(40, 8), big = RandomBytes(3 << 20, 9);
  std::istringstream in(std::string(a.begin(), a.end()));
  auto streamed = store_->PublishStream(in, "streamed");
  ASSERT_TRUE(streamed.ok()) << streamed.status().ToString();
  EXPECT_EQ(streamed->chunks, 0u);
  auto prepared = store_->PrepareBytes(b.data(), b.size());
  ASSERT_TRUE(prepared.ok());
  auto p = store_->Publish(*prepared, "prepared");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->chunks, 0u);
  EXPECT_EQ(p->new_bytes, 40u);
  // Small and large objects in one batch: only the large one's chunks go
  // into a pack.
  auto batch = store_->NewBatch();
  std::vector<std::vector<uint8_t>> smalls;
  for (int i = 0; i < 20; ++i) {
    smalls.push_back(RandomBytes(10 + 20 * i, 100 + i));
    ASSERT_TRUE(batch->AddBytes(smalls.back().data(), smalls.back().size(), "s" + std::to_string(i)).ok());
  }
  ASSERT_TRUE(batch->AddBytes(big.data(), big.size(), "big").ok());
  auto results = batch->Commit();
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  EXPECT_GT(results->back().chunks, 1u);
  EXPECT_EQ(Sql("SELECT count(*) FROM chunks"), std::to_string(results->back().chunks));
  Reopen();
  EXPECT_TRUE(*ReadObject(*store_, "streamed") == a);
  EXPECT_TRUE(*ReadObject(*store_, "prepared") == b);
  EXPECT_TRUE(*ReadObject(*store_, "big") == big);
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(*ReadObject(*store_, "s" + std::to_string(i)) == smalls[i]) << i;
  auto v = store_->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt());
  EXPECT_EQ(v->objects_checked, 23u);
}

TEST_F(InlineTest, APreparedBufferChangedBeforePublishIsRefused) {
  auto data = RandomBytes(200, 19);
  auto p = store_->PrepareBytes(data.data(), data.size());
  ASSERT_TRUE(p.ok());
  data[100] ^= 1;
  auto r = store_->Publish(*p, "p");
  ASSERT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("changed"), std::string::npos);
  EXPECT_TRUE(store_->Resolve(p->id()).status().IsNotFound());
  EXPECT_EQ(Sql("SELECT count(*) FROM objects"), "0");
}

TEST_F(InlineTest, DamagedInlineContentIsCorruptionNamingTheObject) {
  const auto data = RandomBytes(256, 10), other = RandomBytes(256, 11), big = RandomBytes(300000, 12);
  const std::string id = store_->PublishBytes(data.data(), data.size(), "a")->id;
  ASSERT_TRUE(store_->PublishBytes(other.data(), other.size(), "b").ok());
  ASSERT_TRUE(store_->PublishBytes(big.data(), big.size(), "big").ok());
  ASSERT_TRUE(store_->RemoveName("big").ok());  // garbage for a gc to find
  const std::string chunks = Sql("SELECT count(*) FROM chunks");
  const std::string where = " WHERE id = x'" + id.substr(7) + "'";
  const std::string good = Sql("SELECT hex(manifest) FROM objects" + where);
  ASSERT_EQ(good.size(), 512u);
  std::string flipped = good;
  flipped[200] = flipped[200] == '0' ? '1' : '0';  // one bit of one byte
  for (const std::string& damage : {"x'" + flipped + "'", "x'" + good.substr(0, 510) + "'"}) {
    AlterIndex("UPDATE objects SET manifest = " + damage + where);
    for (const std::string& ref : {id, std::string("a")}) {
      auto r = store_->OpenReader(ref);
      ASSERT_TRUE(r.status().IsCorruption()) << ref << ": " << r.status().ToString();
      EXPECT_EQ(r.status().object_id(), id);
      EXPECT_NE(r.status().message().find(id), std::string::npos) << r.status().message();
    }
    auto v = store_->Verify();
    ASSERT_TRUE(v.ok());
    EXPECT_TRUE(v->corrupt());
    // The row is damaged, and so the index no longer says what the log says.
    ASSERT_EQ(v->problems.size(), 2u);
    std::set<std::string> kinds;
    for (const auto& p : v->problems) {
      kinds.insert(p.kind);
      EXPECT_EQ(p.object_id, id) << p.kind;
    }
    EXPECT_EQ(kinds, (std::set<std::string>{"bad-inline", "index-differs"}));
    // gc will not guess: it stops, and collects nothing.
    auto gc = store_->Gc(GcNow());
    EXPECT_TRUE(gc.status().IsCorruption()) << gc.status().ToString();
    EXPECT_EQ(gc.status().object_id(), id);
    EXPECT_EQ(Sql("SELECT count(*) FROM chunks"), chunks);
    EXPECT_TRUE(*ReadObject(*store_, "b") == other);  // nothing else is lost
  }
  AlterIndex("UPDATE objects SET manifest = x'" + good + "'" + where);
  EXPECT_TRUE(*ReadObject(*store_, "a") == data);
  auto gc = store_->Gc(GcNow());
  ASSERT_TRUE(gc.ok()) << gc.status().ToString();
  EXPECT_EQ(gc->objects_removed, 1u);
  EXPECT_EQ(Sql("SELECT count(*) FROM chunks"), "0");
}

TEST_F(InlineTest, AChunkListWithItsChunkCountZeroedDoesNotPassForContent) {
  // A damaged row must not make gc think an object needs no chunks.
  const auto big = RandomBytes(300000, 13);
  const std::string id = store_->PublishBytes(big.data(), big.size(), "big")->id;
  const std::string chunks = Sql("SELECT count(*) FROM chunks");
  ASSERT_NE(chunks, "0");
  AlterIndex("UPDATE objects SET chunk_count = 0");
  auto r = store_->OpenReader(id);
  ASSERT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_EQ(r.status().object_id(), id);
  auto v = store_->Verify();
  ASSERT_TRUE(v.ok());
  std::set<std::string> kinds;
  for (const auto& p : v->problems) kinds.insert(p.kind);
  EXPECT_TRUE(kinds.count("bad-inline"));
  EXPECT_TRUE(kinds.count("index-differs"));
  EXPECT_TRUE(store_->Gc(GcNow()).status().IsCorruption());
  EXPECT_EQ(Sql("SELECT count(*) FROM chunks"), chunks);
}

TEST_F(InlineTest, GcRemovesAnUnreferencedInlineObjectAndKeepsTheRest) {
  const auto a = RandomBytes(100, 14), b = RandomBytes(100, 15);
  const std::string ida = store_->PublishBytes(a.data(), a.size(), "a")->id;
  ASSERT_TRUE(store_->PublishBytes(b.data(), b.size(), "b").ok());
  ASSERT_TRUE(store_->RemoveName("a").ok());
  auto gc = store_->Gc(GcNow());
  ASSERT_TRUE(gc.ok()) << gc.status().ToString();
  EXPECT_EQ(gc->objects_removed, 1u);
  EXPECT_TRUE(store_->OpenReader(ida).status().IsNotFound());
  EXPECT_TRUE(*ReadObject(*store_, "b") == b);
}

TEST_F(InlineTest, ZeroKeepsSmallObjectsInPacks) {
  options_.inline_max = 0;
  TempDir other;
  {
    auto s = *Store::Open(other / "s", options_);
    EXPECT_EQ(s->inline_max(), 0u);
    auto r = s->PublishBytes("tiny", 4);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->chunks, 1u);
  }
  // Chosen at creation: opening with the default does not change it.
  auto s = *Store::Open(other / "s");
  EXPECT_EQ(s->inline_max(), 0u);
  EXPECT_EQ(s->PublishBytes("tiny2", 5)->chunks, 1u);
  EXPECT_EQ(Sql("SELECT value FROM meta WHERE key = 'inline_max'", other / "s"), "0");
  EXPECT_EQ(Sql("SELECT value FROM meta WHERE key = 'inline_max'"), "512");
  EXPECT_NE(testing::ReadFile(other / "s/config").size(), 0u);
  const auto config = testing::ReadFile(other / "s/config");
  EXPECT_NE(std::string(config.begin(), config.end()).find("inline_max 0\n"), std::string::npos);
}

TEST_F(InlineTest, TheLimitIsCheckedAndKeptBelowTheChunkMinimum) {
  options_.inline_max = 4097;
  TempDir other;
  auto bad = Store::Open(other / "s", options_);
  ASSERT_TRUE(bad.status().IsInvalidArgument()) << bad.status().ToString();
  EXPECT_NE(bad.status().message().find("4097"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(other / "s/index.db"));
  EXPECT_TRUE(Store::OpenInMemory(options_).status().IsInvalidArgument());
  // Above the chunk minimum it is lowered to just below it.
  Options o = testing::SmallChunks();  // min 1024
  o.inline_max = 4096;
  auto s = *Store::Open(other / "t", o);
  EXPECT_EQ(s->inline_max(), 1023u);
  const auto below = RandomBytes(1023, 16), at = RandomBytes(1024, 17);
  EXPECT_EQ(s->PublishBytes(below.data(), below.size())->chunks, 0u);
  EXPECT_EQ(s->PublishBytes(at.data(), at.size())->chunks, 1u);
}

TEST_F(InlineTest, AStoredLimitThatCannotBeIsRefused) {
  store_.reset();
  Sql("UPDATE meta SET value = '300000' WHERE key = 'inline_max'");
  auto s = Store::Open(dir_ / "s", options_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("inline limit"), std::string::npos) << s.status().ToString();
  Sql("UPDATE meta SET value = '512' WHERE key = 'inline_max'");
  Sql("UPDATE meta SET value = '1' WHERE key = 'schema_version'");
  s = Store::Open(dir_ / "s", options_);
  ASSERT_TRUE(s.status().IsCorruption()) << s.status().ToString();
}

TEST_F(InlineTest, InMemoryStoresInlineToo) {
  auto s = *Store::OpenInMemory();
  const auto data = RandomBytes(512, 18);
  auto r = s->PublishBytes(data.data(), data.size());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->chunks, 0u);
  EXPECT_TRUE(*ReadObject(*s, r->id) == data);
}

}  // namespace
}  // namespace chunkstore
