// SPDX-License-Identifier: Apache-2.0
// Checkpoints of bucket stores: a new machine starts from the newest one
// and reads only the records after it; automatic checkpoints keep the log
// short; a cache that fell two checkpoints behind starts again; a
// checkpoint cut short before its mark, or damaged, is passed over (and
// verify says so); a verify whose listed records newer checkpoints delete
// finds no damage; signed records cannot be replayed under another key;
// a key in the log that the store did not write is refused by name.
//
// Built into unit_tests and (with CHUNKSTORE_TEST_S3) s3_tests, like
// bucket_test.cc.
#include <algorithm>
#include <set>

#include "bucket_fixture.h"
#include "format/change_set.h"

namespace chunkstore {
namespace {

using testing::Backend;
using testing::BucketTest;
using testing::RandomBytes;
using testing::ReadObject;
using testing::SmallChunks;

class BucketCheckpointTest : public BucketTest {
 protected:
  // retention: how old a checkpoint must be before the records it covers
  // go (a sequenced log's; 0: at once, as a log with locks does).
  Options WithCheckpointsEvery(uint32_t records, uint32_t retention = 3600) {
    Options o = SmallChunks();
    o.bucket_checkpoint_records = records;
    o.bucket_log_retention_seconds = retention;
    return o;
  }
  // Publishes n objects named "n<first>"... one per commit.
  void PublishNamed(Store& s, int first, int n) {
    for (int i = first; i < first + n; ++i) {
      const auto d = RandomBytes(3000 + static_cast<size_t>(i), 500 + static_cast<uint64_t>(i));
      ASSERT_TRUE(s.PublishBytes(d.data(), d.size(), "n" + std::to_string(i)).ok());
    }
  }
  void ExpectNamed(Store& s, int n) {
    auto listed = s.List();
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    EXPECT_EQ(listed->size(), static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      auto got = ReadObject(s, "n" + std::to_string(i));
      ASSERT_TRUE(got.ok()) << "n" << i << ": " << got.status().ToString();
      EXPECT_EQ(*got, RandomBytes(3000 + static_cast<size_t>(i), 500 + static_cast<uint64_t>(i)));
    }
  }
  std::vector<std::string> Keys(const std::string& prefix) {
    auto l = backend_->List(prefix);
    EXPECT_TRUE(l.ok());
    std::vector<std::string> keys;
    if (l.ok())
      for (const auto& b : *l) keys.push_back(b.key);
    return keys;
  }
  // A gc with something to do, so that it writes a checkpoint.
  void GcAfterRemoving(Store& s, const std::string& name) {
    const auto d = RandomBytes(5000, std::hash<std::string>{}(name));
    ASSERT_TRUE(s.PublishBytes(d.data(), d.size(), name).ok());
    ASSERT_TRUE(s.RemoveName(name).ok());
    auto gc = s.Gc(testing::GcNow());
    ASSERT_TRUE(gc.ok()) << gc.status().ToString();
    ASSERT_GT(gc->objects_removed, 0u);
  }
  // "n0" to "n4", with a checkpoint after the third and another after the
  // fifth.
  void TwoCheckpoints(Store& s) {
    PublishNamed(s, 0, 3);
    GcAfterRemoving(s, "gone1");
    PublishNamed(s, 3, 2);
    GcAfterRemoving(s, "gone2");
  }
};

TEST_P(BucketCheckpointTest, ANewMachineReadsTheNewestCheckpointAndOnlyTheRecordsAfterIt) {
  auto a = OpenMachine(dir_ / "a", WithCheckpointsEvery(0));
  ASSERT_TRUE(a);
  PublishNamed(*a, 0, 6);
  GcAfterRemoving(*a, "gone");
  ASSERT_EQ(Keys("checkpoints/").size(), 1u);
  PublishNamed(*a, 6, 2);
  faulty_->ForgetGets();
  auto b = OpenMachine(dir_ / "b", WithCheckpointsEvery(0));
  ASSERT_TRUE(b);
  EXPECT_EQ(faulty_->gets("checkpoints/"), 1);
  EXPECT_EQ(faulty_->gets("log/"), 2) << "only the two records after the checkpoint";
  ExpectNamed(*b, 8);
  auto v = b->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->problems.empty()) << v->problems[0].kind << ": " << v->problems[0].message;
  // Both machines go on writing; each sees the other's changes.
  PublishNamed(*b, 8, 1);
  ASSERT_TRUE(a->Refresh().ok());
  ExpectNamed(*a, 9);
}

TEST_P(BucketCheckpointTest, AutomaticCheckpointsKeepTheLogShort) {
  auto a = OpenMachine(dir_ / "a", WithCheckpointsEvery(4, 0));
  ASSERT_TRUE(a);
  PublishNamed(*a, 0, 25);
  const auto checkpoints = Keys("checkpoints/");
  EXPECT_GE(checkpoints.size(), 1u);
  EXPECT_LE(checkpoints.size(), 2u) << "older checkpoints are dropped";
  // What is left: the records since the second-newest checkpoint (at most
  // about two intervals of them) and their marks.
  EXPECT_LE(Keys("log/").size(), 12u);
  auto b = OpenMachine(dir_ / "b", WithCheckpointsEvery(4, 0));
  ASSERT_TRUE(b);
  ExpectNamed(*b, 25);
  Options rebuild = WithCheckpointsEvery(4, 0);
  rebuild.rebuild_index = true;
  auto c = OpenMachine(dir_ / "a-again", rebuild);
  ASSERT_TRUE(c);
  ExpectNamed(*c, 25);
}

TEST_P(BucketCheckpointTest, ACacheTwoCheckpointsBehindStartsAgainFromTheNewest) {
  auto a = OpenMachine(dir_ / "a", WithCheckpointsEvery(3, 0));
  auto b = OpenMachine(dir_ / "b", WithCheckpointsEvery(3, 0));
  ASSERT_TRUE(a && b);
  PublishNamed(*a, 0, 2);
  ASSERT_TRUE(b->Refresh().ok());
  ExpectNamed(*b, 2);
  // b sleeps while a writes enough for several checkpoints, and the
  // records b has not read are deleted under it.
  PublishNamed(*a, 2, 14);
  ASSERT_GE(Keys("checkpoints/").size(), 2u);
  ASSERT_TRUE(b->Refresh().ok());
  ExpectNamed(*b, 16);
  PublishNamed(*b, 16, 1);
  ASSERT_TRUE(a->Refresh().ok());
  ExpectNamed(*a, 17);
}

// A verify's replay lists the records after the newest checkpoint, then
// reads them. Another machine that writes two more checkpoints in between
// deletes those records (they are covered twice over): the replay finds
// them gone, which is no damage, and the next replay starts from the
// newer checkpoint.
TEST_P(BucketCheckpointTest, AVerifyWhoseRecordsANewerCheckpointDeletesFindsNoDamage) {
  auto a = OpenMachine(dir_ / "a", WithCheckpointsEvery(2, 0));
  ASSERT_TRUE(a);
  PublishNamed(*a, 0, 3);
  const std::vector<std::string> listed = Keys("log/");
  auto b = OpenMachine(dir_ / "b", WithCheckpointsEvery(0, 0));
  ASSERT_TRUE(b);
  bool fired = false;
  faulty_->OnNextGet("log/", [&] {
    fired = true;
    PublishNamed(*a, 3, 4);
  });
  auto v = b->Verify();
  ASSERT_TRUE(fired) << "the verify read no log record";
  size_t deleted = 0;
  const std::vector<std::string> now = Keys("log/");
  for (const std::string& k : listed) deleted += std::find(now.begin(), now.end(), k) == now.end();
  ASSERT_GT(deleted, 0u) << "the newer checkpoints deleted none of the records the verify listed";
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(v->problems.empty()) << v->problems[0].kind << ": " << v->problems[0].message;
  ASSERT_TRUE(b->Refresh().ok());
  ExpectNamed(*b, 7);
  // Damage, unlike a race, is found by every replay: a record made
  // unreadable is still reported.
  // (n7 and n8, both damaged: a checkpoint follows n7, so a replay
  // starts after it and reads n8's.)
  const std::vector<std::string> before = Keys("log/");
  PublishNamed(*a, 7, 2);
  ASSERT_TRUE(b->Refresh().ok());  // b's cache holds them; the replay reads them again
  size_t flipped = 0;
  for (const std::string& k : Keys("log/"))
    if (std::find(before.begin(), before.end(), k) == before.end() && k.find("-checkpoint") == std::string::npos) {
      FlipBit(k);
      ++flipped;
    }
  ASSERT_EQ(flipped, 2u);
  auto damaged = b->Verify();
  ASSERT_TRUE(damaged.ok()) << damaged.status().ToString();
  ASSERT_FALSE(damaged->problems.empty());
  EXPECT_EQ(damaged->problems[0].kind, "log-damaged") << damaged->problems[0].message;
}

TEST_P(BucketCheckpointTest, ACheckpointCutShortBeforeItsMarkIsPassedOver) {
  auto a = OpenMachine(dir_ / "a", WithCheckpointsEvery(0));
  auto c = OpenMachine(dir_ / "c", WithCheckpointsEvery(0));
  ASSERT_TRUE(a && c);
  PublishNamed(*a, 0, 3);
  GcAfterRemoving(*a, "gone1");
  PublishNamed(*a, 3, 2);
  GcAfterRemoving(*a, "gone2");
  auto checkpoints = Keys("checkpoints/");
  ASSERT_EQ(checkpoints.size(), 2u);
  // The newest one's mark never made it: a crash between the two PUTs.
  const std::string mark = "log/" + checkpoints.back().substr(12) + "-checkpoint";
  ASSERT_TRUE(backend_->Delete(mark).ok());
  // Another machine, which never saw that checkpoint, goes on writing in
  // the epoch before it: its record sorts before the checkpoint's key.
  PublishNamed(*c, 5, 1);
  // The machine that cut it goes on in the new epoch: records after the
  // checkpoint's key, none of them its mark.
  PublishNamed(*a, 6, 1);
  auto b = OpenMachine(dir_ / "b", WithCheckpointsEvery(0));
  ASSERT_TRUE(b);
  ExpectNamed(*b, 7);
  auto v = b->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt()) << "a checkpoint cut short loses nothing";
}

