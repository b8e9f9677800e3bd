// SPDX-License-Identifier: Apache-2.0
// Trees in a store: publishing a directory, restoring it exactly, listing,
// walking and comparing trees, what keeps a tree's files alive, the stat
// cache, and the store format a tree raises.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "test_util.h"
#include "tree_util.h"

namespace chunkstore {
namespace {

namespace fs = std::filesystem;
using testing::Listing;
using testing::MakeFile;
using testing::RandomBytes;
using testing::ReadFile;
using testing::SetMtime;

class TreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = dir_ / "src";
    fs::create_directories(src_);
    auto s = Store::Open(dir_ / "store", testing::SmallChunks());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }
  void Reopen() {
    store_.reset();
    auto s = Store::Open(dir_ / "store", testing::SmallChunks());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }
  // A small tree with every kind of entry.
  void Populate() {
    MakeFile(src_ + "/a.txt", {'h', 'i', '\n'}, 0600, 978318245123456789);
    MakeFile(src_ + "/big.bin", RandomBytes(100000, 1), 0644, 1600000000000000000);
    MakeFile(src_ + "/tool", RandomBytes(3000, 2), 04755, 1600000000500000000);
    fs::create_directories(src_ + "/sub/deep");
    MakeFile(src_ + "/sub/deep/z", RandomBytes(10, 3), 0640, 1500000000000000000);
    MakeFile(src_ + "/sub/copy.bin", RandomBytes(100000, 1), 0644, 1600000000000000000);  // same content as big.bin
    fs::create_directories(src_ + "/empty");
    MakeFile(src_ + "/sub/deep/nothing", {}, 0644, 1500000000000000002);  // an empty file
    fs::create_symlink("a.txt", src_ + "/link");
    fs::create_symlink("/etc/passwd", src_ + "/sub/abs");
    fs::create_directories(src_ + "/node_modules/@types");
    MakeFile(src_ + "/node_modules/@types/x.d.ts", {'x'}, 0644, 1600000000000000000);
    ::chmod((src_ + "/sub").c_str(), 0750);
    SetMtime(src_ + "/sub/deep", 1400000000000000000);
    SetMtime(src_ + "/sub", 1400000000000000001);
    SetMtime(src_ + "/empty", 1300000000000000000);
    SetMtime(src_ + "/node_modules/@types", 1300000000000000001);
    SetMtime(src_ + "/node_modules", 1300000000000000002);
    SetMtime(src_, 1300000000000000003);
  }

  testing::TempDir dir_;
  std::string src_;
  std::unique_ptr<Store> store_;
};

TEST_F(TreeTest, ARestoreIsTheDirectoryThatWasPublished) {
  Populate();
  auto t = store_->PublishTree(src_, "site");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->files, 7u);
  EXPECT_EQ(t->directories, 6u);
  EXPECT_EQ(t->symlinks, 2u);
  EXPECT_EQ(t->version, 1);
  EXPECT_GT(t->new_bytes, 0u);
  auto r = store_->Restore("site", dir_ / "out");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->files_written, 7u);
  EXPECT_EQ(r->symlinks_written, 2u);
  // Every path, type, mode, mtime (to the nanosecond), size, content and
  // link target, and the root's own mode and mtime.
  EXPECT_EQ(Listing(dir_ / "out"), Listing(src_));
  struct stat a, b;
  ASSERT_EQ(::stat(src_.c_str(), &a), 0);
  ASSERT_EQ(::stat((dir_ / "out").c_str(), &b), 0);
  EXPECT_EQ(a.st_mode, b.st_mode);
  EXPECT_EQ(a.st_mtim.tv_sec, b.st_mtim.tv_sec);
  EXPECT_EQ(a.st_mtim.tv_nsec, b.st_mtim.tv_nsec);
  // The same directory is the same tree, in another store too.
  auto other = Store::OpenInMemory(testing::SmallChunks());
  ASSERT_TRUE(other.ok());
  auto again = (*other)->PublishTree(src_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->id, t->id);
  auto restored = (*other)->PublishTree(dir_ / "out");
  ASSERT_TRUE(restored.ok());
  EXPECT_EQ(restored->id, t->id);
}

