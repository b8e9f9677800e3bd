// SPDX-License-Identifier: Apache-2.0
// Sequenced logs (bucket format 4): where the service takes conditional
// writes, a writer stores its change set as the successor of the newest
// one it applied, with "If-None-Match: *", and takes no lock. These tests
// check what that must keep: exactly one writer gets each number; the one
// that loses follows the log and tries the next number, or gives up where
// what it relied on is gone; gc deletes nothing after losing its number;
// a writer whose cache is far behind never claims a number freed under it;
// and the probe at creation tells services that keep the promise from
// those that do not.
//
// Built into unit_tests and (with CHUNKSTORE_TEST_S3) s3_tests, like
// bucket_test.cc.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include "bucket/log_keys.h"
#include "format/pack_format.h"
#include "bucket_fixture.h"
#include "tree_util.h"

namespace chunkstore {
namespace {

using testing::Backend;
using testing::BucketTest;
using testing::RandomBytes;
using testing::ReadObject;
using testing::SmallChunks;

using BucketSequencedTest = BucketTest;

// The numbers of the change sets in the log, in key order; fails the test
// on a key of any other shape.
std::vector<int64_t> Numbers(BlobStore& blobs) {
  std::vector<int64_t> out;
  auto listed = blobs.List("log/");
  EXPECT_TRUE(listed.ok());
  if (!listed.ok()) return out;
  for (const BlobInfo& b : *listed) {
    int64_t epoch = 0, seq = 0;
    EXPECT_TRUE(internal::IsLogKey(b.key, true)) << b.key;
    EXPECT_TRUE(internal::ParseLogKey(b.key, &epoch, &seq)) << b.key;
    if (!internal::IsCheckpointMark(b.key)) out.push_back(seq);
  }
  return out;
}

TEST_P(BucketSequencedTest, ExactlyOneOfManyConditionalWritesOfAKeyStores) {
  constexpr int kWriters = 8;
  for (int round = 0; round < 5; ++round) {
    const std::string key = "race/" + RandomHex() + "-" + std::to_string(round);
    std::atomic<int> won{0}, lost{0}, failed{0};
    std::vector<std::thread> writers;
    for (int i = 0; i < kWriters; ++i)
      writers.emplace_back([&, i] {
        const std::string body = "writer " + std::to_string(i);
        Result<bool> r = backend_->PutIfAbsent(key, body.data(), body.size());
        if (!r.ok()) ++failed;
        else if (*r) ++won;
        else ++lost;
      });
    for (auto& t : writers) t.join();
    EXPECT_EQ(failed.load(), 0);
    EXPECT_EQ(won.load(), 1);
    EXPECT_EQ(lost.load(), kWriters - 1);
    auto kept = backend_->Get(key);
    ASSERT_TRUE(kept.ok());
    EXPECT_EQ(kept->rfind("writer ", 0), 0u);
    // The winner's blob stays: a later conditional write changes nothing.
    Result<bool> again = backend_->PutIfAbsent(key, "x", 1);
    ASSERT_TRUE(again.ok());
    EXPECT_FALSE(*again);
    EXPECT_EQ(*backend_->Get(key), *kept);
    ASSERT_TRUE(backend_->Delete(key).ok());
  }
}

// A store made on this backend has a sequenced log, and the probe left
// nothing behind.
TEST_P(BucketSequencedTest, AStoreMadeWhereConditionalWritesHoldIsSequenced) {
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  EXPECT_TRUE(Sequenced());
  auto config = backend_->Get("config");
  ASSERT_TRUE(config.ok());
  EXPECT_NE(config->find("format 4\n"), std::string::npos);
  EXPECT_EQ(CountBlobs("probe/"), 0u);
  // Without asking for them, a store keeps lock blobs.
  testing::TempDir other;
  auto blobs = NewDirectoryBlobStore(other / "bucket");
  Options o = SmallChunks();
  o.blob_store = blobs.get();
  o.bucket_conditional_writes = false;
  auto b = Store::Open(other / "cache", o);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  auto plain = blobs->Get("config");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->find("log sequenced"), std::string::npos);
}

// Services that refuse conditional writes, or ignore them (both answer the
// second write of a key as if it stored), get a log with lock blobs.
TEST_P(BucketSequencedTest, AServiceThatDoesNotKeepThePromiseGetsLockBlobs) {
  for (const bool ignore : {false, true}) {
    SCOPED_TRACE(ignore ? "ignores If-None-Match" : "refuses If-None-Match");
    testing::TempDir other;
    auto blobs = NewDirectoryBlobStore(other / "bucket");
    testing::FaultyBlobStore faulty(blobs.get());
    faulty.SetConditionalWrites(ignore);  // on only to be ignored
    faulty.IgnoreConditions(ignore);
    Options o = SmallChunks();
    o.blob_store = &faulty;
    auto s = Store::Open(other / "cache", o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    auto config = blobs->Get("config");
    ASSERT_TRUE(config.ok());
    EXPECT_EQ(config->find("log sequenced"), std::string::npos);
    EXPECT_NE(config->find("format 2\n"), std::string::npos);
    auto probes = blobs->List("probe/");
    ASSERT_TRUE(probes.ok());
    EXPECT_TRUE(probes->empty());
    const auto d = RandomBytes(3000, 1);
    faulty.ForgetRequests();
    ASSERT_TRUE((*s)->PublishBytes(d.data(), d.size(), "x").ok());
    bool locked = false;
    for (const std::string& r : faulty.request_log()) locked |= r.rfind("PUT locks/", 0) == 0;
    EXPECT_TRUE(locked) << "a publish without conditional writes took no lock";
  }
}

// What a small publish costs in requests, from opening the store (as a new
// process does, its cache warm) to the end: the config, a refresh of the
// log, the pack and the record. No lock, no second refresh.
TEST_P(BucketSequencedTest, ASmallPublishMakesFourRequests) {
  {
    auto a = OpenMachine(dir_ / "a");
    ASSERT_TRUE(a);
    const auto d = RandomBytes(4096, 9);
    ASSERT_TRUE(a->PublishBytes(d.data(), d.size(), "first").ok());
  }
  faulty_->ForgetRequests();
  {
    auto a = OpenMachine(dir_ / "a");
    ASSERT_TRUE(a);
    const auto d = RandomBytes(4096, 77);
    ASSERT_TRUE(a->PublishBytes(d.data(), d.size(), "small").ok());
  }
  const std::vector<std::string> made = faulty_->request_log();
  std::string all;
  for (const std::string& r : made) all += r + "\n";
  ASSERT_EQ(made.size(), 4u) << all;
  EXPECT_EQ(made[0], "GET config") << all;
  EXPECT_EQ(made[1], "LIST log/") << all;
  EXPECT_EQ(made[2].rfind("PUT packs/", 0), 0u) << all;
  EXPECT_EQ(made[3], "PUT log/0000000001-0000000000002-change") << all;
}

// Two writers that saw the same newest record race for the next number:
// the one whose write lands second loses it, follows the log, and stores
// its change under the number after; every machine ends with both, in
// that order.
TEST_P(BucketSequencedTest, AWriterThatLosesItsNumberTakesTheNextOne) {
  auto a = OpenMachine(dir_ / "a");
  auto b = OpenMachine(dir_ / "b");
  ASSERT_TRUE(a && b);
  const auto d = RandomBytes(5000, 3), e = RandomBytes(5000, 4);
  ASSERT_TRUE(a->PublishBytes(d.data(), d.size(), "x").ok());
  ASSERT_TRUE(b->Refresh().ok());
  faulty_->HoldNextLogPut();
  std::thread slow([&] { EXPECT_TRUE(a->Tag("x", "name").ok()); });
  faulty_->WaitUntilHeld();
  // b, which saw the same newest record, takes the number a is after.
  ASSERT_TRUE(b->PublishBytes(e.data(), e.size(), "name").ok());
  faulty_->ReleaseHeldPut();
  slow.join();
  EXPECT_EQ(Numbers(*backend_), (std::vector<int64_t>{1, 2, 3}));
  ASSERT_TRUE(b->Refresh().ok());
  auto fresh = OpenMachine(dir_ / "fresh");
  ASSERT_TRUE(fresh);
  for (Store* s : {a.get(), b.get(), fresh.get()}) {
    EXPECT_EQ(*ReadObject(*s, "name@1"), e);
    EXPECT_EQ(*ReadObject(*s, "name@2"), d);
    EXPECT_EQ(*ReadObject(*s, "name"), d);
  }
}

// A gc decides from the log as it is; a change stored before gc's record
// may use what gc took for garbage. gc then loses its number and stops,
// deleting nothing; the next one keeps what the change uses.
TEST_P(BucketSequencedTest, AGcThatLosesItsNumberDeletesNothing) {
  auto a = OpenMachine(dir_ / "a");
  auto g = OpenMachine(dir_ / "g");
  ASSERT_TRUE(a && g);
  const auto old = RandomBytes(40000, 10);
  ASSERT_TRUE(a->PublishBytes(old.data(), old.size(), "old").ok());
  ASSERT_TRUE(a->RemoveName("old").ok());  // its chunks are garbage now
  const size_t packs = CountBlobs("packs/");
  faulty_->HoldNextLogPut();
  Result<GcReport> first = Status::IOError("not run");
  std::thread gc([&] { first = g->Gc(testing::GcNow()); });
  faulty_->WaitUntilHeld();
  // Meanwhile a publishes the same bytes again: every chunk is in the
  // store, so only a record is written, naming chunks gc would remove.
  ASSERT_TRUE(a->PublishBytes(old.data(), old.size(), "again").ok());
  faulty_->ReleaseHeldPut();
  gc.join();
  ASSERT_FALSE(first.ok());
  EXPECT_TRUE(first.status().IsBusy()) << first.status().ToString();
  EXPECT_NE(first.status().message().find("run gc again"), std::string::npos);
  EXPECT_EQ(CountBlobs("packs/"), packs);
  EXPECT_EQ(*ReadObject(*a, "again"), old);
  auto second = g->Gc(testing::GcNow());
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->objects_removed, 0u);
  auto fresh = OpenMachine(dir_ / "fresh");
  ASSERT_TRUE(fresh);
  EXPECT_EQ(*ReadObject(*fresh, "again"), old);
  auto v = fresh->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt());
}

