// SPDX-License-Identifier: Apache-2.0
// Two-phase publish: prepare gives the id without writing; publish commits;
// streams and large buffers spill to a private file that is always removed.
#include <sstream>

#include "hash/digest.h"
#include "test_util.h"

namespace chunkstore {
namespace {

using testing::RandomBytes;
using testing::TempDir;

std::string IdOf(const std::vector<uint8_t>& d) {
  return internal::Sha256::Of(d.data(), d.size()).ObjectId();
}

size_t CountFiles(const std::string& dir) {
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(dir), {}));
}

TEST(Prepare, BytesGiveIdWithoutWriting) {
  TempDir dir;
  auto store = *Store::Open(dir / "s", testing::SmallChunks());
  const auto data = RandomBytes(100000, 1);
  auto p = store->PrepareBytes(data.data(), data.size());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->id(), IdOf(data));
  EXPECT_EQ(p->size(), data.size());
  EXPECT_GT(p->chunks().size(), 3u);
  EXPECT_TRUE(store->Resolve(p->id()).status().IsNotFound());
  EXPECT_EQ(CountFiles(dir / "s/packs"), 0u);
  auto r = store->Publish(*p, "later");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->id, p->id());
  EXPECT_EQ(*testing::ReadObject(*store, "later"), data);
  // Publishing it again costs nothing.
  auto again = store->Publish(*p);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->new_bytes, 0u);
}

TEST(Prepare, StreamSpillsAndCleansUp) {
  TempDir dir;
  auto store = *Store::Open(dir / "s", testing::SmallChunks());
  const auto data = RandomBytes(300000, 2);
  {
    std::istringstream in(std::string(data.begin(), data.end()));
    auto p = store->PrepareStream(in);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->id(), IdOf(data));
    auto r = store->Publish(*p);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  EXPECT_EQ(CountFiles(dir / "s/tmp"), 0u);
  EXPECT_EQ(*testing::ReadObject(*store, IdOf(data)), data);
}

TEST(Prepare, LargeBufferSpillsSoCallerMayFreeIt) {
  TempDir dir;
  Options o = testing::SmallChunks();
  o.spill_threshold = 50000;
  auto store = *Store::Open(dir / "s", o);
  auto data = RandomBytes(200000, 3);
  const auto copy = data;
  auto p = store->PrepareBytes(data.data(), data.size());
  ASSERT_TRUE(p.ok());
  std::fill(data.begin(), data.end(), 0);  // the caller reuses its buffer
  auto r = store->Publish(*p);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*testing::ReadObject(*store, r->id), copy);
}

TEST(Prepare, SmallBufferChangedBeforePublishIsRefused) {
  auto store = *Store::OpenInMemory(testing::SmallChunks());
  auto data = RandomBytes(50000, 4);
  auto p = store->PrepareBytes(data.data(), data.size());
  ASSERT_TRUE(p.ok());
  data[100] ^= 1;
  auto r = store->Publish(*p);
  ASSERT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
  EXPECT_TRUE(store->Resolve(p->id()).status().IsNotFound());
}

TEST(Prepare, FileChangedAfterPrepareIsRefused) {
  TempDir dir;
  auto store = *Store::Open(dir / "s", testing::SmallChunks());
  const auto data = RandomBytes(100000, 5);
  testing::WriteFile(dir / "f", data);
  auto p = store->PrepareFile(dir / "f");
  ASSERT_TRUE(p.ok());
  auto changed = data;
  changed[5] ^= 1;
  testing::WriteFile(dir / "f", changed);
  auto r = store->Publish(*p);
  ASSERT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("changed"), std::string::npos);
  EXPECT_TRUE(store->Resolve(p->id()).status().IsNotFound());
}

TEST(Prepare, FileUnchangedPublishes) {
  TempDir dir;
  auto store = *Store::Open(dir / "s", testing::SmallChunks());
  const auto data = RandomBytes(100000, 6);
  testing::WriteFile(dir / "f", data);
  auto p = store->PrepareFile(dir / "f");
  ASSERT_TRUE(p.ok());
  auto r = store->Publish(*p, "file");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*testing::ReadObject(*store, "file"), data);
}

TEST(Prepare, BadInputsGiveClearErrors) {
  TempDir dir;
  auto store = *Store::Open(dir / "s");
  auto missing = store->PrepareFile(dir / "nope");
  EXPECT_TRUE(missing.status().IsNotFound());
  EXPECT_NE(missing.status().message().find("nope"), std::string::npos);
  EXPECT_TRUE(store->PrepareFile(dir.path()).status().IsInvalidArgument());
  EXPECT_TRUE(store->PublishFile("/dev/null").status().IsInvalidArgument());
  auto other = *Store::OpenInMemory();
  auto p = other->PrepareBytes("abc", 3);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(store->Publish(*p).status().IsInvalidArgument());
}

}  // namespace
}  // namespace chunkstore