// A directory of symlinks with short names and targets (as Debian's
// /usr/include/ncursesw: twenty links like curses.h -> ../curses.h): each
// entry takes fewer bytes than a directory entry does, and the tree must
// still read back.
TEST_F(TreeTest, ADirectoryOfShortSymlinksRestores) {
  fs::create_directories(src_ + "/links");
  for (int i = 0; i < 300; ++i) {
    const std::string name = {static_cast<char>('a' + i / 26 % 26), static_cast<char>('a' + i % 26),
                              static_cast<char>('0' + i / 676)};
    fs::create_symlink(i % 2 ? "x" : "../y", src_ + "/links/" + name);
  }
  auto t = store_->PublishTree(src_, "links");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->symlinks, 300u);
  auto r = store_->Restore("links", dir_ / "out");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->symlinks_written, 300u);
  EXPECT_EQ(Listing(dir_ / "out"), Listing(src_));
  auto v = store_->Verify();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_FALSE(v->corrupt()) << v->problems.size() << " problems, the first " << v->problems[0].kind;
}

TEST_F(TreeTest, TreesListWalkAndResolvePaths) {
  Populate();
  auto t = store_->PublishTree(src_, "site");
  ASSERT_TRUE(t.ok());
  auto tree = store_->OpenTree("site");
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  std::vector<std::string> names;
  for (const auto& e : tree->entries) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"a.txt", "big.bin", "empty", "link", "node_modules", "sub", "tool"}));
  EXPECT_EQ(tree->entries[0].mode, 0600u);
  EXPECT_EQ(tree->entries[0].mtime_ns, 978318245123456789);
  EXPECT_EQ(tree->entries[3].target, "a.txt");
  EXPECT_EQ(tree->entries[6].mode, 04755u);
  // Paths inside a tree work wherever a ref does.
  auto bytes = testing::ReadObject(*store_, "site:a.txt");
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(*bytes, (std::vector<uint8_t>{'h', 'i', '\n'}));
  EXPECT_EQ(*store_->Resolve("site:sub/copy.bin"), *store_->Resolve("site:big.bin"));
  EXPECT_EQ(*store_->Resolve(t->id + ":a.txt"), *store_->Resolve("site:/a.txt"));
  auto sub = store_->LookupPath("site:sub");
  ASSERT_TRUE(sub.ok());
  EXPECT_EQ(sub->type, EntryType::kDirectory);
  EXPECT_EQ(sub->mode, 0750u);
  EXPECT_EQ(sub->mtime_ns, 1400000000000000001);
  auto subtree = store_->OpenTree("site:sub");
  ASSERT_TRUE(subtree.ok());
  EXPECT_EQ(subtree->id, sub->id);
  auto info = store_->Stat("site:sub");
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(info->tree);
  EXPECT_TRUE(store_->Resolve("site:nothing").status().IsNotFound());
  EXPECT_TRUE(store_->Resolve("site:a.txt/more").status().IsNotFound());
  EXPECT_TRUE(store_->Resolve("site:../x").status().IsInvalidArgument());
  EXPECT_TRUE(store_->Resolve("site:link").status().IsInvalidArgument());  // not followed
  EXPECT_TRUE(store_->OpenTree("site:a.txt").status().IsInvalidArgument());
  // A walk sees everything, parents first, in name order.
  std::vector<std::string> walked;
  ASSERT_TRUE(store_->WalkTree("site", [&](const TreeEntry& e) {
                      walked.push_back(e.name);
                      return Status::OK();
                    }).ok());
  EXPECT_EQ(walked, (std::vector<std::string>{"a.txt", "big.bin", "empty", "link", "node_modules",
                                              "node_modules/@types", "node_modules/@types/x.d.ts", "sub",
                                              "sub/abs", "sub/copy.bin", "sub/deep", "sub/deep/nothing", "sub/deep/z", "tool"}));
  // A walk stops at the first error its callback returns.
  int calls = 0;
  Status stopped = store_->WalkTree("site", [&](const TreeEntry&) {
    ++calls;
    return Status::Busy("enough");
  });
  EXPECT_TRUE(stopped.IsBusy());
  EXPECT_EQ(calls, 1);
}

