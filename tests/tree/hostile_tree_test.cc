// SPDX-License-Identifier: Apache-2.0
// Trees are input like any other: trees forged into a store's log (what a
// writer with access to its files could do) and destinations holding
// symlinks that point elsewhere. A restore reports them and never writes
// outside its destination.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "log_forge.h"
#include "test_util.h"
#include "tree/fs.h"
#include "tree_util.h"

namespace chunkstore {
namespace {

namespace fs = std::filesystem;
using testing::MakeFile;
using testing::ReadFile;

void Put(std::string& s, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
}

// A tree's bytes with the given entries, written without any check: each
// entry is (type, name, object) with a file's fields filled in.
std::string RawTree(const std::vector<std::tuple<uint8_t, std::string, internal::Digest, uint64_t>>& entries) {
  std::string s("CKTREE1\n", 8);
  Put(s, 0755, 4);
  Put(s, 0, 8);
  Put(s, entries.size(), 4);
  for (const auto& [type, name, id, size] : entries) {
    Put(s, type, 1);
    Put(s, name.size(), 2);
    s += name;
    if (type == 1 || type == 4) {
      Put(s, 0644, 4);
      Put(s, 0, 8);
      Put(s, size, 8);
    }
    s.append(reinterpret_cast<const char*>(id.bytes.data()), 32);
  }
  return s;
}

class HostileTree : public ::testing::Test {
 protected:
  // Publishes bytes as a plain object named name, then forges the log so
  // that the store takes it for a tree naming refs, and rebuilds the index.
  void ForgeTree(const std::string& bytes, const std::string& name, const std::vector<internal::Digest>& refs) {
    {
      auto s = Store::Open(store_dir());
      ASSERT_TRUE(s.ok());
      auto p = (*s)->PublishBytes(bytes.data(), bytes.size(), name);
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      forged_ = *internal::Digest::FromHex(p->id.substr(7));
    }
    testing::RewriteLog(store_dir(), [&](internal::ChangeSet& c) {
      for (auto& o : c.objects)
        if (o.id == forged_) {
          o.tree = true;
          o.refs = refs;
        }
    });
    Options o;
    o.rebuild_index = true;
    auto s = Store::Open(store_dir(), o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }
  std::string store_dir() { return dir_ / "store"; }
  // A file the store holds, for forged entries to name.
  internal::Digest Victim() {
    auto s = Store::Open(store_dir());
    EXPECT_TRUE(s.ok());
    auto p = (*s)->PublishBytes("secret", 6);
    EXPECT_TRUE(p.ok());
    return *internal::Digest::FromHex(p->id.substr(7));
  }

  testing::TempDir dir_;
  std::unique_ptr<Store> store_;
  internal::Digest forged_;
};

TEST_F(HostileTree, ForgedNamesAreRefusedAndNothingEscapes) {
  const internal::Digest victim = Victim();
  struct Case {
    std::string what, bytes;
  };
  const std::vector<Case> cases = {
      {"dot-dot", RawTree({{1, "..", victim, 6}})},
      {"a path", RawTree({{1, "../escape", victim, 6}})},
      {"absolute", RawTree({{1, "/tmp/escape", victim, 6}})},
      {"dot", RawTree({{2, ".", victim, 0}})},
      {"empty", RawTree({{1, "", victim, 6}})},
      {"nul", RawTree({{1, std::string("esc\0ape", 7), victim, 6}})},
      {"twice", RawTree({{1, "same", victim, 6}, {1, "same", victim, 6}})},
      {"a device", RawTree({{4, "sda", victim, 0}})},
  };
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string name = "evil" + std::to_string(n++);
    ForgeTree(c.bytes, name, {victim});
    const std::string dest = dir_ / ("out/" + name);
    auto r = store_->Restore(name, dest);
    EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
    EXPECT_FALSE(fs::exists(dir_ / "escape"));
    EXPECT_FALSE(fs::exists(dir_ / "out/escape"));
    EXPECT_FALSE(fs::exists("/tmp/escape"));
    if (fs::exists(dest)) {
      EXPECT_TRUE(fs::is_empty(dest));
    }
    EXPECT_TRUE(store_->OpenTree(name).status().IsCorruption());
    auto v = store_->Verify();
    ASSERT_TRUE(v.ok());
    bool bad_tree = false;
    for (const auto& p : v->problems) bad_tree = bad_tree || (p.kind == "bad-tree" && p.object_id == forged_.ObjectId());
    EXPECT_TRUE(bad_tree);
    store_.reset();
  }
}

TEST_F(HostileTree, ForgedRefsAndSizesAreCaught) {
  const internal::Digest victim = Victim();
  internal::Digest other = victim;
  other.bytes[0] ^= 1;  // an object the store does not have
  // A tree whose recorded refs leave out what it lists: gc would free it.
  ForgeTree(RawTree({{1, "file", victim, 6}}), "hidden", {});
  auto v = store_->Verify();
  ASSERT_TRUE(v.ok());
  ASSERT_FALSE(v->problems.empty());
  EXPECT_EQ(v->problems[0].kind, "bad-tree");
  store_.reset();
  // One that names an object the store lacks.
  ForgeTree(RawTree({{1, "file", other, 6}}), "dangling", {other});
  v = store_->Verify();
  ASSERT_TRUE(v.ok());
  bool dangling = false;
  for (const auto& p : v->problems) dangling = dangling || p.kind == "dangling-tree-entry";
  EXPECT_TRUE(dangling);
  EXPECT_TRUE(store_->Restore("dangling", dir_ / "out1").status().IsNotFound());
  store_.reset();
  // One that gives a file another size than its object has.
  ForgeTree(RawTree({{1, "file", victim, 600}}), "sized", {victim});
  auto r = store_->Restore("sized", dir_ / "out2");
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_FALSE(fs::exists(dir_ / "out2/file"));
  store_.reset();
  // A directory entry that names a plain object.
  ForgeTree(RawTree({{2, "dir", victim, 0}}), "notatree", {victim});
  r = store_->Restore("notatree", dir_ / "out3");
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(fs::exists(dir_ / "out3/dir/secret"));
}

// A restore opens the readers of a directory's files many at a time: an
// entry whose object is missing, deep in a long directory, still fails the
// restore with its own path, and no file is left under its name.
TEST_F(HostileTree, AMissingObjectDeepInALongDirectoryIsNamed) {
  const internal::Digest victim = Victim();
  internal::Digest other = victim;
  other.bytes[0] ^= 1;
  std::vector<std::tuple<uint8_t, std::string, internal::Digest, uint64_t>> entries;
  for (int i = 0; i < 150; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "f%03d", i);
    entries.emplace_back(1, name, i == 100 ? other : victim, 6);
  }
  std::vector<internal::Digest> refs = {victim, other};
  if (refs[1].bytes < refs[0].bytes) std::swap(refs[0], refs[1]);
  ForgeTree(RawTree(entries), "long", refs);
  auto r = store_->Restore("long", dir_ / "out");
  ASSERT_TRUE(r.status().IsNotFound()) << r.status().ToString();
  EXPECT_NE(r.status().ToString().find("f100"), std::string::npos) << r.status().ToString();
  EXPECT_FALSE(fs::exists(dir_ / "out/f100"));
  // The entries before it in the same run of opens were written whole.
  EXPECT_EQ(ReadFile(dir_ / "out/f099"), std::vector<uint8_t>({'s', 'e', 'c', 'r', 'e', 't'}));
}

class HostileDest : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = dir_ / "src";
    fs::create_directories(src_ + "/sub");
    MakeFile(src_ + "/a.txt", {'a'}, 0644, 1600000000000000000);
    MakeFile(src_ + "/sub/f", {'f'}, 0644, 1600000000000000000);
    outside_ = dir_ / "outside";
    fs::create_directories(outside_);
    MakeFile(outside_ + "/target", {'k', 'e', 'e', 'p'}, 0644, 1);
    auto s = Store::Open(dir_ / "store");
    ASSERT_TRUE(s.ok());
    store_ = std::move(*s);
    ASSERT_TRUE(store_->PublishTree(src_, "t").ok());
  }
  testing::TempDir dir_;
  std::string src_, outside_;
  std::unique_ptr<Store> store_;
};

