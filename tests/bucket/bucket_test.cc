// SPDX-License-Identifier: Apache-2.0
// Bucket stores: publish, read, catalog, gc and verify over a BlobStore,
// several caches sharing one bucket, cache loss, corruption and a failure
// at every request.
//
// Built twice: into unit_tests against an in-memory and a directory blob
// store, and (with CHUNKSTORE_TEST_S3) into s3_tests against a real S3
// service, each test in its own fresh prefix of $CHUNKSTORE_TEST_S3_BUCKET
// (scripts/s3-test.sh starts a radosgw and runs them).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "bucket/bucket.h"
#include "format/change_set.h"
#include "hash/digest.h"
#include "write/publish_session.h"
#include "chunkstore/blob_store.h"
#include "chunkstore/store.h"
#include "backend/s3/s3_blob_store.h"
#include "bucket_fixture.h"
#include "test_util.h"

namespace chunkstore {
namespace {

using testing::RandomBytes;
using testing::ReadObject;
using testing::SmallChunks;
using testing::TempDir;

using testing::Backend;
using testing::BucketTest;
using testing::FaultyBlobStore;
using BucketLockedTest = BucketTest;

// A new store's log is sequenced exactly where the service takes
// conditional writes (and the test lets them through). For a real
// service, scripts/s3-test.sh says which it is: radosgw does, Swift's
// s3api answers 501.
TEST_P(BucketTest, ANewStoresLogIsSequencedWhereConditionalWritesHold) {
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  bool expected = GetParam() == Backend::kMemory || GetParam() == Backend::kDirectory;
  if (GetParam() == Backend::kS3) {
    const char* said = std::getenv("CHUNKSTORE_TEST_S3_CONDITIONAL");
    ASSERT_NE(said, nullptr) << "set CHUNKSTORE_TEST_S3_CONDITIONAL to 1 or 0 (scripts/s3-test.sh does)";
    expected = std::string(said) == "1";
  }
  EXPECT_EQ(Sequenced(), expected);
  auto config = backend_->Get("config");
  ASSERT_TRUE(config.ok());
  EXPECT_NE(config->find(expected ? "format 4\n" : "format 2\n"), std::string::npos) << *config;
  EXPECT_EQ(CountBlobs("probe/"), 0u);
}

// The contract every BlobStore keeps (blob_store.h).
TEST_P(BucketTest, TheBlobStoreKeepsItsContract) {
  BlobStore& b = *backend_;
  EXPECT_TRUE(b.Get("x/missing").status().IsNotFound());
  EXPECT_TRUE(b.Size("x/missing").status().IsNotFound());
  size_t got = 7;
  char buf[16];
  EXPECT_TRUE(b.GetRange("x/missing", 0, 4, buf, &got).IsNotFound());
  EXPECT_TRUE(b.Delete("x/missing").ok());
  ASSERT_TRUE(b.Put("x/a/1", "hello", 5).ok());
  ASSERT_TRUE(b.Put("x/a/2", "", 0).ok());
  ASSERT_TRUE(b.Put("x/b", "world!", 6).ok());
  ASSERT_TRUE(b.Put("y", "z", 1).ok());
  ASSERT_TRUE(b.Put("x/a/1", "HELLO", 5).ok());  // replaced whole
  EXPECT_EQ(*b.Get("x/a/1"), "HELLO");
  EXPECT_EQ(*b.Size("x/b"), 6u);
  ASSERT_TRUE(b.GetRange("x/b", 4, 10, buf, &got).ok());
  EXPECT_EQ(std::string(buf, got), "d!");  // short only at the end
  ASSERT_TRUE(b.GetRange("x/b", 6, 4, buf, &got).ok());
  EXPECT_EQ(got, 0u);
  auto all = b.List("x/");
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].key, "x/a/1");
  EXPECT_EQ((*all)[1].key, "x/a/2");
  EXPECT_EQ((*all)[2].key, "x/b");
  EXPECT_EQ((*all)[2].size, 6u);
  EXPECT_GT((*all)[2].modified, 1700000000);
  auto after = b.List("x/", "x/a/1");
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), 2u);
  EXPECT_EQ((*after)[0].key, "x/a/2");
  auto partial = b.List("x/a");
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ(partial->size(), 2u);
  ASSERT_TRUE(b.Delete("x/a/1").ok());
  EXPECT_EQ(b.List("x/")->size(), 2u);
}

// Packs are uploaded beside ingest, but at most three at once (each holds
// a staged pack file until its upload ends).
TEST_P(BucketTest, PackUploadsOverlapButNeverMoreThanThreeRunAtOnce) {
  auto store = OpenMachine(dir_ / "a");
  ASSERT_TRUE(store);
  faulty_->SlowPackUploads(40, 3);
  const auto data = RandomBytes(3 << 20, 9);
  auto pub = store->PublishBytes(data.data(), data.size(), "big");
  ASSERT_TRUE(pub.ok()) << pub.status().ToString();
  EXPECT_GE(CountBlobs("packs/"), 8u);
  EXPECT_EQ(faulty_->most_pack_uploads_at_once(), 3);
  auto back = ReadObject(*store, "big");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, data);
}

// Blobs above 16 MiB go to S3 as multipart uploads (three parts here, the
// last short); whatever the backend, the blob reads back whole, across the
// part boundaries, and only the first `size` bytes of the file are sent.
TEST_P(BucketTest, ABlobOfSeveralUploadPartsIsStoredWhole) {
  auto env = Env::NewMemory();
  auto file = env->OpenFile("staged", OpenMode::kCreateNew);
  ASSERT_TRUE(file.ok());
  const uint64_t part = 16ull << 20, size = 2 * part + (8 << 20) + 123;
  const auto data = RandomBytes(static_cast<size_t>(size) + 1000, 21);
  ASSERT_TRUE((*file)->Append(data.data(), data.size()).ok());
  ASSERT_TRUE(backend_->PutFile("x/big", **file, size).ok());
  EXPECT_EQ(*backend_->Size("x/big"), size);
  std::vector<uint8_t> buf(64);
  for (uint64_t at : {uint64_t{0}, part - 32, 2 * part - 32, size - 64}) {
    size_t got = 0;
    ASSERT_TRUE(backend_->GetRange("x/big", at, buf.size(), buf.data(), &got).ok());
    ASSERT_EQ(got, buf.size());
    EXPECT_TRUE(std::equal(buf.begin(), buf.end(), data.begin() + static_cast<std::ptrdiff_t>(at))) << at;
  }
  size_t got = 0;
  ASSERT_TRUE(backend_->GetRange("x/big", size - 10, 64, buf.data(), &got).ok());
  EXPECT_EQ(got, 10u);  // ends at size, not at the file's end
  auto whole = backend_->Get("x/big");
  ASSERT_TRUE(whole.ok());
  ASSERT_EQ(whole->size(), size);
  EXPECT_TRUE(std::equal(whole->begin(), whole->end(), reinterpret_cast<const char*>(data.data())));
  EXPECT_TRUE(backend_->Delete("x/big").ok());
}

