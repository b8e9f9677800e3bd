// SPDX-License-Identifier: Apache-2.0
// The Env implementations behave alike: files, temp files, locks, listing.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

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

// Large files, appended to in uneven pieces, read across any boundary an
// Env keeps internally (the in-memory one stores a file in segments of
// growing size), truncated to the middle and grown again with zeros.
TEST_P(EnvTest, LargeFilesReadBackAcrossPiecesAndTruncations) {
  auto f = env_->OpenFile(root_ + "/big", OpenMode::kCreateNew);
  ASSERT_TRUE(f.ok());
  std::vector<uint8_t> want;
  uint64_t seed = 7;
  auto next = [&] { return seed = seed * 6364136223846793005ull + 1442695040888963407ull; };
  const size_t pieces[] = {1, 65535, 2, 70000, 1 << 20, 3, 5 << 20, 123457, 9 << 20, 17};
  for (size_t n : pieces) {
    std::vector<uint8_t> piece(n);
    for (auto& b : piece) b = static_cast<uint8_t>(next() >> 56);
    ASSERT_TRUE((*f)->Append(piece.data(), n).ok());
    want.insert(want.end(), piece.begin(), piece.end());
  }
  auto check = [&](const char* when) {
    ASSERT_EQ(*(*f)->Size(), want.size()) << when;
    std::vector<uint8_t> all(want.size() + 10);
    size_t got = 0;
    ASSERT_TRUE((*f)->ReadAt(0, all.size(), all.data(), &got).ok());
    ASSERT_EQ(got, want.size()) << when;
    // memcmp, not std::equal: the ASan build runs this test unoptimized.
    EXPECT_TRUE(want.empty() || std::memcmp(want.data(), all.data(), want.size()) == 0) << when;
    for (int i = 0; i < 50; ++i) {  // ranges at random offsets, some past the end
      const uint64_t off = next() % (want.size() + 100);
      const size_t n = static_cast<size_t>(next() % (3 << 20));
      std::vector<uint8_t> part(n);
      ASSERT_TRUE((*f)->ReadAt(off, n, part.data(), &got).ok());
      const size_t expect = off >= want.size() ? 0 : std::min<size_t>(n, want.size() - static_cast<size_t>(off));
      ASSERT_EQ(got, expect) << when << " at " << off;
      if (got > 0) {
        EXPECT_EQ(std::memcmp(part.data(), want.data() + off, got), 0) << when << " at " << off;
      }
    }
  };
  check("after appends");
  for (uint64_t cut : {uint64_t{9} << 20, uint64_t{70001}, uint64_t{65536}, uint64_t{0}}) {
    ASSERT_TRUE((*f)->Truncate(cut).ok());
    want.resize(cut);
    check("after a cut");
    ASSERT_TRUE((*f)->Truncate(cut + 5000).ok());  // grows over what the cut dropped: zeros
    want.resize(cut + 5000, 0);
    check("after growing past a cut");
    std::vector<uint8_t> more(200000, 0xEE);
    ASSERT_TRUE((*f)->Append(more.data(), more.size()).ok());
    want.insert(want.end(), more.begin(), more.end());
    check("after appending past a cut");
  }
  ASSERT_TRUE((*f)->Truncate(want.size() + (3 << 20)).ok());  // grows: zeros
  want.resize(want.size() + (3 << 20), 0);
  check("after growing");
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

// Both Envs' locks are exact on a local directory: gc may take a free
// lock as proof that no writer holds a pack.
TEST_P(EnvTest, LocksAreExactOnALocalDirectory) { EXPECT_TRUE(env_->LocksAreExact(root_)); }

// A lock waited for while its holder replaced the file is a lock on a
// file nobody can find: the waiter must end up holding the file at the
// path, not the old one.
TEST(PosixEnv, ALockWaitedForAcrossAReplacementHoldsTheNewFile) {
  testing::TempDir dir;
  Env* env = Env::Posix();
  const std::string p = dir / "LOCK", fresh = dir / "LOCK.new";
  auto first = env->TryLockFile(p);
  ASSERT_TRUE(first.ok());
  Result<std::unique_ptr<FileLock>> waited = Status::IOError("not yet");
  std::thread waiter([&] { waited = env->LockFile(p); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the waiter is in flock (or about to be)
  testing::WriteFile(fresh, {});
  ASSERT_TRUE(env->RenameFile(fresh, p).ok());
  first->reset();
  waiter.join();
  ASSERT_TRUE(waited.ok()) << waited.status().ToString();
  // The file now at p is the one held.
  EXPECT_TRUE(env->TryLockExistingFile(p).status().IsBusy());
  // A lock on a file removed meanwhile is refused, not taken.
  auto held = env->TryLockFile(dir / "DATA");
  ASSERT_TRUE(held.ok());
  Result<std::unique_ptr<FileLock>> late = Status::IOError("not yet");
  std::thread latecomer([&] {
    for (int i = 0; i < 2000; ++i) {
      late = env->TryLockExistingFile(dir / "DATA");
      if (!late.status().IsBusy()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(env->RemoveFile(dir / "DATA").ok());
  held->reset();
  latecomer.join();
  EXPECT_TRUE(late.status().IsNotFound()) << late.status().ToString();
}

}  // namespace
}  // namespace chunkstore