TEST_F(HostileDest, SymlinksInTheDestinationAreReplacedNotFollowed) {
  const std::string out = dir_ / "out";
  fs::create_directories(out);
  fs::create_directory_symlink(outside_, out + "/sub");       // where the tree has a directory
  fs::create_symlink(outside_ + "/target", out + "/a.txt");   // where it has a file
  auto r = store_->Restore("t", out);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(fs::exists(outside_ + "/f"));
  EXPECT_EQ(ReadFile(outside_ + "/target"), (std::vector<uint8_t>{'k', 'e', 'e', 'p'}));
  EXPECT_TRUE(fs::is_directory(fs::symlink_status(out + "/sub")));
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(out + "/a.txt")));
  EXPECT_EQ(testing::Listing(out), testing::Listing(src_));
}

// A link whose target looks exactly like the tree's file (same size,
// mtime and mode) is still a link: it is replaced, not taken as the file.
TEST_F(HostileDest, ALinkToALookAlikeFileIsNotTakenAsTheFile) {
  const std::string out = dir_ / "out";
  fs::create_directories(out);
  MakeFile(outside_ + "/twin", {'z'}, 0644, 1600000000000000000);
  fs::create_symlink(outside_ + "/twin", out + "/a.txt");
  auto r = store_->Restore("t", out);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(out + "/a.txt")));
  EXPECT_EQ(ReadFile(out + "/a.txt"), (std::vector<uint8_t>{'a'}));
  EXPECT_EQ(ReadFile(outside_ + "/twin"), (std::vector<uint8_t>{'z'}));
  EXPECT_EQ(testing::Listing(out), testing::Listing(src_));
}