// gc decides on its own replay of the log, and another process sharing
// its cache (serve, a mount, any command that opens the store) may apply
// a writer's record to that cache meanwhile. gc must not claim the number
// after that record, which its decision never saw: a publish there that
// reuses what gc removes would report success and then lose its bytes.
// A race, provoked many times over: nothing any round published is lost.
TEST_P(BucketSequencedTest, AGcDoesNotClaimPastARecordItsDecisionNeverSaw) {
  auto g = OpenMachine(dir_ / "shared");
  auto other = OpenMachine(dir_ / "shared");  // serve, say, on the same cache
  auto w = OpenMachine(dir_ / "w");
  ASSERT_TRUE(g && other && w);
  // A real service's requests take long enough to open the race wide.
  const bool remote = GetParam() == Backend::kS3;
  const int rounds = remote ? 8 : 30;
  {
    // Enough objects that gc's decision takes a while.
    auto batch = w->NewBatch();
    for (int i = 0; i < (remote ? 300 : 2000); ++i) {
      const auto d = RandomBytes(2500, 100000 + static_cast<uint64_t>(i));
      ASSERT_TRUE(batch->AddBytes(d.data(), d.size(), "base" + std::to_string(i)).ok());
    }
    ASSERT_TRUE(batch->Commit().ok());
  }
  ASSERT_TRUE(g->Refresh().ok());
  std::atomic<bool> stop{false};
  std::thread refresher([&] {
    while (!stop) (void)other->Refresh();
  });
  std::mt19937 rng(1);
  int lost = 0, published = 0;
  for (int round = 0; round < rounds && lost == 0; ++round) {
    const auto d = RandomBytes(20000, 900 + static_cast<uint64_t>(round));
    const std::string dead = "dead" + std::to_string(round), again = "again" + std::to_string(round);
    ASSERT_TRUE(w->PublishBytes(d.data(), d.size(), dead).ok());
    ASSERT_TRUE(w->RemoveName(dead).ok());
    Result<GcReport> rep = Status::IOError("not run");
    std::thread gc([&] { rep = g->Gc(testing::GcNow()); });
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 300));
    auto p = w->PublishBytes(d.data(), d.size(), again);
    gc.join();
    if (!p.ok()) continue;  // the publish lost to gc and said so
    ++published;
    auto fresh = OpenMachine(dir_ / ("fresh" + std::to_string(round)));
    ASSERT_TRUE(fresh);
    auto r = ReadObject(*fresh, again);
    if (!r.ok() || *r != d) {
      ++lost;
      ADD_FAILURE() << "round " << round << ": the publish of " << again << " reported success; gc: "
                    << rep.status().ToString() << "; reading it now: " << r.status().ToString();
    }
  }
  EXPECT_EQ(lost, 0);
  EXPECT_GT(published, 0) << "no publish stood";
  // With no writer about, the other process's refreshes alone do not make
  // gc refuse.
  const auto d = RandomBytes(20000, 800);
  ASSERT_TRUE(w->PublishBytes(d.data(), d.size(), "last").ok());
  ASSERT_TRUE(w->RemoveName("last").ok());
  auto last = g->Gc(testing::GcNow());
  stop = true;
  refresher.join();
  ASSERT_TRUE(last.ok()) << last.status().ToString();
  EXPECT_EQ(last->objects_removed, 1u);
}