// A checkpoint cut short is never the one the records before it are
// deleted for: a cache that applied the marked checkpoint before it would
// see one new mark after them, not two, and would take the deleted records
// as never written.
TEST_P(BucketCheckpointTest, ACheckpointCutShortIsNotWhatOlderRecordsAreDeletedFor) {
  auto a = OpenMachine(dir_ / "a", WithCheckpointsEvery(0, 0));
  auto m = OpenMachine(dir_ / "m", WithCheckpointsEvery(0, 0));
  ASSERT_TRUE(a && m);
  PublishNamed(*a, 0, 3);
  GcAfterRemoving(*a, "gone1");  // checkpoint 1
  PublishNamed(*a, 3, 1);
  ASSERT_TRUE(m->Refresh().ok());  // m: checkpoint 1's mark and n3
  ASSERT_TRUE(m->Resolve("n3").ok());
  PublishNamed(*a, 4, 1);
  GcAfterRemoving(*a, "gone2");  // checkpoint 2 ...
  auto checkpoints = Keys("checkpoints/");
  ASSERT_FALSE(checkpoints.empty());
  // ... whose mark never landed.
  ASSERT_TRUE(backend_->Delete("log/" + checkpoints.back().substr(12) + "-checkpoint").ok());
  PublishNamed(*a, 5, 2);
  GcAfterRemoving(*a, "gone3");  // checkpoint 3: drops what checkpoint 1 covers, not what 2 does
  ASSERT_TRUE(m->Refresh().ok());
  ExpectNamed(*m, 7);
  auto fresh = OpenMachine(dir_ / "fresh", WithCheckpointsEvery(0, 0));
  ASSERT_TRUE(fresh);
  ExpectNamed(*fresh, 7);
}

