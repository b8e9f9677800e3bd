// SPDX-License-Identifier: Apache-2.0
// Sequenced logs whose listings lag behind: the numbers of a sequenced
// log's change sets form one run, so a listing that skips one (a service
// whose listings are eventually consistent) is missing a record, not a log
// without it. A cache must fetch it by GET rather than apply what follows
// and never see it again; a gc must not decide without it; and a number
// that is truly gone is passed over as the log's state says, with verify
// reporting it. Also the pure rule (MissingNumbers) on its own.
//
// Built into unit_tests and (with CHUNKSTORE_TEST_S3) s3_tests, like
// bucket_test.cc.
#include <algorithm>
#include <initializer_list>
#include <utility>
#include <vector>

#include "bucket/log_keys.h"
#include "format/change_set.h"
#include "bucket_fixture.h"

namespace chunkstore {
namespace {

using internal::MissingNumbers;
using internal::SequencedKey;
using testing::Backend;
using testing::BucketTest;
using testing::RandomBytes;
using testing::ReadObject;

std::string Mark(int64_t seq) { return internal::LogKeyPrefix(1, seq) + internal::kMarkSuffix; }

TEST(MissingNumbersTest, FindsTheNumbersAListingSkips) {
  using V = std::vector<std::string>;
  std::string too_far = "unset";
  auto missing = [&](const std::string& after, const V& listed) { return MissingNumbers(after, listed, &too_far); };
  // Nothing missing: from the start, and after a change set or a mark.
  EXPECT_EQ(missing("", V{SequencedKey(1, 1), SequencedKey(1, 2)}), V{});
  EXPECT_EQ(too_far, "");
  EXPECT_EQ(missing(SequencedKey(1, 4), V{SequencedKey(1, 5), Mark(5), SequencedKey(1, 6)}), V{});
  EXPECT_EQ(missing(Mark(4), V{SequencedKey(1, 5)}), V{});
  EXPECT_EQ(missing(SequencedKey(1, 4), V{}), V{});
  // Skipped numbers, before the first key and between two.
  EXPECT_EQ(missing("", V{SequencedKey(1, 2)}), V{SequencedKey(1, 1)});
  EXPECT_EQ(missing(SequencedKey(1, 4), V{SequencedKey(1, 5), SequencedKey(1, 8)}),
            (V{SequencedKey(1, 6), SequencedKey(1, 7)}));
  // A mark is preceded by its own number's change set.
  EXPECT_EQ(missing(SequencedKey(1, 4), V{Mark(5)}), V{SequencedKey(1, 5)});
  EXPECT_EQ(missing(Mark(5), V{Mark(5)}), V{});
  // Keys of another epoch, or of another shape, are left alone.
  EXPECT_EQ(missing(SequencedKey(1, 4), V{internal::LogKeyPrefix(2, 9) + "-change"}), V{});
  EXPECT_EQ(missing("log/garbage", V{SequencedKey(1, 9)}), V{});
  EXPECT_EQ(too_far, "");
  // The limit is on one gap: kMostMissingNumbers in a row are taken for a
  // lag, as are as many again after a key that was listed...
  const auto most = static_cast<int64_t>(internal::kMostMissingNumbers);
  const V spread{SequencedKey(1, most + 1), SequencedKey(1, 2 * most + 2)};
  EXPECT_EQ(missing("", spread).size(), 2 * internal::kMostMissingNumbers);
  EXPECT_EQ(too_far, "");
  // ...one more is not, and the key after the gap is named.
  EXPECT_EQ(missing("", V{SequencedKey(1, 1), SequencedKey(1, most + 3), SequencedKey(1, most + 4)}), V{});
  EXPECT_EQ(too_far, SequencedKey(1, most + 3));
}

using BucketListingTest = BucketTest;

// The number of the change set that names `name` (0 if none does).
int64_t NumberOf(BlobStore& blobs, const std::string& name) {
  auto listed = blobs.List("log/");
  EXPECT_TRUE(listed.ok());
  for (const BlobInfo& b : listed.ok() ? *listed : std::vector<BlobInfo>{}) {
    auto bytes = blobs.Get(b.key);
    auto change = bytes.ok() ? internal::DecodeChangeSet(*bytes, "", b.key) : Result<internal::ChangeSet>(bytes.status());
    int64_t epoch = 0, seq = 0;
    if (!change.ok() || !internal::ParseLogKey(b.key, &epoch, &seq)) continue;
    for (const auto& n : change->names)
      if (n.name == name) return seq;
  }
  return 0;
}

// Expects s to read each name as the bytes given for it.
void ExpectReads(Store& s, std::initializer_list<std::pair<const char*, const std::vector<uint8_t>*>> want) {
  for (const auto& [name, bytes] : want) {
    auto got = ReadObject(s, name);
    ASSERT_TRUE(got.ok()) << name << ": " << got.status().ToString();
    EXPECT_EQ(*got, *bytes) << name;
  }
}

// A cache that follows the log (b) and one made while the listing lags
// (fresh) both hold the change the listing left out, and keep it once the
// listing catches up.
TEST_P(BucketListingTest, ARecordAListingLeavesOutIsFetchedNotSkipped) {
  auto a = OpenMachine(dir_ / "a");
  auto b = OpenMachine(dir_ / "b");
  ASSERT_TRUE(a && b);
  const auto x = RandomBytes(5000, 21), y = RandomBytes(5000, 22), z = RandomBytes(5000, 23);
  ASSERT_TRUE(a->PublishBytes(x.data(), x.size(), "x").ok());
  ASSERT_TRUE(b->Refresh().ok());
  ASSERT_TRUE(a->PublishBytes(y.data(), y.size(), "y").ok());
  ASSERT_TRUE(a->PublishBytes(z.data(), z.size(), "z").ok());
  ASSERT_EQ(NumberOf(*backend_, "y"), 2);
  faulty_->HideFromListings(SequencedKey(1, 2));
  ASSERT_TRUE(b->Refresh().ok());
  auto fresh = OpenMachine(dir_ / "fresh");
  ASSERT_TRUE(fresh);
  faulty_->HideFromListings("");
  ASSERT_TRUE(b->Refresh().ok());
  ASSERT_TRUE(fresh->Refresh().ok());
  for (Store* s : {b.get(), fresh.get()}) {
    ExpectReads(*s, {{"x", &x}, {"y", &y}, {"z", &z}});
    auto names = s->List();
    ASSERT_TRUE(names.ok());
    EXPECT_EQ(names->size(), 3u);
  }
}

// A gc that decided on a replay without a record would remove what that
// record's objects use: here every chunk of "again", which names bytes a
// removed name left behind. It keeps them.
TEST_P(BucketListingTest, AGcWhoseListingLeavesOutARecordKeepsWhatItUses) {
  auto a = OpenMachine(dir_ / "a");
  auto g = OpenMachine(dir_ / "g");
  ASSERT_TRUE(a && g);
  const auto old = RandomBytes(40000, 24), later = RandomBytes(3000, 25);
  ASSERT_TRUE(a->PublishBytes(old.data(), old.size(), "old").ok());  // 1
  ASSERT_TRUE(a->RemoveName("old").ok());                            // 2: its chunks are garbage
  ASSERT_TRUE(g->Refresh().ok());
  ASSERT_TRUE(a->PublishBytes(old.data(), old.size(), "again").ok());      // 3: reuses every chunk
  ASSERT_TRUE(a->PublishBytes(later.data(), later.size(), "later").ok());  // 4
  ASSERT_EQ(NumberOf(*backend_, "again"), 3);
  faulty_->HideFromListings(SequencedKey(1, 3));
  auto rep = g->Gc(testing::GcNow());
  faulty_->HideFromListings("");
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  EXPECT_EQ(rep->objects_removed, 0u);
  auto fresh = OpenMachine(dir_ / "fresh");
  ASSERT_TRUE(fresh);
  for (Store* s : {a.get(), g.get(), fresh.get()}) {
    ExpectReads(*s, {{"again", &old}});
  }
  auto v = fresh->Verify();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_FALSE(v->corrupt()) << (v->problems.empty() ? "" : v->problems[0].message);
}

// A number no GET finds either is a record gone from the log: the log's
// state is without its change, and every cache passes over it (one that
// had come to it starts again from the log). verify says which record is
// missing; gc and checkpoints refuse to go on over it (they would make
// the loss final) until `repair quarantine` records it and takes the
// number.
TEST_P(BucketListingTest, ARecordGoneFromTheLogIsPassedOverAndReported) {
  auto a = OpenMachine(dir_ / "a");
  auto b = OpenMachine(dir_ / "b");
  ASSERT_TRUE(a && b);
  const auto x = RandomBytes(5000, 26), y = RandomBytes(5000, 27), z = RandomBytes(5000, 28);
  ASSERT_TRUE(a->PublishBytes(x.data(), x.size(), "x").ok());
  ASSERT_TRUE(b->Refresh().ok());
  ASSERT_TRUE(a->PublishBytes(y.data(), y.size(), "y").ok());
  ASSERT_TRUE(a->PublishBytes(z.data(), z.size(), "z").ok());
  const std::string lost = SequencedKey(1, NumberOf(*backend_, "y"));
  ASSERT_TRUE(backend_->Delete(lost).ok());
  auto fresh = OpenMachine(dir_ / "fresh");
  ASSERT_TRUE(fresh);
  // b, which follows the log, does not pass over the number itself (a
  // checkpoint it has not listed may hold that change): it starts again
  // from the checkpoints, as fresh did.
  faulty_->ForgetRequests();
  ASSERT_TRUE(b->Refresh().ok());
  const auto requests = faulty_->request_log();
  EXPECT_NE(std::find(requests.begin(), requests.end(), "LIST checkpoints/"), requests.end())
      << "the cache passed over a number without starting again";
  for (Store* s : {b.get(), fresh.get()}) {
    ExpectReads(*s, {{"z", &z}});
    EXPECT_TRUE(ReadObject(*s, "y").status().IsNotFound());
  }
  auto v = fresh->Verify();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(v->corrupt());
  auto names = [](const VerifyReport& r, const std::string& text) {
    for (const auto& p : r.problems)
      if (p.message.find(text) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(names(*v, lost + " is missing")) << (v->problems.empty() ? "no problem" : v->problems[0].message);
  // gc stops, naming the record; no checkpoint is written over it.
  auto gc = b->Gc(testing::GcNow());
  ASSERT_FALSE(gc.ok());
  EXPECT_TRUE(gc.status().IsCorruption()) << gc.status().ToString();
  EXPECT_NE(gc.status().message().find("repair quarantine " + lost), std::string::npos) << gc.status().message();
  Options every1 = testing::SmallChunks();
  every1.bucket_checkpoint_records = 1;  // a checkpoint is due after each commit
  auto c = OpenMachine(dir_ / "c", every1);
  ASSERT_TRUE(c);
  const size_t before = CountBlobs("checkpoints/");
  ASSERT_TRUE(c->PublishBytes(x.data(), x.size(), "x2").ok());
  EXPECT_EQ(CountBlobs("checkpoints/"), before);
  // A number past the newest, or one the log holds, is not missing.
  Status past = b->QuarantineLogRecord(SequencedKey(1, 1000));
  EXPECT_TRUE(past.IsNotFound()) << past.ToString();
  EXPECT_NE(past.message().find("misses nothing there"), std::string::npos) << past.ToString();
  EXPECT_EQ(CountBlobs("quarantine/"), 0u);
  // The repair records the loss and takes the number: verify warns, gc
  // and checkpoints go on.
  ASSERT_TRUE(b->QuarantineLogRecord(lost).ok());
  auto v2 = fresh->Verify();
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_FALSE(v2->corrupt()) << (v2->problems.empty() ? "" : v2->problems[0].message);
  EXPECT_TRUE(names(*v2, lost + " was missing")) << (v2->problems.empty() ? "no problem" : v2->problems[0].message);
  auto gc2 = b->Gc(testing::GcNow());
  ASSERT_TRUE(gc2.ok()) << gc2.status().ToString();
  ASSERT_TRUE(c->Refresh().ok());
  ASSERT_TRUE(c->PublishBytes(z.data(), z.size(), "z2").ok());
  EXPECT_GT(CountBlobs("checkpoints/"), before);
  auto after = OpenMachine(dir_ / "after");
  ASSERT_TRUE(after);
  ExpectReads(*after, {{"x", &x}, {"z", &z}, {"x2", &x}, {"z2", &z}});
}

// A writer whose claim of a number is refused knows that record is
// stored: it fetches it even where the listing leaves it out, and takes
// the next number (else it would try the same one until it gave up).
TEST_P(BucketListingTest, AWriterWhoseNumberIsTakenFetchesTheRecordAListingLeavesOut) {
  auto a = OpenMachine(dir_ / "a");
  auto b = OpenMachine(dir_ / "b");
  ASSERT_TRUE(a && b);
  const auto x = RandomBytes(5000, 31), y = RandomBytes(5000, 32), z = RandomBytes(5000, 33);
  ASSERT_TRUE(a->PublishBytes(x.data(), x.size(), "x").ok());
  ASSERT_TRUE(b->Refresh().ok());
  ASSERT_TRUE(a->PublishBytes(y.data(), y.size(), "y").ok());
  ASSERT_EQ(NumberOf(*backend_, "y"), 2);
  faulty_->HideFromListings(SequencedKey(1, 2));
  faulty_->ForgetRequests();
  auto put = b->PublishBytes(z.data(), z.size(), "z");
  faulty_->HideFromListings("");
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  EXPECT_EQ(NumberOf(*backend_, "z"), 3);
  int claims = 0;
  for (const std::string& r : faulty_->request_log()) claims += r == "PUT " + SequencedKey(1, 2);
  EXPECT_EQ(claims, 1);
  ExpectReads(*b, {{"x", &x}, {"y", &y}, {"z", &z}});
}

// A checkpoint refused over a lost change is tried again only once as
// many records again have come, not after every commit: each try
// replays the whole log.
TEST_P(BucketListingTest, ACheckpointRefusedOverALostChangeWaitsBeforeTryingAgain) {
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  const auto x = RandomBytes(5000, 34), y = RandomBytes(5000, 35);
  ASSERT_TRUE(a->PublishBytes(x.data(), x.size(), "x").ok());
  ASSERT_TRUE(a->PublishBytes(y.data(), y.size(), "y").ok());
  ASSERT_TRUE(a->PublishBytes(x.data(), x.size(), "x1").ok());
  ASSERT_TRUE(backend_->Delete(SequencedKey(1, NumberOf(*backend_, "y"))).ok());
  Options every3 = testing::SmallChunks();
  every3.bucket_checkpoint_records = 3;
  auto c = OpenMachine(dir_ / "c", every3);  // holds two records, and no checkpoint
  ASSERT_TRUE(c);
  // Each try at a checkpoint starts by listing the checkpoints.
  auto tries_after_publish = [&](const std::string& name) {
    faulty_->ForgetRequests();
    EXPECT_TRUE(c->PublishBytes(name.data(), name.size(), name).ok()) << name;
    int n = 0;
    for (const std::string& r : faulty_->request_log()) n += r == "LIST checkpoints/";
    return n;
  };
  EXPECT_EQ(tries_after_publish("p1"), 1);  // three records: due, and refused
  EXPECT_EQ(tries_after_publish("p2"), 0);
  EXPECT_EQ(tries_after_publish("p3"), 0);
  EXPECT_EQ(tries_after_publish("p4"), 1);  // three more
  EXPECT_EQ(CountBlobs("checkpoints/"), 0u);
}

// A record thousands of numbers past the newest is no lag: every machine
// refuses the log, naming it, and takes it again once the record is gone.
TEST_P(BucketListingTest, ARecordFarPastTheNumbersIsRefusedByName) {
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  const auto x = RandomBytes(5000, 29);
  ASSERT_TRUE(a->PublishBytes(x.data(), x.size(), "x").ok());
  internal::ChangeSet c;
  c.kind = internal::ChangeSet::kTag;
  c.time = 1;
  const std::string bytes = internal::EncodeChangeSet(c);
  const std::string key = SequencedKey(1, 2 + static_cast<int64_t>(internal::kMostMissingNumbers) + 1);
  ASSERT_TRUE(backend_->Put(key, bytes.data(), bytes.size()).ok());
  Options o = testing::SmallChunks();
  o.blob_store = faulty_.get();
  auto b = Store::Open(dir_ / "b", o);
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(b.status().IsCorruption()) << b.status().ToString();
  EXPECT_NE(b.status().message().find(key), std::string::npos) << b.status().message();
  EXPECT_FALSE(a->Refresh().ok());
  ASSERT_TRUE(backend_->Delete(key).ok());
  ASSERT_TRUE(a->Refresh().ok());
  auto fresh = OpenMachine(dir_ / "fresh");
  ASSERT_TRUE(fresh);
  EXPECT_EQ(*ReadObject(*fresh, "x"), x);
}

CHUNKSTORE_ON_SEQUENCED_BUCKETS(BucketListingTest);

}  // namespace
}  // namespace chunkstore
