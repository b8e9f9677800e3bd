// SPDX-License-Identifier: Apache-2.0
// Store::Receive: a push (what CopyTo sends an http:// store) is taken in
// only when every chunk and every object's whole content match their ids,
// every tree decodes and every name points at something held; any
// forgery, damage or cut leaves the store as it was.
#include <cstdio>
#include <filesystem>
#include <functional>

#include "format/push_format.h"
#include "hash/digest.h"
#include "test_util.h"
#include "tree_util.h"

namespace chunkstore {
namespace {

namespace fs = std::filesystem;
using internal::Digest;
using internal::ManifestEntry;
using internal::PushWriter;
using internal::Sha256;
using testing::RandomBytes;

Digest IdOf(const std::vector<uint8_t>& b) { return Sha256::Of(b.data(), b.size()); }
Digest IdOf(const std::string& b) { return Sha256::Of(b.data(), b.size()); }

// A push written to memory through PushWriter (via a temporary file).
class Push {
 public:
  Push() : f_(std::tmpfile()), w_(f_) {}
  ~Push() { std::fclose(f_); }
  PushWriter& w() { return w_; }
  std::string Bytes() {
    std::fflush(f_);
    std::string s(static_cast<size_t>(w_.bytes()), '\0');
    std::rewind(f_);
    EXPECT_EQ(std::fread(s.data(), 1, s.size(), f_), s.size());
    return s;
  }

 private:
  std::FILE* f_;
  PushWriter w_;
};

Result<ReceiveReport> Take(Store& s, const std::string& bytes) {
  return s.Receive(
      [&bytes](uint64_t off, void* buf, size_t n) -> Status {
        if (off > bytes.size() || bytes.size() - off < n) return Status::IOError("read past the end");
        std::memcpy(buf, bytes.data() + off, n);
        return Status::OK();
      },
      bytes.size());
}

// Content cut into pieces of the given lengths.
struct Cut {
  std::vector<uint8_t> content;
  std::vector<std::vector<uint8_t>> pieces;
  std::vector<ManifestEntry> entries;
  Digest id;
  Cut(std::vector<uint8_t> c, const std::vector<size_t>& lengths) : content(std::move(c)) {
    size_t at = 0;
    for (size_t n : lengths) {
      pieces.emplace_back(content.begin() + at, content.begin() + at + n);
      entries.push_back({IdOf(pieces.back()), static_cast<uint32_t>(n)});
      at += n;
    }
    EXPECT_EQ(at, content.size());
    id = IdOf(content);
  }
  void PushAll(PushWriter& w, uint8_t flags = 0) const {
    for (size_t i = 0; i < pieces.size(); ++i) w.Chunk(entries[i].id, pieces[i].data(), entries[i].length);
    w.Object(id, flags, content.size(), entries);
  }
};

class ReceiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::Open(dir_ / "store", testing::SmallChunks());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }
  // What must not change when a push is refused.
  std::string State() {
    auto st = store_->Stats();
    EXPECT_TRUE(st.ok());
    auto names = store_->List();
    EXPECT_TRUE(names.ok());
    std::string out = std::to_string(st->objects) + "/" + std::to_string(st->chunks) + "/" +
                      std::to_string(st->names) + ":";
    for (const auto& n : *names) out += n.name + "@" + std::to_string(n.version) + "=" + n.id + " ";
    return out;
  }
  testing::TempDir dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(ReceiveTest, TakesVerifiedObjectsAndNamesAsOneChange) {
  Cut a(RandomBytes(30000, 1), {10000, 12000, 8000});
  Push p;
  a.PushAll(p.w());
  p.w().Whole(IdOf(std::string("small file")), 0, "small file");
  p.w().Name("data/a", a.id, 1600000000000000000);
  p.w().End();
  auto r = Take(*store_, p.Bytes());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->objects, 2u);
  EXPECT_EQ(r->chunks_written, 3u);
  EXPECT_EQ(r->bytes_written, 30000u);
  EXPECT_EQ(r->name_versions, 1u);
  auto back = testing::ReadObject(*store_, "data/a");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, a.content);
  auto small = testing::ReadObject(*store_, IdOf(std::string("small file")).ObjectId());
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  EXPECT_EQ(std::string(small->begin(), small->end()), "small file");
  auto h = store_->History("data/a");
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->size(), 1u);
  EXPECT_EQ((*h)[0].created, 1600000000000000000);
  // Range reads check the chain states the server computed.
  auto reader = store_->OpenReader("data/a");
  ASSERT_TRUE(reader.ok());
  std::vector<uint8_t> mid(5000);
  auto n = (*reader)->ReadAt(11000, mid.data(), mid.size());
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_TRUE(std::equal(mid.begin(), mid.end(), a.content.begin() + 11000));
  auto v = store_->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt());
}

