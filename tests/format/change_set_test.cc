// SPDX-License-Identifier: Apache-2.0
// Change sets: every section round-trips, the bucket log records of format
// 1 still decode, every damaged byte and truncation is refused, names from
// storage that could become paths are refused, and a store secret's HMAC
// is checked.
#include <gtest/gtest.h>

#include "format/change_set.h"
#include "format/manifest.h"

namespace chunkstore::internal {
namespace {

ChangeSet Sample() {
  ChangeSet c;
  c.kind = ChangeSet::kPublish;
  c.time = 1764500000;
  c.packs = {{"pack-0011223344556677.pack", 12345}, {"pack-8899aabbccddeeff.pack", 99}};
  Digest c1 = Sha256::Of("one", 3), c2 = Sha256::Of("two", 3);
  ChangeSet::Chunk ch{c1, 1, {}};
  ch.loc.offset = 16;
  ch.loc.raw_len = 3;
  ch.loc.stored_len = 3;
  ch.loc.codec = Codec::kRaw;
  ch.loc.xxh64 = 0x1122334455667788ull;
  c.chunks.push_back(ch);
  ObjectRow ob;
  ob.id = Sha256::Of("onetwo", 6);
  ob.size = 6;
  ob.chunk_count = 2;
  ob.manifest = EncodeManifest(ob.id, 6, {{c1, 3}, {c2, 3}});
  ob.created = 1764500001;
  ob.pinned = true;
  c.objects.push_back(ob);
  c.names = {{"docs/readme", ob.id, 0, 0}, {"docs/old", ob.id, 7, 1764400000}};
  c.removed_names = {"old"};
  c.removed_objects = {c2};
  c.removed_chunks = {{c1, "pack-0011223344556677.pack"}};
  c.removed_packs = {"pack-ffffffffffffffff.pack"};
  return c;
}

TEST(ChangeSet, RoundTripsEverySection) {
  const ChangeSet c = Sample();
  auto back = DecodeChangeSet(EncodeChangeSet(c));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->kind, c.kind);
  EXPECT_EQ(back->time, c.time);
  ASSERT_EQ(back->packs.size(), 2u);
  EXPECT_EQ(back->packs[1].name, c.packs[1].name);
  EXPECT_EQ(back->packs[0].size, 12345u);
  ASSERT_EQ(back->chunks.size(), 1u);
  EXPECT_EQ(back->chunks[0].id, c.chunks[0].id);
  EXPECT_EQ(back->chunks[0].pack, 1u);
  EXPECT_EQ(back->chunks[0].loc.xxh64, c.chunks[0].loc.xxh64);
  ASSERT_EQ(back->objects.size(), 1u);
  EXPECT_EQ(back->objects[0].manifest, c.objects[0].manifest);
  EXPECT_TRUE(back->objects[0].pinned);
  ASSERT_EQ(back->names.size(), 2u);
  EXPECT_EQ(back->names[1].name, "docs/old");
  EXPECT_EQ(back->names[1].version, 7);
  EXPECT_EQ(back->names[1].created, 1764400000);
  EXPECT_EQ(back->names[0].version, 0);
  EXPECT_EQ(back->removed_names, c.removed_names);
  EXPECT_EQ(back->removed_objects, c.removed_objects);
  ASSERT_EQ(back->removed_chunks.size(), 1u);
  EXPECT_EQ(back->removed_chunks[0].pack, c.removed_chunks[0].pack);
  EXPECT_EQ(back->removed_packs, c.removed_packs);
}

TEST(ChangeSet, EveryFlippedByteAndEveryTruncationIsRefused) {
  const std::string good = EncodeChangeSet(Sample());
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x20;
    EXPECT_FALSE(DecodeChangeSet(bad).ok()) << "byte " << i;
  }
  for (size_t n = 0; n < good.size(); n += 7)
    EXPECT_FALSE(DecodeChangeSet(good.substr(0, n)).ok()) << n;
}

TEST(ChangeSet, AChunkNamingAPackItDoesNotListIsCorruption) {
  ChangeSet c = Sample();
  c.chunks[0].pack = 7;
  EXPECT_TRUE(DecodeChangeSet(EncodeChangeSet(c)).status().IsCorruption());
}

