// SPDX-License-Identifier: Apache-2.0
// Garbage collection: what it reclaims, what it keeps, dry runs, crashes at
// every step, and readers and publishers running alongside it.
#include <set>

#include "fault_env.h"
#include "log_forge.h"
#include "test_util.h"

namespace chunkstore {
namespace {

using testing::GcNow;
using testing::RandomBytes;
using testing::ReadObject;

uint64_t DirBytes(const std::string& dir) {
  uint64_t n = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) n += e.file_size();
  return n;
}

class GcTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }
  void Reopen(Env* env = nullptr) {
    store_.reset();
    Options o = testing::SmallChunks();
    o.env = env;
    store_ = *Store::Open(dir_ / "s", o);
  }
  std::string Put(const std::vector<uint8_t>& d, const std::string& name) {
    auto r = store_->PublishBytes(d.data(), d.size(), name);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->id : "";
  }
  // A store under dir_/sub with large chunks (64 KiB and more are looked
  // up as they arrive, smaller ones only at commit) that held d as "a",
  // now removed but not yet collected.
  std::unique_ptr<Store> StoreWithRemoved(const std::string& sub, const std::vector<uint8_t>& d) {
    Options o;
    o.chunking.min_size = 64 << 10;
    o.chunking.avg_size = 128 << 10;
    o.chunking.max_size = 512 << 10;
    auto store = *Store::Open(dir_ / sub, o);
    EXPECT_TRUE(store->PublishBytes(d.data(), d.size(), "a").ok());
    EXPECT_TRUE(store->RemoveName("a").ok());
    return store;
  }
  // The file operations of one clean gc, run on a copy of the store.
  int CleanGcOperations(testing::FaultEnv& env) {
    const auto copy_dir = dir_ / ("copy-" + std::to_string(++copies_));
    std::filesystem::copy(dir_ / "s", copy_dir, std::filesystem::copy_options::recursive);
    Options o = testing::SmallChunks();
    o.env = &env;
    auto copy = *Store::Open(copy_dir, o);
    env.FailAt(0);
    EXPECT_TRUE(copy->Gc(GcNow()).ok());
    return env.count();
  }
  testing::TempDir dir_;
  std::unique_ptr<Store> store_;
  int copies_ = 0;
};

TEST_F(GcTest, ReclaimsRemovedObjectsAndKeepsTheRest) {
  std::vector<std::vector<uint8_t>> data;
  for (int i = 0; i < 4; ++i) {
    data.push_back(RandomBytes(400000, i + 1));
    Put(data[i], "obj" + std::to_string(i));
  }
  const auto pinned = RandomBytes(50000, 99);
  ASSERT_TRUE(store_->PublishBytes(pinned.data(), pinned.size()).ok());  // unnamed: kept
  const uint64_t before = DirBytes(dir_ / "s/packs");
  ASSERT_TRUE(store_->RemoveName("obj0").ok());
  ASSERT_TRUE(store_->RemoveName("obj1").ok());
  ASSERT_TRUE(store_->RemoveName("obj2").ok());

  auto dry = store_->Gc([] { GcOptions o = GcNow(); o.dry_run = true; return o; }());
  ASSERT_TRUE(dry.ok());
  EXPECT_EQ(dry->objects_removed, 3u);
  EXPECT_GT(dry->bytes_reclaimed, 1000000u);
  EXPECT_EQ(DirBytes(dir_ / "s/packs"), before);  // a dry run changes nothing
  EXPECT_EQ(store_->ListUnnamed()->size(), 4u);

  auto r = store_->Gc(GcNow());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->objects_removed, 3u);
  EXPECT_GT(r->chunks_removed, 100u);
  EXPECT_EQ(r->packs_compacted, 1u);
  const uint64_t after = DirBytes(dir_ / "s/packs");
  EXPECT_LT(after, before / 2);
  EXPECT_EQ(before - after, r->bytes_reclaimed);
  EXPECT_EQ(*ReadObject(*store_, "obj3"), data[3]);
  auto v = store_->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt());
  EXPECT_EQ(store_->Stats()->garbage_bytes, 0u);
  // Nothing left to do.
  auto again = store_->Gc(GcNow());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->bytes_reclaimed, 0u);
}