TEST_P(BucketTest, PublishReadAndRangeReadsRoundTrip) {
  auto store = OpenMachine(dir_ / "a");
  ASSERT_TRUE(store);
  EXPECT_TRUE(store->is_bucket());
  const auto data = RandomBytes(700000, 1);
  auto pub = store->PublishBytes(data.data(), data.size(), "data/one");
  ASSERT_TRUE(pub.ok()) << pub.status().ToString();
  EXPECT_GT(pub->chunks, 20u);
  EXPECT_GT(CountBlobs("packs/"), 1u);  // remote_pack_size split it
  auto back = ReadObject(*store, "data/one", 10000);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, data);
  auto r = store->OpenReader(pub->id);
  ASSERT_TRUE(r.ok());
  for (uint64_t off : {0ull, 4095ull, 123457ull, 699990ull}) {
    std::vector<uint8_t> buf(9000);
    auto n = (*r)->ReadAt(off, buf.data(), buf.size());
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    ASSERT_EQ(*n, std::min<size_t>(9000, data.size() - off));
    EXPECT_TRUE(std::equal(buf.begin(), buf.begin() + *n, data.begin() + off)) << off;
  }
  auto st = store->Stat("data/one");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->size, data.size());
  auto empty = store->PublishBytes("", 0, "empty");
  ASSERT_TRUE(empty.ok());
  auto e = ReadObject(*store, "empty");
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->empty());
}

TEST_P(BucketTest, SmallObjectsAreChunksNotInlineAndSurviveARebuild) {
  // The cache index can be rebuilt from the bucket only if every byte is
  // in a pack there: a bucket store keeps no content in its index.
  Options o = SmallChunks();
  o.inline_max = 512;
  auto store = OpenMachine(dir_ / "a", o);
  ASSERT_TRUE(store);
  EXPECT_EQ(store->inline_max(), 0u);
  auto r = store->PublishBytes("tiny", 4, "tiny");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->chunks, 1u);
  EXPECT_FALSE(store->Stat("tiny")->stored_inline);
  ASSERT_TRUE(store->RebuildIndex().ok());
  auto back = ReadObject(*store, "tiny");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(std::string(back->begin(), back->end()), "tiny");
}

TEST_P(BucketTest, RepublishAddsNoBlobAndAnEditAddsAboutOneChunk) {
  auto store = OpenMachine(dir_ / "a");
  ASSERT_TRUE(store);
  auto data = RandomBytes(400000, 2);
  ASSERT_TRUE(store->PublishBytes(data.data(), data.size(), "x").ok());
  const size_t packs = CountBlobs("packs/");
  auto again = store->PublishBytes(data.data(), data.size(), "x");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->new_bytes, 0u);
  EXPECT_EQ(CountBlobs("packs/"), packs);
  data[200000] ^= 1;
  auto edit = store->PublishBytes(data.data(), data.size(), "x");
  ASSERT_TRUE(edit.ok());
  EXPECT_LE(edit->chunks - edit->reused_chunks, 3u);
  EXPECT_LT(edit->new_bytes, 3u * 16384 + 1024);
}

TEST_P(BucketTest, TwoMachinesSeeEachOthersChangesAfterARefresh) {
  auto a = OpenMachine(dir_ / "a");
  auto b = OpenMachine(dir_ / "b");
  ASSERT_TRUE(a && b);
  const auto d1 = RandomBytes(50000, 3);
  auto p = a->PublishBytes(d1.data(), d1.size(), "from-a");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(b->Resolve("from-a").status().IsNotFound());
  ASSERT_TRUE(b->Refresh().ok());
  auto back = ReadObject(*b, "from-a");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, d1);
  auto t = b->Tag("from-a", "tagged-by-b");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->version, 1);
  ASSERT_TRUE(b->RemoveName("from-a").ok());
  ASSERT_TRUE(a->Refresh().ok());
  EXPECT_EQ(*a->Resolve("tagged-by-b"), p->id);
  EXPECT_TRUE(a->Resolve("from-a").status().IsNotFound());
  EXPECT_TRUE(b->RemoveName("never-there").IsNotFound());
}

TEST_P(BucketTest, ConcurrentWritersLoseNothing) {
  constexpr int kPerWriter = 12;
  std::atomic<int> failures{0};
  auto writer = [&](const std::string& cache, int who) {
    auto s = OpenMachine(cache);
    if (!s) {
      ++failures;
      return;
    }
    for (int i = 0; i < kPerWriter; ++i) {
      // Every third payload is shared by both writers: the same chunks
      // are stored by both at once.
      const uint64_t seed = i % 3 == 0 ? 1000 + i : 100 * (who + 1) + i;
      auto d = RandomBytes(30000 + 1000 * i, seed);
      auto r = s->PublishBytes(d.data(), d.size(), "w" + std::to_string(who) + "/" + std::to_string(i));
      if (!r.ok()) {
        ADD_FAILURE() << r.status().ToString();
        ++failures;
      }
    }
  };
  std::thread t1(writer, dir_ / "w1", 1), t2(writer, dir_ / "w2", 2);
  t1.join();
  t2.join();
  ASSERT_EQ(failures.load(), 0);
  auto fresh = OpenMachine(dir_ / "fresh");
  ASSERT_TRUE(fresh);
  auto names = fresh->List();
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(names->size(), 2u * kPerWriter);
  for (int who = 1; who <= 2; ++who)
    for (int i = 0; i < kPerWriter; ++i) {
      const uint64_t seed = i % 3 == 0 ? 1000 + i : 100 * (who + 1) + i;
      auto back = ReadObject(*fresh, "w" + std::to_string(who) + "/" + std::to_string(i));
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      EXPECT_EQ(*back, RandomBytes(30000 + 1000 * i, seed));
    }
  // Both writers' caches agree with a fresh one on where every chunk is.
  auto w1 = OpenMachine(dir_ / "w1");
  ASSERT_TRUE(w1);
  auto v = fresh->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt());
  auto s1 = w1->Stats(), s2 = fresh->Stats();
  ASSERT_TRUE(s1.ok() && s2.ok());
  EXPECT_EQ(s1->chunks, s2->chunks);
  EXPECT_EQ(s1->stored_bytes, s2->stored_bytes);
}

// A refresh (of this process, or of another sharing the cache directory)
// running while a change is written must not apply the change twice.
TEST_P(BucketTest, RefreshesBesideChangesApplyEachRecordOnce) {
  auto a = OpenMachine(dir_ / "shared");
  auto b = OpenMachine(dir_ / "shared");  // same cache, its own handle
  ASSERT_TRUE(a && b);
  const auto d = RandomBytes(5000, 17);
  ASSERT_TRUE(a->PublishBytes(d.data(), d.size(), "obj").ok());
  constexpr int kTags = 15;
  std::atomic<bool> done{false};
  std::thread refresher([&] {
    while (!done) {
      EXPECT_TRUE(a->Refresh().ok());
      EXPECT_TRUE(b->Refresh().ok());
    }
  });
  for (int i = 0; i < kTags; ++i) {
    auto t = (i % 2 ? a : b)->Tag("obj", "tagged");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
  }
  done = true;
  refresher.join();
  auto history = a->History("tagged");
  ASSERT_TRUE(history.ok());
  EXPECT_EQ(history->size(), static_cast<size_t>(kTags));
  auto fresh = OpenMachine(dir_ / "fresh");
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->History("tagged")->size(), static_cast<size_t>(kTags));
}