// A pack name read from storage becomes a file name or a key: anything but
// the pattern the store writes could reach outside it.
TEST(ChangeSet, PackNamesThatAreNotPackNamesAreCorruption) {
  for (const char* bad : {"../x", "/abs", "pack-zz.pack", "pack-0011223344556677.pack/../../x",
                          "pack-0011223344556677.pac", "pack-00112233445566778.pack", "", "packs/pack-0011223344556677.pack"}) {
    ChangeSet in_packs = Sample();
    in_packs.packs[0].name = bad;
    auto a = DecodeChangeSet(EncodeChangeSet(in_packs));
    EXPECT_TRUE(a.status().IsCorruption()) << bad << ": " << a.status().ToString();
    ChangeSet in_removed = Sample();
    in_removed.removed_packs = {bad};
    EXPECT_TRUE(DecodeChangeSet(EncodeChangeSet(in_removed)).status().IsCorruption()) << bad;
    ChangeSet in_chunks = Sample();
    in_chunks.removed_chunks[0].pack = bad;
    EXPECT_TRUE(DecodeChangeSet(EncodeChangeSet(in_chunks)).status().IsCorruption()) << bad;
  }
  ChangeSet bad_name = Sample();
  bad_name.names[0].name = "bad\x01name";
  EXPECT_TRUE(DecodeChangeSet(EncodeChangeSet(bad_name)).status().IsCorruption());
}

// The log records of bucket stores of format 1, byte for byte as that
// format's writer made them (docs/format.md): they still decode, with no
// name versions.
TEST(ChangeSet, BucketLogRecordsOfFormatOneStillDecode) {
  std::string v1("CKLOG1\0\0", 8);
  auto le = [&](uint64_t v, int n) {
    for (int i = 0; i < n; ++i) v1.push_back(static_cast<char>(v >> (8 * i)));
  };
  const Digest object = Sha256::Of("x", 1);
  le(2, 1);            // kind: tag
  le(1764500000, 8);   // time
  le(0, 4);            // packs
  le(0, 4);            // chunks
  le(0, 4);            // objects
  le(1, 4);            // names added
  le(4, 2);
  v1 += "docs";
  v1.append(reinterpret_cast<const char*>(object.bytes.data()), 32);
  for (int section = 0; section < 4; ++section) le(0, 4);  // removals
  le(XxHash64(v1.data(), v1.size()), 8);
  auto c = DecodeChangeSet(v1);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->kind, ChangeSet::kTag);
  ASSERT_EQ(c->names.size(), 1u);
  EXPECT_EQ(c->names[0].name, "docs");
  EXPECT_EQ(c->names[0].object, object);
  EXPECT_EQ(c->names[0].version, 0);
  // Format 1 has no checkpoints: a record that says it is one is not one.
  v1[8] = 6;
  v1.resize(v1.size() - 8);
  le(XxHash64(v1.data(), v1.size()), 8);
  EXPECT_TRUE(DecodeChangeSet(v1).status().IsUnsupported());
}

TEST(ChangeSet, WithASecretOnlyItsHmacIsAccepted) {
  const ChangeSet c = Sample();
  const std::string signed_bytes = EncodeChangeSet(c, "the store's secret");
  EXPECT_TRUE(DecodeChangeSet(signed_bytes, "the store's secret").ok());
  // Readers without the secret still read it (the xxHash64 holds).
  EXPECT_TRUE(DecodeChangeSet(signed_bytes).ok());
  auto wrong = DecodeChangeSet(signed_bytes, "another secret");
  EXPECT_TRUE(wrong.status().IsCorruption()) << wrong.status().ToString();
  auto unsigned_one = DecodeChangeSet(EncodeChangeSet(c), "the store's secret");
  EXPECT_TRUE(unsigned_one.status().IsCorruption());
  EXPECT_NE(unsigned_one.status().message().find("not signed"), std::string::npos);
  // A forger who recomputes the xxHash64 still lacks the HMAC.
  std::string forged = signed_bytes;
  forged[12] ^= 1;  // inside the time field: the record still decodes
  const size_t body = forged.size() - 32 - 8;
  const uint64_t check = XxHash64(forged.data(), body);
  for (int i = 0; i < 8; ++i) forged[body + i] = static_cast<char>(check >> (8 * i));
  EXPECT_TRUE(DecodeChangeSet(forged).ok()) << "the forgery should pass the check a reader without the secret makes";
  EXPECT_TRUE(DecodeChangeSet(forged, "the store's secret").status().IsCorruption());
}

}  // namespace
}  // namespace chunkstore::internal
