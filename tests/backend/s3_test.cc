// SPDX-License-Identifier: Apache-2.0
// Known answers of the S3 backend: AWS Signature Version 4 against the
// examples in AWS's S3 documentation, loading libcurl on demand, s3:// URLs.
#include <gtest/gtest.h>

#include "backend/s3/curl_api.h"
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

}  // namespace
}  // namespace chunkstore::internal