TEST_F(TreeTest, DiffListsWhatChanged) {
  Populate();
  ASSERT_TRUE(store_->PublishTree(src_, "site").ok());
  MakeFile(src_ + "/a.txt", {'h', 'o', '\n'}, 0600, 978318245123456789);   // content
  ::chmod((src_ + "/tool").c_str(), 0700);                                 // mode only
  fs::remove(src_ + "/link");                                              // removed
  fs::remove_all(src_ + "/sub/deep");                                      // a whole directory
  MakeFile(src_ + "/new", {'n'}, 0644, 1600000000000000000);               // added
  fs::remove(src_ + "/empty");
  MakeFile(src_ + "/empty", {'e'}, 0644, 1600000000000000000);             // a directory became a file
  SetMtime(src_ + "/sub", 1400000000000000001);
  SetMtime(src_, 1300000000000000003);
  ASSERT_TRUE(store_->PublishTree(src_, "site").ok());
  auto changes = store_->DiffTrees("site@1", "site");
  ASSERT_TRUE(changes.ok()) << changes.status().ToString();
  std::map<std::string, ChangeKind> got;
  for (const auto& c : *changes) got[c.path] = c.kind;
  EXPECT_EQ(got, (std::map<std::string, ChangeKind>{{"a.txt", ChangeKind::kModified},
                                                    {"empty", ChangeKind::kType},
                                                    {"link", ChangeKind::kRemoved},
                                                    {"new", ChangeKind::kAdded},
                                                    {"sub/deep", ChangeKind::kRemoved},
                                                    {"sub/deep/nothing", ChangeKind::kRemoved},
                                                    {"sub/deep/z", ChangeKind::kRemoved},
                                                    {"tool", ChangeKind::kMetadata}}));
  for (const auto& c : *changes)
    if (c.path == "tool") {
      EXPECT_EQ(c.before.mode, 04755u);
      EXPECT_EQ(c.after.mode, 0700u);
    }
  auto none = store_->DiffTrees("site", "site");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_TRUE(store_->DiffTrees("site", "site:a.txt").status().IsInvalidArgument());
}

TEST_F(TreeTest, ARestoreOverAnOlderCopyRewritesOnlyWhatChanged) {
  Populate();
  ASSERT_TRUE(store_->PublishTree(src_, "site").ok());
  ASSERT_TRUE(store_->Restore("site", dir_ / "out").ok());
  // Someone edits the copy: a changed file, an extra file, a changed mode.
  MakeFile(dir_ / "out/big.bin", RandomBytes(100000, 9), 0644, 1);
  MakeFile(dir_ / "out/extra", {'x'}, 0644, 1);
  ::chmod((dir_ / "out/a.txt").c_str(), 0644);
  struct stat before;
  ASSERT_EQ(::stat((dir_ / "out/sub/copy.bin").c_str(), &before), 0);
  const ino_t untouched = before.st_ino;
  auto r = store_->Restore("site", dir_ / "out");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->files_written, 1u);
  EXPECT_EQ(r->files_unchanged, 6u);
  EXPECT_EQ(r->metadata_fixed, 1u);
  EXPECT_EQ(r->removed, 0u);
  EXPECT_TRUE(fs::exists(dir_ / "out/extra"));  // extras stay without delete_extra
  struct stat st;
  ASSERT_EQ(::stat((dir_ / "out/sub/copy.bin").c_str(), &st), 0);
  EXPECT_EQ(st.st_ino, untouched);  // left alone, not rewritten
  RestoreOptions del;
  del.delete_extra = true;
  r = store_->Restore("site", dir_ / "out", del);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->removed, 1u);
  EXPECT_EQ(r->files_written, 0u);
  EXPECT_EQ(Listing(dir_ / "out"), Listing(src_));
}