// The other way round: gc's record lands first and removes chunks a
// publish reuses; the publish loses its number, sees what gc removed, and
// stores nothing.
TEST_P(BucketSequencedTest, APublishThatLosesItsNumberToAGcSaysPublishAgain) {
  auto a = OpenMachine(dir_ / "a");
  auto g = OpenMachine(dir_ / "g");
  ASSERT_TRUE(a && g);
  const auto old = RandomBytes(40000, 12);
  ASSERT_TRUE(a->PublishBytes(old.data(), old.size(), "old").ok());
  ASSERT_TRUE(a->RemoveName("old").ok());
  auto batch = a->NewBatch();
  ASSERT_TRUE(batch->AddBytes(old.data(), old.size(), "again").ok());
  auto rep = g->Gc(testing::GcNow());
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  ASSERT_EQ(rep->objects_removed, 1u);
  const size_t records = CountBlobs("log/");
  auto c = batch->Commit();
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(c.status().IsBusy()) << c.status().ToString();
  EXPECT_NE(c.status().message().find("publish again"), std::string::npos) << c.status().ToString();
  EXPECT_EQ(CountBlobs("log/"), records);
  ASSERT_TRUE(a->PublishBytes(old.data(), old.size(), "again").ok());
  auto fresh = OpenMachine(dir_ / "fresh");
  ASSERT_TRUE(fresh);
  EXPECT_EQ(*ReadObject(*fresh, "again"), old);
}

