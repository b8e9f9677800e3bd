// SPDX-License-Identifier: Apache-2.0
// The tree encoding (format/tree.h): a pinned known answer, round trips,
// and every way a crafted tree must be refused.
#include <gtest/gtest.h>

#include <string>

#include "format/change_set.h"
#include "format/tree.h"
#include "hash/digest.h"

namespace chunkstore {
namespace {

using internal::Digest;
using internal::TreeData;
using internal::TreeNode;

Digest Id(uint8_t fill) {
  Digest d;
  d.bytes.fill(fill);
  return d;
}

TreeData Sample() {
  TreeData t;
  t.mode = 0755;
  t.mtime_ns = 1700000000123456789;
  TreeNode f;
  f.type = EntryType::kFile;
  f.name = "a.txt";
  f.mode = 0644;
  f.mtime_ns = 1600000000000000001;
  f.size = 6;
  f.id = Id(0x11);
  TreeNode d;
  d.type = EntryType::kDirectory;
  d.name = "sub";
  d.id = Id(0x22);
  TreeNode l;
  l.type = EntryType::kSymlink;
  l.name = "z-link";
  l.mtime_ns = -5;  // before 1970
  l.target = "../a.txt";
  t.entries = {f, d, l};
  return t;
}

// The bytes of an entry, written by hand (no checks), for crafted trees.
void Put(std::string& s, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
}
std::string Header(uint32_t mode, uint32_t count) {
  std::string s("CKTREE1\n", 8);
  Put(s, mode, 4);
  Put(s, 0, 8);
  Put(s, count, 4);
  return s;
}
void RawFile(std::string& s, const std::string& name, uint32_t mode = 0644, uint64_t size = 1, uint8_t type = 1) {
  Put(s, type, 1);
  Put(s, name.size(), 2);
  s += name;
  Put(s, mode, 4);
  Put(s, 0, 8);
  Put(s, size, 8);
  s.append(32, '\x11');
}

TEST(TreeFormat, KnownAnswerIsPinned) {
  // The encoding is part of every tree's id: changing it changes every id.
  // These bytes were written by an independent encoder from the layout in
  // docs/format.md ("Trees").
  auto bytes = internal::EncodeTree(Sample());
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(internal::HexEncode(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size()),
            "434b54524545310aed01000015cd853dfe9c971703000000010500612e747874a40100000100a0d8855734160600000000"
            "000000111111111111111111111111111111111111111111111111111111111111111102030073756222222222222222222222"
            "222222222222222222222222222222222222222222220306007a2d6c696e6bfbffffffffffffff08002e2e2f612e747874");
  EXPECT_EQ(internal::Sha256::Of(bytes->data(), bytes->size()).Hex(),
            "f2ad2533c8a0972a752218d7d70b74d780cd3dd5c33aa8fa4b98c1b574e9490f");
}

TEST(TreeFormat, RoundTripsAndListsRefs) {
  auto bytes = internal::EncodeTree(Sample());
  ASSERT_TRUE(bytes.ok());
  auto back = internal::DecodeTree(*bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->mode, 0755u);
  EXPECT_EQ(back->mtime_ns, 1700000000123456789);
  ASSERT_EQ(back->entries.size(), 3u);
  EXPECT_EQ(back->entries[0].name, "a.txt");
  EXPECT_EQ(back->entries[0].size, 6u);
  EXPECT_EQ(back->entries[0].id, Id(0x11));
  EXPECT_EQ(back->entries[1].type, EntryType::kDirectory);
  EXPECT_EQ(back->entries[2].target, "../a.txt");
  EXPECT_EQ(back->entries[2].mtime_ns, -5);
  EXPECT_EQ(internal::TreeRefs(*back), (std::vector<Digest>{Id(0x11), Id(0x22)}));
  // Encoding again gives the same bytes: one directory, one encoding.
  EXPECT_EQ(*internal::EncodeTree(*back), *bytes);
  // An empty directory is a tree too.
  TreeData empty;
  auto e = internal::EncodeTree(empty);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(internal::DecodeTree(*e).ok());
  EXPECT_TRUE(internal::TreeRefs(*internal::DecodeTree(*e)).empty());
}

// The smallest entries are symlinks with a one-byte name and target (15
// bytes, less than a directory entry's 36): a tree of only those decodes,
// and one byte short of them does not.
TEST(TreeFormat, ATreeOfTheSmallestEntriesDecodes) {
  TreeData t;
  t.mode = 0755;
  for (char c = 'a'; c <= 'z'; ++c) {
    TreeNode l;
    l.type = EntryType::kSymlink;
    l.name = std::string(1, c);
    l.target = "t";
    t.entries.push_back(l);
  }
  auto bytes = internal::EncodeTree(t);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(bytes->size(), 8 + 4 + 8 + 4 + 26 * 15u);
  auto back = internal::DecodeTree(*bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->entries.size(), 26u);
  EXPECT_EQ(back->entries[25].name, "z");
  EXPECT_EQ(back->entries[25].target, "t");
  EXPECT_TRUE(internal::DecodeTree(bytes->substr(0, bytes->size() - 1)).status().IsCorruption());
}

TEST(TreeFormat, TheEncoderRefusesWhatTheDecoderWould) {
  for (const std::string& bad : {std::string(), std::string("."), std::string(".."), std::string("a/b"),
                                 std::string("nul\0x", 5), std::string(256, 'n')}) {
    TreeData t = Sample();
    t.entries[0].name = bad;
    EXPECT_TRUE(internal::EncodeTree(t).status().IsInvalidArgument()) << bad;
  }
  TreeData dup = Sample();
  dup.entries[1].name = dup.entries[0].name;
  EXPECT_TRUE(internal::EncodeTree(dup).status().IsInvalidArgument());
  TreeData order = Sample();
  std::swap(order.entries[0], order.entries[1]);
  EXPECT_TRUE(internal::EncodeTree(order).status().IsInvalidArgument());
  TreeData mode = Sample();
  mode.entries[0].mode = 0100644;  // the file type bits are not a mode
  EXPECT_TRUE(internal::EncodeTree(mode).status().IsInvalidArgument());
  TreeData target = Sample();
  target.entries[2].target.clear();
  EXPECT_TRUE(internal::EncodeTree(target).status().IsInvalidArgument());
}

TEST(TreeFormat, CraftedTreesAreCorruption) {
  struct Case {
    std::string what, bytes;
  };
  std::vector<Case> cases;
  auto one = [&](const std::string& what, const std::string& name, uint32_t mode = 0644, uint8_t type = 1) {
    std::string s = Header(0755, 1);
    RawFile(s, name, mode, 1, type);
    cases.push_back({what, s});
  };
  one("dot-dot", "..");
  one("dot", ".");
  one("slash", "../../etc/passwd");
  one("absolute", "/etc/passwd");
  one("nul", std::string("a\0b", 3));
  one("empty name", "");
  one("type bits in mode", "a", 0100644);
  one("device node", "sda", 0644, 4);
  one("unknown type 0", "a", 0644, 0);
  {
    std::string s = Header(0755, 2);
    RawFile(s, "same");
    RawFile(s, "same");
    cases.push_back({"duplicate", s});
  }
  {
    std::string s = Header(0755, 2);
    RawFile(s, "b");
    RawFile(s, "a");
    cases.push_back({"out of order", s});
  }
  {
    std::string s = Header(0755, 1);
    RawFile(s, "a");
    s += "x";
    cases.push_back({"trailing bytes", s});
  }
  {
    std::string s = Header(0755, 1);
    RawFile(s, "a");
    s.resize(s.size() - 1);
    cases.push_back({"truncated", s});
  }
  cases.push_back({"count beyond the bytes", Header(0755, 0xffffffffu)});
  cases.push_back({"dir mode with type bits", Header(040755, 0)});
  cases.push_back({"no magic", std::string("CKTREE2\n") + Header(0755, 0).substr(8)});
  {
    std::string s = Header(0755, 1);
    Put(s, 3, 1);
    Put(s, 1, 2);
    s += "l";
    Put(s, 0, 8);
    Put(s, 0, 2);  // an empty target
    cases.push_back({"empty symlink target", s});
  }
  {
    std::string s = Header(0755, 1);
    Put(s, 3, 1);
    Put(s, 1, 2);
    s += "l";
    Put(s, 0, 8);
    Put(s, 3, 2);
    s += std::string("a\0b", 3);
    cases.push_back({"NUL in a target", s});
  }
  for (const Case& c : cases) {
    auto t = internal::DecodeTree(c.bytes);
    EXPECT_TRUE(t.status().IsCorruption()) << c.what << ": " << t.status().ToString();
  }
}

TEST(TreeFormat, ChangeSetsCarryTreesAndTheirRefs) {
  internal::ChangeSet c;
  internal::ObjectRow plain;
  plain.id = Id(1);
  plain.size = 3;
  plain.manifest = "abc";
  internal::ObjectRow tree;
  tree.id = Id(2);
  tree.size = 5;
  tree.manifest = "trees";
  tree.tree = true;
  tree.refs = {Id(1), Id(3)};
  c.objects = {plain, tree};
  const std::string bytes = internal::EncodeChangeSet(c);
  auto back = internal::DecodeChangeSet(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->objects.size(), 2u);
  EXPECT_FALSE(back->objects[0].tree);
  EXPECT_TRUE(back->objects[1].tree);
  EXPECT_EQ(back->objects[1].refs, tree.refs);
  EXPECT_TRUE(internal::NeedsCurrentFormat(*back));
  // Without a tree the encoding is the one older versions read.
  internal::ChangeSet old;
  old.objects = {plain};
  EXPECT_EQ(internal::EncodeChangeSet(old)[8], 0);
  EXPECT_FALSE(internal::NeedsCurrentFormat(old));
  internal::ChangeSet at;
  at.names.push_back({"node_modules/@types", Id(1), 0, 0});
  EXPECT_TRUE(internal::NeedsCurrentFormat(at));
  EXPECT_TRUE(internal::DecodeChangeSet(internal::EncodeChangeSet(at)).ok());
}

TEST(TreeFormat, ChangeSetsWithMalformedRefsAreCorruption) {
  internal::ChangeSet c;
  internal::ObjectRow tree;
  tree.id = Id(2);
  tree.tree = true;
  tree.refs = {Id(3), Id(1)};  // not sorted
  c.objects = {tree};
  EXPECT_TRUE(internal::DecodeChangeSet(internal::EncodeChangeSet(c)).status().IsCorruption());
  c.objects[0].refs = {Id(1), Id(1)};  // repeated
  EXPECT_TRUE(internal::DecodeChangeSet(internal::EncodeChangeSet(c)).status().IsCorruption());
  c.objects[0].refs = {Id(1)};
  c.objects[0].tree = false;  // refs on a plain object
  internal::ObjectRow other = tree;
  other.id = Id(9);
  other.refs = {};
  c.objects.push_back(other);  // keeps the kinds flag set
  EXPECT_TRUE(internal::DecodeChangeSet(internal::EncodeChangeSet(c)).status().IsCorruption());
}

}  // namespace
}  // namespace chunkstore