TEST_F(TreeTest, VerifyExistingFindsContentWithTheRightStamp) {
  Populate();
  ASSERT_TRUE(store_->PublishTree(src_, "site").ok());
  ASSERT_TRUE(store_->Restore("site", dir_ / "out").ok());
  // Same size, same mtime, other bytes: only reading tells.
  MakeFile(dir_ / "out/sub/deep/z", RandomBytes(10, 77), 0640, 1500000000000000000);
  auto r = store_->Restore("site", dir_ / "out");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->files_written, 0u);
  EXPECT_NE(ReadFile(dir_ / "out/sub/deep/z"), RandomBytes(10, 3));
  RestoreOptions verify;
  verify.verify_existing = true;
  r = store_->Restore("site", dir_ / "out", verify);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->files_written, 1u);
  EXPECT_EQ(r->files_unchanged, 6u);
  EXPECT_EQ(ReadFile(dir_ / "out/sub/deep/z"), RandomBytes(10, 3));
}

TEST_F(TreeTest, RestoreReplacesEntriesOfAnotherKind) {
  Populate();
  ASSERT_TRUE(store_->PublishTree(src_, "site").ok());
  fs::create_directories(dir_ / "out");
  MakeFile(dir_ / "out/sub", {'f'}, 0644, 1);          // a file where the tree has a directory
  fs::create_symlink("elsewhere", dir_ / "out/a.txt");  // a symlink where it has a file
  fs::create_directories(dir_ / "out/link");           // a directory where it has a symlink
  auto r = store_->Restore("site", dir_ / "out");
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();  // the directory stays without delete_extra
  RestoreOptions del;
  del.delete_extra = true;
  r = store_->Restore("site", dir_ / "out", del);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Listing(dir_ / "out"), Listing(src_));
}

// What sits under a file's name is looked at by the thread that writes
// the file: a directory there is kept (and named) unless asked to go.
TEST_F(TreeTest, ADirectoryWhereTheTreeHasAFileStaysUnlessAsked) {
  Populate();
  ASSERT_TRUE(store_->PublishTree(src_, "site").ok());
  fs::create_directories(dir_ / "out/tool/inner");
  MakeFile(dir_ / "out/tool/inner/keep", {'k'}, 0644, 1);
  auto r = store_->Restore("site", dir_ / "out");
  ASSERT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("tool is a directory"), std::string::npos) << r.status().message();
  EXPECT_EQ(ReadFile(dir_ / "out/tool/inner/keep"), std::vector<uint8_t>({'k'}));
  RestoreOptions del;
  del.delete_extra = true;
  r = store_->Restore("site", dir_ / "out", del);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Listing(dir_ / "out"), Listing(src_));
  EXPECT_EQ(ReadFile(dir_ / "out/tool"), ReadFile(src_ + "/tool"));
}

TEST_F(TreeTest, OneFileRestoresWithItsTreesMetadata) {
  Populate();
  ASSERT_TRUE(store_->PublishTree(src_, "site").ok());
  auto r = store_->Restore("site:tool", dir_ / "tool");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ReadFile(dir_ / "tool"), RandomBytes(3000, 2));
  struct stat st;
  ASSERT_EQ(::stat((dir_ / "tool").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 04755u);
  EXPECT_EQ(st.st_mtim.tv_sec, 1600000000);
  EXPECT_EQ(st.st_mtim.tv_nsec, 500000000);
  // A plain object becomes a file with the mode new files get.
  auto p = store_->PublishBytes("plain", 5);
  ASSERT_TRUE(p.ok());
  r = store_->Restore(p->id, dir_ / "plain");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ReadFile(dir_ / "plain"), (std::vector<uint8_t>{'p', 'l', 'a', 'i', 'n'}));
  EXPECT_TRUE(store_->Restore(p->id, dir_.path()).status().IsInvalidArgument());  // a directory is not a file
}