// A record sorts after the records its writer had seen, also within one
// millisecond: a rebuild that applied a tag before the publish of its
// object would skip the tag as if the object had been removed.
TEST_P(BucketTest, ATagWrittenRightAfterItsObjectsPublishSurvivesARebuild) {
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  constexpr int kPairs = 100;  // on the memory backend many pairs share a millisecond
  for (int i = 0; i < kPairs; ++i) {
    const auto d = RandomBytes(300, 500 + i);
    auto p = a->PublishBytes(d.data(), d.size());
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    auto t = a->Tag(p->id, "t/" + std::to_string(i));
    ASSERT_TRUE(t.ok()) << t.status().ToString();
  }
  auto fresh = OpenMachine(dir_ / "fresh");
  ASSERT_TRUE(fresh);
  auto names = fresh->List();
  ASSERT_TRUE(names.ok()) << names.status().ToString();
  EXPECT_EQ(names->size(), static_cast<size_t>(kPairs));
}

TEST_P(BucketTest, ALostCacheIsRebuiltFromTheBucket) {
  std::vector<NameEntry> before;
  std::vector<uint8_t> data = RandomBytes(90000, 4);
  {
    auto a = OpenMachine(dir_ / "a");
    ASSERT_TRUE(a);
    ASSERT_TRUE(a->PublishBytes(data.data(), data.size(), "keep").ok());
    ASSERT_TRUE(a->PublishBytes(data.data(), 1000, "keep").ok());  // version 2
    ASSERT_TRUE(a->PublishBytes(data.data(), 2000, "drop").ok());
    ASSERT_TRUE(a->PublishBytes(data.data(), 3000).ok());  // unnamed, pinned
    ASSERT_TRUE(a->RemoveName("drop").ok());
    before = *a->List();
    ASSERT_TRUE(a->RebuildIndex().ok());
    auto after = a->List();
    ASSERT_TRUE(after.ok());
    ASSERT_EQ(after->size(), before.size());
  }
  std::filesystem::remove_all(dir_ / "a");
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  auto after = a->List();
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ((*after)[i].name, before[i].name);
    EXPECT_EQ((*after)[i].version, before[i].version);
    EXPECT_EQ((*after)[i].id, before[i].id);
  }
  auto v1 = ReadObject(*a, "keep@1");
  ASSERT_TRUE(v1.ok());
  EXPECT_EQ(*v1, data);
  EXPECT_EQ(a->ListUnnamed()->size(), 2u);  // the pinned one, and "drop"'s object
  auto stale_cache = OpenMachine(dir_ / "a");  // reopening an existing cache
  ASSERT_TRUE(stale_cache);
}

TEST_P(BucketTest, ACorruptPackBlobIsAnErrorNamingObjectAndChunk) {
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  const auto data = RandomBytes(60000, 5);
  auto pub = a->PublishBytes(data.data(), data.size(), "victim");
  ASSERT_TRUE(pub.ok());
  auto packs = backend_->List("packs/");
  ASSERT_TRUE(packs.ok());
  ASSERT_EQ(packs->size(), 1u);
  auto bytes = backend_->Get((*packs)[0].key);
  ASSERT_TRUE(bytes.ok());
  (*bytes)[bytes->size() / 2] ^= 0x40;
  ASSERT_TRUE(backend_->Put((*packs)[0].key, bytes->data(), bytes->size()).ok());
  auto fresh = OpenMachine(dir_ / "b");  // nothing cached in memory
  ASSERT_TRUE(fresh);
  auto back = ReadObject(*fresh, "victim");
  ASSERT_FALSE(back.ok());
  EXPECT_TRUE(back.status().IsCorruption()) << back.status().ToString();
  EXPECT_EQ(back.status().object_id(), pub->id);
  EXPECT_FALSE(back.status().chunk_id().empty());
  EXPECT_NE(back.status().message().find(back.status().chunk_id()), std::string::npos);
  // The pack by its blob's name, never by a row number of this cache.
  const std::string blob = (*packs)[0].key.substr(std::string("packs/").size());
  EXPECT_NE(back.status().message().find(blob), std::string::npos) << back.status().message();
  EXPECT_EQ(back.status().message().find("#"), std::string::npos) << back.status().message();
  auto v = fresh->Verify();
  ASSERT_TRUE(v.ok());
  ASSERT_TRUE(v->corrupt());
  EXPECT_EQ(v->problems[0].kind, "corrupt-chunk");
  EXPECT_EQ(v->problems[0].object_id, pub->id);
}

TEST_P(BucketTest, GcDeletesDeadPacksAndCompactsSparseOnesWhileOtherCachesStillRead) {
  auto a = OpenMachine(dir_ / "a");
  // Without a disk cache b must fetch again, and find the pack gone.
  Options no_disk = SmallChunks();
  no_disk.chunk_cache_bytes = 0;
  auto b = OpenMachine(dir_ / "b", no_disk);
  ASSERT_TRUE(a && b);
  const auto dead = RandomBytes(200000, 6), live = RandomBytes(20000, 7), mixed = RandomBytes(20000, 8);
  ASSERT_TRUE(a->PublishBytes(dead.data(), dead.size(), "dead").ok());
  // "gone" and "mixed" share one small pack; "gone" is most of it.
  auto batch = a->NewBatch();
  auto gone = RandomBytes(150000, 9);
  ASSERT_TRUE(batch->AddBytes(gone.data(), gone.size(), "gone").ok());
  ASSERT_TRUE(batch->AddBytes(mixed.data(), mixed.size(), "mixed").ok());
  ASSERT_TRUE(batch->Commit().ok());
  ASSERT_TRUE(a->PublishBytes(live.data(), live.size(), "live").ok());
  ASSERT_TRUE(b->Refresh().ok());
  ASSERT_TRUE(ReadObject(*b, "mixed").ok());  // b caches mixed's old location
  const size_t packs_before = CountBlobs("packs/");
  ASSERT_TRUE(a->RemoveName("dead").ok());
  ASSERT_TRUE(a->RemoveName("gone").ok());
  GcOptions go;
  go.compact_below = 0.5;
  auto dry = a->Gc([&] { GcOptions d = go; d.dry_run = true; return d; }());
  ASSERT_TRUE(dry.ok());
  EXPECT_EQ(CountBlobs("packs/"), packs_before);
  auto rep = a->Gc(go);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  EXPECT_EQ(rep->objects_removed, 2u);
  EXPECT_EQ(rep->packs_deleted, dry->packs_deleted);
  EXPECT_GE(rep->packs_deleted, 1u);
  EXPECT_EQ(rep->packs_compacted, 1u);
  EXPECT_GT(rep->bytes_reclaimed, 300000u);
  EXPECT_LT(CountBlobs("packs/"), packs_before);
  // b has not refreshed: its reads find packs gone and catch up.
  auto m = b->OpenReader("mixed");
  ASSERT_TRUE(m.ok());
  std::vector<uint8_t> got(mixed.size());
  auto n = (*m)->ReadAt(0, got.data(), got.size());
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(got, mixed);
  EXPECT_EQ(*ReadObject(*b, "live"), live);
  EXPECT_TRUE(b->Resolve("dead").status().IsNotFound());
  auto v = b->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt());
  EXPECT_TRUE(v->problems.empty());
  // A rebuilt cache agrees.
  ASSERT_TRUE(b->RebuildIndex().ok());
  EXPECT_EQ(*ReadObject(*b, "mixed"), mixed);
  EXPECT_EQ(b->List()->size(), 2u);
}

