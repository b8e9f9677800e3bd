// SPDX-License-Identifier: Apache-2.0
// Store::OpenBlobView: a directory store seen as a read-only bucket, as
// `serve` hands it to http:// stores. A bucket store opened over the view
// must see what the directory store holds, follow it through checkpoints
// and gc, refuse every write, and find nothing under keys of other shapes.
#include <filesystem>

#include "test_util.h"
#include "tree_util.h"

namespace chunkstore {
namespace {

namespace fs = std::filesystem;
using testing::RandomBytes;

class BlobViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Options o = testing::SmallChunks();
    o.checkpoint_bytes = 2048;  // a checkpoint every few changes
    auto s = Store::Open(dir_ / "dir", o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    dir_store_ = std::move(*s);
    auto v = dir_store_->OpenBlobView();
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    view_ = std::move(*v);
  }
  std::unique_ptr<Store> OpenMirror(const std::string& cache) {
    Options o;
    o.blob_store = view_.get();
    auto s = Store::Open(dir_ / cache, o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  // Names, versions and ids as both stores list them.
  static std::vector<std::string> Names(Store& s) {
    std::vector<std::string> out;
    auto l = s.List();
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    if (l.ok())
      for (const NameEntry& e : *l) out.push_back(e.name + "@" + std::to_string(e.version) + " " + e.id);
    return out;
  }
  testing::TempDir dir_;
  std::unique_ptr<Store> dir_store_;
  std::unique_ptr<BlobStore> view_;
};

TEST_F(BlobViewTest, MirrorSeesEverythingAndReadsItVerified) {
  const auto big = RandomBytes(300000, 1);
  ASSERT_TRUE(dir_store_->PublishBytes(big.data(), big.size(), "big").ok());
  ASSERT_TRUE(dir_store_->PublishBytes("tiny", 4, "tiny").ok());  // inline in a directory store
  fs::create_directories(dir_ / "src/sub");
  testing::MakeFile(dir_ / "src/a", RandomBytes(50000, 3), 0640, 1600000000000000000);
  testing::MakeFile(dir_ / "src/sub/b", RandomBytes(10, 4), 0755, 1600000000000000001);
  ASSERT_TRUE(dir_store_->PublishTree(dir_ / "src", "site").ok());

  auto m = OpenMirror("cache");
  ASSERT_TRUE(m);
  EXPECT_EQ(Names(*m), Names(*dir_store_));
  EXPECT_EQ(*testing::ReadObject(*m, "big"), big);
  auto tiny = testing::ReadObject(*m, "tiny");
  ASSERT_TRUE(tiny.ok()) << tiny.status().ToString();
  EXPECT_EQ(std::string(tiny->begin(), tiny->end()), "tiny");
  ASSERT_TRUE(m->Restore("site", dir_ / "out").ok());
  EXPECT_EQ(testing::Listing(dir_ / "out"), testing::Listing(dir_ / "src"));
  auto v = m->Verify();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_FALSE(v->corrupt());
}

TEST_F(BlobViewTest, MirrorFollowsChangesAcrossCheckpointsAndGc) {
  auto m = OpenMirror("cache");
  ASSERT_TRUE(m);
  // Enough changes for several checkpoints: the mirror falls more than a
  // segment behind and must start again from the newest checkpoint.
  for (int i = 0; i < 40; ++i) {
    const auto data = RandomBytes(3000 + i, 100 + i);
    ASSERT_TRUE(dir_store_->PublishBytes(data.data(), data.size(), "n" + std::to_string(i % 7)).ok());
  }
  // The log did roll over: the view offers checkpoints, and the segment
  // the mirror last read is gone.
  auto checkpoints = view_->List("checkpoints/", "");
  ASSERT_TRUE(checkpoints.ok());
  EXPECT_FALSE(checkpoints->empty());
  EXPECT_FALSE(fs::exists(dir_ / "dir/log/00000000000000000001.log"));
  ASSERT_TRUE(m->Refresh().ok());
  EXPECT_EQ(Names(*m), Names(*dir_store_));
  ASSERT_EQ(Names(*m).size(), 7u);
  for (int i = 0; i < 7; ++i) EXPECT_TRUE(testing::ReadObject(*m, "n" + std::to_string(i)).ok());

  // Names removed and their chunks collected: gone from the mirror too.
  const auto keep = RandomBytes(5000, 7);
  ASSERT_TRUE(dir_store_->PublishBytes(keep.data(), keep.size(), "keep").ok());
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(dir_store_->RemoveName("n" + std::to_string(i)).ok());
  auto gc = dir_store_->Gc(testing::GcNow());
  ASSERT_TRUE(gc.ok()) << gc.status().ToString();
  ASSERT_TRUE(m->Refresh().ok());
  EXPECT_EQ(Names(*m), Names(*dir_store_));
  EXPECT_EQ(*testing::ReadObject(*m, "keep"), keep);
  EXPECT_FALSE(testing::ReadObject(*m, "n0").ok());
  // A second mirror, opened afresh, agrees.
  auto fresh = OpenMirror("cache2");
  ASSERT_TRUE(fresh);
  EXPECT_EQ(Names(*fresh), Names(*dir_store_));
}

TEST_F(BlobViewTest, EveryWriteIsRefusedAndNothingChanges) {
  ASSERT_TRUE(dir_store_->PublishBytes("hello", 5, "h").ok());
  const auto before = Names(*dir_store_);
  EXPECT_TRUE(view_->Put("config", "x", 1).IsPermissionDenied());
  EXPECT_TRUE(view_->Put("log/0000000001-0000000000001-0000000000000001", "x", 1).IsPermissionDenied());
  EXPECT_TRUE(view_->Delete("config").IsPermissionDenied());
  auto m = OpenMirror("cache");
  ASSERT_TRUE(m);
  const auto data = RandomBytes(100000, 9);
  auto pub = m->PublishBytes(data.data(), data.size(), "h");
  ASSERT_FALSE(pub.ok());
  EXPECT_TRUE(pub.status().IsPermissionDenied()) << pub.status().ToString();
  EXPECT_FALSE(m->RemoveName("h").ok());
  EXPECT_EQ(Names(*dir_store_), before);
  EXPECT_EQ(Names(*m), before);
}

TEST_F(BlobViewTest, KeysOfOtherShapesAreNotFound) {
  ASSERT_TRUE(dir_store_->PublishBytes(RandomBytes(20000, 5).data(), 20000, "x").ok());
  for (const std::string key :
       {"", "../config", "/config", "config/", "index.db", "packs/../config", "packs/../../etc/passwd",
        "packs/pack-zz.pack", "log/", "log/garbage", "log/0000000002-0000000000001-0000000000000001",
        "log/0000000001-0000000000001-00000000000000zz", "checkpoints/x", "log/../index.db", "store/config"}) {
    auto size = view_->Size(key);
    EXPECT_TRUE(size.status().IsNotFound()) << "'" << key << "': " << size.status().ToString();
    char buf[8];
    size_t got = 0;
    EXPECT_FALSE(view_->GetRange(key, 0, sizeof buf, buf, &got).ok()) << key;
    EXPECT_EQ(got, 0u);
  }
  // What the listing names can all be read, at the listed sizes.
  auto all = view_->List("", "");
  ASSERT_TRUE(all.ok());
  ASSERT_FALSE(all->empty());
  for (const BlobInfo& b : *all) {
    auto size = view_->Size(b.key);
    ASSERT_TRUE(size.ok()) << b.key;
    EXPECT_EQ(*size, b.size) << b.key;
    auto bytes = view_->Get(b.key);
    ASSERT_TRUE(bytes.ok()) << b.key;
    EXPECT_EQ(bytes->size(), b.size);
  }
  // Listing honours its prefix and marker.
  auto packs = view_->List("packs/", "");
  ASSERT_TRUE(packs.ok());
  for (const BlobInfo& b : *packs) EXPECT_EQ(b.key.rfind("packs/", 0), 0u);
  auto after = view_->List("", all->front().key);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->size(), all->size() - 1);
}

}  // namespace
}  // namespace chunkstore
