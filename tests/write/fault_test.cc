// SPDX-License-Identifier: Apache-2.0
// Fault injection: fail every mutating file operation of a publish in turn
// (EIO, ENOSPC, torn writes). Each time the publish must fail with a clear
// error, everything committed before must still verify, nothing partial may
// be visible, and a retry must succeed.
#include "fault_env.h"
#include "test_util.h"

namespace chunkstore {
namespace {

using testing::RandomBytes;

struct FaultCase {
  bool no_space;
  bool short_write;
};

class FaultTest : public ::testing::TestWithParam<FaultCase> {};

INSTANTIATE_TEST_SUITE_P(Kinds, FaultTest,
                         ::testing::Values(FaultCase{false, false}, FaultCase{true, false},
                                           FaultCase{false, true}),
                         [](const auto& info) {
                           return std::string(info.param.no_space ? "NoSpace" : "EIO") +
                                  (info.param.short_write ? "ShortWrite" : "");
                         });

TEST_P(FaultTest, EveryFailurePointOfAPublishLeavesTheStoreIntact) {
  testing::TempDir dir;
  Options o = testing::SmallChunks();
  const auto before = RandomBytes(60000, 1);
  const auto payload = RandomBytes(3u << 20, 2);  // many chunks, several pack writes
  std::string before_id;
  {
    auto s = *Store::Open(dir / "template", o);
    before_id = s->PublishBytes(before.data(), before.size(), "before")->id;
  }
  // Count the operations of a clean publish of the payload.
  int total = 0;
  {
    std::filesystem::copy(dir / "template", dir / "probe", std::filesystem::copy_options::recursive);
    testing::FaultEnv env(Env::Posix());
    o.env = &env;
    auto s = *Store::Open(dir / "probe", o);
    env.FailAt(0);
    ASSERT_TRUE(s->PublishBytes(payload.data(), payload.size(), "p").ok());
    total = env.count();
  }
  ASSERT_GT(total, 3);
  int failed = 0;
  for (int n = 1; n <= total; ++n) {
    // Each failure point on a store as it was before: a publish that got
    // through must not hide the next point's failure.
    const std::string path = dir / ("round" + std::to_string(n));
    std::filesystem::copy(dir / "template", path, std::filesystem::copy_options::recursive);
    testing::FaultEnv env(Env::Posix());
    o.env = &env;
    auto s = *Store::Open(path, o);
    env.FailAt(n, GetParam().no_space, GetParam().short_write);
    auto r = s->PublishBytes(payload.data(), payload.size(), "p");
    env.FailAt(0);
    if (!r.ok()) {
      ++failed;
      EXPECT_TRUE(GetParam().no_space ? r.status().IsNoSpace() : r.status().IsIOError())
          << n << ": " << r.status().ToString();
      EXPECT_NE(r.status().message().find("injected"), std::string::npos) << r.status().message();
      // Nothing partial is visible.
      EXPECT_TRUE(s->Resolve("p").status().IsNotFound()) << "failure point " << n;
    }
    // The old object still verifies, and so does the store.
    auto old = testing::ReadObject(*s, before_id);
    ASSERT_TRUE(old.ok()) << n << ": " << old.status().ToString();
    EXPECT_EQ(*old, before);
    s.reset();
    auto again = *Store::Open(path, o);
    auto v = again->Verify();
    ASSERT_TRUE(v.ok()) << n;
    EXPECT_FALSE(v->corrupt()) << "failure point " << n << ": " << (v->problems.empty() ? "" : v->problems[0].message);
    // A retry succeeds and reads back.
    auto retry = again->PublishBytes(payload.data(), payload.size(), "p");
    ASSERT_TRUE(retry.ok()) << n << ": " << retry.status().ToString();
    EXPECT_EQ(*testing::ReadObject(*again, "p"), payload);
    again.reset();
    std::filesystem::remove_all(path);
  }
  // Most points are ones a publish cannot do without.
  EXPECT_GT(failed, total / 2);
}

TEST(FaultTest, FailedPublishThenRetryInSameProcess) {
  testing::TempDir dir;
  testing::FaultEnv env(Env::Posix());
  Options o = testing::SmallChunks();
  o.env = &env;
  auto s = *Store::Open(dir / "s", o);
  const auto a = RandomBytes(200000, 3);
  ASSERT_TRUE(s->PublishBytes(a.data(), a.size(), "a").ok());
  const auto b = RandomBytes(200000, 4);
  env.FailAt(1);  // the first write of the next publish
  EXPECT_FALSE(s->PublishBytes(b.data(), b.size(), "b").ok());
  env.FailAt(0);
  ASSERT_TRUE(s->PublishBytes(b.data(), b.size(), "b").ok());
  EXPECT_EQ(*testing::ReadObject(*s, "a"), a);
  EXPECT_EQ(*testing::ReadObject(*s, "b"), b);
}

}  // namespace
}  // namespace chunkstore

