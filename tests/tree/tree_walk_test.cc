// SPDX-License-Identifier: Apache-2.0
// The walk of a directory being published (tree/tree_walk.h): with several
// listers the tree, its counts and the skipped entries, in their order, are
// those of a walk on one thread, and a walk that fails leaves no descriptor
// open and nothing in the store.
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "test_util.h"
#include "tree_util.h"

namespace chunkstore {
namespace {

namespace fs = std::filesystem;
using testing::Listing;
using testing::MakeFile;
using testing::RandomBytes;

// Open descriptors of this process (the directory read's own excepted).
int OpenFds() {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
    (void)e;
    ++n;
  }
  return n;
}

// The order a walk reports skipped entries in: a directory's own when it
// is listed, before anything below it; directories depth first, names
// sorted.
bool WalkOrder(const std::string& a, const std::string& b) {
  std::vector<std::string> x, y;
  for (const auto& p : fs::path(a).parent_path()) x.push_back(p.string());
  for (const auto& p : fs::path(b).parent_path()) y.push_back(p.string());
  if (x != y) return x < y;
  return fs::path(a).filename() < fs::path(b).filename();
}

class TreeWalkTest : public ::testing::Test {
 protected:
  void SetUp() override { src_ = dir_ / "src"; }
  std::unique_ptr<Store> OpenStore(const std::string& name, unsigned threads) {
    Options o = testing::SmallChunks();
    o.threads = threads;
    auto s = Store::Open(dir_ / name, o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  // Levels of directories, files in each, a FIFO in some, links in some,
  // and empty directories; returns the FIFOs' paths.
  std::vector<std::string> Build(int wide, int deep) {
    std::vector<std::string> fifos;
    std::vector<std::string> level = {src_};
    fs::create_directories(src_);
    int n = 0;
    for (int d = 0; d < deep; ++d) {
      std::vector<std::string> next;
      for (const std::string& dir : level) {
        for (int i = 0; i < wide; ++i) {
          const std::string sub = dir + "/d" + std::to_string(i);
          fs::create_directories(sub);
          next.push_back(sub);
        }
        MakeFile(dir + "/f" + std::to_string(n % 3), RandomBytes(100 + n % 50, n), n % 2 ? 0644 : 0755,
                 1600000000000000000 + n);
        if (n % 4 == 0) {
          fifos.push_back(dir + "/p");
          EXPECT_EQ(::mkfifo(fifos.back().c_str(), 0600), 0);
        }
        if (n % 5 == 0) fs::create_symlink("f" + std::to_string(n % 3), dir + "/link");
        ++n;
      }
      level = std::move(next);
    }
    std::sort(fifos.begin(), fifos.end(), WalkOrder);
    return fifos;
  }

  testing::TempDir dir_;
  std::string src_;
};

TEST_F(TreeWalkTest, SeveralListersWalkAsOne) {
  const std::vector<std::string> fifos = Build(4, 4);  // 340 directories
  ASSERT_GT(fifos.size(), 10u);
  std::vector<TreePublishResult> results;
  std::vector<std::vector<std::string>> skipped;
  for (unsigned threads : {1u, 4u}) {
    auto store = OpenStore("store" + std::to_string(threads), threads);
    ASSERT_TRUE(store);
    std::vector<std::string> said;
    TreePublishOptions o;
    o.skipped = [&](const std::string& path, const std::string& why) {
      EXPECT_EQ(why, "fifo");
      said.push_back(path);
    };
    auto t = store->PublishTree(src_, "t", o);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    results.push_back(*t);
    skipped.push_back(said);
    const std::string out = dir_ / ("out" + std::to_string(threads));
    ASSERT_TRUE(store->Restore("t", out).ok());
    EXPECT_EQ(Listing(out), Listing(src_)) << "threads " << threads;  // FIFOs are no part of either
  }
  EXPECT_EQ(results[0].id, results[1].id);
  EXPECT_EQ(results[0].directories, results[1].directories);
  EXPECT_EQ(results[0].directories, 1u + 4 + 16 + 64 + 256);
  EXPECT_EQ(results[0].files, results[1].files);
  EXPECT_EQ(results[0].symlinks, results[1].symlinks);
  EXPECT_EQ(results[1].skipped, fifos.size());
  // Said in the order a walk on one thread meets them.
  EXPECT_EQ(skipped[0], fifos);
  EXPECT_EQ(skipped[1], fifos);
}

TEST_F(TreeWalkTest, AWalkThatFailsClosesEveryDescriptorAndAddsNothing) {
  Build(40, 2);  // the root's listing alone opens 40 directories
  auto store = OpenStore("store", 2);
  ASSERT_TRUE(store);
  // What a store keeps open once it has written is open before the count.
  fs::create_directories(dir_ / "small");
  MakeFile(dir_ / "small/f", {'f'}, 0644, 1);
  ASSERT_TRUE(store->PublishTree(dir_ / "small", "small").ok());
  const int before = OpenFds();
  // New descriptors take the lowest free numbers: a limit a few above the
  // count leaves a few to spare, whatever numbers those open now have.
  struct rlimit old;
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  struct rlimit low = old;
  low.rlim_cur = static_cast<rlim_t>(before + 8);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  auto failed = store->PublishTree(src_, "t");
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("directory"), std::string::npos) << failed.status().ToString();
  EXPECT_EQ(OpenFds(), before);
  EXPECT_TRUE(store->Resolve("t").status().IsNotFound());
  // With descriptors to spare the same tree goes in, and leaves none open.
  auto t = store->PublishTree(src_, "t");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->directories, 1u + 40 + 1600);
}

}  // namespace
}  // namespace chunkstore