TEST_F(TreeTest, ATreeKeepsWhatItNamesUntilItGoes) {
  Populate();
  auto t = store_->PublishTree(src_, "site");
  ASSERT_TRUE(t.ok());
  auto pinned = store_->PublishFile(src_ + "/a.txt");  // also published on its own
  ASSERT_TRUE(pinned.ok());
  auto gc = store_->Gc(testing::GcNow());
  ASSERT_TRUE(gc.ok());
  EXPECT_EQ(gc->objects_removed, 0u);
  auto v = store_->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt()) << (v->problems.empty() ? "" : v->problems[0].message);
  // An object a tree holds cannot be removed from under it.
  EXPECT_TRUE(store_->RemoveObject("site:sub/deep/z").IsInvalidArgument());
  // Names do not list a tree's members as unnamed objects.
  auto unnamed = store_->ListUnnamed();
  ASSERT_TRUE(unnamed.ok());
  ASSERT_EQ(unnamed->size(), 1u);
  EXPECT_EQ((*unnamed)[0].id, pinned->id);
  // Without its name the tree and everything only it held go.
  ASSERT_TRUE(store_->RemoveName("site").ok());
  gc = store_->Gc(testing::GcNow());
  ASSERT_TRUE(gc.ok()) << gc.status().ToString();
  EXPECT_GT(gc->objects_removed, 5u);
  EXPECT_FALSE(*store_->Exists(t->id));
  EXPECT_TRUE(*store_->Exists(pinned->id));
  auto st = store_->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->objects, 1u);
}

TEST_F(TreeTest, ASubtreeTwoTreesShareOutlivesOne) {
  Populate();
  ASSERT_TRUE(store_->PublishTree(src_, "one").ok());
  ASSERT_TRUE(store_->PublishTree(src_ + "/sub", "two").ok());
  ASSERT_TRUE(store_->RemoveName("one").ok());
  ASSERT_TRUE(store_->Gc(testing::GcNow()).ok());
  auto r = store_->Restore("two", dir_ / "out");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Listing(dir_ / "out"), Listing(src_ + "/sub"));
  EXPECT_TRUE(store_->Verify().ok() && !store_->Verify()->corrupt());
}

TEST_F(TreeTest, TheStatCacheSkipsUnchangedFilesAndNothingElse) {
  Populate();
  // Files changed within the last second are never vouched for: wait that out.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  auto first = store_->PublishTree(src_, "site");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->files_read, 7u);
  auto again = store_->PublishTree(src_, "site");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->files_read, 0u);
  EXPECT_EQ(again->files_cached, 7u);
  EXPECT_EQ(again->id, first->id);
  EXPECT_EQ(again->new_bytes, 0u);
  // Same size, same mtime, new bytes: the ctime gives it away.
  MakeFile(src_ + "/sub/deep/z", RandomBytes(10, 55), 0640, 1500000000000000000);
  auto changed = store_->PublishTree(src_, "site");
  ASSERT_TRUE(changed.ok());
  EXPECT_EQ(changed->files_read, 1u);
  EXPECT_NE(changed->id, first->id);
  auto z = testing::ReadObject(*store_, "site:sub/deep/z");
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(*z, RandomBytes(10, 55));
  // force_hash reads everything.
  TreePublishOptions force;
  force.force_hash = true;
  auto forced = store_->PublishTree(src_, "site", force);
  ASSERT_TRUE(forced.ok());
  EXPECT_EQ(forced->files_read, 7u);
  EXPECT_EQ(forced->id, changed->id);
  // An object gc took is read again, not trusted from the cache.
  ASSERT_TRUE(store_->RemoveName("site").ok());
  ASSERT_TRUE(store_->Gc(testing::GcNow()).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  auto after_gc = store_->PublishTree(src_, "site");
  ASSERT_TRUE(after_gc.ok()) << after_gc.status().ToString();
  EXPECT_EQ(after_gc->files_cached, 0u);
  EXPECT_EQ(after_gc->id, changed->id);
  auto v = store_->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt());
}