namespace chunkstore {
namespace {

using testing::RandomBytes;

Options FaultOptions(Env* env) {
  Options o = testing::SmallChunks();
  o.env = env;
  return o;
}

TEST(PowerLoss, EverythingAPublishReturnedSurvivesLosingUnsyncedBytes) {
  testing::TempDir dir;
  testing::FaultEnv env(Env::Posix());
  std::vector<std::vector<uint8_t>> data;
  {
    auto s = *Store::Open(dir / "s", FaultOptions(&env));
    for (int i = 0; i < 5; ++i) {
      data.push_back(RandomBytes(150000 + i * 1000, 50 + i));
      ASSERT_TRUE(s->PublishBytes(data[i].data(), data[i].size(), "o" + std::to_string(i)).ok());
    }
  }
  env.DropUnsyncedData();
  auto s = *Store::Open(dir / "s", FaultOptions(&env));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(*testing::ReadObject(*s, "o" + std::to_string(i)), data[i]);
  auto v = s->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt());
}

TEST(PowerLoss, CrashAtEveryPointOfAPublishThenPowerLoss) {
  testing::TempDir dir;
  testing::FaultEnv env(Env::Posix());
  const auto before = RandomBytes(80000, 1);
  const auto payload = RandomBytes(1u << 20, 2);
  {
    auto s = *Store::Open(dir / "s", FaultOptions(&env));
    ASSERT_TRUE(s->PublishBytes(before.data(), before.size(), "before").ok());
  }
  env.DropUnsyncedData();
  int total = 0;
  {
    testing::TempDir probe;
    auto s = *Store::Open(probe / "s", FaultOptions(&env));
    env.FailAt(0);
    ASSERT_TRUE(s->PublishBytes(payload.data(), payload.size(), "p").ok());
    total = env.count();
    env.DropUnsyncedData();
  }
  for (int n = 1; n <= total + 1; ++n) {
    bool returned = false;
    {
      auto s = *Store::Open(dir / "s", FaultOptions(&env));
      env.CrashAt(n);
      returned = s->PublishBytes(payload.data(), payload.size(), "p").ok();
      env.FailAt(0);
    }
    env.DropUnsyncedData();
    auto s = *Store::Open(dir / "s", FaultOptions(&env));
    auto old = testing::ReadObject(*s, "before");
    ASSERT_TRUE(old.ok()) << "crash at " << n << ": " << old.status().ToString();
    EXPECT_EQ(*old, before);
    auto got = testing::ReadObject(*s, "p");
    if (returned) {
      ASSERT_TRUE(got.ok()) << "crash at " << n << ": a publish that returned was lost: "
                            << got.status().ToString();
    }
    if (got.ok()) {
      EXPECT_EQ(*got, payload);
      ASSERT_TRUE(s->RemoveName("p").ok());  // start the next round without it
      ASSERT_TRUE(s->Gc(testing::GcNow()).ok());
    } else {
      EXPECT_TRUE(got.status().IsNotFound()) << "crash at " << n << ": " << got.status().ToString();
    }
    auto v = s->Verify();
    ASSERT_TRUE(v.ok());
    EXPECT_FALSE(v->corrupt()) << "crash at " << n;
  }
}

TEST(FaultTest, BatchFailureAtEveryPointIsAllOrNothing) {
  testing::TempDir dir;
  testing::FaultEnv env(Env::Posix());
  std::vector<std::vector<uint8_t>> items;
  for (int i = 0; i < 6; ++i) items.push_back(RandomBytes(20000 + 30000 * i, 70 + i));
  auto publish_all = [&](Store& s) -> Status {
    auto b = s.NewBatch();
    for (int i = 0; i < 6; ++i) {
      auto r = b->AddBytes(items[i].data(), items[i].size(), "b" + std::to_string(i));
      if (!r.ok()) return r.status();
    }
    return b->Commit().status();
  };
  int total = 0;
  {
    testing::TempDir probe;
    auto s = *Store::Open(probe / "s", FaultOptions(&env));
    env.FailAt(0);
    ASSERT_TRUE(publish_all(*s).ok());
    total = env.count();
  }
  for (int n = 1; n <= total; ++n) {
    auto s = *Store::Open(dir / "s", FaultOptions(&env));
    env.FailAt(n);
    const Status st = publish_all(*s);
    env.FailAt(0);
    if (st.ok()) break;  // a failure point after the commit: nothing to see
    EXPECT_TRUE(st.IsIOError()) << st.ToString();
    for (int i = 0; i < 6; ++i)
      EXPECT_TRUE(s->Resolve("b" + std::to_string(i)).status().IsNotFound()) << "failure " << n;
  }
  auto s = *Store::Open(dir / "s", FaultOptions(&env));
  ASSERT_TRUE(publish_all(*s).ok());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(*testing::ReadObject(*s, "b" + std::to_string(i)), items[i]);
}

}  // namespace
}  // namespace chunkstore

