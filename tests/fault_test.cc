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
  testing::FaultEnv env(Env::Posix());
  Options o = testing::SmallChunks();
  o.env = &env;
  const auto before = RandomBytes(60000, 1);
  const auto payload = RandomBytes(3u << 20, 2);  // many chunks, several pack writes
  std::string before_id;
  {
    auto s = *Store::Open(dir / "s", o);
    before_id = s->PublishBytes(before.data(), before.size(), "before")->id;
  }
  // Count the operations of a clean publish of the payload.
  int total = 0;
  {
    testing::TempDir probe_dir;
    auto s = *Store::Open(probe_dir / "s", o);
    ASSERT_TRUE(s->PublishBytes(before.data(), before.size()).ok());
    env.FailAt(0);
    ASSERT_TRUE(s->PublishBytes(payload.data(), payload.size(), "p").ok());
    total = env.count();
  }
  ASSERT_GT(total, 3);
  for (int n = 1; n <= total; ++n) {
    auto s = *Store::Open(dir / "s", o);
    env.FailAt(n, GetParam().no_space, GetParam().short_write);
    auto r = s->PublishBytes(payload.data(), payload.size(), "p");
    env.FailAt(0);
    if (r.ok()) continue;  // e.g. a failed cleanup truncate after success is not an error
    EXPECT_TRUE(r.status().IsIOError()) << n << ": " << r.status().ToString();
    EXPECT_NE(r.status().message().find("injected"), std::string::npos) << r.status().message();
    // Nothing partial is visible, and the old object still verifies.
    EXPECT_TRUE(s->Resolve("p").status().IsNotFound()) << "failure point " << n;
    auto old = testing::ReadObject(*s, before_id);
    ASSERT_TRUE(old.ok()) << n << ": " << old.status().ToString();
    EXPECT_EQ(*old, before);
  }
  // After all those failures a clean retry succeeds and reads back.
  auto s = *Store::Open(dir / "s", o);
  auto r = s->PublishBytes(payload.data(), payload.size(), "p");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*testing::ReadObject(*s, "p"), payload);
  EXPECT_EQ(*testing::ReadObject(*s, "before"), before);
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