// Every version of a name keeps its object through a gc, on the machine
// that ran it and on one that builds its cache afterwards.
TEST_P(BucketTest, GcKeepsEveryVersionOfAName) {
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  const auto v1 = RandomBytes(200000, 31), v2 = RandomBytes(200000, 32);
  const std::string id1 = a->PublishBytes(v1.data(), v1.size(), "w")->id;
  ASSERT_TRUE(a->PublishBytes(v2.data(), v2.size(), "w").ok());
  ASSERT_TRUE(a->Tag(id1, "other").ok());
  ASSERT_TRUE(a->Tag("w@2", "other").ok());
  auto gc = a->Gc(testing::GcNow());
  ASSERT_TRUE(gc.ok()) << gc.status().ToString();
  EXPECT_EQ(gc->objects_removed, 0u);
  EXPECT_EQ(gc->chunks_removed, 0u);
  auto b = OpenMachine(dir_ / "b");
  ASSERT_TRUE(b);
  for (Store* s : {a.get(), b.get()}) {
    auto got1 = ReadObject(*s, "w@1");
    ASSERT_TRUE(got1.ok()) << got1.status().ToString();
    EXPECT_EQ(*got1, v1);
    EXPECT_EQ(*ReadObject(*s, "other@1"), v1);
    EXPECT_EQ(*ReadObject(*s, "w"), v2);
  }
}

// gc never guesses what a damaged manifest needs: it stops before it
// writes a record or deletes a blob.
TEST_P(BucketTest, ADamagedManifestStopsGcBeforeItChangesTheBucket) {
  std::string ida;
  {
    auto a = OpenMachine(dir_ / "a");
    ASSERT_TRUE(a);
    const auto x = RandomBytes(200000, 41), y = RandomBytes(200000, 42);
    ida = a->PublishBytes(x.data(), x.size(), "x")->id;
    ASSERT_TRUE(a->PublishBytes(y.data(), y.size(), "y").ok());
    ASSERT_TRUE(a->RemoveName("y").ok());
  }
  testing::Sql(dir_ / "a", "UPDATE objects SET manifest = zeroblob(length(manifest)) WHERE hex(id) = upper('" +
                               ida.substr(7) + "')");
  const size_t logs = CountBlobs("log/"), packs = CountBlobs("packs/");
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  auto gc = a->Gc(testing::GcNow());
  ASSERT_FALSE(gc.ok());
  EXPECT_TRUE(gc.status().IsCorruption()) << gc.status().ToString();
  EXPECT_EQ(gc.status().object_id(), ida);
  EXPECT_EQ(CountBlobs("log/"), logs);
  EXPECT_EQ(CountBlobs("packs/"), packs);
}

// A gc may run while a batch is open elsewhere: the batch's packs are in no
// change yet (and younger than the grace period), so gc leaves them, and a
// chunk the batch reuses that the gc removed makes its commit say so.
TEST_P(BucketTest, AGcWhileABatchIsOpenTakesNothingTheBatchKeeps) {
  auto a = OpenMachine(dir_ / "a");
  auto b = OpenMachine(dir_ / "b");
  ASSERT_TRUE(a && b);
  const auto old = RandomBytes(40000, 10), fresh = RandomBytes(40000, 11);
  ASSERT_TRUE(a->PublishBytes(old.data(), old.size(), "old").ok());
  ASSERT_TRUE(a->RemoveName("old").ok());  // its chunks are garbage now
  auto batch = a->NewBatch();
  ASSERT_TRUE(batch->AddBytes(fresh.data(), fresh.size(), "fresh").ok());
  ASSERT_TRUE(batch->AddBytes(old.data(), old.size(), "old-again").ok());  // reuses them
  auto rep = b->Gc(testing::GcNow());
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  EXPECT_EQ(rep->objects_removed, 1u);
  auto c = batch->Commit();
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(c.status().IsBusy()) << c.status().ToString();
  EXPECT_NE(c.status().message().find("publish again"), std::string::npos);
  EXPECT_TRUE(a->Resolve("fresh").status().IsNotFound());
  // Publishing again stores what the gc took.
  auto again = a->NewBatch();
  ASSERT_TRUE(again->AddBytes(fresh.data(), fresh.size(), "fresh").ok());
  ASSERT_TRUE(again->AddBytes(old.data(), old.size(), "old-again").ok());
  ASSERT_TRUE(again->Commit().ok());
  ASSERT_TRUE(b->Refresh().ok());
  EXPECT_EQ(*ReadObject(*b, "fresh"), fresh);
  EXPECT_EQ(*ReadObject(*b, "old-again"), old);
  EXPECT_EQ(CountBlobs("locks/"), 0u);
  auto v = b->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt());
}

// Writers of a log without numbered records take lock blobs, and wait for
// a gc's.
TEST_P(BucketLockedTest, AWriterWaitsForAGcThenGivesUpSayingSo) {
  Options o = SmallChunks();
  o.busy_timeout_ms = 700;
  auto a = OpenMachine(dir_ / "a", o);
  ASSERT_TRUE(a);
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  const std::string gc = "gc on " + std::string(host) + ", pid " + std::to_string(getpid()) + "\n";
  ASSERT_TRUE(backend_->Put("locks/exclusive-00000000000000aa", gc.data(), gc.size()).ok());
  const auto d = RandomBytes(3000, 18);
  const auto start = std::chrono::steady_clock::now();
  auto r = a->PublishBytes(d.data(), d.size(), "waits");
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsBusy()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("a gc is running"), std::string::npos);
  EXPECT_GE(waited, std::chrono::milliseconds(700));
  EXPECT_TRUE(a->Resolve("waits").status().IsNotFound());
  EXPECT_TRUE(a->Tag("waits", "x").status().IsBusy());  // catalog changes wait too
  EXPECT_EQ(CountBlobs("locks/"), 1u);  // its own lock blob is gone again
  // Once the gc is done, the same publish goes through.
  ASSERT_TRUE(backend_->Delete("locks/exclusive-00000000000000aa").ok());
  ASSERT_TRUE(a->PublishBytes(d.data(), d.size(), "waits").ok());
}

TEST_P(BucketTest, OpeningWithoutARefreshSeesOnlyWhatTheCacheHeld) {
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  const auto d = RandomBytes(3000, 19);
  ASSERT_TRUE(a->PublishBytes(d.data(), d.size(), "first").ok());
  {
    auto b = OpenMachine(dir_ / "b");  // its cache holds "first"
    ASSERT_TRUE(b);
  }
  ASSERT_TRUE(a->PublishBytes(d.data(), 1000, "second").ok());
  Options o = SmallChunks();
  o.refresh_on_open = false;
  auto b = OpenMachine(dir_ / "b", o);
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->Resolve("first").ok());
  EXPECT_TRUE(b->Resolve("second").status().IsNotFound());
  ASSERT_TRUE(b->Refresh().ok());
  EXPECT_TRUE(b->Resolve("second").ok());
}

