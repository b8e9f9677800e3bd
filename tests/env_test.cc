// The Env implementations behave alike: files, temp files, locks, listing.
#include "chunkstore/env.h"
#include "test_util.h"

namespace chunkstore {
namespace {

class EnvTest : public ::testing::TestWithParam<bool> {
 protected:
  EnvTest() {
    if (GetParam()) {
      mem_ = Env::NewMemory();
      env_ = mem_.get();
      root_ = "/root";
    } else {
      env_ = Env::Posix();
      root_ = dir_.path();
    }
    EXPECT_TRUE(env_->CreateDir(root_).ok());
  }
  testing::TempDir dir_;
  std::unique_ptr<Env> mem_;
  Env* env_;
  std::string root_;
};

INSTANTIATE_TEST_SUITE_P(Envs, EnvTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Memory" : "Posix"; });

TEST_P(EnvTest, CreateAppendReadTruncate) {
  const std::string p = root_ + "/f";
  auto f = env_->OpenFile(p, OpenMode::kCreateNew);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Append("hello world", 11).ok());
  ASSERT_TRUE((*f)->Sync().ok());
  EXPECT_EQ(*(*f)->Size(), 11u);
  char buf[16];
  size_t got = 0;
  ASSERT_TRUE((*f)->ReadAt(6, 16, buf, &got).ok());
  EXPECT_EQ(std::string(buf, got), "world");
  ASSERT_TRUE((*f)->Truncate(5).ok());
  ASSERT_TRUE((*f)->Append("!", 1).ok());
  ASSERT_TRUE((*f)->ReadAt(0, 16, buf, &got).ok());
  EXPECT_EQ(std::string(buf, got), "hello!");
  EXPECT_FALSE(env_->OpenFile(p, OpenMode::kCreateNew).ok());  // exclusive
  EXPECT_TRUE(env_->OpenFile(root_ + "/absent", OpenMode::kRead).status().IsNotFound());
  auto names = env_->ListDir(root_);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, std::vector<std::string>{"f"});
  ASSERT_TRUE(env_->RenameFile(p, root_ + "/g").ok());
  EXPECT_FALSE(env_->FileExists(p));
  ASSERT_TRUE(env_->RemoveFile(root_ + "/g").ok());
  EXPECT_TRUE(env_->RemoveFile(root_ + "/g").IsNotFound());
}

TEST_P(EnvTest, TempFilesAreAnonymous) {
  auto t = env_->CreateTempFile(root_);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_TRUE((*t)->Append("spill", 5).ok());
  char buf[5];
  size_t got;
  ASSERT_TRUE((*t)->ReadAt(0, 5, buf, &got).ok());
  EXPECT_EQ(std::string(buf, got), "spill");
  EXPECT_TRUE(env_->ListDir(root_)->empty());
}

TEST_P(EnvTest, LocksExcludeEachOther) {
  const std::string p = root_ + "/LOCK";
  auto a = env_->TryLockFile(p);
  ASSERT_TRUE(a.ok());
  auto b = env_->TryLockFile(p);
  EXPECT_TRUE(b.status().IsBusy());
  a->reset();
  EXPECT_TRUE(env_->TryLockFile(p).ok());
}

}  // namespace
}  // namespace chunkstore
