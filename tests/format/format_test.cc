// SPDX-License-Identifier: Apache-2.0
// Pack record framing, manifests and compression: round trips and every
// kind of damage the decoders must refuse without reading out of bounds.
#include "format/compress.h"
#include "format/config.h"
#include "format/manifest.h"
#include "format/pack_format.h"
#include "test_util.h"

namespace chunkstore::internal {
namespace {

RecordHeader SampleHeader() {
  RecordHeader h;
  h.codec = Codec::kZlib;
  h.raw_len = 5000;
  h.stored_len = 1234;
  h.chunk_id = Sha256::Of("chunk", 5);
  h.xxh64 = 0x0123456789abcdefULL;
  return h;
}

TEST(RecordHeader, RoundTrip) {
  uint8_t buf[kRecordHeaderSize];
  const RecordHeader h = SampleHeader();
  EncodeRecordHeader(h, buf);
  auto d = DecodeRecordHeader(buf, sizeof buf);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->codec, h.codec);
  EXPECT_EQ(d->raw_len, h.raw_len);
  EXPECT_EQ(d->stored_len, h.stored_len);
  EXPECT_EQ(d->chunk_id, h.chunk_id);
  EXPECT_EQ(d->xxh64, h.xxh64);
}

TEST(RecordHeader, EveryFlippedByteIsDetected) {
  uint8_t good[kRecordHeaderSize];
  EncodeRecordHeader(SampleHeader(), good);
  for (size_t i = 0; i < kRecordHeaderSize; ++i) {
    uint8_t bad[kRecordHeaderSize];
    std::memcpy(bad, good, sizeof bad);
    bad[i] ^= 0x40;
    EXPECT_TRUE(DecodeRecordHeader(bad, sizeof bad).status().IsCorruption()) << "byte " << i;
  }
}

TEST(RecordHeader, RejectsTruncatedAndImpossible) {
  uint8_t buf[kRecordHeaderSize];
  EncodeRecordHeader(SampleHeader(), buf);
  EXPECT_TRUE(DecodeRecordHeader(buf, 63).status().IsCorruption());

  RecordHeader huge = SampleHeader();
  huge.raw_len = 0xffffffffu;  // would be an unbounded allocation
  EncodeRecordHeader(huge, buf);
  EXPECT_TRUE(DecodeRecordHeader(buf, sizeof buf).status().IsCorruption());

  RecordHeader grow = SampleHeader();
  grow.stored_len = grow.raw_len + 1;  // compression never grows what we store
  EncodeRecordHeader(grow, buf);
  EXPECT_TRUE(DecodeRecordHeader(buf, sizeof buf).status().IsCorruption());

  RecordHeader raw = SampleHeader();
  raw.codec = Codec::kRaw;  // raw records have stored == raw
  EncodeRecordHeader(raw, buf);
  EXPECT_TRUE(DecodeRecordHeader(buf, sizeof buf).status().IsCorruption());

  EncodeRecordHeader(SampleHeader(), buf);
  buf[4] = 7;  // unknown codec, with a recomputed check so only the codec is wrong
  const uint32_t check = static_cast<uint32_t>(XxHash64(buf, 56));
  for (int i = 0; i < 4; ++i) buf[56 + i] = static_cast<uint8_t>(check >> (8 * i));
  auto s = DecodeRecordHeader(buf, sizeof buf).status();
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_NE(s.message().find("codec"), std::string::npos) << s.message();
}

TEST(PackHeader, RoundTripAndRejects) {
  uint8_t buf[kPackHeaderSize];
  EncodePackHeader(buf);
  EXPECT_TRUE(DecodePackHeader(buf, sizeof buf).ok());
  EXPECT_TRUE(DecodePackHeader(buf, 8).IsCorruption());
  buf[13] = 1;  // reserved
  EXPECT_TRUE(DecodePackHeader(buf, sizeof buf).IsCorruption());
  buf[13] = 0;
  buf[8] = 9;
  EXPECT_TRUE(DecodePackHeader(buf, sizeof buf).IsUnsupported());
  buf[0] = 'X';
  EXPECT_TRUE(DecodePackHeader(buf, sizeof buf).IsCorruption());
}

const Digest kObject = Sha256::Of("object", 6);

TEST(Manifest, RoundTrip) {
  std::vector<ManifestEntry> entries = {{Sha256::Of("a", 1), 10}, {Sha256::Of("b", 1), 70000}};
  const std::string blob = EncodeManifest(kObject, 70010, entries);
  EXPECT_EQ(blob.size(), 2 * kManifestEntrySize + kManifestCheckSize);
  auto d = DecodeManifest(kObject, 70010, blob.data(), blob.size());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[1].id, entries[1].id);
  EXPECT_EQ((*d)[1].length, 70000u);
  const std::string empty = EncodeManifest(kObject, 0, {});
  EXPECT_TRUE(DecodeManifest(kObject, 0, empty.data(), empty.size()).ok());  // the empty object
}