#include "sqlite_fault_vfs.h"

namespace chunkstore {
// A second handle appends to the pack the first one wrote (it adopts the
// pack after its committed length): what it appended must be on disk when
// its publish returns, and the first publish's pack must have survived its
// own rename from pack-X.pack.new.
TEST(PowerLoss, PublishesIntoAnAdoptedPackSurvive) {
  testing::TempDir dir;
  testing::FaultEnv env(Env::Posix());
  const auto a = RandomBytes(120000, 5), b = RandomBytes(130000, 6);
  {
    auto s = *Store::Open(dir / "s", FaultOptions(&env));
    ASSERT_TRUE(s->PublishBytes(a.data(), a.size(), "a").ok());
  }
  {
    auto s = *Store::Open(dir / "s", FaultOptions(&env));
    ASSERT_TRUE(s->PublishBytes(b.data(), b.size(), "b").ok());
  }
  size_t packs = 0;
  for (auto& e : std::filesystem::directory_iterator(dir / "s/packs")) packs += e.path().extension() == ".pack";
  ASSERT_EQ(packs, 1u) << "the second publish was meant to append to the first one's pack";
  env.DropUnsyncedData();
  auto s = *Store::Open(dir / "s", FaultOptions(&env));
  auto got_a = testing::ReadObject(*s, "a");
  ASSERT_TRUE(got_a.ok()) << got_a.status().ToString();
  EXPECT_EQ(*got_a, a);
  auto got_b = testing::ReadObject(*s, "b");
  ASSERT_TRUE(got_b.ok()) << got_b.status().ToString();
  EXPECT_EQ(*got_b, b);
  auto v = s->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt());
}

// Fills a store with objects to keep and to drop, sharing one pack, and
// removes the ones to drop, so that a gc compacts that pack.
std::vector<std::vector<uint8_t>> StoreForCompaction(const std::string& path, Env* env) {
  std::vector<std::vector<uint8_t>> keep;
  auto s = *Store::Open(path, FaultOptions(env));
  for (int i = 0; i < 3; ++i) {
    keep.push_back(RandomBytes(100000, 70 + i));
    EXPECT_TRUE(s->PublishBytes(keep[i].data(), keep[i].size(), "keep" + std::to_string(i)).ok());
    const auto drop = RandomBytes(250000, 80 + i);
    EXPECT_TRUE(s->PublishBytes(drop.data(), drop.size(), "drop" + std::to_string(i)).ok());
  }
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(s->RemoveName("drop" + std::to_string(i)).ok());
  return keep;
}

void ExpectKept(const std::string& path, Env* env, const std::vector<std::vector<uint8_t>>& keep,
                const std::string& when) {
  auto s = *Store::Open(path, FaultOptions(env));
  for (size_t i = 0; i < keep.size(); ++i) {
    auto got = testing::ReadObject(*s, "keep" + std::to_string(i));
    ASSERT_TRUE(got.ok()) << when << ": " << got.status().ToString();
    EXPECT_EQ(*got, keep[i]) << when;
  }
  auto v = s->Verify();
  ASSERT_TRUE(v.ok()) << when;
  EXPECT_FALSE(v->corrupt()) << when;
}

// gc copies the live records of a sparse pack into a new one, moves the
// chunk rows and deletes the old pack: the copy must be durable before the
// old one goes.
TEST(PowerLoss, AGcCompactionSurvives) {
  testing::TempDir dir;
  testing::FaultEnv env(Env::Posix());
  const auto keep = StoreForCompaction(dir / "s", &env);
  {
    auto s = *Store::Open(dir / "s", FaultOptions(&env));
    auto r = s->Gc(testing::GcNow());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->packs_compacted, 1u);
  }
  env.DropUnsyncedData();
  ExpectKept(dir / "s", &env, keep, "after gc and power loss");
}