// A writer whose cache has not followed the log (here: opened without a
// refresh) follows it before it claims a number: the records a checkpoint
// covers may be gone, their numbers free, and a change stored under one
// would sort before the checkpoint every new machine starts from.
TEST_P(BucketSequencedTest, AWriterFarBehindFollowsTheLogBeforeItClaims) {
  Options every3 = SmallChunks();
  every3.bucket_checkpoint_records = 3;
  every3.bucket_log_retention_seconds = 0;
  auto a = OpenMachine(dir_ / "a", every3);
  ASSERT_TRUE(a);
  for (int i = 0; i < 12; ++i) {
    const auto d = RandomBytes(2000, 100 + static_cast<uint64_t>(i));
    ASSERT_TRUE(a->PublishBytes(d.data(), d.size(), "n" + std::to_string(i)).ok());
  }
  const std::vector<int64_t> left = Numbers(*backend_);
  ASSERT_FALSE(left.empty());
  ASSERT_GT(left.front(), 1) << "the checkpoints deleted no record";
  Options stale = every3;
  stale.refresh_on_open = false;
  auto c = OpenMachine(dir_ / "c", stale);
  ASSERT_TRUE(c);
  const auto late = RandomBytes(2000, 99);
  ASSERT_TRUE(c->PublishBytes(late.data(), late.size(), "late").ok());
  EXPECT_EQ(Numbers(*backend_).back(), left.back() + 1);
  auto fresh = OpenMachine(dir_ / "fresh", every3);
  ASSERT_TRUE(fresh);
  EXPECT_EQ(*ReadObject(*fresh, "late"), late);
  EXPECT_EQ(*ReadObject(*fresh, "n11"), RandomBytes(2000, 111));
}

// With the default retention, records a checkpoint covers stay in the log
// for an hour: a writer that followed the log a moment before the
// checkpoints were written loses its number instead of claiming a freed
// one.
TEST_P(BucketSequencedTest, CoveredRecordsStayUntilTheCheckpointIsOldEnough) {
  Options every3 = SmallChunks();
  every3.bucket_checkpoint_records = 3;
  auto c = OpenMachine(dir_ / "c", every3);
  auto a = OpenMachine(dir_ / "a", every3);
  ASSERT_TRUE(a && c);
  for (int i = 0; i < 12; ++i) {
    const auto d = RandomBytes(2000, 200 + static_cast<uint64_t>(i));
    ASSERT_TRUE(a->PublishBytes(d.data(), d.size(), "n" + std::to_string(i)).ok());
  }
  EXPECT_GE(CountBlobs("checkpoints/"), 3u);
  const std::vector<int64_t> left = Numbers(*backend_);
  ASSERT_FALSE(left.empty());
  EXPECT_EQ(left.front(), 1) << "a record was deleted before its checkpoint was an hour old";
  const auto late = RandomBytes(2000, 98);
  ASSERT_TRUE(c->PublishBytes(late.data(), late.size(), "late").ok());
  auto fresh = OpenMachine(dir_ / "fresh", every3);
  ASSERT_TRUE(fresh);
  EXPECT_EQ(*ReadObject(*fresh, "late"), late);
}

