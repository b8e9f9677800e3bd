// SPDX-License-Identifier: Apache-2.0
// Store::CopyTo: only what the destination lacks, names with their
// history, trees with what they name, resumable, and refusing damage.
#include <cstring>
#include <filesystem>

#include "bucket/log_keys.h"
#include "format/change_set.h"
#include "format/manifest.h"
#include "format/pack_format.h"
#include "hash/chain.h"
#include "hash/digest.h"
#include "test_util.h"
#include "tree_util.h"

namespace chunkstore {
namespace {

namespace fs = std::filesystem;
using testing::RandomBytes;

class CopyTest : public ::testing::Test {
 protected:
  std::unique_ptr<Store> Open(const std::string& name, Options o = testing::SmallChunks()) {
    auto s = Store::Open(dir_ / name, o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  // A source with names of several versions, a tree, a small (inline)
  // object and one published without a name.
  void Fill(Store& s) {
    data1_ = RandomBytes(200000, 1);
    data2_ = data1_;
    data2_[100000] ^= 1;  // a one-byte edit
    ASSERT_TRUE(s.PublishBytes(data1_.data(), data1_.size(), "model").ok());
    ASSERT_TRUE(s.PublishBytes(data2_.data(), data2_.size(), "model").ok());
    ASSERT_TRUE(s.PublishBytes("tiny", 4, "notes/tiny").ok());
    auto pinned = s.PublishBytes("unnamed", 7);
    ASSERT_TRUE(pinned.ok());
    pinned_id_ = pinned->id;
    fs::create_directories(dir_ / "src/sub");
    testing::MakeFile(dir_ / "src/a", RandomBytes(50000, 3), 0640, 1600000000000000000);
    testing::MakeFile(dir_ / "src/sub/b", RandomBytes(10, 4), 0755, 1600000000000000001);
    fs::create_symlink("a", dir_ / "src/link");
    ASSERT_TRUE(s.PublishTree(dir_ / "src", "site").ok());
  }
  testing::TempDir dir_;
  std::vector<uint8_t> data1_, data2_;
  std::string pinned_id_;
};

TEST_F(CopyTest, EverythingArrivesOnceAndAgainNothing) {
  auto a = Open("a");
  Fill(*a);
  auto b = Open("b");
  auto r = a->CopyTo(*b);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(r->chunks_sent, 0u);
  EXPECT_EQ(r->name_versions, 4u);  // model@1, model@2, notes/tiny, site
  EXPECT_TRUE(r->diverged.empty());
  // The same names, versions, times and objects.
  for (const std::string name : {"model", "notes/tiny", "site"}) {
    auto ha = a->History(name), hb = b->History(name);
    ASSERT_TRUE(ha.ok() && hb.ok()) << name;
    ASSERT_EQ(ha->size(), hb->size()) << name;
    for (size_t i = 0; i < ha->size(); ++i) {
      EXPECT_EQ((*ha)[i].version, (*hb)[i].version);
      EXPECT_EQ((*ha)[i].id, (*hb)[i].id);
      EXPECT_EQ((*ha)[i].created, (*hb)[i].created);
    }
  }
  EXPECT_EQ(*testing::ReadObject(*b, "model@1"), data1_);
  EXPECT_EQ(*testing::ReadObject(*b, "model"), data2_);
  EXPECT_TRUE(*b->Exists(pinned_id_));
  auto info = b->Stat(pinned_id_);
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(info->pinned);
  ASSERT_TRUE(b->Restore("site", dir_ / "out").ok());
  EXPECT_EQ(testing::Listing(dir_ / "out"), testing::Listing(dir_ / "src"));
  auto v = b->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->corrupt()) << (v->problems.empty() ? "" : v->problems[0].message);
  // Again: nothing to send, nothing to commit.
  auto again = a->CopyTo(*b);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->chunks_sent, 0u);
  EXPECT_EQ(again->name_versions, 0u);
  EXPECT_EQ(again->commits, 0u);
  // The destination's gc keeps all of it.
  ASSERT_TRUE(b->Gc(testing::GcNow()).ok());
  EXPECT_TRUE(b->Restore("site", dir_ / "out2").ok());
  EXPECT_EQ(*testing::ReadObject(*b, "model@1"), data1_);
}

TEST_F(CopyTest, AnEditedVersionSendsAboutOneChunk) {
  auto a = Open("a");
  auto v1 = RandomBytes(1 << 20, 7);
  ASSERT_TRUE(a->PublishBytes(v1.data(), v1.size(), "big").ok());
  auto b = Open("b");
  ASSERT_TRUE(a->CopyTo(*b, {"big"}).ok());
  auto v2 = v1;
  v2[500000] ^= 0x40;
  ASSERT_TRUE(a->PublishBytes(v2.data(), v2.size(), "big").ok());
  auto r = a->CopyTo(*b, {"big"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_LE(r->chunks_sent, 2u);
  EXPECT_GT(r->chunks_skipped, 10u);
  EXPECT_EQ(r->name_versions, 1u);
  EXPECT_EQ(*testing::ReadObject(*b, "big@2"), v2);
}

TEST_F(CopyTest, ADivergedHistoryKeepsTheDestinationsAndAddsTheSources) {
  auto a = Open("a");
  ASSERT_TRUE(a->PublishBytes("one", 3, "n").ok());
  ASSERT_TRUE(a->PublishBytes("two", 3, "n").ok());
  auto b = Open("b");
  ASSERT_TRUE(b->PublishBytes("other", 5, "n").ok());
  auto r = a->CopyTo(*b, {"n"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->diverged, (std::vector<std::string>{"n"}));
  auto h = b->History("n");
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->size(), 3u);
  EXPECT_EQ(*testing::ReadObject(*b, "n@1"), (std::vector<uint8_t>{'o', 't', 'h', 'e', 'r'}));
  EXPECT_EQ(*testing::ReadObject(*b, "n@3"), (std::vector<uint8_t>{'t', 'w', 'o'}));
  // A history that is the beginning of the source's is continued with the
  // same numbers.
  auto c = Open("c");
  ASSERT_TRUE(c->PublishBytes("one", 3, "n").ok());
  r = a->CopyTo(*c, {"n"});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->diverged.empty());
  EXPECT_EQ(*testing::ReadObject(*c, "n@2"), (std::vector<uint8_t>{'t', 'w', 'o'}));
}

TEST_F(CopyTest, AnInterruptedCopyKeepsItsCommitsAndARerunSendsTheRest) {
  auto a = Open("a");
  std::vector<std::vector<uint8_t>> payloads;
  for (int i = 0; i < 8; ++i) {
    payloads.push_back(RandomBytes(120000, 100 + i));
    ASSERT_TRUE(a->PublishBytes(payloads.back().data(), payloads.back().size(), "p/" + std::to_string(i)).ok());
  }
  auto b = Open("b");
  std::atomic<bool> stop{false};
  CopyOptions o;
  o.commit_every = 100000;  // a commit after every object, about
  o.cancel = &stop;
  o.progress = [&](uint64_t, uint64_t objects) {
    if (objects == 4) stop = true;
  };
  auto first = a->CopyTo(*b, {}, o);
  ASSERT_FALSE(first.ok());
  EXPECT_NE(first.status().message().find("interrupted"), std::string::npos);
  auto listed = b->List();
  ASSERT_TRUE(listed.ok());
  EXPECT_GE(listed->size(), 3u);
  EXPECT_LT(listed->size(), 8u);
  auto mid = b->Stats();
  ASSERT_TRUE(mid.ok());
  // The rerun sends only what did not arrive: every chunk once in all.
  auto second = a->CopyTo(*b);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  auto sa = a->Stats();
  ASSERT_TRUE(sa.ok());
  auto sb = b->Stats();
  ASSERT_TRUE(sb.ok());
  EXPECT_EQ(sb->chunks, sa->chunks);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(*testing::ReadObject(*b, "p/" + std::to_string(i)), payloads[i]);
  // What the first committed (all it had written: it commits on its way
  // out) is not sent again.
  EXPECT_EQ(second->chunks_sent, sa->chunks - mid->chunks);
  EXPECT_GT(mid->chunks, 0u);
}

TEST_F(CopyTest, OtherChunkingAndCodecAtTheDestinationStillDedupe) {
  auto a = Open("a");
  const auto data = RandomBytes(600000, 9);
  testing::WriteFile(dir_ / "f", data);
  ASSERT_TRUE(a->PublishFile(dir_ / "f", "f").ok());
  Options other;  // default (large) chunks, zlib
  other.compression = Compression::Zlib(1);
  auto b = Open("b", other);
  ASSERT_TRUE(a->CopyTo(*b).ok());
  EXPECT_EQ(*testing::ReadObject(*b, "f"), data);
  auto before = b->Stats();
  ASSERT_TRUE(before.ok());
  auto again = b->PublishFile(dir_ / "f", "f");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->new_bytes, 0u);  // the copied chunks are found, cut as the source cut them
  auto after = b->Stats();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->chunks, before->chunks);
}

// Content whose chunks repeat (zeros cut at the largest chunk size, then
// a pattern that comes back): each place is in the proof of the object,
// and each distinct chunk is stored once.
TEST_F(CopyTest, AnObjectWhoseChunksRepeatIsProvenAndStoredOnce) {
  auto a = Open("a");
  auto b = Open("b");
  ASSERT_TRUE(a && b);
  std::vector<uint8_t> d(1 << 20, 0);
  const auto block = RandomBytes(40000, 21);
  for (int k = 0; k < 3; ++k) d.insert(d.end(), block.begin(), block.end());
  ASSERT_TRUE(a->PublishBytes(d.data(), d.size(), "repeats").ok());
  CopyOptions one;
  one.parallel = 1;  // a window of two loads: later places of a chunk find it kept
  auto r = a->CopyTo(*b, {}, one);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto back = testing::ReadObject(*b, "repeats");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, d);
  auto sa = a->Stats(), sb = b->Stats();
  ASSERT_TRUE(sa.ok() && sb.ok());
  EXPECT_EQ(sb->chunks, sa->chunks);
  EXPECT_EQ(r->chunks_sent, sa->chunks);  // each distinct chunk once
  auto v = b->Verify();
  EXPECT_TRUE(v.ok()) << v.status().ToString();
}

