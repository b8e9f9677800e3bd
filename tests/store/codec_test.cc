// SPDX-License-Identifier: Apache-2.0
// Stores with each codec: what a store is created with it keeps, every
// codec's chunks read back through every read path, and a compressed chunk
// whose stored bytes were rewritten (checks and all) is refused by its
// SHA-256, naming the object and chunk, never handed out.
#include <fstream>

#include "format/pack_format.h"
#include "hash/digest.h"
#include "test_util.h"

namespace chunkstore {
namespace {

using testing::ReadObject;

std::string Text(size_t n, int salt) {
  std::string text;
  for (size_t i = 0; text.size() < n; ++i)
    text += "line " + std::to_string((i * 7919 + salt) % 100003) + " of a log, value=" + std::to_string(i % 97) + "\n";
  text.resize(n);
  return text;
}

class CodecTest : public ::testing::TestWithParam<std::string> {
 protected:
  Compression codec() const { return *Compression::Parse(GetParam()); }
  testing::TempDir dir_;
};

INSTANTIATE_TEST_SUITE_P(Codecs, CodecTest,
                         ::testing::Values("zlib:1", "zlib:9", "zstd:1", "zstd:3", "zstd:19", "none"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == ':') c = '_';
                           return n;
                         });

TEST_P(CodecTest, StoreKeepsItsCodecAndEveryChunkReadsBack) {
  Options o = testing::SmallChunks();
  o.compression = codec();
  const std::string text = Text(3 << 20, 1);
  const auto random = testing::RandomBytes(200000, 2);
  std::string id_text, id_random;
  {
    auto s = Store::Open(dir_ / "s", o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_TRUE((*s)->compression() == codec());
    auto t = (*s)->PublishBytes(text.data(), text.size(), "text");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    auto r = (*s)->PublishBytes(random.data(), random.size(), "random");
    ASSERT_TRUE(r.ok());
    id_text = t->id;
    id_random = r->id;
    auto info = (*s)->Stat("text");
    ASSERT_TRUE(info.ok());
    if (codec().enabled()) {
      EXPECT_EQ(info->compressed_chunks, info->chunks) << "every chunk of text shrinks";
      EXPECT_LT(t->new_bytes, text.size() / 2);
    } else {
      EXPECT_EQ(info->compressed_chunks, 0u);
    }
    EXPECT_EQ((*s)->Stat("random")->compressed_chunks, 0u) << "random bytes are stored raw";
  }
  // Opened again asking for another codec: the store keeps its own, and
  // new chunks are written with it.
  Options other = o;
  other.compression = codec().enabled() ? Compression::None() : Compression::Zstd(5);
  auto s = Store::Open(dir_ / "s", other);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE((*s)->compression() == codec()) << (*s)->compression().ToString();
  const std::string more = Text(100000, 3);
  auto m = (*s)->PublishBytes(more.data(), more.size(), "more");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*s)->Stat("more")->compressed_chunks > 0, codec().enabled());
  for (const auto& [ref, want] : {std::pair<std::string, std::string>{id_text, text},
                                  {id_random, std::string(random.begin(), random.end())}, {"more", more}}) {
    for (size_t step : {size_t{1} << 20, size_t{777}}) {
      auto got = ReadObject(**s, ref, step);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(std::string(got->begin(), got->end()), want) << ref << " step " << step;
    }
    auto reader = (*s)->OpenReader(ref);
    ASSERT_TRUE(reader.ok());
    for (uint64_t at : {uint64_t{0}, uint64_t{12345}, uint64_t{want.size() - 10}}) {
      char buf[10];
      auto n = (*reader)->ReadAt(at, buf, sizeof buf);
      ASSERT_TRUE(n.ok()) << n.status().ToString();
      EXPECT_EQ(std::string(buf, *n), want.substr(at, *n)) << ref << " at " << at;
    }
  }
  auto v = (*s)->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->problems.empty());
  // A rebuilt index reads the codec from the packs and the log.
  ASSERT_TRUE((*s)->RebuildIndex().ok());
  s->reset();
  Options no_create = o;
  no_create.create_if_missing = false;
  s = Store::Open(dir_ / "s", no_create);
  ASSERT_TRUE(s.ok());
  auto again = ReadObject(**s, "text");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(std::equal(again->begin(), again->end(), text.begin(), text.end()));
}