TEST_F(TreeTest, ATreeRaisesTheStoreFormatAndAnIndexRebuildKeepsIt) {
  auto config = [&] {
    std::ifstream f(dir_ / "store/config");
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  // A new store is made at the format versions before trees still read.
  ASSERT_TRUE(store_->PublishBytes("x", 1, "plain").ok());
  EXPECT_NE(config().find("format 3\n"), std::string::npos) << config();
  Populate();
  auto t = store_->PublishTree(src_, "site");
  ASSERT_TRUE(t.ok());
  EXPECT_NE(config().find("format 4\n"), std::string::npos) << config();
  store_.reset();
  Options rebuild = testing::SmallChunks();
  rebuild.rebuild_index = true;
  auto s = Store::Open(dir_ / "store", rebuild);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  store_ = std::move(*s);
  auto r = store_->Restore("site", dir_ / "out");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Listing(dir_ / "out"), Listing(src_));
  auto v = store_->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt());
  auto info = store_->Stat("site");
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(info->tree);
}

TEST_F(TreeTest, NamesMayHoldAnAt) {
  auto a = store_->PublishBytes("a", 1, "node_modules/@types/x");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(*store_->Resolve("node_modules/@types/x"), a->id);
  EXPECT_EQ(*store_->Resolve("node_modules/@types/x@1"), a->id);
  // A name that ends in what looks like a version is written NAME@latest.
  auto b = store_->PublishBytes("b", 1, "release@5");
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(store_->Resolve("release@5").status().IsNotFound());  // version 5 of "release"
  EXPECT_EQ(*store_->Resolve("release@5@latest"), b->id);
  EXPECT_EQ(*store_->Resolve("release@5@1"), b->id);
  auto hist = store_->History("release@5");
  ASSERT_TRUE(hist.ok());
  EXPECT_EQ(hist->size(), 1u);
  ASSERT_TRUE(store_->RemoveName("release@5").ok());
  Reopen();  // the log holds them
  EXPECT_EQ(*store_->Resolve("node_modules/@types/x"), a->id);
}

TEST_F(TreeTest, APublishThatCannotReadAFileAddsNothing) {
  Populate();
  // The first file read removes one that comes later: that one cannot be
  // read when its turn comes, and the whole tree fails.
  TreePublishOptions o;
  o.force_hash = true;
  o.progress = [&](uint64_t, uint64_t) { fs::remove(src_ + "/tool"); };
  auto t = store_->PublishTree(src_, "site", o);
  EXPECT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("tool"), std::string::npos) << t.status().message();
  EXPECT_TRUE(store_->Resolve("site").status().IsNotFound());
  auto st = store_->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->objects, 0u);
}

TEST_F(TreeTest, ANonDirectoryOrTheStoreItselfIsRefused) {
  MakeFile(src_ + "/f", {'f'}, 0644, 1);
  EXPECT_TRUE(store_->PublishTree(src_ + "/f").status().IsInvalidArgument());
  EXPECT_TRUE(store_->PublishTree(src_ + "/none").status().IsNotFound());
  EXPECT_TRUE(store_->PublishTree(dir_ / "store/packs").status().IsInvalidArgument());
  // The store below what is published is left out, and said.
  std::vector<std::string> skipped;
  TreePublishOptions o;
  o.skipped = [&](const std::string& path, const std::string& why) { skipped.push_back(why + ":" + path); };
  auto t = store_->PublishTree(dir_.path(), "", o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(skipped, (std::vector<std::string>{"the store itself:" + dir_ / "store"}));
  EXPECT_TRUE(store_->Restore(t->id, dir_ / "store/inside").status().IsInvalidArgument());
}

TEST_F(TreeTest, SpecialFilesAreSkippedAndSaid) {
  MakeFile(src_ + "/f", {'f'}, 0644, 1);
  ASSERT_EQ(::mkfifo((src_ + "/pipe").c_str(), 0600), 0);
  std::vector<std::string> skipped;
  TreePublishOptions o;
  o.skipped = [&](const std::string& path, const std::string& why) { skipped.push_back(why + ":" + path); };
  auto t = store_->PublishTree(src_, "", o);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->skipped, 1u);
  EXPECT_EQ(skipped, (std::vector<std::string>{"fifo:" + src_ + "/pipe"}));
  auto tree = store_->OpenTree(t->id);
  ASSERT_TRUE(tree.ok());
  ASSERT_EQ(tree->entries.size(), 1u);
}