TEST_F(CopyTest, DamageAtTheSourceIsRefusedNamingTheObject) {
  {
    auto a = Open("a");
    auto d = RandomBytes(300000, 11);
    ASSERT_TRUE(a->PublishBytes(d.data(), d.size(), "x").ok());
  }
  testing::FlipPackByte(dir_ / "a", 100000);
  auto a = Open("a");
  auto b = Open("b");
  auto r = a->CopyTo(*b);
  ASSERT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_FALSE(r.status().object_id().empty());
  EXPECT_TRUE(b->Resolve("x").status().IsNotFound());
  EXPECT_TRUE(a->CopyTo(*a).status().IsInvalidArgument());
}

TEST_F(CopyTest, SelectionByNamePrefixAndObject) {
  auto a = Open("a");
  Fill(*a);
  auto b = Open("b");
  auto r = a->CopyTo(*b, {"notes/", pinned_id_.substr(0, 15)});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto names = b->List();
  ASSERT_TRUE(names.ok());
  ASSERT_EQ(names->size(), 1u);
  EXPECT_EQ((*names)[0].name, "notes/tiny");
  EXPECT_TRUE(*b->Exists(pinned_id_));
  EXPECT_FALSE(*b->Exists("model"));
  EXPECT_TRUE(a->CopyTo(*b, {"nothing/"}).status().IsNotFound());
  // A path inside a tree copies that subtree, kept as an unnamed object.
  r = a->CopyTo(*b, {"site:sub"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto sub = a->Resolve("site:sub");
  ASSERT_TRUE(sub.ok());
  ASSERT_TRUE(b->Restore(*sub, dir_ / "sub-out").ok());
  EXPECT_EQ(testing::Listing(dir_ / "sub-out"), testing::Listing(dir_ / "src/sub"));
}

// A source whose log was written by someone else (a bucket, or what an
// http:// store is to its client): the records are input. HostileSource
// publishes d1 and d2, then appends a record of its own making.
class HostileSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    so_.blob_store = bucket_.get();
    auto src = Store::Open(dir_ / "writer", so_);
    ASSERT_TRUE(src.ok()) << src.status().ToString();
    ASSERT_TRUE((*src)->PublishBytes(d1_.data(), d1_.size(), "d1").ok());
    ASSERT_TRUE((*src)->PublishBytes(d2_.data(), d2_.size(), "d2").ok());
  }
  // Appends a record naming `name` object id, `size` bytes, with entries
  // (and chain states, if given) as its chunk list.
  void Forge(const std::string& name, const internal::Digest& id, uint64_t size,
             const std::vector<internal::ManifestEntry>& entries, const std::vector<internal::ChainState>& chain = {}) {
    internal::ChangeSet forged;
    forged.kind = internal::ChangeSet::kPublish;
    forged.time = 1700000000;
    internal::ObjectRow row;
    row.id = id;
    row.size = size;
    row.chunk_count = static_cast<uint32_t>(entries.size());
    row.manifest = chain.empty() ? internal::EncodeManifest(id, size, entries)
                                 : internal::EncodeManifest(id, size, entries, chain);
    forged.objects.push_back(row);
    forged.names.push_back({name, id, 0, 0});
    Append(forged);
  }
  // Writes change as the log's next record.
  void Append(const internal::ChangeSet& change) {
    auto listed = bucket_->List("log/", "");
    ASSERT_TRUE(listed.ok() && !listed->empty());
    const std::string newest = listed->back().key;
    int64_t epoch = 0, seq = 0;
    ASSERT_TRUE(internal::ParseLogKey(newest, &epoch, &seq)) << newest;
    const std::string key = internal::IsLogKey(newest, true)
                                ? internal::SequencedKey(epoch, seq + 1)
                                : internal::LogKeyPrefix(epoch, seq + 1) + "-00000000000000ff";
    const std::string bytes = internal::EncodeChangeSet(change, "", key);
    ASSERT_TRUE(bucket_->Put(key, bytes.data(), bytes.size()).ok());
  }
  // Names d1 and d2 as one object, their real content's id, with chain
  // states made up; returns that content.
  std::vector<uint8_t> ForgeMadeUpChainStates(const std::string& name) {
    std::vector<uint8_t> both(d1_);
    both.insert(both.end(), d2_.begin(), d2_.end());
    const internal::Digest id = internal::Sha256::Of(both.data(), both.size());
    std::vector<internal::ChainState> chain(2);
    chain[0] = internal::ChainStart();
    for (auto& w : chain[1].h) w = 0x5a5a5a5a;
    chain[1].valid = true;
    Forge(name, id, both.size(), {Entry(d1_), Entry(d2_)}, chain);
    return both;
  }
  std::unique_ptr<Store> Source() {
    auto s = Store::Open(dir_ / ("reader" + std::to_string(++readers_)), so_);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  std::unique_ptr<Store> Destination() {
    auto s = Store::Open(dir_ / "dst");
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  internal::ManifestEntry Entry(const std::vector<uint8_t>& b) {
    return {internal::Sha256::Of(b.data(), b.size()), static_cast<uint32_t>(b.size())};
  }

  testing::TempDir dir_;
  std::unique_ptr<BlobStore> bucket_ = NewMemoryBlobStore();
  Options so_;
  int readers_ = 0;
  const std::vector<uint8_t> d1_ = RandomBytes(1000, 1), d2_ = RandomBytes(1000, 2);
  const std::vector<uint8_t> c_ = RandomBytes(2000, 3);  // the real content of the forged id
};

// An object whose chunk list names other content's chunks is refused
// (whether the destination lacks those chunks or holds them already), and
// the real content published there later reads back.
TEST_F(HostileSourceTest, AChunkListOfOtherContentIsRefusedAndLeavesNoRow) {
  const internal::Digest x = internal::Sha256::Of(c_.data(), c_.size());
  Forge("c", x, c_.size(), {Entry(d1_), Entry(d2_)});
  for (const bool chunks_there_first : {false, true}) {
    SCOPED_TRACE(chunks_there_first ? "the destination holds the chunks" : "the destination lacks the chunks");
    fs::remove_all(dir_ / "dst");
    auto src = Source();
    auto dst = Destination();
    ASSERT_TRUE(src && dst);
    if (chunks_there_first) {
      ASSERT_TRUE(src->CopyTo(*dst, {"d1", "d2"}).ok());
    }
    auto r = src->CopyTo(*dst, {"c"});
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
    EXPECT_NE(r.status().message().find(x.ObjectId()), std::string::npos) << r.status().ToString();
    EXPECT_TRUE(dst->Stat("c").status().IsNotFound());
    EXPECT_TRUE(dst->Stat(x.ObjectId()).status().IsNotFound());
    auto honest = dst->PublishBytes(c_.data(), c_.size(), "honest");
    ASSERT_TRUE(honest.ok()) << honest.status().ToString();
    EXPECT_EQ(honest->id, x.ObjectId());
    auto back = testing::ReadObject(*dst, "honest");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, c_);
    if (chunks_there_first) {
      auto d1 = testing::ReadObject(*dst, "d1");
      ASSERT_TRUE(d1.ok()) << d1.status().ToString();
      EXPECT_EQ(*d1, d1_);
    }
  }
}

// A pack of the source's whose record says chunk X but holds other bytes
// (with a correct xxHash64 and header check): the object those bytes make
// passes its own proof, so only each chunk's own hash stands between the
// bytes and the destination's chunk X.
TEST_F(HostileSourceTest, AChunkWhoseBytesAreNotItsIdIsRefused) {
  const auto b = RandomBytes(5000, 31), y = RandomBytes(5000, 32), c = RandomBytes(3000, 33);
  const internal::Digest x = internal::Sha256::Of(y.data(), y.size());  // claimed for b's bytes
  const internal::Digest cid = internal::Sha256::Of(c.data(), c.size());
  std::string pack(internal::kPackHeaderSize, '\0');
  internal::EncodePackHeader(reinterpret_cast<uint8_t*>(pack.data()));
  std::vector<internal::ChangeSet::Chunk> chunks;
  for (const auto& [id, bytes] : {std::pair{x, &b}, std::pair{cid, &c}}) {
    internal::RecordHeader h;
    h.raw_len = h.stored_len = static_cast<uint32_t>(bytes->size());
    h.chunk_id = id;
    h.xxh64 = internal::XxHash64(bytes->data(), bytes->size());
    internal::ChangeSet::Chunk ch;
    ch.id = id;
    ch.loc.offset = pack.size();
    ch.loc.raw_len = ch.loc.stored_len = h.raw_len;
    ch.loc.xxh64 = h.xxh64;
    chunks.push_back(ch);
    std::string header(internal::kRecordHeaderSize, '\0');
    internal::EncodeRecordHeader(h, reinterpret_cast<uint8_t*>(header.data()));
    pack += header;
    pack.append(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  }
  const std::string pack_name = "pack-00000000000000aa.pack";
  ASSERT_TRUE(bucket_->Put("packs/" + pack_name, pack.data(), pack.size()).ok());
  std::vector<uint8_t> content(b);
  content.insert(content.end(), c.begin(), c.end());
  const internal::Digest o = internal::Sha256::Of(content.data(), content.size());
  {
    internal::ChangeSet forged;
    forged.kind = internal::ChangeSet::kPublish;
    forged.time = 1700000000;
    forged.packs.push_back({pack_name, pack.size()});
    forged.chunks = chunks;
    internal::ObjectRow row;
    row.id = o;
    row.size = content.size();
    row.chunk_count = 2;
    row.manifest = internal::EncodeManifest(o, content.size(), {{x, 5000}, {cid, 3000}});
    forged.objects.push_back(row);
    forged.names.push_back({"poison", o, 0, 0});
    Append(forged);
    if (HasFatalFailure()) return;
  }
  auto src = Source();
  auto dst = Destination();
  ASSERT_TRUE(src && dst);
  auto r = src->CopyTo(*dst, {"poison"});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_NE(r.status().message().find(x.Hex()), std::string::npos) << r.status().ToString();
  // Whatever was committed, the destination holds no chunk X of other
  // bytes: the real content of X publishes and reads back.
  auto honest = dst->PublishBytes(y.data(), y.size(), "y");
  ASSERT_TRUE(honest.ok()) << honest.status().ToString();
  auto back = testing::ReadObject(*dst, "y");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, y);
  auto v = dst->Verify();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
}

// A chunk list of the right chunks with made-up chain states: the copy
// keeps the states it computed, so a whole read at the destination, which
// proves the id through them, works.
TEST_F(HostileSourceTest, ChainStatesAreComputedNotTakenFromTheSource) {
  const std::vector<uint8_t> both = ForgeMadeUpChainStates("both");
  auto src = Source();
  auto dst = Destination();
  ASSERT_TRUE(src && dst);
  auto r = src->CopyTo(*dst, {"both"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto back = testing::ReadObject(*dst, "both");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, both);
}

// The same forged chunk list in the store being repaired: every chunk
// record is sound and only the chunk list is wrong, which no chunk copy
// mends, so repair writes nothing and counts the damage for verify.
TEST_F(HostileSourceTest, RepairLeavesSoundChunksOfAForgedChunkListAlone) {
  ForgeMadeUpChainStates("both");
  auto damaged = Source();
  auto replica = Destination();
  ASSERT_TRUE(damaged && replica);
  ASSERT_TRUE(replica->PublishBytes(d1_.data(), d1_.size(), "d1").ok());
  ASSERT_TRUE(replica->PublishBytes(d2_.data(), d2_.size(), "d2").ok());
  auto v = damaged->Verify();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_TRUE(v->corrupt());
  const auto packs_before = bucket_->List("packs/", "");
  ASSERT_TRUE(packs_before.ok());
  auto r = damaged->RepairChunks(*replica);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->repaired.empty());
  EXPECT_TRUE(r->unrepaired.empty());
  EXPECT_EQ(r->damaged, 0u);
  EXPECT_GE(r->other_problems, 1u);
  const auto packs_after = bucket_->List("packs/", "");
  ASSERT_TRUE(packs_after.ok());
  EXPECT_EQ(packs_after->size(), packs_before->size());
}

}  // namespace
}  // namespace chunkstore