TEST_F(ReceiveTest, ReadsTheChunksItHoldsToProveAnEdit) {
  Cut a(RandomBytes(30000, 2), {10000, 12000, 8000});
  {
    Push p;
    a.PushAll(p.w());
    p.w().Name("m", a.id, 0);
    p.w().End();
    ASSERT_TRUE(Take(*store_, p.Bytes()).ok());
  }
  std::vector<uint8_t> edited = a.content;
  edited[15000] ^= 1;
  Cut b(edited, {10000, 12000, 8000});
  Push p;
  p.w().Chunk(b.entries[1].id, b.pieces[1].data(), b.entries[1].length);  // only the changed chunk
  p.w().Object(b.id, 0, b.content.size(), b.entries);
  p.w().Name("m", b.id, 0);
  p.w().End();
  auto r = Take(*store_, p.Bytes());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->chunks_written, 1u);
  auto back = testing::ReadObject(*store_, "m");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, edited);
}

// Each push is refused, and the store is as it was.
TEST_F(ReceiveTest, RefusesForgeriesAndKeepsNothingOfThem) {
  Cut held(RandomBytes(20000, 3), {10000, 10000});
  {
    Push p;
    held.PushAll(p.w());
    p.w().Name("held", held.id, 0);
    p.w().End();
    ASSERT_TRUE(Take(*store_, p.Bytes()).ok());
  }
  Cut a(RandomBytes(24000, 4), {8000, 8000, 8000});
  const std::vector<uint8_t> other = RandomBytes(24000, 5);
  fs::create_directories(dir_ / "t");
  testing::MakeFile(dir_ / "t/f", RandomBytes(3000, 6), 0644, 1600000000000000000);
  auto tree_store = Store::Open(dir_ / "trees", testing::SmallChunks());
  ASSERT_TRUE(tree_store.ok());
  auto tree = (*tree_store)->PublishTree(dir_ / "t");
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  auto tree_bytes = testing::ReadObject(**tree_store, tree->id);
  ASSERT_TRUE(tree_bytes.ok());
  const std::string tree_content(tree_bytes->begin(), tree_bytes->end());

  enum Expect { kCorrupt, kMissing, kInvalid };
  struct Case {
    const char* what;
    std::function<void(PushWriter&)> write;
    Expect expect;
  };
  const std::vector<Case> cases = {
      {"a chunk whose bytes are not its id",
       [&](PushWriter& w) {
         std::vector<uint8_t> bad = a.pieces[0];
         bad[7] ^= 1;
         w.Chunk(a.entries[0].id, bad.data(), a.entries[0].length);
       },
       kCorrupt},
      {"an object whose content is its id but whose chunk claims another's",
       [&](PushWriter& w) {
         // The object hashes right; only the chunk's own hash shows that
         // its bytes are not what its id names (a poisoned chunk).
         std::vector<uint8_t> content = a.content;
         content[100] ^= 1;
         w.Chunk(a.entries[0].id, content.data(), a.entries[0].length);
         for (size_t i = 1; i < 3; ++i) w.Chunk(a.entries[i].id, a.pieces[i].data(), a.entries[i].length);
         w.Object(IdOf(content), 0, content.size(), a.entries);
         w.Name("poisoned", IdOf(content), 0);
       },
       kCorrupt},
      {"an object claiming another content's id",
       [&](PushWriter& w) {
         for (size_t i = 0; i < 3; ++i) w.Chunk(a.entries[i].id, a.pieces[i].data(), a.entries[i].length);
         w.Object(IdOf(other), 0, a.content.size(), a.entries);
         w.Name("forged", IdOf(other), 0);
       },
       kCorrupt},
      {"an object claiming a held object's id with other chunks",
       [&](PushWriter& w) {
         for (size_t i = 0; i < 2; ++i) w.Chunk(a.entries[i].id, a.pieces[i].data(), a.entries[i].length);
         std::vector<ManifestEntry> two(a.entries.begin(), a.entries.begin() + 2);
         w.Object(held.id, 0, 16000, two);
       },
       kCorrupt},
      {"an object with a chunk neither pushed nor held",
       [&](PushWriter& w) {
         w.Chunk(a.entries[0].id, a.pieces[0].data(), a.entries[0].length);
         w.Object(a.id, 0, a.content.size(), a.entries);
       },
       kMissing},
      {"an object listing a pushed chunk at another length",
       [&](PushWriter& w) {
         for (size_t i = 0; i < 3; ++i) w.Chunk(a.entries[i].id, a.pieces[i].data(), a.entries[i].length);
         std::vector<ManifestEntry> e = a.entries;
         e[0].length += 1;
         e[1].length -= 1;
         w.Object(a.id, 0, a.content.size(), e);
       },
       kCorrupt},
      {"a whole object that is not its id",
       [&](PushWriter& w) { w.Whole(IdOf(std::string("one")), 0, "two"); }, kCorrupt},
      {"a stream to cut that is not its id",
       [&](PushWriter& w) {
         w.SourceHeader(IdOf(other), 0, a.content.size());
         w.Raw(a.content.data(), a.content.size());
       },
       kCorrupt},
      {"a name for an object nowhere", [&](PushWriter& w) { w.Name("ghost", a.id, 0); }, kMissing},
      {"an invalid name",
       [&](PushWriter& w) {
         held.PushAll(w);
         w.Name(std::string("bad\0name", 8), held.id, 0);
       },
       kInvalid},
      {"a tree that is not one",
       [&](PushWriter& w) { a.PushAll(w, internal::kPushTree); }, kCorrupt},
      {"a tree whose files are nowhere",
       [&](PushWriter& w) { w.Whole(IdOf(tree_content), internal::kPushTree, tree_content); }, kMissing},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string before = State();
    Push p;
    c.write(p.w());
    p.w().End();
    auto r = Take(*store_, p.Bytes());
    ASSERT_FALSE(r.ok());
    const bool expected = c.expect == kCorrupt   ? r.status().IsCorruption()
                          : c.expect == kMissing ? r.status().IsNotFound()
                                                 : r.status().IsInvalidArgument();
    EXPECT_TRUE(expected) << r.status().ToString();
    EXPECT_EQ(State(), before);
    auto nothing = store_->OpenReader(a.id.ObjectId());
    EXPECT_FALSE(nothing.ok());
  }
  // The held object is still whole.
  auto back = testing::ReadObject(*store_, "held");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, held.content);
  auto v = store_->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt());
}