// A gc that stops at any file operation, then power loss: nothing live is
// lost, and a later gc finishes the work.
TEST(PowerLoss, CrashAtEveryPointOfAGcThenPowerLoss) {
  testing::TempDir dir;
  std::vector<std::vector<uint8_t>> keep;
  {
    testing::FaultEnv env(Env::Posix());
    keep = StoreForCompaction(dir / "template", &env);
  }
  int total = 0;
  {
    std::filesystem::copy(dir / "template", dir / "probe", std::filesystem::copy_options::recursive);
    testing::FaultEnv env(Env::Posix());
    auto s = *Store::Open(dir / "probe", FaultOptions(&env));
    env.FailAt(0);
    ASSERT_TRUE(s->Gc(testing::GcNow()).ok());
    total = env.count();
  }
  ASSERT_GT(total, 3);
  for (int n = 1; n <= total; ++n) {
    const std::string path = dir / ("round" + std::to_string(n));
    std::filesystem::copy(dir / "template", path, std::filesystem::copy_options::recursive);
    testing::FaultEnv env(Env::Posix());  // fresh: the copy's files are durable as they are
    {
      auto s = *Store::Open(path, FaultOptions(&env));
      env.CrashAt(n);
      (void)s->Gc(testing::GcNow());
      env.FailAt(0);
    }
    env.DropUnsyncedData();
    ExpectKept(path, &env, keep, "gc crashed at " + std::to_string(n));
    {
      auto s = *Store::Open(path, FaultOptions(&env));
      ASSERT_TRUE(s->Gc(testing::GcNow()).ok()) << "rerun after a crash at " << n;
      EXPECT_EQ(s->Stats()->garbage_bytes, 0u) << "rerun after a crash at " << n;
    }
    ExpectKept(path, &env, keep, "rerun after a crash at " + std::to_string(n));
    std::filesystem::remove_all(path);
  }
}

namespace {

// The index's own writes fail in turn: the publish reports an I/O error,
// earlier objects stay intact, nothing partial appears, and a retry (in the
// same process and after reopening) succeeds.
TEST(SqliteFaults, EveryIndexWriteFailurePointOfAPublish) {
  testing::TempDir dir;
  testing::ScopedSqliteFaults faults;
  const auto before = RandomBytes(70000, 1);
  const auto payload = RandomBytes(300000, 2);
  {
    auto s = *Store::Open(dir / "s", testing::SmallChunks());
    ASSERT_TRUE(s->PublishBytes(before.data(), before.size(), "before").ok());
  }
  int total = 0;
  {
    testing::TempDir probe;
    auto s = *Store::Open(probe / "s", testing::SmallChunks());
    testing::SqliteFaults::FailAt(0);
    ASSERT_TRUE(s->PublishBytes(payload.data(), payload.size(), "p").ok());
    total = testing::SqliteFaults::Count();
  }
  ASSERT_GT(total, 0);
  int failed = 0;
  for (bool full : {false, true}) {
    for (int n = 1; n <= total; ++n) {
      auto s = *Store::Open(dir / "s");
      testing::SqliteFaults::FailAt(n, full);
      auto r = s->PublishBytes(payload.data(), payload.size(), "p");
      testing::SqliteFaults::FailAt(0);
      if (r.ok()) {
        ASSERT_TRUE(s->RemoveName("p").ok());  // committed before the failure point
        continue;
      }
      ++failed;
      EXPECT_TRUE(full ? r.status().IsNoSpace() : r.status().IsIOError()) << n << ": " << r.status().ToString();
      if (full) {
        EXPECT_NE(r.status().message().find("disk is full"), std::string::npos) << r.status().message();
      }
      EXPECT_TRUE(s->Resolve("p").status().IsNotFound()) << "failure point " << n;
      EXPECT_EQ(*testing::ReadObject(*s, "before"), before);
      // The same handle recovers.
      ASSERT_TRUE(s->PublishBytes(payload.data(), payload.size(), "p").ok()) << "retry after " << n;
      ASSERT_TRUE(s->RemoveName("p").ok());
    }
  }
  // Some points fall after the commit (checkpoint writes): those publishes
  // succeed. The others must each have failed cleanly above.
  EXPECT_GT(failed, total / 4);
  auto s = *Store::Open(dir / "s");
  auto v = s->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt());
  EXPECT_EQ(*testing::ReadObject(*s, "before"), before);
}

}  // namespace
}  // namespace chunkstore