// Many writers on two machines, all at once: every change is stored once,
// under consecutive numbers, and every machine ends with the same state.
TEST_P(BucketSequencedTest, ConcurrentWritersFillConsecutiveNumbers) {
  auto a = OpenMachine(dir_ / "a");
  auto b = OpenMachine(dir_ / "b");
  ASSERT_TRUE(a && b);
  constexpr int kEach = 12;
  auto write = [&](Store* s, int base) {
    for (int i = 0; i < kEach; ++i) {
      const auto d = RandomBytes(1500, static_cast<uint64_t>(base + i));
      auto r = s->PublishBytes(d.data(), d.size(), "w" + std::to_string(base + i));
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_TRUE(s->Tag("w" + std::to_string(base + i), "shared").ok());
    }
  };
  std::thread ta(write, a.get(), 0), tb(write, b.get(), 1000);
  ta.join();
  tb.join();
  std::vector<int64_t> want;
  for (int64_t n = 1; n <= 4 * kEach; ++n) want.push_back(n);
  EXPECT_EQ(Numbers(*backend_), want);
  ASSERT_TRUE(a->Refresh().ok());
  ASSERT_TRUE(b->Refresh().ok());
  auto fresh = OpenMachine(dir_ / "fresh");
  ASSERT_TRUE(fresh);
  auto history = [](Store& s) {
    auto h = s.History("shared");
    EXPECT_TRUE(h.ok());
    std::string out;
    if (h.ok())
      for (const auto& v : *h) out += std::to_string(v.version) + " " + v.id + "\n";
    return out;
  };
  const std::string want_history = history(*fresh);
  EXPECT_EQ(std::count(want_history.begin(), want_history.end(), '\n'), 2 * kEach);
  EXPECT_EQ(history(*a), want_history);
  EXPECT_EQ(history(*b), want_history);
}

// A checkpoint is written from a replay of the bucket, and that may hold
// a record another machine stored after this cache last followed the log:
// the cache must not take the checkpoint's mark as applied then, or it
// would never apply that record.
TEST_P(BucketSequencedTest, ACheckpointOfMoreThanTheCacheHoldsDoesNotHideTheRest) {
  Options every2 = SmallChunks();
  every2.bucket_checkpoint_records = 2;
  auto a = OpenMachine(dir_ / "a", every2);
  auto b = OpenMachine(dir_ / "b");
  ASSERT_TRUE(a && b);
  const auto d = RandomBytes(3000, 1), e = RandomBytes(3000, 2), f = RandomBytes(3000, 3);
  ASSERT_TRUE(a->PublishBytes(d.data(), d.size(), "d").ok());
  // a's second commit makes a checkpoint due; b publishes just as a lists
  // the checkpoints to replay the bucket.
  faulty_->OnNextList("checkpoints/", [&] { ASSERT_TRUE(b->PublishBytes(f.data(), f.size(), "fromb").ok()); });
  ASSERT_TRUE(a->PublishBytes(e.data(), e.size(), "e").ok());
  ASSERT_GE(CountBlobs("checkpoints/"), 1u);
  ASSERT_TRUE(a->Refresh().ok());
  auto got = ReadObject(*a, "fromb");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, f);
  // And a's next change is stored after b's, not over it.
  const auto g = RandomBytes(3000, 4);
  ASSERT_TRUE(a->PublishBytes(g.data(), g.size(), "g").ok());
  auto fresh = OpenMachine(dir_ / "fresh");
  ASSERT_TRUE(fresh);
  for (const char* name : {"d", "e", "fromb", "g"}) EXPECT_TRUE(ReadObject(*fresh, name).ok()) << name;
}

