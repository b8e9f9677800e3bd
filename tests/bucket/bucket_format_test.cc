// Known answers and encodings of the bucket layer: AWS Signature Version 4
// against the examples in AWS's S3 documentation, log records, s3:// URLs.
#include <gtest/gtest.h>

#include "bucket/bucket.h"
#include "backend/s3/curl_api.h"
#include "index/index.h"
#include "format/manifest.h"
#include "backend/s3/s3_blob_store.h"
#include "backend/s3/sigv4.h"

namespace chunkstore::internal {
namespace {

constexpr const char* kEmptySha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const SigV4Credentials kExampleCreds{"AKIAIOSFODNN7EXAMPLE",
                                     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1"};

std::string SignatureOf(const std::string& auth) { return auth.substr(auth.rfind('=') + 1); }

// "Example: GET Object" (sig-v4-header-based-auth).
TEST(SigV4Test, GetObjectWithRangeMatchesAwsExample) {
  SigV4Request r;
  r.method = "GET";
  r.canonical_uri = "/test.txt";
  r.payload_sha256 = kEmptySha;
  r.amz_date = "20130524T000000Z";
  r.headers = {{"host", "examplebucket.s3.amazonaws.com"},
               {"range", "bytes=0-9"},
               {"x-amz-content-sha256", kEmptySha},
               {"x-amz-date", "20130524T000000Z"}};
  const std::string auth = SignV4(r, kExampleCreds);
  EXPECT_EQ(SignatureOf(auth), "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_EQ(auth.substr(0, auth.find(", Signature")),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date");
}

// "Example: PUT Object": a key with '$', a signed body.
TEST(SigV4Test, PutObjectMatchesAwsExample) {
  const std::string body = "Welcome to Amazon S3.";
  const std::string sha = Sha256Hex(body.data(), body.size());
  EXPECT_EQ(sha, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  SigV4Request r;
  r.method = "PUT";
  r.canonical_uri = "/" + UriEncode("test$file.text", true);
  EXPECT_EQ(r.canonical_uri, "/test%24file.text");
  r.payload_sha256 = sha;
  r.amz_date = "20130524T000000Z";
  r.headers = {{"x-amz-storage-class", "REDUCED_REDUNDANCY"},
               {"host", "examplebucket.s3.amazonaws.com"},
               {"date", "Fri, 24 May 2013 00:00:00 GMT"},
               {"x-amz-date", "20130524T000000Z"},
               {"x-amz-content-sha256", sha}};  // unsorted on purpose
  EXPECT_EQ(SignatureOf(SignV4(r, kExampleCreds)),
            "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}

// "Example: GET Bucket (List Objects)": query parameters sorted.
TEST(SigV4Test, ListObjectsMatchesAwsExample) {
  SigV4Request r;
  r.method = "GET";
  r.canonical_uri = "/";
  r.query = {{"prefix", "J"}, {"max-keys", "2"}};
  r.payload_sha256 = kEmptySha;
  r.amz_date = "20130524T000000Z";
  r.headers = {{"host", "examplebucket.s3.amazonaws.com"},
               {"x-amz-content-sha256", kEmptySha},
               {"x-amz-date", "20130524T000000Z"}};
  EXPECT_EQ(CanonicalQuery(r.query), "max-keys=2&prefix=J");
  EXPECT_EQ(SignatureOf(SignV4(r, kExampleCreds)),
            "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST(SigV4Test, UriEncodingKeepsOnlyUnreservedCharacters) {
  EXPECT_EQ(UriEncode("a b/c~d_e-f.g", true), "a%20b/c~d_e-f.g");
  EXPECT_EQ(UriEncode("a b/c", false), "a%20b%2Fc");
  EXPECT_EQ(UriEncode("\xc3\xa9", false), "%C3%A9");
  EXPECT_EQ(CanonicalQuery({{"uploads", ""}}), "uploads=");
}

TEST(CurlApiTest, LoadsLibcurlOnDemandAndNamesWhatIsMissing) {
  auto missing = LoadCurl("libcurl-that-does-not-exist.so.4");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().IsUnsupported()) << missing.status().ToString();
  EXPECT_NE(missing.status().message().find("libcurl"), std::string::npos);
  // A library without curl's functions (zlib is always loaded here).
  auto wrong = LoadCurl("libz.so.1");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("curl_easy_init"), std::string::npos) << wrong.status().ToString();
  auto api = Curl();
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  EXPECT_EQ(*api, *Curl());  // loaded once
  CURL* h = (*api)->easy_init();
  ASSERT_NE(h, nullptr);
  EXPECT_STREQ((*api)->easy_strerror(CURLE_OK), "No error");
  (*api)->easy_cleanup(h);
}

TEST(S3UrlTest, ParsesBucketAndPrefixAndRejectsMalformedOnes) {
  auto a = ParseS3Url("s3://my-bucket/some/prefix/");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->bucket, "my-bucket");
  EXPECT_EQ(a->prefix, "some/prefix");
  auto b = ParseS3Url("s3://bucket");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->prefix, "");
  for (const char* bad : {"s3://", "s3://AB", "s3://Upper/x", "s3://ok-bucket//x", "http://b/x"})
    EXPECT_TRUE(ParseS3Url(bad).status().IsInvalidArgument()) << bad;
}

LogRecord SampleRecord() {
  LogRecord r;
  r.kind = LogRecord::kPublish;
  r.time = 1764500000;
  r.packs = {{"pack-0011223344556677.pack", 12345}, {"pack-8899aabbccddeeff.pack", 99}};
  Digest c1 = Sha256::Of("one", 3), c2 = Sha256::Of("two", 3);
  LogRecord::Chunk ch{c1, 1, {}};
  ch.loc.offset = 16;
  ch.loc.raw_len = 3;
  ch.loc.stored_len = 3;
  ch.loc.codec = Codec::kRaw;
  ch.loc.xxh64 = 0x1122334455667788ull;
  r.chunks.push_back(ch);
  ObjectRow ob;
  ob.id = Sha256::Of("onetwo", 6);
  ob.size = 6;
  ob.chunk_count = 2;
  ob.manifest = EncodeManifest(ob.id, 6, {{c1, 3}, {c2, 3}});
  ob.created = 1764500001;
  ob.pinned = true;
  r.objects.push_back(ob);
  r.names = {{"docs/readme", ob.id}};
  r.removed_names = {"old"};
  r.removed_objects = {c2};
  r.removed_chunks = {{c1, "pack-0011223344556677.pack"}};
  r.removed_packs = {"pack-ffff.pack"};
  return r;
}

TEST(LogRecordTest, RoundTripsEverySection) {
  const LogRecord r = SampleRecord();
  auto back = DecodeLogRecord(EncodeLogRecord(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->kind, r.kind);
  EXPECT_EQ(back->time, r.time);
  ASSERT_EQ(back->packs.size(), 2u);
  EXPECT_EQ(back->packs[1].name, r.packs[1].name);
  EXPECT_EQ(back->packs[0].size, 12345u);
  ASSERT_EQ(back->chunks.size(), 1u);
  EXPECT_EQ(back->chunks[0].id, r.chunks[0].id);
  EXPECT_EQ(back->chunks[0].pack, 1u);
  EXPECT_EQ(back->chunks[0].loc.xxh64, r.chunks[0].loc.xxh64);
  ASSERT_EQ(back->objects.size(), 1u);
  EXPECT_EQ(back->objects[0].manifest, r.objects[0].manifest);
  EXPECT_TRUE(back->objects[0].pinned);
  EXPECT_EQ(back->names, r.names);
  EXPECT_EQ(back->removed_names, r.removed_names);
  EXPECT_EQ(back->removed_objects, r.removed_objects);
  ASSERT_EQ(back->removed_chunks.size(), 1u);
  EXPECT_EQ(back->removed_chunks[0].pack, r.removed_chunks[0].pack);
  EXPECT_EQ(back->removed_packs, r.removed_packs);
}

TEST(LogRecordTest, EveryFlippedByteAndEveryTruncationIsRejected) {
  const std::string good = EncodeLogRecord(SampleRecord());
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x20;
    auto r = DecodeLogRecord(bad);
    EXPECT_FALSE(r.ok()) << "byte " << i;
  }
  for (size_t n = 0; n < good.size(); n += 7)
    EXPECT_TRUE(DecodeLogRecord(good.substr(0, n)).status().IsCorruption()) << n;
}

TEST(LogRecordTest, AChunkNamingAMissingPackIsCorruption) {
  LogRecord r = SampleRecord();
  r.chunks[0].pack = 7;
  EXPECT_TRUE(DecodeLogRecord(EncodeLogRecord(r)).status().IsCorruption());
}

// Two writers stored the same chunk at once, each in its own pack; caches
// that see their records in either order must agree on one copy.
TEST(LogRecordTest, AChunkStoredTwiceResolvesToTheSameCopyInEveryOrder) {
  const Digest chunk = Sha256::Of("shared", 6);
  auto record = [&](const std::string& pack, uint64_t offset) {
    LogRecord r;
    r.kind = LogRecord::kPublish;
    r.packs = {{pack, 1000}};
    LogRecord::Chunk c{chunk, 0, {}};
    c.loc.offset = offset;
    c.loc.raw_len = c.loc.stored_len = 6;
    r.chunks.push_back(c);
    return r;
  };
  const LogRecord first = record("pack-bbbb.pack", 16), second = record("pack-aaaa.pack", 80);
  StoreMeta meta;
  std::optional<ChunkLocation> seen[2];
  std::string pack_of[2];
  for (int order = 0; order < 2; ++order) {
    auto index = Index::Open(":memory:", &meta, false, 0);
    ASSERT_TRUE(index.ok());
    Index* ix = index->get();
    ASSERT_TRUE(ix->Begin().ok());
    ASSERT_TRUE(ApplyLogRecord(ix, order == 0 ? first : second, nullptr).ok());
    ASSERT_TRUE(ApplyLogRecord(ix, order == 0 ? second : first, nullptr).ok());
    ASSERT_TRUE(ix->Commit().ok());
    auto loc = ix->FindChunk(chunk);
    ASSERT_TRUE(loc.ok() && loc->has_value());
    seen[order] = *loc;
    auto pack = ix->FindPack((*loc)->pack_id);
    ASSERT_TRUE(pack.ok() && pack->has_value());
    pack_of[order] = (*pack)->name;
  }
  EXPECT_EQ(pack_of[0], "pack-aaaa.pack");
  EXPECT_EQ(pack_of[1], "pack-aaaa.pack");
  EXPECT_EQ(seen[0]->offset, 80u);
  EXPECT_EQ(seen[1]->offset, 80u);
}

}  // namespace
}  // namespace chunkstore::internal
