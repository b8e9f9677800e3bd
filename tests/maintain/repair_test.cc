// SPDX-License-Identifier: Apache-2.0
// repair chunks: damaged or missing chunks are written again from another
// store's copies, which are checked like any input; what cannot be mended
// is listed and left as it was.

#include <filesystem>
#include <fstream>

#include "fault_env.h"
#include "format/pack_format.h"
#include "hash/digest.h"
#include "test_util.h"

namespace chunkstore {
namespace {

namespace fs = std::filesystem;
using testing::RandomBytes;

// The offset of chunk id's record in a pack file's bytes, found by walking
// the records from the pack header on.
size_t RecordOffset(const std::vector<uint8_t>& pack, const std::string& id_hex) {
  size_t at = internal::kPackHeaderSize;
  while (at + internal::kRecordHeaderSize <= pack.size()) {
    Result<internal::RecordHeader> h = internal::DecodeRecordHeader(pack.data() + at, pack.size() - at);
    if (!h.ok()) break;
    if (h->chunk_id.Hex() == id_hex) return at;
    at += internal::kRecordHeaderSize + h->stored_len;
  }
  ADD_FAILURE() << "no record of chunk " << id_hex;
  return 0;
}

std::vector<fs::path> Packs(const std::string& store) {
  std::vector<fs::path> out;
  for (auto& e : fs::directory_iterator(fs::path(store) / "packs")) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The store's truth, file by file (its packs and its log): what a repair
// that mends nothing must leave as it was.
std::map<std::string, std::vector<uint8_t>> Snapshot(const std::string& dir) {
  std::map<std::string, std::vector<uint8_t>> out;
  for (const char* part : {"packs", "log"})
    for (auto& e : fs::recursive_directory_iterator(fs::path(dir) / part))
      if (e.is_regular_file() && e.path().filename() != "LOCK" && e.path().extension() != ".lock") out[e.path().string()] = testing::ReadFile(e.path().string());
  return out;
}

class RepairTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const std::string name : {"s", "replica"}) {
      auto s = Store::Open(dir_ / name, testing::SmallChunks());
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      auto r = (*s)->PublishBytes(data_.data(), data_.size(), "a");
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      id_ = r->id;
    }
    chunks_ = *Open("s")->Chunks(id_);
    ASSERT_GE(chunks_.size(), 4u);
  }
  std::unique_ptr<Store> Open(const std::string& name) {
    auto s = Store::Open(dir_ / name);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  // Flips a byte in the payload of chunk k's record in the named store.
  void Damage(const std::string& name, size_t k) {
    const fs::path pack = Packs(dir_ / name).at(0);
    std::vector<uint8_t> bytes = testing::ReadFile(pack);
    bytes[RecordOffset(bytes, chunks_[k].id) + internal::kRecordHeaderSize + 7] ^= 0x20;
    testing::WriteFile(pack, bytes);
  }
  void ExpectReadsBack(Store& s) {
    auto got = testing::ReadObject(s, id_);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_TRUE(*got == data_);
    auto v = s.Verify();
    ASSERT_TRUE(v.ok());
    EXPECT_FALSE(v->corrupt()) << (v->problems.empty() ? "" : v->problems[0].message);
  }

  testing::TempDir dir_;
  const std::vector<uint8_t> data_ = RandomBytes(60000, 7);
  std::string id_;
  std::vector<ChunkInfo> chunks_;
};

TEST_F(RepairTest, ADamagedChunkIsWrittenAgainFromAReplicaAndTheLogHasIt) {
  Damage("s", 2);
  {
    auto s = Open("s");
    ASSERT_FALSE(testing::ReadObject(*s, id_).ok());
    auto r = s->RepairChunks(*Open("replica"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->damaged, 1u);
    ASSERT_EQ(r->repaired.size(), 1u);
    EXPECT_EQ(r->repaired[0], chunks_[2].id);
    EXPECT_TRUE(r->unrepaired.empty());
    EXPECT_EQ(r->other_problems, 0u);
    EXPECT_EQ(r->packs.size(), 1u);
    EXPECT_EQ(r->bytes_written, internal::kRecordHeaderSize + chunks_[2].length);  // random bytes stay raw
    ExpectReadsBack(*s);
  }
  // The fix is in the log, not only in the index: a rebuilt index has it.
  fs::remove(dir_ / "s/index.db");
  auto rebuilt = Store::Open(dir_ / "s", [] {
    Options o;
    o.rebuild_index = true;
    return o;
  }());
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().ToString();
  ExpectReadsBack(**rebuilt);
  // The damaged record is garbage now, and gc may take it.
  auto gc = (*rebuilt)->Gc(testing::GcNow());
  ASSERT_TRUE(gc.ok()) << gc.status().ToString();
  ExpectReadsBack(**rebuilt);
}

// A repair that fails at any file operation (EIO, a full disk, or a crash
// followed by power loss), each time on a fresh copy of the damaged store,
// leaves it as the repair found it or repaired, never between: the object
// reads back exactly or fails naming the damaged chunk, verify finds that
// chunk and nothing else, and a repair run again mends it.
TEST_F(RepairTest, ARepairThatFailsAtAnyFileOperationLeavesTheDamageForTheNextOne) {
  Damage("s", 2);
  auto replica = Open("replica");
  const fs::path work = dir_ / "w";
  int failures = 0;
  bool done = false;
  for (int n = 1; n < 200 && !done; ++n) {
    for (const int how : {0, 1, 2}) {  // EIO, ENOSPC, crash then power loss
      SCOPED_TRACE("operation " + std::to_string(n) + (how == 0 ? " EIO" : how == 1 ? " ENOSPC" : " crash"));
      fs::remove_all(work);
      fs::copy(dir_ / "s", work, fs::copy_options::recursive);
      testing::FaultEnv env(Env::Posix());
      {
        Options o;
        o.env = &env;
        auto s = Store::Open(work, o);
        ASSERT_TRUE(s.ok()) << s.status().ToString();
        if (how == 2) env.CrashAt(n);
        else env.FailAt(n, how == 1);
        auto r = (*s)->RepairChunks(*replica);
        // A crashed process does nothing more, closing included: the fault
        // stays armed until the store is gone and power is lost.
        if (how != 2) env.FailAt(0);
        if (!env.fired()) {
          ASSERT_TRUE(r.ok()) << r.status().ToString();
          EXPECT_EQ(r->repaired.size(), 1u);
          done = true;
          break;
        }
        ++failures;
        // A failure it could go around (a read tried again) still repairs.
        if (r.ok()) {
          EXPECT_EQ(r->repaired.size(), 1u);
        }
      }
      if (how == 2) env.DropUnsyncedData();
      auto s = Store::Open(work);
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      auto got = testing::ReadObject(**s, id_);
      if (got.ok()) {
        EXPECT_TRUE(*got == data_) << "wrong bytes after a failed repair";
      } else {
        EXPECT_TRUE(got.status().IsCorruption()) << got.status().ToString();
        EXPECT_NE(got.status().message().find(chunks_[2].id), std::string::npos) << got.status().ToString();
      }
      auto v = (*s)->Verify();
      ASSERT_TRUE(v.ok()) << v.status().ToString();
      for (const VerifyProblem& p : v->problems) {
        if (p.kind == "orphan-pack") continue;  // a new pack the failed repair never named
        EXPECT_EQ(p.kind, "corrupt-chunk") << p.message;
        EXPECT_EQ(p.chunk_id, chunks_[2].id) << p.message;
      }
      EXPECT_EQ(v->corrupt(), !got.ok());
      auto again = (*s)->RepairChunks(*replica);
      ASSERT_TRUE(again.ok()) << again.status().ToString();
      EXPECT_EQ(again->repaired.size(), got.ok() ? 0u : 1u);
      auto gc = (*s)->Gc(testing::GcNow());
      ASSERT_TRUE(gc.ok()) << gc.status().ToString();
      ExpectReadsBack(**s);
    }
  }
  EXPECT_TRUE(done) << "no repair got through";
  EXPECT_GE(failures, 20) << "the repair made too few file operations to fail";
}

TEST_F(RepairTest, AStoreWithNothingDamagedIsLeftAsItWas) {
  const auto before = Snapshot(dir_ / "s");
  auto r = Open("s")->RepairChunks(*Open("replica"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->damaged, 0u);
  EXPECT_TRUE(r->repaired.empty());
  EXPECT_TRUE(r->packs.empty());
  EXPECT_TRUE(Snapshot(dir_ / "s") == before);
}

TEST_F(RepairTest, AMissingPackIsMendedAndGcThenForgetsIt) {
  fs::remove(Packs(dir_ / "s").at(0));
  auto s = Open("s");
  auto r = s->RepairChunks(*Open("replica"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->damaged, chunks_.size());
  EXPECT_EQ(r->repaired.size(), chunks_.size());
  EXPECT_TRUE(r->unrepaired.empty());
  EXPECT_EQ(r->pack_files, 1u);  // the missing pack itself, until gc drops it
  EXPECT_EQ(r->other_problems, 0u);
  auto got = testing::ReadObject(*s, id_);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == data_);
  auto gc = s->Gc(testing::GcNow());
  ASSERT_TRUE(gc.ok()) << gc.status().ToString();
  EXPECT_EQ(gc->packs_deleted, 1u);
  ExpectReadsBack(*s);
}

// A pack cut short: gc leaves it while a live record in it is damaged,
// repair mends the records past the cut, and the next gc moves the intact
// ones out and drops the shortened file.
TEST_F(RepairTest, AShortenedPackIsRewrittenByGcOnceRepairMendedWhatItLost) {
  const fs::path pack = Packs(dir_ / "s").at(0);
  std::vector<uint8_t> bytes = testing::ReadFile(pack);
  const size_t cut = RecordOffset(bytes, chunks_[2].id) + 10;
  bytes.resize(cut);
  testing::WriteFile(pack, bytes);
  auto s = Open("s");
  auto gc = s->Gc(testing::GcNow());
  ASSERT_TRUE(gc.ok()) << gc.status().ToString();
  EXPECT_EQ(gc->packs_damaged, 1u);
  auto r = s->RepairChunks(*Open("replica"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->repaired.size(), chunks_.size() - 2);
  EXPECT_TRUE(r->unrepaired.empty());
  EXPECT_EQ(r->pack_files, 1u);
  EXPECT_EQ(r->other_problems, 0u);
  gc = s->Gc(testing::GcNow());
  ASSERT_TRUE(gc.ok()) << gc.status().ToString();
  EXPECT_EQ(gc->packs_damaged, 0u);
  EXPECT_GE(gc->packs_compacted, 1u);
  EXPECT_FALSE(fs::exists(pack));
  ExpectReadsBack(*s);
}

TEST_F(RepairTest, WhatTheSourceLacksOrHoldsDamagedIsListedAndNothingIsWritten) {
  // A source without the chunk: another store with other content.
  {
    auto other = Store::Open(dir_ / "other", testing::SmallChunks());
    ASSERT_TRUE(other.ok());
    const auto d = RandomBytes(30000, 8);
    ASSERT_TRUE((*other)->PublishBytes(d.data(), d.size(), "d").ok());
  }
  // A second object that shares the damaged chunk: both are named.
  std::vector<uint8_t> longer(data_);
  longer.push_back('!');
  std::string longer_id;
  {
    auto r = Open("s")->PublishBytes(longer.data(), longer.size(), "longer");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    longer_id = r->id;
  }
  std::vector<std::string> needing{id_, longer_id};
  std::sort(needing.begin(), needing.end());
  Damage("s", 1);
  Damage("replica", 1);
  const auto before = Snapshot(dir_ / "s");
  for (const std::string from : {"other", "replica"}) {
    SCOPED_TRACE(from);
    auto r = Open("s")->RepairChunks(*Open(from));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->damaged, 1u);
    EXPECT_TRUE(r->repaired.empty());
    ASSERT_EQ(r->unrepaired.size(), 1u);
    EXPECT_EQ(r->unrepaired[0].chunk_id, chunks_[1].id);
    EXPECT_EQ(r->unrepaired[0].objects, needing);
    EXPECT_NE(r->unrepaired[0].reason.find(from == "other" ? "does not have it" : "could not be read"),
              std::string::npos)
        << r->unrepaired[0].reason;
    EXPECT_EQ(r->bytes_written, 0u);
    EXPECT_TRUE(Snapshot(dir_ / "s") == before);
  }
}

// A source record whose header and xxHash64 agree but whose bytes are not
// the chunk's: only the SHA-256 tells, and nothing of it goes in.
TEST_F(RepairTest, ASourceCopyThatIsNotItsChunkIsRefused) {
  Damage("s", 3);
  const fs::path pack = Packs(dir_ / "replica").at(0);
  std::vector<uint8_t> bytes = testing::ReadFile(pack);
  const size_t at = RecordOffset(bytes, chunks_[3].id);
  Result<internal::RecordHeader> h = internal::DecodeRecordHeader(bytes.data() + at, bytes.size() - at);
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->codec, internal::Codec::kRaw);
  const auto forged = RandomBytes(h->stored_len, 99);
  std::copy(forged.begin(), forged.end(), bytes.begin() + static_cast<long>(at + internal::kRecordHeaderSize));
  h->xxh64 = internal::XxHash64(forged.data(), forged.size());
  internal::EncodeRecordHeader(*h, bytes.data() + at);
  testing::WriteFile(pack, bytes);
  // The index row carries the record's xxHash64 too.
  testing::Sql(dir_ / "replica", "UPDATE chunks SET xxh64 = " + std::to_string(static_cast<int64_t>(h->xxh64)) +
                                     " WHERE id = x'" + chunks_[3].id + "'");

  const auto before = Snapshot(dir_ / "s");
  auto r = Open("s")->RepairChunks(*Open("replica"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->unrepaired.size(), 1u);
  EXPECT_EQ(r->unrepaired[0].chunk_id, chunks_[3].id);
  EXPECT_TRUE(r->repaired.empty());
  EXPECT_TRUE(Snapshot(dir_ / "s") == before);
}

TEST_F(RepairTest, AnIndexThatIsNotItsLogsViewStopsRepairBeforeAnyWrite) {
  Damage("s", 0);
  testing::Sql(dir_ / "s", "DELETE FROM chunks WHERE id = x'" + chunks_[1].id + "'");
  const auto before = Snapshot(dir_ / "s");
  auto r = Open("s")->RepairChunks(*Open("replica"));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("index rebuild"), std::string::npos) << r.status().ToString();
  EXPECT_TRUE(Snapshot(dir_ / "s") == before);
}

TEST_F(RepairTest, AStoreIsNotRepairedFromItself) {
  auto s = Open("s");
  auto r = s->RepairChunks(*s);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
}

// A copy whose proof meets a damaged chunk at the destination stops and
// says how to mend it; after the repair the same copy goes through.
TEST_F(RepairTest, ACopyThatMeetsADamagedDestinationChunkPointsToRepair) {
  std::vector<uint8_t> longer(data_);
  const auto tail = RandomBytes(20000, 9);
  longer.insert(longer.end(), tail.begin(), tail.end());
  auto replica = Open("replica");
  ASSERT_TRUE(replica->PublishBytes(longer.data(), longer.size(), "longer").ok());
  Damage("s", 1);  // a chunk "longer" shares with "a"
  auto s = Open("s");
  auto copied = replica->CopyTo(*s, {"longer"});
  ASSERT_FALSE(copied.ok());
  EXPECT_TRUE(copied.status().IsCorruption()) << copied.status().ToString();
  EXPECT_NE(copied.status().message().find("the destination's copy"), std::string::npos)
      << copied.status().ToString();
  EXPECT_NE(copied.status().message().find("repair chunks --from"), std::string::npos)
      << copied.status().ToString();
  auto r = s->RepairChunks(*replica);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->repaired, std::vector<std::string>{chunks_[1].id});
  copied = replica->CopyTo(*s, {"longer"});
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  auto back = testing::ReadObject(*s, "longer");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(*back == longer);
  ExpectReadsBack(*s);
}

// A bucket store is mended the same way, and another machine sharing the
// bucket reads the new copy through the log.
TEST(RepairBucketTest, ADamagedOrLostPackBlobIsMendedForEveryMachine) {
  for (const bool lost : {false, true}) {
  SCOPED_TRACE(lost ? "lost" : "damaged");
  testing::TempDir dir;
  std::unique_ptr<BlobStore> bucket = NewMemoryBlobStore();
  Options bo = testing::SmallChunks();
  bo.blob_store = bucket.get();
  const auto data = RandomBytes(50000, 11);
  std::string id;
  {
    auto s = Store::Open(dir / "machine1", bo);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    id = (*s)->PublishBytes(data.data(), data.size(), "a")->id;
    auto replica = Store::Open(dir / "replica", testing::SmallChunks());
    ASSERT_TRUE(replica.ok());
    ASSERT_TRUE((*replica)->PublishBytes(data.data(), data.size(), "a").ok());
  }
  auto packs = bucket->List("packs/", "");
  ASSERT_TRUE(packs.ok() && packs->size() == 1u);
  auto blob = bucket->Get((*packs)[0].key);
  ASSERT_TRUE(blob.ok());
  std::string bytes = *blob;
  bytes[internal::kPackHeaderSize + internal::kRecordHeaderSize + 100] ^= 0x01;
  if (lost) ASSERT_TRUE(bucket->Delete((*packs)[0].key).ok());
  else ASSERT_TRUE(bucket->Put((*packs)[0].key, bytes.data(), bytes.size()).ok());
  {
    auto s = Store::Open(dir / "machine1", bo);
    ASSERT_TRUE(s.ok());
    auto replica = Store::Open(dir / "replica");
    ASSERT_TRUE(replica.ok());
    auto v = (*s)->Verify();
    ASSERT_TRUE(v.ok()) << v.status().ToString();  // a lost blob is a finding, not an error
    EXPECT_TRUE(v->corrupt());
    auto r = (*s)->RepairChunks(**replica);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->repaired.size(), lost ? (*s)->Chunks(id)->size() : 1u);
    EXPECT_TRUE(r->unrepaired.empty());
    EXPECT_EQ(r->pack_files, lost ? 1u : 0u);
    auto gc = (*s)->Gc(testing::GcNow());
    ASSERT_TRUE(gc.ok()) << gc.status().ToString();
  }
  auto other = Store::Open(dir / "machine2", bo);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  auto got = testing::ReadObject(**other, id);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == data);
  auto v = (*other)->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt()) << (v->problems.empty() ? "" : v->problems[0].message);
  }
}

}  // namespace
}  // namespace chunkstore