TEST_F(TreeTest, ZeroRunsComeBackAsHoles) {
  std::vector<uint8_t> data(8 << 20, 0);
  auto noise = RandomBytes(4096, 4);
  std::copy(noise.begin(), noise.end(), data.begin());
  MakeFile(src_ + "/image", data, 0644, 1600000000000000000);
  ASSERT_TRUE(store_->PublishTree(src_, "img").ok());
  ASSERT_TRUE(store_->Restore("img", dir_ / "out").ok());
  struct stat st;
  ASSERT_EQ(::stat((dir_ / "out/image").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, static_cast<off_t>(data.size()));
  EXPECT_LT(static_cast<uint64_t>(st.st_blocks) * 512, 1u << 20);
  EXPECT_EQ(ReadFile(dir_ / "out/image"), data);
  RestoreOptions dense;
  dense.sparse = false;
  ASSERT_TRUE(store_->Restore("img", dir_ / "dense", dense).ok());
  ASSERT_EQ(::stat((dir_ / "dense/image").c_str(), &st), 0);
  EXPECT_GE(static_cast<uint64_t>(st.st_blocks) * 512, data.size());
}

TEST_F(TreeTest, ABatchCommitsTreesAndFilesAtOnce) {
  Populate();
  MakeFile(dir_ / "loose", {'l'}, 0644, 1);
  auto batch = store_->NewBatch();
  auto t = batch->AddTree(src_, "site");
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(batch->AddFile(dir_ / "loose", "loose").ok());
  EXPECT_TRUE(store_->Resolve("site").status().IsNotFound());  // nothing visible before the commit
  auto done = batch->Commit();
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ASSERT_EQ(done->size(), 2u);  // the tree and the file, not the tree's members
  EXPECT_EQ((*done)[0].id, t->id);
  EXPECT_EQ((*done)[0].version, 1);
  EXPECT_GT((*done)[0].new_bytes, 0u);
  EXPECT_EQ(*store_->Resolve("site"), t->id);
  EXPECT_TRUE(store_->Resolve("loose").ok());
}

TEST_F(TreeTest, ReadOnlyDirectoriesRestoreAndUpdate) {
  fs::create_directories(src_ + "/ro");
  MakeFile(src_ + "/ro/f", {'1'}, 0444, 1600000000000000000);
  ::chmod((src_ + "/ro").c_str(), 0555);
  SetMtime(src_ + "/ro", 1600000000000000001);
  ASSERT_TRUE(store_->PublishTree(src_, "ro").ok());
  ASSERT_TRUE(store_->Restore("ro", dir_ / "out").ok());
  EXPECT_EQ(Listing(dir_ / "out"), Listing(src_));
  // A new version of the file inside the read-only directory.
  ::chmod((src_ + "/ro").c_str(), 0755);
  ::chmod((src_ + "/ro/f").c_str(), 0644);
  MakeFile(src_ + "/ro/f", {'2'}, 0444, 1600000000000000005);
  ::chmod((src_ + "/ro").c_str(), 0555);
  SetMtime(src_ + "/ro", 1600000000000000001);
  ASSERT_TRUE(store_->PublishTree(src_, "ro").ok());
  auto r = store_->Restore("ro", dir_ / "out");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->files_written, 1u);
  EXPECT_EQ(Listing(dir_ / "out"), Listing(src_));
  ::chmod((dir_ / "out/ro").c_str(), 0755);  // so the fixture can clean up as any user
  ::chmod((src_ + "/ro").c_str(), 0755);
}

}  // namespace
}  // namespace chunkstore
