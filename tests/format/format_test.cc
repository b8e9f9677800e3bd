// SPDX-License-Identifier: Apache-2.0
// Pack record framing, manifests and compression: round trips and every
// kind of damage the decoders must refuse without reading out of bounds.
#include <zlib.h>

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

  RecordHeader zstd = SampleHeader();
  zstd.codec = Codec::kZstd;
  EncodeRecordHeader(zstd, buf);
  ASSERT_TRUE(DecodeRecordHeader(buf, sizeof buf).ok());
  EXPECT_EQ(DecodeRecordHeader(buf, sizeof buf)->codec, Codec::kZstd);

  EncodeRecordHeader(SampleHeader(), buf);
  buf[4] = 3;  // the first unknown codec, with a recomputed check so only the codec is wrong, with a recomputed check so only the codec is wrong
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

// Every codec and a level at each end of its range.
const Compression kCodecs[] = {Compression::Zlib(1), Compression::Zlib(12), Compression::Zstd(1),
                               Compression::Zstd(3), Compression::Zstd(19)};

std::vector<uint8_t> TextBytes(size_t n) {
  std::string text;
  while (text.size() < n) text += "the quick brown fox jumps over the lazy dog " + std::to_string(text.size()) + "\n";
  text.resize(n);
  return std::vector<uint8_t>(text.begin(), text.end());
}

TEST(Compress, RandomDataIsLeftRaw) {
  const auto data = testing::RandomBytes(1 << 20, 5);
  for (const Compression& c : kCodecs) {
    std::vector<uint8_t> out;
    EXPECT_EQ(TryCompress(data.data(), data.size(), &out, {c}), Codec::kRaw) << c.ToString();
    CompressOptions no_sample{c, false};
    EXPECT_EQ(TryCompress(data.data(), data.size(), &out, no_sample), Codec::kRaw) << c.ToString();
  }
}

TEST(Compress, NoneNeverCompresses) {
  const auto text = TextBytes(300000);
  std::vector<uint8_t> out;
  EXPECT_EQ(TryCompress(text.data(), text.size(), &out, {Compression::None()}), Codec::kRaw);
  EXPECT_EQ(TryCompress(text.data(), text.size(), &out, {Compression::None(), false}), Codec::kRaw);
}

TEST(Compress, RepeatedRandomBlocksStillShrink) {
  // Even byte histograms, yet LZ matching shrinks them: the cheap
  // random-looking gate must not turn them away.
  for (const Compression& c : kCodecs) {
    for (size_t period : {1024u, 2048u}) {
      const auto block = testing::RandomBytes(period, 6);
      std::vector<uint8_t> data;
      while (data.size() < (1u << 20)) data.insert(data.end(), block.begin(), block.end());
      std::vector<uint8_t> out, back;
      const Codec used = TryCompress(data.data(), data.size(), &out, {c});
      ASSERT_EQ(static_cast<int>(used), static_cast<int>(c.codec)) << period << " " << c.ToString();
      EXPECT_LE(out.size() + data.size() / 16, data.size()) << period;
      ASSERT_TRUE(Decompress(used, out.data(), out.size(), data.size(), &back).ok());
      EXPECT_EQ(back, data);
    }
  }
}

TEST(Compress, TextShrinksAndRoundTripsAtEverySize) {
  for (const Compression& c : kCodecs) {
    // Below the sampled size (histogram gate), at it, and a large chunk.
    for (size_t n : {100u, 5000u, 65536u, 300000u, 4u << 20}) {
      const auto text = TextBytes(n);
      std::vector<uint8_t> out, back;
      const Codec used = TryCompress(text.data(), text.size(), &out, {c});
      ASSERT_EQ(static_cast<int>(used), static_cast<int>(c.codec)) << n << " " << c.ToString();
      EXPECT_LE(out.size() + text.size() / 16, text.size());
      ASSERT_TRUE(Decompress(used, out.data(), out.size(), text.size(), &back).ok());
      EXPECT_EQ(back, text) << n << " " << c.ToString();
    }
  }
}

TEST(Compress, HigherLevelsStoreLess) {
  const auto text = TextBytes(1 << 20);
  std::vector<uint8_t> fast, slow;
  ASSERT_EQ(TryCompress(text.data(), text.size(), &fast, {Compression::Zstd(1)}), Codec::kZstd);
  ASSERT_EQ(TryCompress(text.data(), text.size(), &slow, {Compression::Zstd(19)}), Codec::kZstd);
  EXPECT_LT(slow.size(), fast.size());
}