// An object stays while any version of any name points at it, not only a
// latest one.
TEST_F(GcTest, EveryVersionOfANameKeepsItsObject) {
  const auto v1 = RandomBytes(200000, 31), v2 = RandomBytes(200000, 32), v3 = RandomBytes(3000, 33);
  const std::string id1 = Put(v1, "w"), id2 = Put(v2, "w");
  ASSERT_TRUE(store_->Tag(id1, "other").ok());
  ASSERT_TRUE(store_->Tag(id2, "other").ok());  // other@1 is v1 too; the latest of both is not
  Put(v3, "w");
  auto gc = store_->Gc(GcNow());
  ASSERT_TRUE(gc.ok()) << gc.status().ToString();
  EXPECT_EQ(gc->objects_removed, 0u);
  EXPECT_EQ(gc->chunks_removed, 0u);
  Reopen();
  for (const auto& [ref, want] : std::vector<std::pair<std::string, const std::vector<uint8_t>*>>{
           {"w@1", &v1}, {"w@2", &v2}, {"w@3", &v3}, {"w", &v3}, {"other@1", &v1}, {"other", &v2}}) {
    auto got = ReadObject(*store_, ref);
    ASSERT_TRUE(got.ok()) << ref << ": " << got.status().ToString();
    EXPECT_EQ(*got, *want) << ref;
  }
  EXPECT_EQ(store_->History("w")->size(), 3u);
  auto v = store_->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->problems.empty());
}

// gc never guesses what a damaged manifest needs: it stops, naming the
// object, before it removes any object, chunk or pack.
TEST_F(GcTest, ADamagedManifestStopsGcBeforeItFreesAnything) {
  const auto a = RandomBytes(300000, 41), b = RandomBytes(300000, 42);
  const std::string ida = Put(a, "a");
  Put(b, "b");
  ASSERT_TRUE(store_->RemoveName("b").ok());  // b is garbage now
  store_.reset();
  const std::string where = " WHERE hex(id) = upper('" + ida.substr(7) + "')";
  const std::string counts = "SELECT count(*) FROM objects; SELECT count(*) FROM chunks; SELECT count(*) FROM packs";
  const std::string before = testing::Sql(dir_ / "s", counts);
  ASSERT_EQ(testing::Sql(dir_ / "s", "SELECT chunk_count > 1 FROM objects" + where), "1");
  testing::Sql(dir_ / "s", "UPDATE objects SET manifest = zeroblob(length(manifest))" + where);
  const uint64_t pack_bytes = DirBytes(dir_ / "s/packs");
  Reopen();
  auto gc = store_->Gc(GcNow());
  ASSERT_FALSE(gc.ok());
  EXPECT_TRUE(gc.status().IsCorruption()) << gc.status().ToString();
  EXPECT_EQ(gc.status().object_id(), ida);
  store_.reset();
  EXPECT_EQ(testing::Sql(dir_ / "s", counts), before);
  EXPECT_EQ(DirBytes(dir_ / "s/packs"), pack_bytes);
}

// A damaged manifest in the change log itself (the truth gc decides from):
// gc stops before it removes anything.
// Publishes "a" and a removed "b", rewrites a's row in the log with edit,
// rebuilds the index from the log, then runs gc: it must stop with a
// corruption naming a (its message holding `why`) and free nothing.
void ExpectGcStopsOnForgedRow(testing::TempDir& dir, std::unique_ptr<Store>& store, uint64_t seed,
                              const std::function<void(internal::ObjectRow&)>& edit, const std::string& why) {
  const auto a = RandomBytes(300000, seed), b = RandomBytes(300000, seed + 1);
  auto put = store->PublishBytes(a.data(), a.size(), "a");
  ASSERT_TRUE(put.ok() && store->PublishBytes(b.data(), b.size(), "b").ok());
  const std::string ida = put->id;
  ASSERT_TRUE(store->RemoveName("b").ok());
  store.reset();
  testing::RewriteLog(dir / "s", [&](internal::ChangeSet& c) {
    for (auto& o : c.objects)
      if (o.id.ObjectId() == ida) edit(o);
  });
  Options o = testing::SmallChunks();
  o.rebuild_index = true;
  store = *Store::Open(dir / "s", o);
  store.reset();
  const std::string counts = "SELECT count(*) FROM objects; SELECT count(*) FROM chunks; SELECT count(*) FROM packs";
  const std::string before = testing::Sql(dir / "s", counts);
  const uint64_t pack_bytes = DirBytes(dir / "s/packs");
  store = *Store::Open(dir / "s", testing::SmallChunks());
  auto gc = store->Gc(GcNow());
  ASSERT_FALSE(gc.ok());
  EXPECT_TRUE(gc.status().IsCorruption()) << gc.status().ToString();
  EXPECT_EQ(gc.status().object_id(), ida);
  EXPECT_NE(gc.status().message().find(why), std::string::npos) << gc.status().message();
  store.reset();
  EXPECT_EQ(testing::Sql(dir / "s", counts), before);
  EXPECT_EQ(DirBytes(dir / "s/packs"), pack_bytes);
}