TEST_P(BucketTest, ALockOfACrashedProcessOnThisHostDoesNotBlockGc) {
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);  // a pid that no longer runs
  const std::string dead = "writer " + internal::LockHolder(child) + "\n";
  ASSERT_NE(dead.find(", boot "), std::string::npos) << "this machine's /proc tells no boot id: " << dead;
  ASSERT_TRUE(backend_->Put("locks/shared-00000000deadbeef", dead.data(), dead.size()).ok());
  // A live holder (this process), and one on another host, still count.
  const std::string live = "writer " + internal::LockHolder(getpid()) + "\n";
  ASSERT_TRUE(backend_->Put("locks/shared-00000000a11a11a1", live.data(), live.size()).ok());
  EXPECT_TRUE(a->Gc().status().IsBusy());
  ASSERT_TRUE(backend_->Delete("locks/shared-00000000a11a11a1").ok());
  const std::string remote = "writer on some-other-host, pid 1\n";
  ASSERT_TRUE(backend_->Put("locks/shared-000000000e0e0e0e", remote.data(), remote.size()).ok());
  EXPECT_TRUE(a->Gc().status().IsBusy());
  ASSERT_TRUE(backend_->Delete("locks/shared-000000000e0e0e0e").ok());
  // The same host name and the dead process's id, but another machine
  // that shares the name, or a container with process ids of its own, or
  // a holder that did not say which: its process may well run.
  const std::string tail = dead.substr(dead.find(", boot "));
  for (const std::string& other :
       {"writer on " + std::string(host) + ", pid " + std::to_string(child) + ", boot 00000000-0000-0000-0000-000000000000" +
            tail.substr(tail.find(", pidns ")),
        "writer on " + std::string(host) + ", pid " + std::to_string(child) + tail.substr(0, tail.find(", pidns ")) +
            ", pidns pid:[1]\n",
        "writer on " + std::string(host) + ", pid " + std::to_string(child) + "\n"}) {
    ASSERT_TRUE(backend_->Put("locks/shared-00000000c0c0c0c0", other.data(), other.size()).ok());
    EXPECT_TRUE(a->Gc().status().IsBusy()) << other;
    ASSERT_TRUE(backend_->Delete("locks/shared-00000000c0c0c0c0").ok());
  }
  auto rep = a->Gc();
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  EXPECT_EQ(CountBlobs("locks/"), 0u);  // the dead holder's lock is gone too
}

TEST_P(BucketTest, AFailedUploadLeavesAnOrphanThatOnlyGcAfterItsGraceRemoves) {
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  const auto kept = RandomBytes(30000, 11);
  ASSERT_TRUE(a->PublishBytes(kept.data(), kept.size(), "kept").ok());
  const size_t logs = CountBlobs("log/"), packs = CountBlobs("packs/");
  // The pack upload succeeds, the log record does not.
  faulty_->FailFrom(2);
  const auto lost = RandomBytes(30000, 12);
  auto r = a->PublishBytes(lost.data(), lost.size(), "lost");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsIOError()) << r.status().ToString();
  faulty_->Heal();
  EXPECT_EQ(CountBlobs("log/"), logs);
  EXPECT_EQ(CountBlobs("packs/"), packs + 1);
  EXPECT_TRUE(a->Resolve("lost").status().IsNotFound());
  EXPECT_EQ(*ReadObject(*a, "kept"), kept);
  auto v = a->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt());
  ASSERT_EQ(v->problems.size(), 1u);
  EXPECT_EQ(v->problems[0].kind, "orphan-pack");
  ASSERT_TRUE(a->Gc().ok());  // default grace: an hour
  EXPECT_EQ(CountBlobs("packs/"), packs + 1);
  GcOptions now;
  now.orphan_grace_seconds = -10;  // clocks agree to the second at best
  ASSERT_TRUE(a->Gc(now).ok());
  EXPECT_EQ(CountBlobs("packs/"), packs);
  EXPECT_EQ(*ReadObject(*a, "kept"), kept);
  // Publishing again works and reuses nothing lost.
  ASSERT_TRUE(a->PublishBytes(lost.data(), lost.size(), "lost").ok());
  EXPECT_EQ(*ReadObject(*a, "lost"), lost);
}

// A publish that runs longer than gc's grace before it commits: a gc on
// another machine takes its packs (no record names them yet) for a crashed
// writer's. The commit finds them gone and commits nothing, rather than
// objects whose bytes are not there; publishing again stores them.
TEST_P(BucketTest, APublishWhosePacksAGcTookMeanwhileCommitsNothing) {
  auto a = OpenMachine(dir_ / "a");
  auto b = OpenMachine(dir_ / "b");
  ASSERT_TRUE(a && b);
  const auto kept = RandomBytes(30000, 30), big = RandomBytes(12 << 20, 31);
  ASSERT_TRUE(a->PublishBytes(kept.data(), kept.size(), "kept").ok());
  struct EverySessionChecks {  // every session is old enough to check its packs
    EverySessionChecks() { internal::SetPackCheckAgeForTests(0); }
    ~EverySessionChecks() { internal::SetPackCheckAgeForTests(600); }
  } checks;
  auto batch = a->NewBatch();
  const size_t before = CountBlobs("packs/");
  ASSERT_TRUE(batch->AddBytes(big.data(), big.size(), "big").ok());
  // Sealed packs upload in the background: wait until some are there.
  size_t packs = CountBlobs("packs/");
  for (int i = 0; i < 100 && packs < before + 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    packs = CountBlobs("packs/");
  }
  GcOptions now;
  now.orphan_grace_seconds = -10;  // stands for: the batch's packs are older than the grace
  auto rep = b->Gc(now);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  ASSERT_GT(rep->packs_deleted, 0u) << "the gc took none of the batch's packs (" << packs << " packs)";
  auto c = batch->Commit();
  ASSERT_FALSE(c.ok()) << "a publish whose packs are gone was committed";
  EXPECT_TRUE(c.status().IsBusy()) << c.status().ToString();
  EXPECT_NE(c.status().message().find("are gone"), std::string::npos) << c.status().ToString();
  EXPECT_NE(c.status().message().find("Publish again"), std::string::npos) << c.status().ToString();
  auto fresh = OpenMachine(dir_ / "fresh");
  ASSERT_TRUE(fresh);
  EXPECT_TRUE(fresh->Resolve("big").status().IsNotFound());
  auto v = fresh->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt());
  ASSERT_TRUE(a->PublishBytes(big.data(), big.size(), "big").ok());
  ASSERT_TRUE(fresh->Refresh().ok());
  EXPECT_EQ(*ReadObject(*fresh, "big"), big);
  EXPECT_EQ(*ReadObject(*fresh, "kept"), kept);
}

// verify on one machine while a gc on another drops dead chunks and
// deletes their packs: what gc removed is no damage, whether verify had
// listed it already or not, in a quick verify and a full one.
TEST_P(BucketTest, AVerifyDuringAnotherMachinesGcReportsNoDamage) {
  for (const bool quick : {true, false}) {
    auto a = OpenMachine(dir_ / ("a" + std::to_string(quick)));
    auto b = OpenMachine(dir_ / ("b" + std::to_string(quick)));
    ASSERT_TRUE(a && b);
    const auto keep = RandomBytes(30000, 40 + quick), old = RandomBytes(300000, 42 + quick);
    ASSERT_TRUE(a->PublishBytes(keep.data(), keep.size(), "keep" + std::to_string(quick)).ok());
    ASSERT_TRUE(a->PublishBytes(old.data(), old.size(), "old" + std::to_string(quick)).ok());
    ASSERT_TRUE(a->RemoveName("old" + std::to_string(quick)).ok());
    ASSERT_TRUE(b->Refresh().ok());
    std::atomic<bool> ran{false};
    Result<GcReport> gc = Status::IOError("not run");
    VerifyOptions vo;
    vo.quick = quick;
    vo.progress = [&](uint64_t, uint64_t) {
      if (!ran.exchange(true)) gc = a->Gc(testing::GcNow());
    };
    auto v = b->Verify(vo);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    ASSERT_TRUE(ran.load()) << "the gc did not run during verify";
    ASSERT_TRUE(gc.ok()) << gc.status().ToString();
    ASSERT_GT(gc->chunks_removed, 0u) << "quick " << quick;
    std::string problems;
    for (const auto& p : v->problems) problems += p.kind + " " + p.message + "\n";
    EXPECT_FALSE(v->corrupt()) << "quick " << quick << ":\n" << problems;
    auto again = b->Verify(vo);
    ASSERT_TRUE(again.ok());
    EXPECT_FALSE(again->corrupt());
  }
}