TEST(Compress, DamagedStreamIsCorruption) {
  for (const Compression& c : kCodecs) {
    const auto text = TextBytes(100000);
    std::vector<uint8_t> out, back;
    const Codec used = TryCompress(text.data(), text.size(), &out, {c});
    ASSERT_NE(used, Codec::kRaw);
    // Longer or shorter than the recorded length.
    EXPECT_TRUE(Decompress(used, out.data(), out.size(), text.size() + 1, &back).IsCorruption()) << c.ToString();
    EXPECT_TRUE(Decompress(used, out.data(), out.size(), text.size() - 1, &back).IsCorruption()) << c.ToString();
    EXPECT_TRUE(Decompress(used, out.data(), 3, text.size(), &back).IsCorruption()) << c.ToString();
    EXPECT_TRUE(Decompress(used, out.data(), 0, text.size(), &back).IsCorruption()) << c.ToString();
    // The other codec's decoder refuses it.
    const Codec other = used == Codec::kZlib ? Codec::kZstd : Codec::kZlib;
    EXPECT_TRUE(Decompress(other, out.data(), out.size(), text.size(), &back).IsCorruption()) << c.ToString();
    // A flipped byte either fails to decode or decodes to other bytes,
    // which the chunk's SHA-256 then refuses; it never reads out of
    // bounds (the sanitizer builds run this).
    for (size_t at = 0; at < out.size(); at += out.size() / 7 + 1) {
      std::vector<uint8_t> bad = out;
      bad[at] ^= 0xff;
      Status st = Decompress(used, bad.data(), bad.size(), text.size(), &back);
      if (st.ok()) EXPECT_NE(back, text) << "byte " << at << " " << c.ToString();
      else EXPECT_TRUE(st.IsCorruption()) << st.ToString();
    }
  }
  EXPECT_TRUE(Decompress(Codec::kRaw, nullptr, 0, 0, static_cast<uint8_t*>(nullptr)).IsInvalidArgument());
}

// Pinned frames from other encoders: what any zstd or zlib writer produces
// must read back, and what this one writes in zlib format must inflate with
// zlib itself (as every earlier chunkstore reads it).
TEST(Compress, ReadsOtherEncodersFramesAndZlibReadsOurs) {
  const std::string want = "chunkstore chunkstore chunkstore chunkstore\n";
  // `zstd -1 --no-check`, version 1.5.4.
  const uint8_t zstd_cli[] = {0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x48, 0x95, 0x00, 0x00, 0x60, 0x63, 0x68,
                              0x75, 0x6e, 0x6b, 0x73, 0x74, 0x6f, 0x72, 0x65, 0x20, 0x0a, 0x01, 0x00,
                              0xc6, 0x8b, 0x17};
  std::vector<uint8_t> back;
  ASSERT_TRUE(Decompress(Codec::kZstd, zstd_cli, sizeof zstd_cli, want.size(), &back).ok());
  EXPECT_EQ(std::string(back.begin(), back.end()), want);

  const auto text = TextBytes(1 << 20);
  for (int level : {1, 6, 9}) {
    uLongf len = compressBound(text.size());
    std::vector<uint8_t> z(len);
    ASSERT_EQ(compress2(z.data(), &len, text.data(), text.size(), level), Z_OK);
    ASSERT_TRUE(Decompress(Codec::kZlib, z.data(), len, text.size(), &back).ok()) << level;
    EXPECT_EQ(back, text);
  }
  for (int level : {1, 6, 12}) {
    std::vector<uint8_t> ours;
    ASSERT_EQ(TryCompress(text.data(), text.size(), &ours, {Compression::Zlib(level)}), Codec::kZlib);
    std::vector<uint8_t> out(text.size());
    uLongf len = out.size();
    ASSERT_EQ(uncompress(out.data(), &len, ours.data(), ours.size()), Z_OK) << level;
    EXPECT_EQ(len, text.size());
    EXPECT_EQ(out, text);
  }
}

TEST(Compression, ParsesEveryFormAndRefusesTheRest) {
  struct Case {
    const char* text;
    Compression want;
  } good[] = {{"none", Compression::None()},       {"zlib", Compression::Zlib(1)},
              {"zlib:9", Compression::Zlib(9)},     {"zlib:12", Compression::Zlib(12)},
              {"zstd", Compression::Zstd(3)},       {"zstd:1", Compression::Zstd(1)},
              {"zstd:19", Compression::Zstd(19)},   {"zstd:07", Compression::Zstd(7)}};
  for (const Case& c : good) {
    Result<Compression> r = Compression::Parse(c.text);
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.status().ToString();
    EXPECT_TRUE(*r == c.want) << c.text;
    Result<Compression> again = Compression::Parse(r->ToString());
    ASSERT_TRUE(again.ok()) << r->ToString();
    EXPECT_TRUE(*again == *r) << r->ToString();
  }
  for (const char* bad : {"", "zstd:", "zstd:0", "zstd:20", "zstd:-1", "zstd:3:4", "zstd:x", "zlib:0",
                          "zlib:13", "none:1", "lz4", "ZSTD", "zstd :3", "zstd:100", "zstd:999999999999"}) {
    Result<Compression> r = Compression::Parse(bad);
    EXPECT_TRUE(r.status().IsInvalidArgument()) << "'" << bad << "'";
  }
  EXPECT_EQ(Compression().ToString(), "zstd:3");
  EXPECT_EQ(CompressionText(Compression::Zlib(1)), "zlib");  // what every version reads
  EXPECT_EQ(CompressionText(Compression::Zstd(5)), "zstd:5");
  EXPECT_EQ(CompressionText(Compression::None()), "none");
  const Compression level_zero{Compression::Codec::kZstd, 0};
  EXPECT_TRUE(level_zero.Validate().IsInvalidArgument());
  const Compression unknown{static_cast<Compression::Codec>(9), 1};
  EXPECT_TRUE(unknown.Validate().IsInvalidArgument());
}

}  // namespace
}  // namespace chunkstore::internal