TEST_F(GcTest, ADamagedManifestInTheLogStopsGcBeforeItFreesAnything) {
  ExpectGcStopsOnForgedRow(
      dir_, store_, 43, [](internal::ObjectRow& o) { o.manifest[o.manifest.size() / 2] ^= 1; }, "damaged manifest");
}

// A chunked object whose log row claims no chunks would pass for inline
// content; its bytes (a chunk list) fail the inline check, and gc stops
// instead of freeing the chunks it still needs.
TEST_F(GcTest, AChunkListPassedOffAsInlineContentStopsGc) {
  ExpectGcStopsOnForgedRow(
      dir_, store_, 45, [](internal::ObjectRow& o) { o.chunk_count = 0; }, "damaged inline content");
}

// Compaction copies records as they are stored; one that fails its checks
// is never copied, and its pack stays, as it was, for verify to report
// (and repair to mend); the rest of gc goes on and counts the pack.
TEST_F(GcTest, ADamagedRecordStopsTheCompactionOfItsPack) {
  const auto keep = RandomBytes(60000, 51), drop = RandomBytes(300000, 52);
  const std::string id = Put(keep, "keep");
  Put(drop, "drop");
  ASSERT_TRUE(store_->RemoveName("drop").ok());
  const auto chunks = *store_->Chunks(id);
  store_.reset();
  testing::FlipPackByte(dir_ / "s", 16 + 64 + 100);  // inside the first record's payload
  std::map<std::string, std::vector<uint8_t>> packs_before;
  for (auto& e : std::filesystem::directory_iterator(dir_ / "s/packs"))
    packs_before[e.path().filename()] = testing::ReadFile(e.path());
  Reopen();
  auto gc = store_->Gc(GcNow());
  ASSERT_TRUE(gc.ok()) << gc.status().ToString();
  EXPECT_EQ(gc->packs_damaged, 1u);
  EXPECT_EQ(gc->packs_compacted, 0u) << "gc compacted a pack holding a damaged record";
  std::map<std::string, std::vector<uint8_t>> packs_after;
  for (auto& e : std::filesystem::directory_iterator(dir_ / "s/packs"))
    if (e.path().extension() == ".pack" && packs_before.count(e.path().filename()))
      packs_after[e.path().filename()] = testing::ReadFile(e.path());
  EXPECT_EQ(packs_after, packs_before);
  auto v = store_->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->corrupt());
  bool named = false;
  for (const auto& p : v->problems) named |= p.kind == "corrupt-chunk" && p.chunk_id == chunks[0].id;
  EXPECT_TRUE(named);
}

TEST_F(GcTest, DeletesWhollyDeadPacksAndSharedChunksSurvive) {
  const auto base = RandomBytes(300000, 5);
  auto edited = base;
  edited[150000] ^= 1;
  Put(base, "base");
  Put(edited, "edited");  // shares most chunks with base
  ASSERT_TRUE(store_->RemoveName("base").ok());
  ASSERT_TRUE(store_->Gc(GcNow()).ok());
  EXPECT_EQ(*ReadObject(*store_, "edited"), edited);
  ASSERT_TRUE(store_->RemoveName("edited").ok());
  auto r = store_->Gc(GcNow());
  ASSERT_TRUE(r.ok());
  EXPECT_GE(r->packs_deleted, 1u);
  EXPECT_EQ(DirBytes(dir_ / "s/packs"), 0u);
  EXPECT_EQ(store_->Stats()->chunks, 0u);
}