// Version 2 carries chain states: every flipped byte, anywhere in it, is
// Corruption, and a magic that is not followed by a sound version 2 is
// read as version 1, where it fails too.
TEST(Manifest, VersionTwoRejectsEveryFlippedByte) {
  std::vector<ManifestEntry> entries = {{Sha256::Of("a", 1), 100}, {Sha256::Of("b", 1), 200}, {Sha256::Of("c", 1), 30}};
  std::vector<ChainState> chain(3, ChainStart());
  chain[1].h[0] = 7;
  chain[2].h[7] = 9;
  const std::string good = EncodeManifest(kObject, 330, entries, chain);
  auto back = DecodeManifestWithChain(kObject, 330, good.data(), good.size());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->chain.size(), 3u);
  EXPECT_EQ(back->chain[2].h[7], 9u);
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x08;
    EXPECT_TRUE(DecodeManifestWithChain(kObject, 330, bad.data(), bad.size()).status().IsCorruption()) << i;
  }
  EXPECT_TRUE(DecodeManifestWithChain(kObject, 331, good.data(), good.size()).status().IsCorruption());
}

TEST(Manifest, RejectsDamage) {
  std::vector<ManifestEntry> entries = {{Sha256::Of("a", 1), 10}};
  const std::string blob = EncodeManifest(kObject, 10, entries);
  EXPECT_TRUE(DecodeManifest(kObject, 10, blob.data(), blob.size() - 1).status().IsCorruption());
  EXPECT_TRUE(DecodeManifest(kObject, 10, blob.data(), 4).status().IsCorruption());
  EXPECT_TRUE(DecodeManifest(kObject, 11, blob.data(), blob.size()).status().IsCorruption());
  // Another object's id: the check ties the list to its object.
  EXPECT_TRUE(DecodeManifest(Sha256::Of("x", 1), 10, blob.data(), blob.size()).status().IsCorruption());
  for (size_t i = 0; i < blob.size(); ++i) {
    std::string bad = blob;
    bad[i] ^= 0x04;
    EXPECT_TRUE(DecodeManifest(kObject, 10, bad.data(), bad.size()).status().IsCorruption()) << i;
  }
  std::string zero = EncodeManifest(kObject, 0, {{Sha256::Of("a", 1), 0}});
  EXPECT_TRUE(DecodeManifest(kObject, 0, zero.data(), zero.size()).status().IsCorruption());
  std::string huge = EncodeManifest(kObject, 0xffffffffu, {{Sha256::Of("a", 1), 0xffffffffu}});
  EXPECT_TRUE(DecodeManifest(kObject, 0xffffffffu, huge.data(), huge.size()).status().IsCorruption());
  // A well-formed list, with a valid check, whose lengths do not add up to
  // the object's size (written by a bug, or by someone who recomputed the
  // check) would make a reader walk past its chunks.
  std::string short_list = EncodeManifest(kObject, 100, {{Sha256::Of("a", 1), 60}, {Sha256::Of("b", 1), 30}});
  auto sum = DecodeManifest(kObject, 100, short_list.data(), short_list.size());
  ASSERT_TRUE(sum.status().IsCorruption());
  EXPECT_NE(sum.status().message().find("sum to 90"), std::string::npos) << sum.status().message();
}

TEST(Compress, RandomDataIsLeftRaw) {
  const auto data = testing::RandomBytes(1 << 20, 5);
  std::vector<uint8_t> out;
  EXPECT_FALSE(TryCompress(data.data(), data.size(), &out));
  CompressOptions no_sample;
  no_sample.sample_first = false;
  EXPECT_FALSE(TryCompress(data.data(), data.size(), &out, no_sample));
}