TEST_P(BucketCheckpointTest, ADamagedCheckpointFallsBackToTheOneBeforeAndVerifySaysSo) {
  auto a = OpenMachine(dir_ / "a", WithCheckpointsEvery(0));
  ASSERT_TRUE(a);
  TwoCheckpoints(*a);
  PublishNamed(*a, 5, 1);
  auto checkpoints = Keys("checkpoints/");
  ASSERT_EQ(checkpoints.size(), 2u);
  auto bytes = backend_->Get(checkpoints.back());
  ASSERT_TRUE(bytes.ok());
  (*bytes)[bytes->size() / 2] ^= 0x10;
  ASSERT_TRUE(backend_->Put(checkpoints.back(), bytes->data(), bytes->size()).ok());
  auto b = OpenMachine(dir_ / "b", WithCheckpointsEvery(0));
  ASSERT_TRUE(b);
  ExpectNamed(*b, 6);
  auto v = b->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->corrupt());
  bool named = false;
  for (const auto& p : v->problems) named |= p.message.find(checkpoints.back()) != std::string::npos;
  EXPECT_TRUE(named) << "verify names the damaged checkpoint";
  // Both damaged: the log they cover is gone, and that is an error, not a
  // store with fewer objects.
  auto older = backend_->Get(checkpoints.front());
  ASSERT_TRUE(older.ok());
  (*older)[older->size() / 2] ^= 0x10;
  ASSERT_TRUE(backend_->Put(checkpoints.front(), older->data(), older->size()).ok());
  Options o = WithCheckpointsEvery(0);
  o.blob_store = faulty_.get();
  auto c = Store::Open(dir_ / "c", o);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(c.status().IsCorruption()) << c.status().ToString();
}