TEST_F(ReceiveTest, AStreamIsCutAsThisStoreCuts) {
  const std::vector<uint8_t> content = RandomBytes(100000, 9);
  Push p;
  p.w().SourceHeader(IdOf(content), 0, content.size());
  p.w().Raw(content.data(), content.size());
  p.w().Name("cut", IdOf(content), 0);
  p.w().End();
  auto r = Take(*store_, p.Bytes());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(r->chunks_written, 3u);  // SmallChunks: 16 KiB at most
  auto st = store_->Stat("cut");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->chunks, r->chunks_written);
  auto back = testing::ReadObject(*store_, "cut");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, content);
}

TEST_F(ReceiveTest, ATreeArrivesWithItsFiles) {
  fs::create_directories(dir_ / "t");
  const std::vector<uint8_t> file = RandomBytes(3000, 7);
  testing::MakeFile(dir_ / "t/f", file, 0644, 1600000000000000000);
  auto src = Store::Open(dir_ / "trees", testing::SmallChunks());
  ASSERT_TRUE(src.ok());
  auto tree = (*src)->PublishTree(dir_ / "t");
  ASSERT_TRUE(tree.ok());
  auto tree_bytes = testing::ReadObject(**src, tree->id);
  ASSERT_TRUE(tree_bytes.ok());
  const std::string content(tree_bytes->begin(), tree_bytes->end());
  Cut f(file, {1500, 1500});
  Push p;
  f.PushAll(p.w(), internal::kPushMember);
  p.w().Whole(IdOf(content), internal::kPushTree, content);
  p.w().Name("site", IdOf(content), 0);
  p.w().End();
  auto r = Take(*store_, p.Bytes());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto back = testing::ReadObject(*store_, "site:f");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, file);
}

TEST_F(ReceiveTest, ACutOrMalformedStreamIsRefusedWhole) {
  Cut a(RandomBytes(9000, 8), {4000, 5000});
  Push p;
  a.PushAll(p.w());
  p.w().Name("a", a.id, 0);
  p.w().End();
  const std::string whole = p.Bytes();
  const std::string before = State();
  for (size_t cut = 0; cut < whole.size(); ++cut) {
    auto r = Take(*store_, whole.substr(0, cut));
    ASSERT_FALSE(r.ok()) << "cut at " << cut;
    EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  }
  EXPECT_EQ(State(), before);
  auto bad = [&](std::string s, const char* what) {
    SCOPED_TRACE(what);
    auto r = Take(*store_, s);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
    EXPECT_EQ(State(), before);
  };
  bad(whole + "x", "a byte after the end");
  std::string count = whole;
  count[count.size() - 8] ^= 1;
  bad(count, "an end that counts other records");
  std::string magic = whole;
  magic[0] = 'X';
  bad(magic, "another magic");
  std::string kind = whole;
  kind[8] = 'Z';
  bad(kind, "an unknown record");
  // An object record that claims four billion chunks: refused before any
  // allocation for them.
  std::string huge(internal::kPushMagic, 8);
  huge += 'O';
  huge += std::string(32, '\x11');
  huge += '\0';
  huge += std::string("\x00\x00\x00\x00\x00\x00\x00\x01", 8);
  huge += std::string("\xff\xff\xff\xff", 4);
  bad(huge, "an absurd chunk count");
  // And the whole stream is still taken.
  auto r = Take(*store_, whole);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NE(State(), before);
}

}  // namespace
}  // namespace chunkstore