TEST(Compress, RepeatedRandomBlocksStillShrink) {
  // Even byte histograms, yet deflate's matching shrinks them: the cheap
  // random-looking gate must not turn them away.
  for (size_t period : {1024u, 2048u}) {
    const auto block = testing::RandomBytes(period, 6);
    std::vector<uint8_t> data;
    while (data.size() < (1u << 20)) data.insert(data.end(), block.begin(), block.end());
    std::vector<uint8_t> out, back;
    ASSERT_TRUE(TryCompress(data.data(), data.size(), &out)) << period;
    EXPECT_LE(out.size() + data.size() / 16, data.size()) << period;
    ASSERT_TRUE(Decompress(out.data(), out.size(), data.size(), &back).ok());
    EXPECT_EQ(back, data);
  }
}

TEST(Compress, TextShrinksAndRoundTrips) {
  std::string text;
  while (text.size() < 300000) text += "the quick brown fox jumps over the lazy dog " + std::to_string(text.size()) + "\n";
  std::vector<uint8_t> out, back;
  ASSERT_TRUE(TryCompress(reinterpret_cast<const uint8_t*>(text.data()), text.size(), &out));
  EXPECT_LE(out.size() + text.size() / 16, text.size());
  ASSERT_TRUE(Decompress(out.data(), out.size(), text.size(), &back).ok());
  EXPECT_EQ(std::string(back.begin(), back.end()), text);
}

TEST(Compress, DamagedStreamIsCorruption) {
  std::string text(100000, 'z');
  std::vector<uint8_t> out, back;
  ASSERT_TRUE(TryCompress(reinterpret_cast<const uint8_t*>(text.data()), text.size(), &out));
  EXPECT_TRUE(Decompress(out.data(), out.size(), text.size() + 1, &back).IsCorruption());
  out[out.size() / 2] ^= 0xff;
  EXPECT_TRUE(Decompress(out.data(), out.size(), text.size(), &back).IsCorruption());
  EXPECT_TRUE(Decompress(out.data(), 3, text.size(), &back).IsCorruption());
}

}  // namespace
}  // namespace chunkstore::internal

namespace chunkstore {
namespace {

internal::StoreConfig SampleConfig(bool bucket) {
  internal::StoreConfig c;
  c.bucket = bucket;
  c.format = bucket ? internal::kBucketFormat : internal::kDirectoryFormat;
  c.id = "0123456789abcdef0123456789abcdef";
  c.meta.chunking.min_size = 1024;
  c.meta.chunking.avg_size = 4096;
  c.meta.chunking.max_size = 16384;
  c.meta.compression = false;
  c.meta.inline_max = 100;
  return c;
}

TEST(StoreConfig, RoundTripsAndEveryDamagedByteIsRefused) {
  for (bool bucket : {false, true}) {
    const std::string text = internal::EncodeConfig(SampleConfig(bucket));
    auto back = internal::DecodeConfig(text, "config");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->id, SampleConfig(bucket).id);
    EXPECT_EQ(back->meta.chunking.avg_size, 4096u);
    EXPECT_FALSE(back->meta.compression);
    EXPECT_EQ(back->meta.inline_max, 100u);
    EXPECT_EQ(back->bucket, bucket);
    // A changed digit still parses as a number; the check catches it.
    for (size_t i = 0; i < text.size(); ++i) {
      std::string bad = text;
      bad[i] ^= 0x01;
      EXPECT_FALSE(internal::DecodeConfig(bad, "config").ok()) << "byte " << i << " of " << text;
    }
    EXPECT_FALSE(internal::DecodeConfig(text + "compression zlib\n", "config").ok()) << "a line after the check";
    const std::string no_check = text.substr(0, text.find("check "));
    EXPECT_TRUE(internal::DecodeConfig(no_check, "config").status().IsCorruption());
  }
  // A newer format is refused as such, not as damage.
  internal::StoreConfig newer = SampleConfig(false);
  newer.format = internal::kDirectoryFormat + 1;
  EXPECT_TRUE(internal::DecodeConfig(internal::EncodeConfig(newer), "config").status().IsUnsupported());
}

}  // namespace
}  // namespace chunkstore