TEST_P(BucketCheckpointTest, ASignedRecordCopiedToAnotherKeyIsRefused) {
  Options o = WithCheckpointsEvery(0);
  o.secret = "correct horse battery staple";
  auto a = OpenMachine(dir_ / "a", o);
  ASSERT_TRUE(a);
  PublishNamed(*a, 0, 1);
  ASSERT_TRUE(a->RemoveName("n0").ok());
  // Replaying the signed removal after the name is published again would
  // remove it again: the signature binds each record to its key.
  std::string removal;
  for (const auto& k : Keys("log/")) {
    auto c = internal::DecodeChangeSet(*backend_->Get(k));
    if (c.ok() && c->kind == internal::ChangeSet::kRemoveName) removal = k;
  }
  ASSERT_FALSE(removal.empty());
  PublishNamed(*a, 0, 1);
  auto bytes = backend_->Get(removal);
  ASSERT_TRUE(bytes.ok());
  const std::string copy = "log/0000000009-9999999999999-00000000000000ff";
  ASSERT_TRUE(backend_->Put(copy, bytes->data(), bytes->size()).ok());
  Options ob = o;
  ob.blob_store = faulty_.get();
  auto b = Store::Open(dir_ / "b", ob);
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(b.status().IsCorruption()) << b.status().ToString();
  EXPECT_NE(b.status().message().find(copy), std::string::npos) << b.status().message();
  // Checkpoints are signed too: the store's gc writes one its holders read.
  ASSERT_TRUE(backend_->Delete(copy).ok());
  GcAfterRemoving(*a, "gone");
  auto c = Store::Open(dir_ / "c", ob);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ExpectNamed(**c, 1);
}

TEST_P(BucketCheckpointTest, AKeyInTheLogTheStoreDidNotWriteIsRefusedByName) {
  auto a = OpenMachine(dir_ / "a", WithCheckpointsEvery(0));
  ASSERT_TRUE(a);
  PublishNamed(*a, 0, 1);
  for (const std::string key : {"log/notes.txt", "log/0000000000-0000000000000-Z0000000000000ff",
                                "checkpoints/latest"}) {
    ASSERT_TRUE(backend_->Put(key, "x", 1).ok());
    Options o = WithCheckpointsEvery(0);
    o.blob_store = faulty_.get();
    auto b = Store::Open(dir_ / ("b" + std::to_string(key.size())), o);
    ASSERT_FALSE(b.ok()) << key;
    EXPECT_TRUE(b.status().IsCorruption()) << key << ": " << b.status().ToString();
    EXPECT_NE(b.status().message().find(key), std::string::npos) << b.status().message();
    ASSERT_TRUE(backend_->Delete(key).ok());
  }
}

// A checkpoint that cannot be read (the service failing) is an error of
// the check, not damage; a damaged one the replay goes around (for the
// checkpoint before it) is damage verify reports, but the log is whole,
// and repair is not stopped by it.
TEST_P(BucketCheckpointTest, AnUnreadableCheckpointIsAnErrorAndADamagedOneLeavesRepairFree) {
  auto a = OpenMachine(dir_ / "a", WithCheckpointsEvery(0));
  ASSERT_TRUE(a);
  TwoCheckpoints(*a);
  std::vector<std::string> checkpoints = Keys("checkpoints/");
  ASSERT_GE(checkpoints.size(), 2u);
  std::sort(checkpoints.begin(), checkpoints.end());

  faulty_->FailGetsUnder("checkpoints/");
  auto v = a->Verify();
  faulty_->FailGetsUnder("");
  ASSERT_FALSE(v.ok()) << "an unreadable checkpoint was reported as "
                       << (v->problems.empty() ? "nothing" : v->problems[0].kind);
  EXPECT_TRUE(v.status().IsIOError()) << v.status().ToString();

  FlipBit(checkpoints.back());
  v = a->Verify();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(v->corrupt());
  bool reported = false;
  for (const auto& p : v->problems) {
    EXPECT_EQ(p.kind, "log-damaged") << p.message;
    reported = reported || p.message.find(checkpoints.back()) != std::string::npos;
  }
  EXPECT_TRUE(reported) << "the damaged checkpoint is not named";
  auto empty = Store::Open(dir_ / "empty");
  ASSERT_TRUE(empty.ok());
  auto r = a->RepairChunks(**empty);
  ASSERT_TRUE(r.ok()) << "repair stopped at a checkpoint the replay went around: " << r.status().ToString();
  EXPECT_EQ(r->damaged, 0u);
  ExpectNamed(*a, 5);
  // The log was read whole, so the index is still compared with it: one
  // that lost a name is found, and repair will not write through it.
  testing::Sql(dir_ / "a", "DELETE FROM names WHERE name = 'n0'");
  v = a->Verify();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  bool differs = false;
  for (const auto& p : v->problems) differs = differs || p.kind == "index-differs";
  EXPECT_TRUE(differs) << "the index was not compared with the log";
  r = a->RepairChunks(**empty);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("index rebuild"), std::string::npos) << r.status().ToString();
}

CHUNKSTORE_ON_EVERY_BUCKET(BucketCheckpointTest);

}  // namespace
}  // namespace chunkstore