TEST_F(GcTest, OnlyOneGcAtATime) {
  auto lock = Env::Posix()->TryLockFile(dir_ / "s/GC.lock");
  ASSERT_TRUE(lock.ok());
  EXPECT_TRUE(store_->Gc().status().IsBusy());
}

// gc --dry-run holds nothing while it looks: a change another handle
// commits between its replay of the log and its comparison with the index
// is no difference between them (one that every comparison finds is).
TEST_F(GcTest, ADryRunBesideAPublisherFindsNoDifference) {
  auto opened = Store::Open(dir_ / "s");
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto writer = std::move(*opened);
  int runs = 0, stopped = 0;
  std::string first;
  {
    testing::BackgroundPublisher publishing(*writer, 80);
    while ((!publishing.done() || runs < 5) && runs < 2000) {
      GcOptions o = GcNow();
      o.dry_run = true;
      auto r = store_->Gc(o);
      ++runs;
      if (!r.ok()) {
        ++stopped;
        if (first.empty()) first = r.status().ToString();
      }
    }
  }
  EXPECT_GE(runs, 5);
  EXPECT_EQ(stopped, 0) << first;
}

// What every comparison finds does stop a dry run: an index that lost a
// chunk's row is not its log's view.
TEST_F(GcTest, ADryRunStopsAtADifferenceEveryComparisonFinds) {
  const std::string id = Put(RandomBytes(50000, 3), "x");
  const auto chunks = *store_->Chunks(id);
  testing::Sql(dir_ / "s", "DELETE FROM chunks WHERE id = x'" + chunks.at(0).id + "'");
  Reopen();
  GcOptions o = GcNow();
  o.dry_run = true;
  auto r = store_->Gc(o);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("differs from the store's log"), std::string::npos) << r.status().ToString();
}

// A pack the log does not name and nobody holds the lock of is a dead
// writer's (a publish killed before its commit): the next gc removes it,
// however young. One whose lock is held (a writer at work) stays, and so
// does a young .new file (a pack being created, perhaps not yet locked).
TEST_F(GcTest, ADeadWritersPackGoesAtOnceALiveOnesStays) {
  Put(RandomBytes(1000, 1), "x");
  const std::string dead = dir_ / "s/packs/pack-00000000deadbeef.pack";
  const std::string held = dir_ / "s/packs/pack-00000000000a11fe.pack";
  const std::string fresh = dir_ / "s/packs/pack-0000000000000bed.pack.new";
  testing::WriteFile(dead, RandomBytes(100, 2));
  testing::WriteFile(held, RandomBytes(100, 3));
  testing::WriteFile(fresh, RandomBytes(100, 4));
  auto lock = Env::Posix()->TryLockExistingFile(held);
  ASSERT_TRUE(lock.ok()) << lock.status().ToString();
  // A killed writer's tail on a committed pack is garbage too.
  std::string committed;
  for (auto& e : std::filesystem::directory_iterator(dir_ / "s/packs"))
    if (e.path().string() != dead && e.path().string() != held && e.path().string() != fresh)
      committed = e.path().string();
  const uint64_t committed_size = std::filesystem::file_size(committed);
  {
    std::ofstream tail(committed, std::ios::app | std::ios::binary);
    tail << std::string(500, 'x');
  }
  // stats shows what gc is about to take (the dead pack, the tail) as
  // garbage and what a writer still holds (or may) as uncommitted.
  auto st = store_->Stats();
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->garbage_bytes, 100u + 500u);
  EXPECT_EQ(st->uncommitted_bytes, 200u);
  auto gc = store_->Gc();  // the default grace of an hour
  ASSERT_TRUE(gc.ok()) << gc.status().ToString();
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_GE(gc->bytes_reclaimed, 100u);
  EXPECT_TRUE(std::filesystem::exists(held));
  EXPECT_TRUE(std::filesystem::exists(fresh));
  EXPECT_EQ(std::filesystem::file_size(committed), committed_size);  // the tail went too
  lock->reset();
  ASSERT_TRUE(store_->Gc().ok());
  EXPECT_FALSE(std::filesystem::exists(held));
  EXPECT_TRUE(std::filesystem::exists(fresh));
  EXPECT_TRUE(store_->Verify().ok());
  EXPECT_TRUE(ReadObject(*store_, "x").ok());
}

