// SPDX-License-Identifier: Apache-2.0
// A full disk: reads go on (the index's -shm file cannot be made, so the
// index is opened for one process at a time with its WAL index in memory),
// every change fails with NoSpace and loses nothing, an index that a full
// disk left behind its log serves what it has and says what it lacks, and
// once there is room again the store catches up. The disk is full at both
// layers: the store's own files (FaultEnv) and SQLite's (its fault VFS).
#include <filesystem>
#include <set>

#include "fault_env.h"
#include "sqlite_fault_vfs.h"
#include "test_util.h"

namespace chunkstore {
namespace {

using testing::RandomBytes;
using testing::ReadObject;

std::set<std::string> Files(const std::filesystem::path& dir) {
  std::set<std::string> out;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out.insert(std::filesystem::relative(e.path(), dir).string());
  return out;
}

bool Mentions(const std::vector<std::string>& notices, const std::string& what) {
  for (const auto& n : notices)
    if (n.find(what) != std::string::npos) return true;
  return false;
}

class FullDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Open();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_TRUE((*s)->PublishBytes(a_.data(), a_.size(), "a").ok());
    ASSERT_TRUE((*s)->PublishBytes(b_.data(), b_.size(), "b").ok());
  }
  Result<std::unique_ptr<Store>> Open() {
    Options o = testing::SmallChunks();
    o.env = &env_;
    return Store::Open(dir_ / "s", o);
  }
  void Fill(bool on) {
    env_.Full(on);
    testing::SqliteFaults::Full(on);
  }

  testing::TempDir dir_;
  testing::FaultEnv env_{Env::Posix()};
  testing::ScopedSqliteFaults faults_;
  const std::vector<uint8_t> a_ = RandomBytes(50000, 1), b_ = RandomBytes(70000, 2);
};

TEST_F(FullDisk, ReadsGoOnAndEveryChangeFailsWithNoSpaceLosingNothing) {
  const auto before = Files(dir_ / "s/packs");
  Fill(true);
  auto s = Open();
  ASSERT_TRUE(s.ok()) << "a full disk stopped the store from opening: " << s.status().ToString();
  EXPECT_TRUE(Mentions((*s)->notices(), "is full")) << "the open does not say the disk is full";
  EXPECT_EQ(*ReadObject(**s, "a"), a_);
  EXPECT_EQ(*ReadObject(**s, "b"), b_);
  auto listed = (*s)->List();
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(listed->size(), 2u);
  auto v = (*s)->Verify();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_FALSE(v->corrupt());
  ASSERT_TRUE((*s)->Stats().ok());

  const auto c = RandomBytes(60000, 3);
  auto p = (*s)->PublishBytes(c.data(), c.size(), "c");
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(p.status().IsNoSpace()) << p.status().ToString();
  EXPECT_NE(p.status().message().find("disk is full"), std::string::npos) << p.status().message();
  auto t = (*s)->Tag("a", "a2");
  EXPECT_TRUE(!t.ok() && t.status().IsNoSpace()) << (t.ok() ? "tagged" : t.status().ToString());
  EXPECT_FALSE((*s)->RemoveName("a").ok());
  auto g = (*s)->Gc(testing::GcNow());
  EXPECT_TRUE(g.ok() || g.status().IsNoSpace()) << g.status().ToString();
  EXPECT_EQ(Files(dir_ / "s/packs"), before) << "a failed change left pack bytes behind";
  s->reset();

  Fill(false);
  auto again = Open();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*ReadObject(**again, "a"), a_);
  EXPECT_TRUE((*again)->Resolve("c").status().IsNotFound());
  EXPECT_TRUE((*again)->Resolve("a2").status().IsNotFound());
  ASSERT_TRUE((*again)->PublishBytes(c.data(), c.size(), "c").ok());
  EXPECT_EQ(*ReadObject(**again, "c"), c);
}

// Below a MiB free a change is refused before it is written, so that it
// is never made in the log and then reported as failed for want of index
// space; gc still runs, since it is what gives space back.
TEST_F(FullDisk, WithLittleRoomLeftAChangeIsRefusedWholeAndGcStillRuns) {
  auto s = Open();
  ASSERT_TRUE(s.ok());
  env_.SetFreeSpace(512 << 10);
  ASSERT_TRUE((*s)->RemoveName("b").ok()) << "a removal, which gives space back, was refused";
  auto t = (*s)->Tag("a", "a2");
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(t.status().IsNoSpace()) << t.status().ToString();
  EXPECT_NE(t.status().message().find("nothing was changed"), std::string::npos) << t.status().message();
  const auto c = RandomBytes(60000, 3);
  auto p = (*s)->PublishBytes(c.data(), c.size(), "c");
  EXPECT_TRUE(!p.ok() && p.status().IsNoSpace());
  auto g = (*s)->Gc(testing::GcNow());
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->objects_removed, 1u);
  s->reset();
  env_.SetFreeSpace(UINT64_MAX);
  auto again = Open();
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE((*again)->Resolve("a2").status().IsNotFound());
  EXPECT_TRUE((*again)->Resolve("c").status().IsNotFound());
  EXPECT_EQ(*ReadObject(**again, "a"), a_);
  auto v = (*again)->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt());
}

TEST_F(FullDisk, AnIndexLeftBehindItsLogServesWhatItHasAndCatchesUpLater) {
  const auto c = RandomBytes(60000, 3);
  {
    // Room for the pack and the log record, none for the index: the
    // change is made (the log has it) and the index is left behind.
    auto s = Open();
    ASSERT_TRUE(s.ok());
    testing::SqliteFaults::Full(true);
    auto p = (*s)->PublishBytes(c.data(), c.size(), "c");
    ASSERT_FALSE(p.ok());
    EXPECT_TRUE(p.status().IsNoSpace()) << p.status().ToString();
    EXPECT_NE(p.status().message().find("is in the store's log"), std::string::npos) << p.status().message();
  }
  Fill(true);
  {
    auto s = Open();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_TRUE(Mentions((*s)->notices(), "could not catch up")) << "the open hides that the index is behind";
    EXPECT_EQ(*ReadObject(**s, "a"), a_);
    EXPECT_EQ(*ReadObject(**s, "b"), b_);
  }
  Fill(false);
  auto s = Open();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(*ReadObject(**s, "c"), c);
  auto v = (*s)->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt());
}

}  // namespace
}  // namespace chunkstore
