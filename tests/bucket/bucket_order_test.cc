// SPDX-License-Identifier: Apache-2.0
// The order of a bucket store's log on every machine: records written at
// the same moment by machines that do not coordinate are applied in key
// order by every cache, whatever order each cache listed them in, so every
// machine ends with the same versions of every name. A late record that
// commutes with what was applied after it is simply applied; one that does
// not makes the cache start again from the newest checkpoint.
//
// Built into unit_tests and (with CHUNKSTORE_TEST_S3) s3_tests, like
// bucket_test.cc.
#include <map>
#include <thread>

#include "bucket_fixture.h"

namespace chunkstore {
namespace {

using testing::Backend;
using testing::BucketTest;
using testing::RandomBytes;

using BucketOrderTest = BucketTest;
// Records whose keys are times: where a writer's PUT lands late, or its
// clock runs behind, its record sorts before ones other machines applied
// already. A sequenced log has no such records (bucket_sequenced_test.cc).
using BucketLockedOrderTest = BucketTest;

// name@version -> object, one line each (newest first), from a machine's
// cache.
std::string HistoryOf(Store& s, const std::string& name) {
  auto h = s.History(name);
  EXPECT_TRUE(h.ok()) << h.status().ToString();
  std::string out;
  if (!h.ok()) return out;
  for (const auto& e : *h) out += e.name + "@" + std::to_string(e.version) + " " + e.id + "\n";
  return out;
}

std::string Published(Store& s, uint64_t seed) {
  const auto d = RandomBytes(2000, seed);
  auto p = s.PublishBytes(d.data(), d.size());
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? p->id : std::string();
}

// b's tag of "x" is given its key first, but its upload ends only after a
// has tagged "x" too (and applied its own record): in key order b's tag is
// version 1 and a's version 2, on a as on b and on a new machine.
TEST_P(BucketLockedOrderTest, ATagListedLateIsOrderedByItsKeyOnEveryMachine) {
  auto a = OpenMachine(dir_ / "a");
  auto b = OpenMachine(dir_ / "b");
  ASSERT_TRUE(a && b);
  const std::string oa = Published(*a, 1), ob = Published(*a, 2);
  ASSERT_TRUE(b->Refresh().ok());
  faulty_->HoldNextLogPut();
  std::thread tb([&] {
    auto t = b->Tag(ob, "x");
    EXPECT_TRUE(t.ok()) << t.status().ToString();
  });
  faulty_->WaitUntilHeld();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // a's key sorts after b's
  auto ta = a->Tag(oa, "x");
  faulty_->ReleaseHeldPut();
  tb.join();
  ASSERT_TRUE(ta.ok()) << ta.status().ToString();
  ASSERT_TRUE(a->Refresh().ok());
  ASSERT_TRUE(b->Refresh().ok());
  auto fresh = OpenMachine(dir_ / "fresh");
  ASSERT_TRUE(fresh);
  const std::string want = "x@2 " + oa + "\nx@1 " + ob + "\n";
  EXPECT_EQ(HistoryOf(*fresh, "x"), want);
  EXPECT_EQ(HistoryOf(*a, "x"), want);
  EXPECT_EQ(HistoryOf(*b, "x"), want);
}

// A late record that commutes with everything applied after it (another
// name) is applied where it is: no rebuild, which would read every record.
TEST_P(BucketOrderTest, ALateRecordOfAnotherNameIsAppliedWithoutARebuild) {
  auto a = OpenMachine(dir_ / "a");
  auto b = OpenMachine(dir_ / "b");
  ASSERT_TRUE(a && b);
  const std::string oa = Published(*a, 1), ob = Published(*a, 2);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(a->Tag(oa, "filler/" + std::to_string(i)).ok());
  ASSERT_TRUE(b->Refresh().ok());
  faulty_->HoldNextLogPut();
  std::thread tb([&] { EXPECT_TRUE(b->Tag(ob, "from-b").ok()); });
  faulty_->WaitUntilHeld();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(a->Tag(oa, "from-a").ok());
  faulty_->ReleaseHeldPut();
  tb.join();
  faulty_->ForgetGets();
  ASSERT_TRUE(a->Refresh().ok());
  EXPECT_LE(faulty_->gets("log/"), 2) << "a late record that commutes was met with a rebuild";
  EXPECT_EQ(*a->Resolve("from-b"), ob);
  EXPECT_EQ(*a->Resolve("from-a"), oa);
}

// A late removal never commutes: the cache starts again, and ends with the
// state of the log in key order (the name removed, then tagged again).
TEST_P(BucketLockedOrderTest, ALateRemovalIsOrderedByItsKey) {
  auto a = OpenMachine(dir_ / "a");
  auto b = OpenMachine(dir_ / "b");
  ASSERT_TRUE(a && b);
  const std::string oa = Published(*a, 1);
  ASSERT_TRUE(a->Tag(oa, "x").ok());
  ASSERT_TRUE(b->Refresh().ok());
  faulty_->HoldNextLogPut();
  std::thread tb([&] { EXPECT_TRUE(b->RemoveName("x").ok()); });
  faulty_->WaitUntilHeld();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(a->Tag(oa, "x").ok());  // x@2 on a, for now
  faulty_->ReleaseHeldPut();
  tb.join();
  ASSERT_TRUE(a->Refresh().ok());
  auto fresh = OpenMachine(dir_ / "fresh");
  ASSERT_TRUE(fresh);
  const std::string want = "x@1 " + oa + "\n";  // removed, then tagged anew
  EXPECT_EQ(HistoryOf(*fresh, "x"), want);
  EXPECT_EQ(HistoryOf(*a, "x"), want);
}

// An object removed (b, listed late) and then published again without a
// name (a): in key order it exists, on a as on a new machine; and the
// other way round, it is gone. Neither leaves a cache gc would refuse.
TEST_P(BucketLockedOrderTest, ALateRemovalOfAnObjectAndItsRepublishEndInKeyOrder) {
  for (const bool remove_first : {true, false}) {
    SCOPED_TRACE(remove_first ? "rm --object first" : "publish first");
    const std::string run = remove_first ? "1" : "2";
    auto a = OpenMachine(dir_ / ("a" + run));
    auto b = OpenMachine(dir_ / ("b" + run));
    ASSERT_TRUE(a && b);
    const auto d = RandomBytes(2000, remove_first ? 31 : 32);
    auto p = a->PublishBytes(d.data(), d.size());
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE(b->Refresh().ok());
    faulty_->HoldNextLogPut();
    std::thread tb([&] {
      if (remove_first)
        EXPECT_TRUE(b->RemoveObject(p->id).ok());
      else
        EXPECT_TRUE(b->PublishBytes(d.data(), d.size()).ok());
    });
    faulty_->WaitUntilHeld();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (remove_first)
      ASSERT_TRUE(a->PublishBytes(d.data(), d.size()).ok());
    else
      ASSERT_TRUE(a->RemoveObject(p->id).ok());
    faulty_->ReleaseHeldPut();
    tb.join();
    ASSERT_TRUE(a->Refresh().ok());
    auto fresh = OpenMachine(dir_ / ("fresh" + run));
    ASSERT_TRUE(fresh);
    EXPECT_EQ(*fresh->Exists(p->id), remove_first);
    EXPECT_EQ(*a->Exists(p->id), remove_first);
    auto g = a->Gc();
    EXPECT_TRUE(g.ok()) << g.status().ToString();
  }
}

// One payload published by two machines under two names, a second apart:
// the object's row (its time) is the earlier key's everywhere.
TEST_P(BucketOrderTest, OneObjectPublishedTwiceKeepsTheEarlierRecordsRowEverywhere) {
  auto a = OpenMachine(dir_ / "a");
  auto b = OpenMachine(dir_ / "b");
  ASSERT_TRUE(a && b);
  const auto d = RandomBytes(2000, 3);
  faulty_->HoldNextLogPut();
  std::thread tb([&] { EXPECT_TRUE(b->PublishBytes(d.data(), d.size(), "from-b").ok()); });
  faulty_->WaitUntilHeld();
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // times are in seconds
  auto r = a->PublishBytes(d.data(), d.size(), "from-a");
  ASSERT_TRUE(r.ok());
  faulty_->ReleaseHeldPut();
  tb.join();
  ASSERT_TRUE(a->Refresh().ok());
  auto fresh = OpenMachine(dir_ / "fresh");
  ASSERT_TRUE(fresh);
  EXPECT_EQ(a->Stat(r->id)->created, fresh->Stat(r->id)->created);
  auto g = a->Gc();
  EXPECT_TRUE(g.ok()) << g.status().ToString();
}

// Two processes share one cache directory: one's tag gets its key first
// but its upload ends only after another machine's later tag, which the
// second process has applied to the shared cache meanwhile. The first
// must not apply its own record after the later one.
TEST_P(BucketLockedOrderTest, AWriterSharingItsCacheDoesNotApplyItsRecordAfterALaterOne) {
  auto a1 = OpenMachine(dir_ / "a");
  auto a2 = OpenMachine(dir_ / "a");
  auto b = OpenMachine(dir_ / "b");
  ASSERT_TRUE(a1 && a2 && b);
  const std::string o1 = Published(*a1, 1), o2 = Published(*a1, 2);
  ASSERT_TRUE(b->Refresh().ok());
  ASSERT_TRUE(a2->Refresh().ok());
  faulty_->HoldNextLogPut();
  std::thread t1([&] {
    auto t = a1->Tag(o1, "x");
    EXPECT_TRUE(t.ok()) << t.status().ToString();
  });
  faulty_->WaitUntilHeld();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(b->Tag(o2, "x").ok());
  ASSERT_TRUE(a2->Refresh().ok());
  faulty_->ReleaseHeldPut();
  t1.join();
  ASSERT_TRUE(a1->Refresh().ok());
  ASSERT_TRUE(a2->Refresh().ok());
  auto fresh = OpenMachine(dir_ / "fresh");
  ASSERT_TRUE(fresh);
  const std::string want = "x@2 " + o2 + "\nx@1 " + o1 + "\n";
  EXPECT_EQ(HistoryOf(*fresh, "x"), want);
  EXPECT_EQ(HistoryOf(*a2, "x"), want);
}

// Two machines tag one name 100 times at once; afterwards every cache
// holds the same history of it, as a new machine does.
TEST_P(BucketOrderTest, ConcurrentTagsOfOneNameEndTheSameOnEveryMachine) {
  auto a = OpenMachine(dir_ / "a");
  auto b = OpenMachine(dir_ / "b");
  ASSERT_TRUE(a && b);
  const std::string oa = Published(*a, 1), ob = Published(*a, 2);
  ASSERT_TRUE(b->Refresh().ok());
  constexpr int kTagsEach = 50;
  auto tagger = [&](Store* s, const std::string& object) {
    for (int i = 0; i < kTagsEach; ++i) {
      auto t = s->Tag(object, "x");
      EXPECT_TRUE(t.ok()) << t.status().ToString();
    }
  };
  std::thread ta(tagger, a.get(), oa), tb(tagger, b.get(), ob);
  ta.join();
  tb.join();
  ASSERT_TRUE(a->Refresh().ok());
  ASSERT_TRUE(b->Refresh().ok());
  auto fresh = OpenMachine(dir_ / "fresh");
  ASSERT_TRUE(fresh);
  const std::string want = HistoryOf(*fresh, "x");
  EXPECT_EQ(std::count(want.begin(), want.end(), '\n'), 2 * kTagsEach);
  EXPECT_EQ(HistoryOf(*a, "x"), want);
  EXPECT_EQ(HistoryOf(*b, "x"), want);
}

// What a small publish costs in requests, from opening the store (as a new
// process does, its cache warm) to the end: the config, a refresh of the
// log, the pack, the shared lock (PUT, LIST of locks, DELETE), the refresh
// under it, and the record. Every further request is a round trip added to
// every publish on every machine.
TEST_P(BucketLockedOrderTest, ASmallPublishMakesEightRequests) {
  {
    auto a = OpenMachine(dir_ / "a");
    ASSERT_TRUE(a);
    Published(*a, 9);
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
  std::map<std::string, int> by_kind;
  for (const std::string& r : made) {
    all += r + "\n";
    // "PUT log/0000..." -> "PUT log/"
    const size_t slash = r.find('/');
    ++by_kind[slash == std::string::npos ? r : r.substr(0, slash + 1)];
  }
  EXPECT_LE(made.size(), 8u) << all;
  EXPECT_EQ(by_kind["PUT log/"], 1) << all;
  EXPECT_EQ(by_kind["PUT packs/"], 1) << all;
  EXPECT_EQ(by_kind["LIST log/"], 2) << all;
  EXPECT_EQ(by_kind["GET config"], 1) << all;
  EXPECT_EQ(by_kind["GET log/"], 0) << all;
}

CHUNKSTORE_ON_EVERY_BUCKET(BucketOrderTest);
CHUNKSTORE_ON_LOCKED_BUCKETS(BucketLockedOrderTest);

}  // namespace
}  // namespace chunkstore