// Where locks cannot vouch for a writer's absence (a network or FUSE
// file system), a stray pack waits out its grace however free its lock.
TEST_F(GcTest, WhereLocksAreNotExactStrayPacksWaitOutTheirGrace) {
  class Inexact : public EnvWrapper {
   public:
    using EnvWrapper::EnvWrapper;
    bool LocksAreExact(const std::string&) override { return false; }
  } env(Env::Posix());
  Reopen(&env);
  Put(RandomBytes(1000, 1), "x");
  const std::string stray = dir_ / "s/packs/pack-00000000deadbeef.pack";
  testing::WriteFile(stray, RandomBytes(100, 2));
  ASSERT_TRUE(store_->Gc().ok());
  EXPECT_TRUE(std::filesystem::exists(stray));
  ASSERT_TRUE(store_->Gc(GcNow()).ok());
  EXPECT_FALSE(std::filesystem::exists(stray));
  store_.reset();
}

TEST_F(GcTest, ReaderOpenedBeforeCompactionStillReads) {
  const auto keep = RandomBytes(200000, 1);
  Put(RandomBytes(600000, 2), "drop");
  Put(keep, "keep");
  auto reader = store_->OpenReader("keep");  // caches chunk locations now
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE(store_->RemoveName("drop").ok());
  // A second store handle plays the other process: it compacts and deletes
  // the old pack.
  {
    auto other = *Store::Open(dir_ / "s");
    auto r = other->Gc(GcNow());
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->packs_compacted, 1u);
  }
  std::vector<uint8_t> buf(keep.size());
  auto n = (*reader)->ReadAt(0, buf.data(), buf.size());
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(buf, keep);
}

TEST_F(GcTest, APackDeletedByGcIsNeverConfusedWithALaterOne) {
  // This handle reads from the only pack and keeps it open by id...
  const auto old_data = RandomBytes(60000, 1);
  Put(old_data, "old");
  EXPECT_EQ(*ReadObject(*store_, "old"), old_data);
  // ...another one removes it, collects the pack, and publishes anew.
  const auto new_data = RandomBytes(60000, 2);
  {
    auto other = *Store::Open(dir_ / "s");
    ASSERT_TRUE(other->RemoveName("old").ok());
    auto r = other->Gc(GcNow());
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->packs_deleted, 1u);
    ASSERT_TRUE(other->PublishBytes(new_data.data(), new_data.size(), "new").ok());
  }
  // The new pack must not take the old one's id: this handle would read
  // it through the old file it still holds open.
  auto back = ReadObject(*store_, "new");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, new_data);
}

TEST_F(GcTest, PublishReusingAChunkGcRemovedFailsInsteadOfDangling) {
  const auto d = RandomBytes(1 << 20, 3);
  auto store = StoreWithRemoved("big", d);
  // The batch sees d's chunks as present...
  auto batch = store->NewBatch();
  auto added = batch->AddBytes(d.data(), d.size(), "again");
  ASSERT_TRUE(added.ok());
  EXPECT_EQ(added->new_bytes, 0u);
  EXPECT_EQ(added->reused_chunks, added->chunks);
  // ...then gc removes them before the batch commits.
  auto other = *Store::Open(dir_ / "big");
  ASSERT_TRUE(other->Gc(GcNow()).ok());
  auto c = batch->Commit();
  ASSERT_TRUE(c.status().IsBusy()) << c.status().ToString();
  EXPECT_NE(c.status().message().find("publish again"), std::string::npos);
  EXPECT_TRUE(store->Resolve("again").status().IsNotFound());
  // Publishing again works and reads back.
  ASSERT_TRUE(store->PublishBytes(d.data(), d.size(), "again").ok());
  EXPECT_EQ(*ReadObject(*store, "again"), d);
}

