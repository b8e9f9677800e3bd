// SPDX-License-Identifier: Apache-2.0
// The index's stat cache scan (ScanStat) and the in-order object size
// lookup it uses (ObjectSizesInOrder), against one lookup per id: dense and
// sparse runs of ids, ids before, between and after the stored ones,
// repeats, and rows whose object is gone.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "format/manifest.h"
#include "index/apply.h"
#include "index_util.h"

namespace chunkstore::internal {
namespace {

using testing::FreshIndex;

Digest IdOf(int i) {
  const std::string s = "object " + std::to_string(i);
  return Sha256::Of(s.data(), s.size());
}

// Objects 0..n-1, object i of size i + 1, each one chunk.
std::vector<Digest> Stored(Index& index, int n) {
  ChangeSet c;
  c.kind = ChangeSet::kPublish;
  c.time = 1000;
  c.packs = {{"pack-aaaaaaaaaaaaaaaa.pack", 1u << 30}};
  std::vector<Digest> ids;
  for (int i = 0; i < n; ++i) {
    ObjectRow o;
    o.id = IdOf(i);
    o.size = static_cast<uint64_t>(i + 1);
    o.chunk_count = 1;
    o.manifest = EncodeManifest(o.id, o.size, {{o.id, static_cast<uint32_t>(o.size)}});
    o.created = 1000;
    o.pinned = true;
    ChangeSet::Chunk ch{o.id, 0, {}};
    ch.loc.offset = static_cast<uint64_t>(i) * 1000;
    ch.loc.raw_len = ch.loc.stored_len = static_cast<uint32_t>(o.size);
    c.chunks.push_back(ch);
    c.objects.push_back(o);
    ids.push_back(o.id);
  }
  WriteTxn txn(&index);
  EXPECT_TRUE(txn.status().ok());
  Status s = ApplyChange(index, c, nullptr);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(txn.Commit().ok());
  return ids;
}

// What one lookup per id says.
std::vector<std::optional<uint64_t>> OneByOne(Index& index, const std::vector<Digest>& ids) {
  std::vector<std::optional<uint64_t>> out;
  for (const Digest& id : ids) {
    auto row = index.FindObject(id);
    EXPECT_TRUE(row.ok());
    out.push_back(row.ok() && row->has_value() ? std::optional<uint64_t>((*row)->size) : std::nullopt);
  }
  return out;
}

TEST(ObjectSizesInOrder, AgreesWithALookupPerIdDenseOrSparse) {
  auto index = FreshIndex();
  std::vector<Digest> stored = Stored(*index, 600);
  std::sort(stored.begin(), stored.end());
  std::vector<Digest> absent;
  for (int i = 1000; i < 1100; ++i) absent.push_back(IdOf(i));
  Digest low, high;
  low.bytes.fill(0);
  high.bytes.fill(0xff);
  absent.push_back(low);   // before every stored id
  absent.push_back(high);  // after every stored id

  std::map<std::string, std::vector<Digest>> cases;
  cases["empty"] = {};
  cases["all"] = stored;
  for (size_t i = 0; i < stored.size(); i += 37) cases["sparse"].push_back(stored[i]);
  for (size_t i = 0; i < stored.size(); ++i)
    if (i % 5 != 0) cases["most"].push_back(stored[i]);  // gaps of one row: stepped over
  cases["absent"] = absent;
  cases["mixed"] = absent;
  for (size_t i = 0; i < stored.size(); i += 3) cases["mixed"].push_back(stored[i]);
  cases["repeats"] = {stored[0], stored[0], stored[7], stored[7], stored[7], high, high};
  cases["last only"] = {stored.back()};
  for (auto& [name, ids] : cases) {
    std::sort(ids.begin(), ids.end());
    std::vector<std::optional<uint64_t>> got;
    ASSERT_TRUE(index->ObjectSizesInOrder(ids, &got).ok()) << name;
    EXPECT_EQ(got, OneByOne(*index, ids)) << name;
  }
  // A result is there for each id; sizes of the stored ones, none for the others.
  std::vector<std::optional<uint64_t>> got;
  ASSERT_TRUE(index->ObjectSizesInOrder(cases["mixed"], &got).ok());
  size_t found = 0;
  for (const auto& g : got) found += g.has_value();
  EXPECT_EQ(found, (stored.size() + 2) / 3);
}

TEST(ScanStat, FindsTheRowsBelowThePrefixWithTheirObjectsSizes) {
  auto index = FreshIndex();
  Stored(*index, 300);
  {
    WriteTxn txn(index.get());
    ASSERT_TRUE(txn.status().ok());
    for (int i = 0; i < 400; ++i) {
      Index::StatEntry e;
      e.path = "/r/d" + std::to_string(i % 7) + "/f" + std::to_string(i);
      e.dev = 1;
      e.ino = 1000 + i;
      e.size = i + 1;
      e.mtime_ns = 10 * i;
      e.ctime_ns = 10 * i + 1;
      e.object = IdOf(i);  // 300 and up: no such object
      ASSERT_TRUE(index->PutStat(e).ok());
    }
    for (const char* outside : {"/r0/f", "/q/f", "/r", "/ra/f"}) {
      Index::StatEntry e;
      e.path = outside;
      e.object = IdOf(1);
      ASSERT_TRUE(index->PutStat(e).ok());
    }
    ASSERT_TRUE(txn.Commit().ok());
  }
  Index::StatScan scan;
  {
    ReadTxn txn(index.get());
    ASSERT_TRUE(txn.status().ok());
    ASSERT_TRUE(index->ScanStat("/r/", &scan).ok());
  }
  ASSERT_EQ(scan.size(), 400u);
  for (int i = 0; i < 400; ++i) {
    const std::string path = "/r/d" + std::to_string(i % 7) + "/f" + std::to_string(i);
    std::optional<uint64_t> size;
    const Index::StatEntry* e = scan.Find(path, &size);
    ASSERT_NE(e, nullptr) << path;
    EXPECT_EQ(e->ino, 1000 + i);
    EXPECT_EQ(e->size, i + 1);
    EXPECT_EQ(e->mtime_ns, 10 * i);
    EXPECT_EQ(e->ctime_ns, 10 * i + 1);
    EXPECT_EQ(e->object, IdOf(i));
    if (i < 300) {
      EXPECT_EQ(size, std::optional<uint64_t>(i + 1)) << path;
    } else {
      EXPECT_FALSE(size.has_value()) << path;
    }
  }
  std::optional<uint64_t> size;
  for (const char* outside : {"/r0/f", "/q/f", "/r", "/ra/f", "/r/d1", "/r/d1/f", "/r/d1/f10"})
    EXPECT_EQ(scan.Find(outside, &size), nullptr) << outside;
}

}  // namespace
}  // namespace chunkstore::internal