// The same, where the gc deletes a pack between verify's listing of the
// packs and its look at that pack's file.
TEST_P(BucketTest, AVerifyThatFindsAPackAGcRemovedMeanwhileReportsNoDamage) {
  auto a = OpenMachine(dir_ / "a");
  auto b = OpenMachine(dir_ / "b");
  ASSERT_TRUE(a && b);
  const auto keep = RandomBytes(30000, 44), old = RandomBytes(600000, 45);
  ASSERT_TRUE(a->PublishBytes(keep.data(), keep.size(), "keep").ok());
  ASSERT_TRUE(a->PublishBytes(old.data(), old.size(), "old").ok());
  ASSERT_TRUE(a->RemoveName("old").ok());
  ASSERT_TRUE(b->Refresh().ok());
  Result<GcReport> gc = Status::IOError("not run");
  faulty_->OnNextGetRange("packs/", [&] { gc = a->Gc(testing::GcNow()); });
  VerifyOptions quick;
  quick.quick = true;
  auto v = b->Verify(quick);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_TRUE(gc.ok()) << gc.status().ToString();
  ASSERT_GT(gc->packs_deleted, 0u);
  std::string problems;
  for (const auto& p : v->problems) problems += p.kind + " " + p.message + "\n";
  EXPECT_FALSE(v->corrupt()) << problems;
  EXPECT_EQ(*ReadObject(*b, "keep"), keep);
}

// Two gcs elsewhere, each with its checkpoint, while verify runs: the
// cache verify catches up starts again from the newest checkpoint, which
// numbers the packs afresh. verify says to run it again rather than check
// chunks against packs those numbers now name; run again, it is clean.
TEST_P(BucketTest, AVerifyWhoseCacheWasRebuiltMeanwhileSaysRunItAgain) {
  Options o = SmallChunks();
  o.bucket_checkpoint_records = 0;
  o.bucket_log_retention_seconds = 0;
  auto a = OpenMachine(dir_ / "a", o);
  auto b = OpenMachine(dir_ / "b", o);
  ASSERT_TRUE(a && b);
  std::vector<std::vector<uint8_t>> kept;
  for (int i = 0; i < 4; ++i) {
    kept.push_back(RandomBytes(300000, 50 + static_cast<uint64_t>(i)));
    const auto old = RandomBytes(300000, 60 + static_cast<uint64_t>(i));
    ASSERT_TRUE(a->PublishBytes(old.data(), old.size(), "old" + std::to_string(i)).ok());
    ASSERT_TRUE(a->PublishBytes(kept[i].data(), kept[i].size(), "kept" + std::to_string(i)).ok());
  }
  ASSERT_TRUE(b->Refresh().ok());
  std::atomic<bool> ran{false};
  Status gcs;
  VerifyOptions vo;
  vo.quick = true;
  vo.progress = [&](uint64_t, uint64_t) {
    if (ran.exchange(true)) return;
    for (int i = 0; i < 4 && gcs.ok(); i += 2) {
      for (int j = i; j < i + 2 && gcs.ok(); ++j) gcs = a->RemoveName("old" + std::to_string(j));
      if (gcs.ok()) gcs = a->Gc(testing::GcNow()).status();
    }
  };
  auto v = b->Verify(vo);
  ASSERT_TRUE(ran.load());
  ASSERT_TRUE(gcs.ok()) << gcs.ToString();
  ASSERT_FALSE(v.ok()) << "verify went on with pack numbers the rebuilt cache gives to other packs";
  EXPECT_TRUE(v.status().IsBusy()) << v.status().ToString();
  EXPECT_NE(v.status().message().find("run verify again"), std::string::npos) << v.status().ToString();
  auto again = b->Verify();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE(again->corrupt());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(*ReadObject(*b, "kept" + std::to_string(i)), kept[i]);
}

TEST_P(BucketTest, AFailureAtEveryWriteLosesNothingAlreadyStored) {
  const auto base = RandomBytes(50000, 13);
  const auto extra = RandomBytes(50000, 14);
  {
    auto a = OpenMachine(dir_ / "setup");
    ASSERT_TRUE(a);
    ASSERT_TRUE(a->PublishBytes(base.data(), base.size(), "base").ok());
    ASSERT_TRUE(a->PublishBytes(extra.data(), extra.size(), "old").ok());
    ASSERT_TRUE(a->RemoveName("old").ok());
  }
  // Count the writes of one round of operations, then fail each in turn.
  auto round = [&](Store& s, int i) -> Status {
    auto d = RandomBytes(20000, 100 + i);
    auto p = s.PublishBytes(d.data(), d.size(), "new" + std::to_string(i));
    if (!p.ok()) return p.status();
    auto t = s.Tag("base", "alias" + std::to_string(i));
    if (!t.ok()) return t.status();
    GcOptions go;
    go.compact_below = 0.9;
    auto g = s.Gc(go);
    return g.status();
  };
  int writes = 0;
  {
    auto probe = OpenMachine(dir_ / "probe");
    ASSERT_TRUE(probe);
    const int before = faulty_->mutations();
    ASSERT_TRUE(round(*probe, 0).ok());
    writes = faulty_->mutations() - before;
  }
  ASSERT_GT(writes, 3);
  for (int n = 1; n <= writes + 1; ++n) {
    SCOPED_TRACE("failing write " + std::to_string(n));
    auto s = OpenMachine(dir_ / ("m" + std::to_string(n)));
    ASSERT_TRUE(s);
    faulty_->FailFrom(n);
    Status st = round(*s, n);
    faulty_->Heal();
    // Whatever failed, a fresh machine sees every object stored before,
    // whole, and the store verifies.
    auto fresh = OpenMachine(dir_ / ("f" + std::to_string(n)));
    ASSERT_TRUE(fresh);
    auto back = ReadObject(*fresh, "base");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, base);
    auto v = fresh->Verify();
    ASSERT_TRUE(v.ok());
    EXPECT_FALSE(v->corrupt());
    if (st.ok()) {
      EXPECT_TRUE(fresh->Resolve("new" + std::to_string(n)).ok());
    } else {
      EXPECT_TRUE(st.IsIOError()) << st.ToString();
    }
  }
}

TEST_P(BucketTest, OpeningAMissingOrForeignStore) {
  Options o = SmallChunks();
  o.blob_store = faulty_.get();
  o.create_if_missing = false;
  auto missing = Store::Open(dir_ / "a", o);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().IsNotFound()) << missing.status().ToString();
  const std::string junk = "not a store\n";
  ASSERT_TRUE(backend_->Put("config", junk.data(), junk.size()).ok());
  auto foreign = Store::Open(dir_ / "a", o);
  ASSERT_FALSE(foreign.ok());
  EXPECT_TRUE(foreign.status().IsInvalidArgument()) << foreign.status().ToString();
  ASSERT_TRUE(backend_->Delete("config").ok());
  o.create_if_missing = true;
  auto made = Store::Open(dir_ / "a", o);
  ASSERT_TRUE(made.ok());
  // Created with the bucket's parameters, whatever a later opener asks.
  Options other = o;
  other.chunking.min_size = 2048;
  other.chunking.avg_size = 8192;
  other.chunking.max_size = 32768;
  auto again = Store::Open(dir_ / "b", other);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->chunking().avg_size, 4096u);
  other.error_if_exists = true;
  EXPECT_TRUE(Store::Open(dir_ / "c", other).status().IsInvalidArgument());
}