// The stored bytes of a chunk are replaced by other bytes that still
// decode (for a store without compression: other raw bytes), and every
// check in front of the decoder is recomputed to match (record header,
// index row): only the SHA-256 of the decoded chunk is left to catch it,
// and it must.
TEST_P(CodecTest, ForgedChunkIsRefusedBySha256) {
  Options o;
  o.chunking.min_size = 1 << 20;  // one chunk
  o.chunking.avg_size = 2 << 20;
  o.chunking.max_size = 4 << 20;
  o.compression = codec();
  const std::string text = Text(500000, 4);
  std::string id;
  {
    auto s = Store::Open(dir_ / "s", o);
    ASSERT_TRUE(s.ok());
    auto r = (*s)->PublishBytes(text.data(), text.size(), "t");
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->chunks, 1u);
    id = r->id;
  }
  // The same length of other text, compressed with the same codec, in place
  // of the stored bytes: a valid stream that decodes to the wrong content.
  std::filesystem::path pack;
  for (auto& e : std::filesystem::directory_iterator(dir_ / "s/packs")) pack = e.path();
  std::fstream f(pack, std::ios::in | std::ios::out | std::ios::binary);
  uint8_t header[internal::kRecordHeaderSize];
  f.seekg(internal::kPackHeaderSize);
  f.read(reinterpret_cast<char*>(header), sizeof header);
  auto h = internal::DecodeRecordHeader(header, sizeof header);
  ASSERT_TRUE(h.ok());
  std::string other = text;
  std::fill(other.begin() + 1000, other.begin() + 5000, 'a');  // compresses smaller
  std::vector<uint8_t> packed(other.begin(), other.end());
  if (codec().enabled()) {
    ASSERT_EQ(static_cast<int>(h->codec), static_cast<int>(codec().codec));
    ASSERT_NE(internal::TryCompress(reinterpret_cast<const uint8_t*>(other.data()), other.size(), &packed, {codec()}),
              internal::Codec::kRaw);
  } else {
    ASSERT_EQ(h->codec, internal::Codec::kRaw);
  }
  ASSERT_LE(packed.size(), h->stored_len);
  // The record and the index say the new stored length: a zstd frame with
  // bytes after it is refused by the decoder, and this test is about what
  // gets past the decoder.
  internal::RecordHeader forged = *h;
  forged.stored_len = static_cast<uint32_t>(packed.size());
  if (!codec().enabled()) forged.raw_len = forged.stored_len;
  forged.xxh64 = internal::XxHash64(packed.data(), packed.size());
  internal::EncodeRecordHeader(forged, header);
  f.seekp(internal::kPackHeaderSize);
  f.write(reinterpret_cast<const char*>(header), sizeof header);
  f.write(reinterpret_cast<const char*>(packed.data()), static_cast<std::streamsize>(packed.size()));
  f.close();
  testing::Sql(dir_ / "s", "UPDATE chunks SET xxh64=" + std::to_string(static_cast<int64_t>(forged.xxh64)) +
                               ", stored_len=" + std::to_string(forged.stored_len));
  auto s = Store::Open(dir_ / "s", o);
  ASSERT_TRUE(s.ok());
  auto got = ReadObject(**s, "t");
  ASSERT_FALSE(got.ok()) << "the forged chunk was handed out";
  EXPECT_TRUE(got.status().IsCorruption()) << got.status().ToString();
  EXPECT_NE(got.status().message().find(id), std::string::npos) << got.status().ToString();
  EXPECT_NE(got.status().message().find(h->chunk_id.Hex()), std::string::npos) << got.status().ToString();
  EXPECT_NE(got.status().message().find("SHA-256"), std::string::npos)
      << "refused by the hash, not earlier: " << got.status().ToString();
  auto v = (*s)->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->problems.empty());
}

}  // namespace
}  // namespace chunkstore
