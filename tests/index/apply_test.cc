// SPDX-License-Identifier: Apache-2.0
// Applying change sets to an index: the rules every store follows, that a
// replay in either order agrees, that checkpoints replace what was there,
// and that an index compared with the truth names what differs.
#include <gtest/gtest.h>

#include "format/manifest.h"
#include "index/apply.h"
#include "index_util.h"

namespace chunkstore::internal {
namespace {

using testing::FreshIndex;

void Apply(Index& index, const ChangeSet& c, Applied* applied = nullptr) {
  WriteTxn txn(&index);
  ASSERT_TRUE(txn.status().ok());
  Status s = ApplyChange(index, c, applied);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(txn.Commit().ok());
}

ChangeSet Publish(const std::string& pack, const Digest& chunk, uint64_t offset, const std::string& name = "") {
  ChangeSet c;
  c.kind = ChangeSet::kPublish;
  c.time = 1000;
  c.packs = {{pack, 1000}};
  ChangeSet::Chunk ch{chunk, 0, {}};
  ch.loc.offset = offset;
  ch.loc.raw_len = ch.loc.stored_len = 6;
  c.chunks.push_back(ch);
  ObjectRow o;
  o.id = chunk;  // a one-chunk object
  o.size = 6;
  o.chunk_count = 1;
  o.manifest = EncodeManifest(o.id, 6, {{chunk, 6}});
  o.created = 1000;
  o.pinned = name.empty();
  c.objects.push_back(o);
  if (!name.empty()) c.names.push_back({name, o.id, 0, 0});
  return c;
}

// Two writers stored the same chunk at once, each in its own pack; caches
// that see their changes in either order must agree on one copy.
TEST(ApplyChange, AChunkStoredTwiceResolvesToTheSameCopyInEveryOrder) {
  const Digest chunk = Sha256::Of("shared", 6);
  const ChangeSet first = Publish("pack-bbbbbbbbbbbbbbbb.pack", chunk, 16);
  const ChangeSet second = Publish("pack-aaaaaaaaaaaaaaaa.pack", chunk, 80);
  for (int order = 0; order < 2; ++order) {
    auto index = FreshIndex();
    Apply(*index, order == 0 ? first : second);
    Apply(*index, order == 0 ? second : first);
    auto loc = index->FindChunk(chunk);
    ASSERT_TRUE(loc.ok() && loc->has_value());
    auto pack = index->FindPack((*loc)->pack_id);
    ASSERT_TRUE(pack.ok() && pack->has_value());
    EXPECT_EQ((*pack)->name, "pack-aaaaaaaaaaaaaaaa.pack") << "order " << order;
    EXPECT_EQ((*loc)->offset, 80u) << "order " << order;
  }
}

TEST(ApplyChange, NamesGetTheirNextVersionUnlessTheirObjectIsGone) {
  auto index = FreshIndex();
  const Digest a = Sha256::Of("aaaaaa", 6), b = Sha256::Of("bbbbbb", 6);
  Applied v;
  Apply(*index, Publish("pack-0000000000000001.pack", a, 16, "n"), &v);
  Apply(*index, Publish("pack-0000000000000001.pack", b, 86, "n"), &v);
  EXPECT_EQ(v.versions, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(v.added, (std::vector<bool>{true, true}));
  Applied again;
  Apply(*index, Publish("pack-0000000000000001.pack", b, 86, "n"), &again);
  EXPECT_EQ(again.added, (std::vector<bool>{false})) << "an object already indexed is not new";
  EXPECT_EQ(again.versions, (std::vector<int64_t>{3}));
  ChangeSet rm;
  rm.kind = ChangeSet::kRemoveObject;
  rm.removed_objects = {a};
  Apply(*index, rm);
  ChangeSet tag;
  tag.kind = ChangeSet::kTag;
  tag.time = 2000;
  tag.names = {{"n", a, 0, 0}, {"n", b, 0, 0}};
  v = {};
  Apply(*index, tag, &v);
  EXPECT_EQ(v.versions, (std::vector<int64_t>{0, 4})) << "a tag of a removed object adds no version";
  auto latest = index->FindName("n", 0);
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ((*latest)->version, 4);
  EXPECT_EQ((*latest)->created, 2000);
  EXPECT_FALSE(index->FindName("n", 1)->has_value()) << "removing an object drops its name versions";
}

TEST(ApplyChange, ACheckpointReplacesEverythingAndASnapshotIsOne) {
  auto a = FreshIndex(), b = FreshIndex();
  const Digest x = Sha256::Of("xxxxxx", 6), y = Sha256::Of("yyyyyy", 6);
  Apply(*a, Publish("pack-0000000000000001.pack", x, 16, "x"));
  Apply(*a, Publish("pack-0000000000000002.pack", y, 16, "y"));
  Apply(*b, Publish("pack-0000000000000009.pack", Sha256::Of("zzzzzz", 6), 16, "z"));
  auto snap = Snapshot(*a, 3000);
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  EXPECT_EQ(snap->kind, ChangeSet::kCheckpoint);
  Apply(*b, *snap);
  auto diffs = CompareIndexes(*b, *a);
  ASSERT_TRUE(diffs.ok());
  EXPECT_TRUE(diffs->empty()) << (*diffs)[0].message;
  EXPECT_FALSE(b->FindName("z", 0)->has_value());
}

TEST(CompareIndexes, NamesWhatDiffers) {
  auto live = FreshIndex(), truth = FreshIndex();
  const Digest x = Sha256::Of("xxxxxx", 6), y = Sha256::Of("yyyyyy", 6);
  for (Index* i : {live.get(), truth.get()}) Apply(*i, Publish("pack-0000000000000001.pack", x, 16, "x"));
  Apply(*truth, Publish("pack-0000000000000001.pack", y, 86, "y"));
  // The live index lost y (a lost write-ahead log), and its x row was damaged.
  ObjectRow damaged = live->FindObject(x)->value_or(ObjectRow{});
  damaged.manifest[0] ^= 1;
  {
    WriteTxn txn(live.get());
    ASSERT_TRUE(live->DeleteObject(x).ok());
    ASSERT_TRUE(live->InsertObject(damaged).ok());
    ASSERT_TRUE(live->AddName("x", x, 1000).ok());  // versions 1 and 2 now
    ASSERT_TRUE(txn.Commit().ok());
  }
  auto diffs = CompareIndexes(*live, *truth);
  ASSERT_TRUE(diffs.ok());
  std::string all;
  for (const auto& d : *diffs) all += d.message + "\n";
  EXPECT_NE(all.find("object " + x.ObjectId() + " (its manifest"), std::string::npos) << all;
  EXPECT_NE(all.find("object " + y.ObjectId() + " is in the log but not in the index"), std::string::npos) << all;
  EXPECT_NE(all.find("name y@1 is in the log but not in the index"), std::string::npos) << all;
  EXPECT_NE(all.find("chunk " + y.Hex() + " is in the log but not in the index"), std::string::npos) << all;
  bool named = false;
  for (const auto& d : *diffs) named = named || d.object_id == x.ObjectId();
  EXPECT_TRUE(named);
}

}  // namespace
}  // namespace chunkstore::internal