// A store handle that sat idle while two checkpoints went by starts its
// cache again from the newest one when its claim fails, and its change
// goes through.
TEST_P(BucketSequencedTest, AWriterTwoCheckpointsBehindStartsAgainAndWrites) {
  Options every2 = SmallChunks();
  every2.bucket_checkpoint_records = 2;
  auto a = OpenMachine(dir_ / "a", every2);
  auto c = OpenMachine(dir_ / "c", every2);
  ASSERT_TRUE(a && c);
  const auto first = RandomBytes(2000, 77);
  ASSERT_TRUE(a->PublishBytes(first.data(), first.size(), "first").ok());
  ASSERT_TRUE(c->Refresh().ok());
  for (int i = 0; i < 8; ++i) {
    const auto d = RandomBytes(2000, 100 + static_cast<uint64_t>(i));
    ASSERT_TRUE(a->PublishBytes(d.data(), d.size(), "n" + std::to_string(i)).ok());
  }
  ASSERT_GE(CountBlobs("checkpoints/"), 2u);
  const auto late = RandomBytes(2000, 900);
  auto r = c->PublishBytes(late.data(), late.size(), "late");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto fresh = OpenMachine(dir_ / "fresh");
  ASSERT_TRUE(fresh);
  EXPECT_EQ(*ReadObject(*fresh, "late"), late);
  EXPECT_EQ(*ReadObject(*c, "n7"), RandomBytes(2000, 107));
}

// A removal checked on one state and committed on a later one is checked
// again: here a tree that names the object arrives in between, and the
// removal is refused as it would have been had the tree come first.
TEST_P(BucketSequencedTest, ARemovalThatLosesItsNumberIsCheckedAgain) {
  auto a = OpenMachine(dir_ / "a");
  auto b = OpenMachine(dir_ / "b");
  ASSERT_TRUE(a && b);
  const auto d = RandomBytes(3000, 5);
  auto p = a->PublishBytes(d.data(), d.size(), "x");
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(a->RemoveName("x").ok());
  ASSERT_TRUE(b->Refresh().ok());
  const std::string src = dir_ / "src";
  std::filesystem::create_directories(src);
  testing::MakeFile(src + "/f", d, 0640, 1600000000123000000);
  faulty_->HoldNextLogPut();
  Status rm;
  std::thread t([&] { rm = b->RemoveObject(p->id); });
  faulty_->WaitUntilHeld();
  auto tree = a->PublishTree(src, "tree");
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  faulty_->ReleaseHeldPut();
  t.join();
  EXPECT_TRUE(rm.IsInvalidArgument()) << rm.ToString();
  EXPECT_NE(rm.message().find("part of tree"), std::string::npos) << rm.ToString();
  ASSERT_TRUE(a->Gc(testing::GcNow()).ok());
  auto fresh = OpenMachine(dir_ / "fresh");
  ASSERT_TRUE(fresh);
  auto restored = fresh->Restore("tree", dir_ / "out");
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  auto v = fresh->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt());
}

// A repair's change removes nothing, so one that loses its number to
// another machine's publish takes the next one instead of stopping.
TEST_P(BucketSequencedTest, ARepairThatLosesItsNumberTakesTheNext) {
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  const auto data = RandomBytes(40000, 12);
  ASSERT_TRUE(a->PublishBytes(data.data(), data.size(), "data").ok());
  auto replica = Store::Open(dir_ / "replica", SmallChunks());
  ASSERT_TRUE(replica.ok());
  ASSERT_TRUE((*replica)->PublishBytes(data.data(), data.size(), "data").ok());
  auto packs = backend_->List("packs/");
  ASSERT_TRUE(packs.ok() && packs->size() == 1u);
  FlipBit((*packs)[0].key, internal::kPackHeaderSize + internal::kRecordHeaderSize + 50);
  auto r = OpenMachine(dir_ / "r");
  ASSERT_TRUE(r);
  faulty_->HoldNextLogPut();
  Result<RepairReport> repaired = Status::IOError("not run");
  std::thread repair([&] { repaired = r->RepairChunks(**replica); });
  faulty_->WaitUntilHeld();
  const auto other = RandomBytes(3000, 13);
  ASSERT_TRUE(a->PublishBytes(other.data(), other.size(), "other").ok());
  faulty_->ReleaseHeldPut();
  repair.join();
  ASSERT_TRUE(repaired.ok()) << repaired.status().ToString();
  EXPECT_EQ(repaired->repaired.size(), 1u);
  auto fresh = OpenMachine(dir_ / "fresh");
  ASSERT_TRUE(fresh);
  EXPECT_EQ(*ReadObject(*fresh, "data"), data);
  EXPECT_EQ(*ReadObject(*fresh, "other"), other);
  auto v = fresh->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt()) << (v->problems.empty() ? "" : v->problems[0].message);
}

CHUNKSTORE_ON_SEQUENCED_BUCKETS(BucketSequencedTest);

}  // namespace
}  // namespace chunkstore