TEST_F(GcTest, AGcThroughTheSameHandleIsSeenByAnOpenBatch) {
  // Commits by other connections show in SQLite's data version; a gc on
  // the publisher's own connection does not, and must still force the
  // re-check of reused chunks.
  const auto d = RandomBytes(1 << 20, 13);
  auto store = StoreWithRemoved("same", d);
  auto batch = store->NewBatch();
  auto added = batch->AddBytes(d.data(), d.size(), "again");
  ASSERT_TRUE(added.ok());
  ASSERT_EQ(added->reused_chunks, added->chunks);
  ASSERT_TRUE(store->Gc(GcNow()).ok());
  auto c = batch->Commit();
  ASSERT_TRUE(c.status().IsBusy()) << c.status().ToString();
  EXPECT_TRUE(store->Resolve("again").status().IsNotFound());
}

TEST_F(GcTest, ABatchWithNothingRemovedMeanwhileCommitsItsReusedChunks) {
  // The same publish twice, with an unrelated commit in between from
  // another handle (which forces the full re-check) and without.
  const auto d = RandomBytes(300000, 14);
  Put(d, "a");
  for (bool other_commit : {false, true}) {
    auto batch = store_->NewBatch();
    auto added = batch->AddBytes(d.data(), d.size(), "b");
    ASSERT_TRUE(added.ok());
    if (other_commit) {
      auto other = *Store::Open(dir_ / "s");
      const auto x = RandomBytes(1000, 15);
      ASSERT_TRUE(other->PublishBytes(x.data(), x.size(), "x").ok());
    }
    auto c = batch->Commit();
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ((*c)[0].new_bytes, 0u);
    EXPECT_EQ(*ReadObject(*store_, "b"), d);
  }
}

TEST_F(GcTest, SmallChunksDeferredToCommitSurviveAConcurrentGc) {
  const auto d = RandomBytes(100000, 4);  // 16 KiB chunks: looked up at commit
  Put(d, "a");
  ASSERT_TRUE(store_->RemoveName("a").ok());
  auto batch = store_->NewBatch();
  ASSERT_TRUE(batch->AddBytes(d.data(), d.size(), "again").ok());
  auto other = *Store::Open(dir_ / "s");
  ASSERT_TRUE(other->Gc(GcNow()).ok());
  auto c = batch->Commit();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_GT((*c)[0].new_bytes, d.size());  // written again: gc had taken them
  EXPECT_EQ(*ReadObject(*store_, "again"), d);
}

// Four objects in one pack, three of them removed: a sparse pack whose
// compaction needs room for the fourth.
std::vector<uint8_t> SparsePack(Store& store) {
  std::vector<uint8_t> kept;
  for (int i = 0; i < 4; ++i) {
    auto d = RandomBytes(400000, 60 + i);
    EXPECT_TRUE(store.PublishBytes(d.data(), d.size(), "obj" + std::to_string(i)).ok());
    if (i == 3) kept = d;
  }
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(store.RemoveName("obj" + std::to_string(i)).ok());
  return kept;
}

std::set<std::string> PackFiles(const std::filesystem::path& dir) {
  std::set<std::string> names;
  for (auto& e : std::filesystem::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

TEST_F(GcTest, WithoutRoomForACompactionGcFreesTheRestAndLeavesThePackAsItWas) {
  testing::FaultEnv env(Env::Posix());
  store_.reset();
  Options o = testing::SmallChunks();
  o.env = &env;
  o.pack_target_size = 1500000;  // the sparse pack is full after four objects
  store_ = *Store::Open(dir_ / "s", o);
  const auto kept = SparsePack(*store_);
  Put(RandomBytes(300000, 70), "dead");  // in a second pack, then all garbage
  ASSERT_TRUE(store_->RemoveName("dead").ok());
  const auto before = PackFiles(dir_ / "s/packs");
  ASSERT_EQ(before.size(), 2u);
  env.SetFreeSpace(200000);  // less than the 400 KB the kept object needs

  auto dry = store_->Gc([] { GcOptions o = GcNow(); o.dry_run = true; return o; }());
  ASSERT_TRUE(dry.ok()) << dry.status().ToString();
  EXPECT_EQ(dry->packs_compacted, 0u);
  EXPECT_EQ(dry->packs_left_for_space, 1u);

  auto r = store_->Gc(GcNow());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->packs_deleted, 1u);  // the whole dead pack needs no room
  EXPECT_EQ(r->packs_compacted, 0u);
  EXPECT_EQ(r->packs_left_for_space, 1u);
  EXPECT_GT(r->space_needed, 400000u);
  const auto after = PackFiles(dir_ / "s/packs");
  EXPECT_EQ(after.size(), 1u);
  for (const auto& f : after) EXPECT_TRUE(before.count(f)) << f << " is new: a partial copy was left";
  EXPECT_EQ(*ReadObject(*store_, "obj3"), kept);

  env.SetFreeSpace(UINT64_MAX);
  auto again = store_->Gc(GcNow());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->packs_compacted, 1u);
  EXPECT_EQ(again->packs_left_for_space, 0u);
  EXPECT_EQ(*ReadObject(*store_, "obj3"), kept);
}

