// SPDX-License-Identifier: Apache-2.0
// verify: a clean store passes; each kind of damage is found and named.

#include <atomic>
#include <thread>

#include "fault_env.h"
#include "test_util.h"

namespace chunkstore {
namespace {

using testing::RandomBytes;

const VerifyProblem* Find(const VerifyReport& r, const std::string& kind) {
  for (const auto& p : r.problems)
    if (p.kind == kind) return &p;
  return nullptr;
}

class VerifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = *Store::Open(dir_ / "s", testing::SmallChunks());
    data_ = RandomBytes(100000, 1);
    id_ = s->PublishBytes(data_.data(), data_.size(), "a")->id;
    other_ = s->PublishBytes("other", 5, "b")->id;
    chunks_ = *s->Chunks(id_);
  }
  std::unique_ptr<Store> Open() { return *Store::Open(dir_ / "s"); }
  std::string Pack() {
    for (auto& e : std::filesystem::directory_iterator(dir_ / "s/packs")) return e.path();
    return "";
  }
  void Flip(uint64_t offset) {
    std::fstream f(Pack(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    char c;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(offset));
    f.put(static_cast<char>(c ^ 0x10));
  }
  testing::TempDir dir_;
  std::vector<uint8_t> data_;
  std::string id_, other_;
  std::vector<ChunkInfo> chunks_;
};

TEST_F(VerifyTest, CleanStorePasses) {
  auto r = Open()->Verify();
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->corrupt());
  EXPECT_TRUE(r->problems.empty());
  EXPECT_EQ(r->objects_checked, 2u);
  EXPECT_EQ(r->chunks_checked, chunks_.size());  // "other" is inline: no chunk
}

// Another handle publishes all the while: a change committed during the
// check is never taken for a difference between the index and the log
// (a difference counts only when three comparisons in a row find it).
TEST_F(VerifyTest, PublishesDuringVerifyAreNoDifference) {
  auto writer = Open();
  auto checker = Open();
  int differences = 0, verifies = 0;
  {
    testing::BackgroundPublisher publishing(*writer, 80);
    while ((!publishing.done() || verifies < 5) && verifies < 2000) {
      VerifyOptions o;
      o.quick = true;
      auto r = checker->Verify(o);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ++verifies;
      for (const auto& p : r->problems) differences += p.kind == "index-differs";
    }
  }
  EXPECT_GE(verifies, 5);
  EXPECT_EQ(differences, 0);
}

TEST_F(VerifyTest, FlippedPayloadByteNamesObjectChunkPackAndOffset) {
  Flip(16 + 64 + 5);  // first chunk's payload
  for (bool quick : {false, true}) {
    VerifyOptions o;
    o.quick = quick;
    auto r = Open()->Verify(o);
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(r->corrupt());
    ASSERT_EQ(r->problems.size(), 1u);
    const auto& p = r->problems[0];
    EXPECT_EQ(p.kind, "corrupt-chunk");
    EXPECT_EQ(p.object_id, id_);
    EXPECT_EQ(p.chunk_id, chunks_[0].id);
    EXPECT_EQ(p.pack, std::filesystem::path(Pack()).filename().string());
    EXPECT_EQ(p.offset, 16u);
  }
  // Checking only the other object passes: damage stays with its chunk.
  VerifyOptions just_b;
  just_b.refs = {"b"};
  auto r = Open()->Verify(just_b);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->corrupt());
  EXPECT_EQ(*testing::ReadObject(*Open(), "b"), (std::vector<uint8_t>{'o', 't', 'h', 'e', 'r'}));
}

TEST_F(VerifyTest, MissingPackAndMissingChunkRow) {
  std::filesystem::rename(Pack(), dir_ / "moved");
  auto r = Open()->Verify();
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->corrupt());
  EXPECT_EQ(r->problems[0].kind, "missing-pack");
  std::filesystem::rename(dir_ / "moved", dir_ / "s/packs" / std::filesystem::path(dir_ / "moved").filename());
}