// Two processes creating one store at once may each tag its cache with its
// own store id before one config wins; a cache whose id differs from the
// bucket's is only thrown away and rebuilt.
TEST_P(BucketTest, ACacheTaggedWithAnotherStoreIdIsRebuilt) {
  const auto d = RandomBytes(20000, 16);
  {
    auto a = OpenMachine(dir_ / "a");
    ASSERT_TRUE(a);
    ASSERT_TRUE(a->PublishBytes(d.data(), d.size(), "x").ok());
  }
  auto config = backend_->Get("config");
  ASSERT_TRUE(config.ok());
  const size_t at = config->find("\nid ") + 4;
  ASSERT_NE(at, std::string::npos + 4);
  (*config)[at] = (*config)[at] == 'f' ? 'e' : 'f';
  // What the other creator wrote: a whole config, its check line its own.
  const size_t check = config->find("check ");
  ASSERT_NE(check, std::string::npos);
  char line[40];
  std::snprintf(line, sizeof line, "check %016llx\n",
                static_cast<unsigned long long>(internal::XxHash64(config->data(), check)));
  *config = config->substr(0, check) + line;
  ASSERT_TRUE(backend_->Put("config", config->data(), config->size()).ok());
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  auto back = ReadObject(*a, "x");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, d);
}

TEST_P(BucketTest, ADamagedLogRecordStopsTheRefreshWithCorruption) {
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  const auto d = RandomBytes(10000, 15);
  ASSERT_TRUE(a->PublishBytes(d.data(), d.size(), "x").ok());
  auto logs = backend_->List("log/");
  ASSERT_TRUE(logs.ok());
  ASSERT_EQ(logs->size(), 1u);
  FlipBit((*logs)[0].key);
  Options o = SmallChunks();
  o.blob_store = faulty_.get();
  auto b = Store::Open(dir_ / "b", o);
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(b.status().IsCorruption()) << b.status().ToString();
  EXPECT_NE(b.status().message().find((*logs)[0].key), std::string::npos);
}

// A rebuild that meets a damaged record fails naming it and leaves the
// machine's cache as it was: the machine goes on serving what it had.
TEST_P(BucketTest, ARebuildThatMeetsADamagedRecordKeepsTheOldCache) {
  const auto d = RandomBytes(10000, 16), e = RandomBytes(10000, 17);
  const auto keys = TwoRecordsTheSecondDamaged(d, e);
  ASSERT_EQ(keys.size(), 2u);
  Options o = SmallChunks();
  o.blob_store = faulty_.get();
  o.rebuild_index = true;
  auto r = Store::Open(dir_ / "a", o);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_NE(r.status().message().find(keys[1]), std::string::npos) << r.status().message();
  auto again = OpenMachine(dir_ / "a");
  ASSERT_TRUE(again) << "the failed rebuild took the machine's cache with it";
  EXPECT_EQ(*ReadObject(*again, "x"), d);
  EXPECT_EQ(*ReadObject(*again, "y"), e);
}

// The repair for a damaged record: quarantined, it costs its own change
// and nothing else; every machine reads the log again, and verify says
// what was set aside. A sound record is never quarantined.
TEST_P(BucketTest, AQuarantinedDamagedRecordLosesOnlyItsChange) {
  const auto d = RandomBytes(10000, 18), e = RandomBytes(10000, 19);
  const auto keys = TwoRecordsTheSecondDamaged(d, e);
  ASSERT_EQ(keys.size(), 2u);
  const std::string sound = keys[0], damaged = keys[1];
  Options o = SmallChunks();
  o.blob_store = faulty_.get();
  ASSERT_FALSE(Store::Open(dir_ / "b", o).ok()) << "a new machine read past a damaged record";

  o.refresh_on_open = false;
  auto repair = Store::Open(dir_ / "r", o);
  ASSERT_TRUE(repair.ok()) << repair.status().ToString();
  Status refused = (*repair)->QuarantineLogRecord(sound);
  EXPECT_TRUE(refused.IsInvalidArgument()) << refused.ToString();
  EXPECT_TRUE((*repair)->QuarantineLogRecord("packs/anything").IsInvalidArgument());
  ASSERT_TRUE((*repair)->QuarantineLogRecord(damaged).ok());
  repair->reset();
  EXPECT_TRUE(backend_->Get(sound).ok());
  if (Sequenced()) {
    // Its number stays taken, by an empty change set, so that no writer
    // claims it again behind the records after it.
    auto now = backend_->Get(damaged);
    ASSERT_TRUE(now.ok());
    auto none = internal::DecodeChangeSet(*now, {}, damaged);
    ASSERT_TRUE(none.ok()) << none.status().ToString();
    EXPECT_TRUE(none->empty());
  } else {
    EXPECT_FALSE(backend_->Get(damaged).ok());
  }
  EXPECT_TRUE(backend_->Get("quarantine/" + damaged.substr(4)).ok());

  o.refresh_on_open = true;
  auto b = Store::Open(dir_ / "b", o);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(*ReadObject(**b, "x"), d);
  EXPECT_TRUE((*b)->Resolve("y").status().IsNotFound());  // the lost change
  auto v = (*b)->Verify();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_FALSE(v->corrupt());
  bool said = false;
  for (const auto& p : v->problems) said |= p.message.find("quarantined") != std::string::npos &&
                                             p.message.find(damaged) != std::string::npos;
  EXPECT_TRUE(said) << "verify does not report the quarantined record";

  // The lost change's packs are named by no readable record: gc keeps every
  // such pack while a record is set aside.
  auto packs_before = backend_->List("packs/");
  ASSERT_TRUE(packs_before.ok());
  EXPECT_EQ(packs_before->size(), 2u);
  auto g = (*b)->Gc(testing::GcNow());
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(backend_->List("packs/")->size(), 2u) << "gc deleted a pack the quarantined change may name";
  EXPECT_EQ(*ReadObject(**b, "x"), d);
  // Writing goes on after it (a sequenced log: at the next number).
  const auto f = RandomBytes(3000, 20);
  ASSERT_TRUE((*b)->PublishBytes(f.data(), f.size(), "z").ok());
  auto c = OpenMachine(dir_ / "c");
  ASSERT_TRUE(c);
  EXPECT_EQ(*ReadObject(*c, "z"), f);
  EXPECT_EQ(*ReadObject(*c, "x"), d);
}