TEST_F(GcTest, ACompactionThatFillsTheDiskLeavesNoPartialPack) {
  testing::FaultEnv env(Env::Posix());
  Reopen(&env);
  const auto kept = SparsePack(*store_);
  const int total = CleanGcOperations(env);
  int left = 0;
  for (int n = 1; n <= total; ++n) {
    Reopen(&env);
    const auto before = PackFiles(dir_ / "s/packs");
    env.FailAt(n, /*no_space=*/true);
    auto r = store_->Gc(GcNow());
    const std::string failed = env.failed_op();
    env.FailAt(0);
    const std::string at = "failure point " + std::to_string(n) + " (" + failed + ")";
    if (r.ok()) {
      left += r->packs_left_for_space ? 1 : 0;
    } else {
      EXPECT_TRUE(r.status().IsNoSpace()) << at << ": " << r.status().ToString();
    }
    // A write that fails leaves nothing new behind. After a failed sync
    // nobody knows what the disk holds, so the copy may stay, until the
    // next gc, which finds it in no change and removes it.
    bool stray = false;
    for (const auto& f : PackFiles(dir_ / "s/packs")) stray |= !before.count(f);
    if (failed.rfind("sync", 0) != 0) {
      EXPECT_FALSE(stray) << at << ": a partial pack was left behind";
    }
    auto back = ReadObject(*store_, "obj3");
    ASSERT_TRUE(back.ok()) << at << ": " << back.status().ToString();
    EXPECT_EQ(*back, kept);
    auto v = store_->Verify();
    ASSERT_TRUE(v.ok());
    EXPECT_FALSE(v->corrupt()) << at;
    if (stray) {
      auto again = store_->Gc(GcNow());
      ASSERT_TRUE(again.ok()) << at << ": " << again.status().ToString();
      v = store_->Verify();
      ASSERT_TRUE(v.ok());
      for (const auto& p : v->problems) EXPECT_NE(p.kind, "orphan-pack") << at << ": " << p.message;
    }
  }
  EXPECT_GT(left, 0);  // some failure points hit the copy itself
}

TEST_F(GcTest, FailureAtEveryStepLosesNothingAndARerunFinishes) {
  testing::FaultEnv env(Env::Posix());
  Reopen(&env);
  std::vector<std::vector<uint8_t>> keep;
  for (int i = 0; i < 3; ++i) {
    keep.push_back(RandomBytes(150000, 10 + i));
    Put(keep.back(), "keep" + std::to_string(i));
    Put(RandomBytes(300000, 20 + i), "drop" + std::to_string(i));
  }
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store_->RemoveName("drop" + std::to_string(i)).ok());
  const int total = CleanGcOperations(env);
  ASSERT_GT(total, 2);
  for (int n = 1; n <= total; ++n) {
    Reopen(&env);
    env.FailAt(n);
    auto r = store_->Gc(GcNow());
    env.FailAt(0);
    for (int i = 0; i < 3; ++i) {
      auto back = ReadObject(*store_, "keep" + std::to_string(i));
      ASSERT_TRUE(back.ok()) << "failure point " << n << ": " << back.status().ToString();
      EXPECT_EQ(*back, keep[i]);
    }
    if (!r.ok()) {
      EXPECT_TRUE(r.status().IsIOError()) << r.status().ToString();
    }
  }
  Reopen();
  ASSERT_TRUE(store_->Gc(GcNow()).ok());
  auto v = store_->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt());
  EXPECT_EQ(store_->Stats()->garbage_bytes, 0u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(*ReadObject(*store_, "keep" + std::to_string(i)), keep[i]);
}

}  // namespace
}  // namespace chunkstore