// Damage done to the index alone: verify names what the index lacks, and
// that it differs from the store's log.
TEST_F(VerifyTest, DeletedChunkRowIsAMissingChunk) {
  testing::Sql(dir_ / "s", "DELETE FROM chunks WHERE hex(id) = upper('" + chunks_[1].id + "')");
  auto r = Open()->Verify();
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->corrupt());
  const VerifyProblem* missing = Find(*r, "missing-chunk");
  ASSERT_NE(missing, nullptr);
  EXPECT_EQ(missing->object_id, id_);
  EXPECT_EQ(missing->chunk_id, chunks_[1].id);
  const VerifyProblem* differs = Find(*r, "index-differs");
  ASSERT_NE(differs, nullptr);
  EXPECT_NE(differs->message.find("chunk " + chunks_[1].id + " is in the log but not in the index"), std::string::npos)
      << differs->message;
}

TEST_F(VerifyTest, DamagedPackHeaderIsReported) {
  Flip(3);  // in the pack file's magic
  auto r = Open()->Verify();
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->corrupt());
  EXPECT_EQ(r->problems[0].kind, "bad-pack-header");
}

// A log record that fails its checks is damage, and repair will not write
// after it; a log that cannot be read (EIO) is an error of the check, never
// reported as damage.
TEST_F(VerifyTest, ADamagedLogIsDamageAndAnUnreadableOneIsAnError) {
  const std::string segment = dir_ / "s/log/00000000000000000001.log";
  {
    testing::FaultEnv env(Env::Posix());
    Options o;
    o.env = &env;
    auto s = Store::Open(dir_ / "s", o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    env.FailAt(1);
    auto r = (*s)->Verify();
    env.FailAt(0);
    ASSERT_TRUE(env.fired());
    ASSERT_FALSE(r.ok()) << "an unreadable log was reported as " << (r->problems.empty() ? "sound" : r->problems[0].kind);
    EXPECT_TRUE(r.status().IsIOError()) << r.status().ToString();
  }
  std::vector<uint8_t> log = testing::ReadFile(segment);
  ASSERT_GT(log.size(), 200u);
  log[log.size() - 40] ^= 0x04;  // inside the last change
  testing::WriteFile(segment, log);
  auto s = Store::Open(dir_ / "s");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto r = (*s)->Verify();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->corrupt());
  ASSERT_NE(Find(*r, "log-damaged"), nullptr) << (r->problems.empty() ? "nothing found" : r->problems[0].kind);
  // Nothing for repair to do but the log, and it refuses before writing.
  Flip(16 + 64 + 5);  // the first chunk's payload
  auto replica = Store::Open(dir_ / "replica", testing::SmallChunks());
  ASSERT_TRUE(replica.ok());
  ASSERT_TRUE((*replica)->PublishBytes(data_.data(), data_.size(), "a").ok());
  auto repaired = (*s)->RepairChunks(**replica);
  ASSERT_FALSE(repaired.ok());
  EXPECT_TRUE(repaired.status().IsCorruption()) << repaired.status().ToString();
  EXPECT_NE(repaired.status().message().find("mend the log first"), std::string::npos) << repaired.status().ToString();
  EXPECT_EQ(testing::ReadFile(segment), log);
}

TEST_F(VerifyTest, OrphanPackIsOnlyAWarning) {
  testing::WriteFile(dir_ / "s/packs/pack-0000000000000001.pack", RandomBytes(10, 1));
  auto r = Open()->Verify();
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_EQ(r->problems[0].kind, "orphan-pack");
  EXPECT_FALSE(r->corrupt());
}

// Removing an object drops the names that point at it, so a name version
// left pointing at nothing is damage, reported with the name and version.
TEST_F(VerifyTest, ANameVersionWhoseObjectIsGoneIsDamage) {
  testing::Sql(dir_ / "s", "DELETE FROM objects WHERE hex(id) = upper('" + other_.substr(7) + "')");
  auto r = Open()->Verify();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->corrupt());
  const VerifyProblem* dangling = Find(*r, "dangling-name");
  ASSERT_NE(dangling, nullptr);
  EXPECT_EQ(dangling->object_id, other_);
  EXPECT_NE(dangling->message.find("name b@1"), std::string::npos) << dangling->message;
  const VerifyProblem* differs = Find(*r, "index-differs");
  ASSERT_NE(differs, nullptr);
  EXPECT_EQ(differs->object_id, other_);
}

TEST_F(VerifyTest, UnknownRefIsAnError) {
  VerifyOptions o;
  o.refs = {"nope"};
  EXPECT_TRUE(Open()->Verify(o).status().IsNotFound());
}

}  // namespace
}  // namespace chunkstore
