// SPDX-License-Identifier: Apache-2.0
// Store::RemoveUnused: a store no change was ever committed to goes, with
// the uncommitted packs a failed publish left; anything else (a change, a
// foreign file, a writer at work, not a store at all) is refused and left
// exactly as it was.
#include <filesystem>

#include "chunkstore/env.h"
#include "test_util.h"

namespace chunkstore {
namespace {

namespace fs = std::filesystem;
using testing::RandomBytes;

class RemoveUnused : public ::testing::Test {
 protected:
  std::string Fresh(const std::string& sub) {
    auto s = Store::Open(dir_ / sub, testing::SmallChunks());
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return dir_ / sub;
  }
  testing::TempDir dir_;
};

TEST_F(RemoveUnused, AStoreNothingWasCommittedToGoesWithItsStrayPacks) {
  const std::string s = Fresh("s");
  testing::WriteFile(s + "/packs/pack-00000000deadbeef.pack", RandomBytes(100, 1));  // a failed publish's
  ASSERT_TRUE(Store::RemoveUnused(s).ok());
  EXPECT_FALSE(fs::exists(s));
}

TEST_F(RemoveUnused, AStoreWithAnyChangeStays) {
  const std::string s = Fresh("s");
  {
    auto st = *Store::Open(s);
    const auto d = RandomBytes(5000, 2);
    ASSERT_TRUE(st->PublishBytes(d.data(), d.size(), "x").ok());
    ASSERT_TRUE(st->RemoveName("x").ok());
    ASSERT_TRUE(st->Gc(testing::GcNow()).ok());  // empty again, but not as created
  }
  Status r = Store::RemoveUnused(s);
  EXPECT_TRUE(r.IsInvalidArgument()) << r.ToString();
  EXPECT_NE(r.message().find("changes were committed"), std::string::npos) << r.message();
  auto again = Store::Open(s);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE((*again)->Verify().ok());
}

TEST_F(RemoveUnused, ADirectoryHoldingAnythingElseStays) {
  const std::string s = Fresh("s");
  testing::WriteFile(s + "/notes.txt", RandomBytes(10, 3));
  EXPECT_TRUE(Store::RemoveUnused(s).IsInvalidArgument());
  EXPECT_TRUE(fs::exists(s + "/notes.txt"));
  EXPECT_TRUE(Store::Open(s).ok());

  const std::string t = Fresh("t");
  testing::WriteFile(t + "/packs/readme", RandomBytes(10, 4));
  EXPECT_TRUE(Store::RemoveUnused(t).IsInvalidArgument());
  EXPECT_TRUE(fs::exists(t + "/packs/readme"));

  fs::create_directories(dir_ / "plain");
  testing::WriteFile(dir_ / "plain/file", RandomBytes(10, 5));
  EXPECT_TRUE(Store::RemoveUnused(dir_ / "plain").IsInvalidArgument());
  EXPECT_TRUE(fs::exists(dir_ / "plain/file"));
}

TEST_F(RemoveUnused, AStoreAWriterHoldsStays) {
  const std::string s = Fresh("s");
  const std::string pack = s + "/packs/pack-00000000000a11fe.pack";
  testing::WriteFile(pack, RandomBytes(100, 6));
  {
    auto lock = Env::Posix()->TryLockExistingFile(pack);
    ASSERT_TRUE(lock.ok());
    EXPECT_TRUE(Store::RemoveUnused(s).IsBusy());
    EXPECT_TRUE(fs::exists(pack));
  }
  {
    auto lock = Env::Posix()->TryLockFile(s + "/log/LOCK");  // a commit under way
    ASSERT_TRUE(lock.ok());
    EXPECT_TRUE(Store::RemoveUnused(s).IsBusy());
  }
  EXPECT_TRUE(fs::exists(s + "/config"));
  EXPECT_TRUE(Store::RemoveUnused(s).ok());
  EXPECT_FALSE(fs::exists(s));
}

}  // namespace
}  // namespace chunkstore