namespace chunkstore {
namespace {

internal::StoreConfig SampleConfig(bool bucket) {
  internal::StoreConfig c;
  c.bucket = bucket;
  c.format = bucket ? internal::kBucketFormat : internal::kDirectoryFormat;
  c.sequenced = bucket;
  c.id = "0123456789abcdef0123456789abcdef";
  c.meta.chunking.min_size = 1024;
  c.meta.chunking.avg_size = 4096;
  c.meta.chunking.max_size = 16384;
  c.meta.compression = Compression::None();
  c.meta.inline_max = 100;
  return c;
}

// A bucket config's format and its log line must agree: format 4 is a
// sequenced log, and no other format is.
TEST(StoreConfig, ALogLineThatDisagreesWithTheFormatIsDamage) {
  internal::StoreConfig c = SampleConfig(true);
  auto back = internal::DecodeConfig(internal::EncodeConfig(c), "config");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->sequenced);
  c.sequenced = false;  // format 4 without its log line
  EXPECT_TRUE(internal::DecodeConfig(internal::EncodeConfig(c), "config").status().IsCorruption());
  c.format = internal::kBucketTreeFormat;
  c.sequenced = true;  // a format 3 store that says its log is sequenced
  EXPECT_TRUE(internal::DecodeConfig(internal::EncodeConfig(c), "config").status().IsCorruption());
  c.sequenced = false;
  back = internal::DecodeConfig(internal::EncodeConfig(c), "config");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_FALSE(back->sequenced);
  // A log kind this version does not know.
  std::string text = internal::EncodeConfig(SampleConfig(true));
  text.replace(text.find("log sequenced"), 13, "log elsewhere");
  EXPECT_FALSE(internal::DecodeConfig(text, "config").ok());
}

TEST(StoreConfig, RoundTripsAndEveryDamagedByteIsRefused) {
  for (bool bucket : {false, true}) {
    const std::string text = internal::EncodeConfig(SampleConfig(bucket));
    auto back = internal::DecodeConfig(text, "config");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->id, SampleConfig(bucket).id);
    EXPECT_EQ(back->meta.chunking.avg_size, 4096u);
    EXPECT_FALSE(back->meta.compression.enabled());
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
  // Each compression round-trips; zlib level 1 keeps the form older
  // versions read, a codec this version does not know is Unsupported.
  for (const Compression& c : {Compression::Zlib(1), Compression::Zlib(7), Compression::Zstd(3), Compression::Zstd(19)}) {
    internal::StoreConfig sc = SampleConfig(false);
    sc.meta.compression = c;
    const std::string text = internal::EncodeConfig(sc);
    auto back = internal::DecodeConfig(text, "config");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_TRUE(back->meta.compression == c) << c.ToString();
    if (c == Compression::Zlib(1)) {
      EXPECT_NE(text.find("\ncompression zlib\n"), std::string::npos) << text;
    }
  }
  {
    std::string text = internal::EncodeConfig(SampleConfig(false));
    text = text.substr(0, text.find("check "));
    const size_t at = text.find("compression none");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 16, "compression lz4:1");
    char check[32];
    std::snprintf(check, sizeof check, "%016llx", static_cast<unsigned long long>(internal::XxHash64(text.data(), text.size())));
    text += std::string("check ") + check + "\n";
    Status st = internal::DecodeConfig(text, "config").status();
    EXPECT_TRUE(st.IsUnsupported()) << st.ToString();
    EXPECT_NE(st.message().find("lz4"), std::string::npos) << st.ToString();
  }
  // A newer format is refused as such, not as damage.
  internal::StoreConfig newer = SampleConfig(false);
  newer.format = internal::kDirectoryFormat + 1;
  EXPECT_TRUE(internal::DecodeConfig(internal::EncodeConfig(newer), "config").status().IsUnsupported());
}

}  // namespace
}  // namespace chunkstore
