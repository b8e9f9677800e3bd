// SPDX-License-Identifier: Apache-2.0
// Trees on a bucket store: one machine publishes a directory, another
// restores it exactly; the bucket's config is raised to the format that
// holds trees, and gc on any machine keeps a tree's files while it lives.
// Built into unit_tests (in-memory and directory buckets) and s3_tests.
#include <gtest/gtest.h>

#include <filesystem>

#include "bucket_fixture.h"
#include "test_util.h"
#include "tree_util.h"

namespace chunkstore {
namespace {

namespace fs = std::filesystem;
using testing::Backend;

class BucketTreeTest : public testing::BucketTest {};

TEST_P(BucketTreeTest, ATreeTravelsToAnotherMachineWhole) {
  const std::string src = dir_ / "src";
  fs::create_directories(src + "/sub/empty");
  testing::MakeFile(src + "/a", testing::RandomBytes(300000, 1), 0640, 1600000000123000000);
  testing::MakeFile(src + "/sub/b", testing::RandomBytes(20, 2), 0755, 1600000000000000007);
  fs::create_symlink("../a", src + "/sub/link");
  testing::SetMtime(src + "/sub/empty", 1500000000000000000);
  testing::SetMtime(src + "/sub", 1500000000000000001);
  {
    auto a = OpenMachine(dir_ / "a");
    ASSERT_TRUE(a);
    auto t = a->PublishTree(src, "data/v1");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
  }
  auto config = backend_->Get("config");
  ASSERT_TRUE(config.ok());
  // Raised to the format that holds trees; a sequenced store is past it.
  EXPECT_NE(std::string(config->begin(), config->end()).find(Sequenced() ? "format 4\n" : "format 3\n"),
            std::string::npos);
  auto b = OpenMachine(dir_ / "b");
  ASSERT_TRUE(b);
  auto r = b->Restore("data/v1", dir_ / "out");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(testing::Listing(dir_ / "out"), testing::Listing(src));
  auto gc = b->Gc(testing::GcNow());
  ASSERT_TRUE(gc.ok()) << gc.status().ToString();
  EXPECT_EQ(gc->objects_removed, 0u);
  auto v = b->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt());
  ASSERT_TRUE(b->RemoveName("data/v1").ok());
  gc = b->Gc(testing::GcNow());
  ASSERT_TRUE(gc.ok());
  EXPECT_EQ(gc->objects_removed, 5u);  // three trees (the root, sub, sub/empty) and two files
}

TEST_P(BucketTreeTest, CopyToABucketAndFromItIsByteForByte) {
  const std::string src = dir_ / "src";
  fs::create_directories(src + "/d");
  const auto big = testing::RandomBytes(700000, 5);
  testing::MakeFile(src + "/big", big, 0644, 1600000000000000000);
  testing::MakeFile(src + "/d/small", testing::RandomBytes(100, 6), 0600, 1600000000000000001);
  auto local = Store::Open(dir_ / "local", testing::SmallChunks());
  ASSERT_TRUE(local.ok());
  ASSERT_TRUE((*local)->PublishTree(src, "tree").ok());
  ASSERT_TRUE((*local)->PublishBytes(big.data(), big.size(), "blob").ok());
  auto bucket = OpenMachine(dir_ / "cache-a");
  ASSERT_TRUE(bucket);
  auto up = (*local)->CopyTo(*bucket);
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  EXPECT_GT(up->chunks_sent, 0u);
  // Only S3 makes requests; a copy that finds everything there makes none.
  if (GetParam() == Backend::kS3 || GetParam() == Backend::kS3Locks) {
    EXPECT_GT(up->requests, 0u);
  } else {
    EXPECT_EQ(up->requests, 0u);
  }
  auto again = (*local)->CopyTo(*bucket);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->chunks_sent, 0u);
  EXPECT_EQ(again->commits, 0u);
  EXPECT_EQ(again->requests, 0u);
  // A second machine pulls it into a store of its own.
  auto other = OpenMachine(dir_ / "cache-b");
  ASSERT_TRUE(other);
  auto second = Store::Open(dir_ / "second", testing::SmallChunks());
  ASSERT_TRUE(second.ok());
  auto down = other->CopyTo(**second);
  ASSERT_TRUE(down.ok()) << down.status().ToString();
  ASSERT_TRUE((*second)->Restore("tree", dir_ / "out").ok());
  EXPECT_EQ(testing::Listing(dir_ / "out"), testing::Listing(src));
  EXPECT_EQ(*testing::ReadObject(**second, "blob"), big);
  auto v = (*second)->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt());
}

CHUNKSTORE_ON_EVERY_BUCKET(BucketTreeTest);

}  // namespace
}  // namespace chunkstore