// A file in the destination that is a hard link to one outside it, with
// the tree's size and mtime but another mode: setting the mode would set
// it on the file outside too, so the name is written anew instead.
TEST_F(HostileDest, AHardLinkToAFileOutsideKeepsItsModeThere) {
  const std::string out = dir_ / "out";
  fs::create_directories(out);
  MakeFile(outside_ + "/twin", {'a'}, 0600, 1600000000000000000);
  fs::create_hard_link(outside_ + "/twin", out + "/a.txt");
  auto r = store_->Restore("t", out);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(fs::status(outside_ + "/twin").permissions(), fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(fs::hard_link_count(outside_ + "/twin"), 1u);
  EXPECT_EQ(testing::Listing(out), testing::Listing(src_));
  EXPECT_EQ(r->metadata_fixed, 0u);
  EXPECT_EQ(r->files_written, 2u);
}

// With verify_existing, a file with the tree's size and mtime but another
// mode and other bytes is rewritten: its mode is not fixed first.
TEST_F(HostileDest, VerifyingFixesNoModeOnAFileWhoseContentDiffers) {
  const std::string out = dir_ / "out";
  ASSERT_TRUE(store_->Restore("t", out).ok());
  MakeFile(out + "/a.txt", {'b'}, 0600, 1600000000000000000);
  RestoreOptions verify;
  verify.verify_existing = true;
  auto r = store_->Restore("t", out, verify);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->files_written, 1u);
  EXPECT_EQ(r->metadata_fixed, 0u);
  EXPECT_EQ(ReadFile(out + "/a.txt"), (std::vector<uint8_t>{'a'}));
  EXPECT_EQ(testing::Listing(out), testing::Listing(src_));
  // Right bytes, wrong mode: fixed in place, as the same file.
  struct stat before;
  ASSERT_EQ(::chmod((out + "/a.txt").c_str(), 0600), 0);
  ASSERT_EQ(::stat((out + "/a.txt").c_str(), &before), 0);
  r = store_->Restore("t", out, verify);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->files_written, 0u);
  EXPECT_EQ(r->metadata_fixed, 1u);
  struct stat after;
  ASSERT_EQ(::stat((out + "/a.txt").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(testing::Listing(out), testing::Listing(src_));
}

TEST_F(HostileDest, ALinkTheRestoreMadeIsNeverWrittenThrough) {
  // Version 2 has a symlink where version 1 has a directory with a file;
  // restoring 2 then 1 over the same destination must replace the link.
  fs::remove_all(src_ + "/sub");
  fs::create_directory_symlink(outside_, src_ + "/sub");
  ASSERT_TRUE(store_->PublishTree(src_, "t").ok());
  const std::string out = dir_ / "out";
  ASSERT_TRUE(store_->Restore("t@2", out).ok());
  EXPECT_TRUE(fs::is_symlink(out + "/sub"));
  auto r = store_->Restore("t@1", out);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(fs::exists(outside_ + "/f"));
  EXPECT_TRUE(fs::is_directory(fs::symlink_status(out + "/sub")));
  EXPECT_EQ(ReadFile(out + "/sub/f"), (std::vector<uint8_t>{'f'}));
}

TEST_F(HostileDest, DamagedContentLeavesNoFileUnderItsName) {
  // A big file's chunk damaged: the restore fails naming it, and the file
  // is not left half written.
  MakeFile(src_ + "/big", testing::RandomBytes(3 << 20, 5), 0644, 1600000000000000000);
  auto t = store_->PublishTree(src_, "big");
  ASSERT_TRUE(t.ok());
  auto chunks = store_->Chunks("big:big");
  ASSERT_TRUE(chunks.ok());
  store_.reset();
  // The largest pack holds the big file's chunk.
  fs::path pack;
  uintmax_t size = 0;
  for (auto& e : fs::directory_iterator(dir_ / "store/packs"))
    if (e.file_size() > size) {
      size = e.file_size();
      pack = e.path();
    }
  {
    std::fstream f(pack, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    f.put('\x5a');
    f.seekp(static_cast<std::streamoff>(size / 2 + 1));
    f.put('\xa5');
  }
  auto s = Store::Open(dir_ / "store");
  ASSERT_TRUE(s.ok());
  auto r = (*s)->Restore("big", dir_ / "out");
  ASSERT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("big"), std::string::npos) << r.status().message();
  EXPECT_FALSE(r.status().object_id().empty());
  EXPECT_FALSE(fs::exists(dir_ / "out/big"));
  for (auto& e : fs::directory_iterator(dir_ / "out"))
    EXPECT_EQ(e.path().filename().string().find(".chunkstore-"), std::string::npos) << e.path();
}

// What a restore finds in its destination can change between its look and
// its next step: the mode of a file it found unchanged is set only on that
// same file, never through a link or on a FIFO swapped in under its name,
// and comparing content never waits on a FIFO.
TEST(RestoreFs, AFileSwappedForALinkOrAFifoIsNeitherChangedNorWaitedOn) {
  testing::TempDir dir;
  const std::string d = dir / "d";
  fs::create_directories(d);
  MakeFile(d + "/f", {'a', 'b', 'c'}, 0644, 1);
  MakeFile(d + "/outside", {'o'}, 0644, 1);
  struct stat seen;
  ASSERT_EQ(::stat((d + "/f").c_str(), &seen), 0);
  internal::Fd dfd(::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_GE(dfd.get(), 0);
  const internal::Digest abc = internal::Sha256::Of("abc", 3);
  auto mode_of = [&](const std::string& name) {
    struct stat st;
    EXPECT_EQ(::stat((d + "/" + name).c_str(), &st), 0);
    return st.st_mode & 07777;
  };
  fs::rename(d + "/f", d + "/kept");  // kept, so its inode is not reused

  fs::create_symlink(d + "/outside", d + "/f");
  auto r = internal::SetModeIfSame(dfd.get(), "f", "f", seen.st_dev, seen.st_ino, 0600);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(*r);
  EXPECT_EQ(mode_of("outside"), 0644u);
  auto same = internal::HasContent(dfd.get(), "f", "f", 1, internal::Sha256::Of("o", 1));
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_FALSE(*same);
  fs::remove(d + "/f");

  ASSERT_EQ(::mkfifo((d + "/f").c_str(), 0644), 0);
  r = internal::SetModeIfSame(dfd.get(), "f", "f", seen.st_dev, seen.st_ino, 0600);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(*r);
  EXPECT_EQ(mode_of("f"), 0644u);
  same = internal::HasContent(dfd.get(), "f", "f", 0, internal::Sha256::Of("", 0));
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_FALSE(*same);
  fs::remove(d + "/f");

  MakeFile(d + "/f", {'a', 'b', 'c'}, 0644, 1);  // the same bytes, another file
  r = internal::SetModeIfSame(dfd.get(), "f", "f", seen.st_dev, seen.st_ino, 0600);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(*r);
  EXPECT_EQ(mode_of("f"), 0644u);
  same = internal::HasContent(dfd.get(), "f", "f", 3, abc);
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(*same);
  fs::remove(d + "/f");

  fs::rename(d + "/kept", d + "/f");
  // The content check with what was seen: another file with the same
  // bytes is not it; the file itself is hashed and given its mode through
  // the same descriptor; a file with a second name is never it.
  MakeFile(d + "/g", {'a', 'b', 'c'}, 0644, 1);
  const internal::SeenFile as_seen{seen.st_dev, seen.st_ino, true, 0640};
  same = internal::HasContent(dfd.get(), "g", "g", 3, abc, &as_seen);
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(*same);
  EXPECT_EQ(mode_of("g"), 0644u);
  fs::create_hard_link(d + "/f", d + "/f2");
  same = internal::HasContent(dfd.get(), "f", "f", 3, abc, &as_seen);
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(*same);
  r = internal::SetModeIfSame(dfd.get(), "f", "f", seen.st_dev, seen.st_ino, 0600);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);
  EXPECT_EQ(mode_of("f"), 0644u);
  fs::remove(d + "/f2");
  same = internal::HasContent(dfd.get(), "f", "f", 3, abc, &as_seen);
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(*same);
  EXPECT_EQ(mode_of("f"), 0640u);
  r = internal::SetModeIfSame(dfd.get(), "f", "f", seen.st_dev, seen.st_ino, 0600);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(*r);
  EXPECT_EQ(mode_of("f"), 0600u);
}

}  // namespace
}  // namespace chunkstore