// A record this version cannot read (a newer chunkstore's) is not damage:
// never quarantined.
TEST_P(BucketTest, ARecordOfANewerFormatIsNeverQuarantined) {
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  const auto d = RandomBytes(5000, 24);
  ASSERT_TRUE(a->PublishBytes(d.data(), d.size(), "x").ok());
  internal::ChangeSet future;
  future.kind = static_cast<internal::ChangeSet::Kind>(99);
  future.time = 1;
  const std::string bytes = internal::EncodeChangeSet(future);
  const std::string key = "log/0000000000-9999999999999-00000000000000ee";
  ASSERT_TRUE(backend_->Put(key, bytes.data(), bytes.size()).ok());
  Status q = a->QuarantineLogRecord(key);
  if (q.ok()) {
    FAIL() << "a record of an unknown kind was quarantined";
  }
  EXPECT_TRUE(backend_->Get(key).ok()) << "the record was moved";
}

// A pack upload a killed writer left open is aborted by the first gc after
// the grace period (on S3; other blob stores write blobs whole and have
// none to abort).
TEST_P(BucketTest, GcAbortsPackUploadsAKilledWriterLeftOpen) {
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  const auto d = RandomBytes(10000, 20);
  ASSERT_TRUE(a->PublishBytes(d.data(), d.size(), "x").ok());
  const std::string key = "packs/pack-00000000deadbeef.pack";
  const bool s3 = GetParam() == Backend::kS3 || GetParam() == Backend::kS3Locks;
  if (s3) {
    auto id = internal::StartUpload(backend_.get(), key);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
  }
  auto open = backend_->ListUploads("packs/");
  ASSERT_TRUE(open.ok()) << open.status().ToString();
  ASSERT_EQ(open->size(), s3 ? 1u : 0u);
  auto young = a->Gc();  // the default grace of an hour: a writer may still be at it
  ASSERT_TRUE(young.ok()) << young.status().ToString();
  EXPECT_EQ(young->uploads_aborted, 0u);
  EXPECT_EQ(backend_->ListUploads("packs/")->size(), s3 ? 1u : 0u);
  auto r = a->Gc(testing::GcNow());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->uploads_aborted, s3 ? 1u : 0u);
  EXPECT_EQ(backend_->ListUploads("packs/")->size(), 0u);
  EXPECT_EQ(*ReadObject(*a, "x"), d);
}

// Staged packs a killed publish left in the cache go at the next open;
// one a writer holds (its lock taken) stays.
TEST_P(BucketTest, StagedPacksAKilledPublishLeftGoAtTheNextOpen) {
  {
    auto a = OpenMachine(dir_ / "a");
    ASSERT_TRUE(a);
  }
  const std::string dead = dir_ / "a/packs/pack-00000000deadbeef.pack";
  const std::string held = dir_ / "a/packs/pack-00000000000a11fe.pack";
  const std::string young = dir_ / "a/packs/pack-0000000000000bed.pack";
  testing::WriteFile(dead, RandomBytes(1000, 21));
  testing::WriteFile(held, RandomBytes(1000, 22));
  testing::WriteFile(young, RandomBytes(1000, 23));  // perhaps not locked yet by its writer
  const auto old = std::filesystem::file_time_type::clock::now() - std::chrono::hours(2);
  std::filesystem::last_write_time(dead, old);
  std::filesystem::last_write_time(held, old);
  auto lock = Env::Posix()->TryLockExistingFile(held);
  ASSERT_TRUE(lock.ok());
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(held));
  EXPECT_TRUE(std::filesystem::exists(young));
  bool said = false;
  for (const auto& n : a->notices()) said |= n.find("staged packs") != std::string::npos;
  EXPECT_TRUE(said);
}

// Each small publish uploads a pack of its own; gc copies them together
// (one change), and every object reads back from the merged pack.
TEST_P(BucketTest, GcMergesTheSmallPacksOfSmallPublishes) {
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  std::vector<std::vector<uint8_t>> data;
  for (int i = 0; i < 30; ++i) {
    data.push_back(RandomBytes(4096, 100 + i));
    ASSERT_TRUE(a->PublishBytes(data.back().data(), data.back().size(), "s" + std::to_string(i)).ok());
  }
  ASSERT_TRUE(a->RemoveName("s0").ok());  // one dead: its pack is dropped, not merged
  ASSERT_EQ(backend_->List("packs/")->size(), 30u);
  auto r = a->Gc(testing::GcNow());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->packs_merged, 29u);
  EXPECT_EQ(r->packs_deleted, 1u);
  EXPECT_EQ(backend_->List("packs/")->size(), 1u);
  for (int i = 1; i < 30; ++i) EXPECT_EQ(*ReadObject(*a, "s" + std::to_string(i)), data[i]) << i;
  auto v = a->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->problems.empty()) << v->problems[0].kind << ": " << v->problems[0].message;
  // A second machine sees the same.
  auto b = OpenMachine(dir_ / "b");
  ASSERT_TRUE(b);
  EXPECT_EQ(*ReadObject(*b, "s7"), data[7]);
  auto again = a->Gc(testing::GcNow());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->packs_merged, 0u);
}

// A store with a secret: its changes are signed, a machine holding the
// secret refuses a change that is not (a forged log record) as damage
// naming the record, a wrong secret or none is refused for writing.
TEST_P(BucketTest, AStoreSecretRefusesForgedChanges) {
  Options o = SmallChunks();
  o.secret = "correct horse battery staple";
  auto a = OpenMachine(dir_ / "a", o);
  ASSERT_TRUE(a);
  const auto real = RandomBytes(20000, 61), other = RandomBytes(20000, 62);
  ASSERT_TRUE(a->PublishBytes(real.data(), real.size(), "model").ok());
  const std::string other_id = a->PublishBytes(other.data(), other.size())->id;
  // Someone with write access to the bucket, but not the secret, points
  // the name at other content with a record of their own.
  internal::ChangeSet forged;
  forged.kind = internal::ChangeSet::kTag;
  forged.time = 1;
  forged.names.push_back({"model", *internal::Digest::FromHex(other_id.substr(7)), 0, 0});
  const std::string bytes = internal::EncodeChangeSet(forged);
  const std::string key = ForeignLogKey();
  ASSERT_TRUE(backend_->Put(key, bytes.data(), bytes.size()).ok());
  auto b = Store::Open(dir_ / "b", [&] {
    Options ob = o;
    ob.blob_store = faulty_.get();
    return ob;
  }());
  ASSERT_FALSE(b.ok()) << "a machine holding the secret applied an unsigned change";
  EXPECT_TRUE(b.status().IsCorruption()) << b.status().ToString();
  EXPECT_NE(b.status().message().find(key), std::string::npos) << b.status().message();
  // A machine without the secret cannot change the store.
  Options none = SmallChunks();
  none.blob_store = faulty_.get();
  auto c = Store::Open(dir_ / "c", none);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto w = (*c)->PublishBytes("x", 1, "x");
  EXPECT_TRUE(w.status().IsPermissionDenied()) << w.status().ToString();
  // Nor one with another secret open it.
  Options wrong = o;
  wrong.secret = "another";
  wrong.blob_store = faulty_.get();
  auto d = Store::Open(dir_ / "d", wrong);
  EXPECT_TRUE(d.status().IsPermissionDenied()) << d.status().ToString();
  // Once the forged record is gone, the secret's holders agree again.
  ASSERT_TRUE(backend_->Delete(key).ok());
  Options ob = o;
  ob.blob_store = faulty_.get();
  auto e = Store::Open(dir_ / "e", ob);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(*ReadObject(**e, "model"), real);
}

CHUNKSTORE_ON_EVERY_BUCKET(BucketTest);
CHUNKSTORE_ON_LOCKED_BUCKETS(BucketLockedTest);

}  // namespace
}  // namespace chunkstore
