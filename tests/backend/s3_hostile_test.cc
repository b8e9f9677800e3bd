// SPDX-License-Identifier: Apache-2.0
// The S3 backend against a service that answers badly or with hostility
// (a bucket or an http:// store someone else runs): keys outside the
// prefix asked for are not taken, a listing that leads back to a page it
// already read ends in an error rather than running forever, one that is
// not XML is an I/O error (not damage to the store), a body
// larger than any blob of a store is refused before it is taken in, and a
// ranged GET answered with the whole blob keeps only the range and stops
// the transfer once it has it; an answer that trickles in is given up.
// Built into unit_tests.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "scripted_s3.h"

namespace chunkstore::internal {
namespace {

using testing::Answer;
using testing::ScriptedServer;
using testing::StoreAt;

std::string Page(const std::vector<std::string>& keys, const std::string& next_token) {
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult>";
  for (const std::string& k : keys)
    xml += "<Contents><Key>" + k + "</Key><Size>5</Size><LastModified>2026-12-01T00:00:00.000Z</LastModified></Contents>";
  xml += next_token.empty() ? "<IsTruncated>false</IsTruncated>"
                            : "<IsTruncated>true</IsTruncated><NextContinuationToken>" + next_token +
                                  "</NextContinuationToken>";
  return xml + "</ListBucketResult>";
}

// Keys shorter than the prefix, or under another one, would otherwise
// reach callers that cut the prefix off (a crash on a short key).
TEST(S3Hostile, AListingTakesOnlyKeysUnderItsPrefix) {
  ScriptedServer server({{200, Page({"p", "p/pack", "p/other/x", "q/packs/y", "p/packs/a.pack"}, "")}});
  auto s = StoreAt(server);
  ASSERT_TRUE(s);
  auto listed = s->List("packs/", "");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].key, "packs/a.pack");
  EXPECT_EQ((*listed)[0].size, 5u);
}

TEST(S3Hostile, AListingThatGoesRoundInACircleFails) {
  ScriptedServer server({{200, Page({"p/log/1"}, "t1")},
                         {200, Page({"p/log/2"}, "t2")},
                         {200, Page({"p/log/3"}, "t1")},
                         {200, Page({"p/log/4"}, "t2")}});
  auto s = StoreAt(server);
  ASSERT_TRUE(s);
  auto listed = s->List("log/", "");
  ASSERT_FALSE(listed.ok());
  EXPECT_NE(listed.status().message().find("circle"), std::string::npos) << listed.status().ToString();
  EXPECT_EQ(server.requests().size(), 3u);
  // An honest continuation still works.
  ScriptedServer honest({{200, Page({"p/log/1"}, "t1")}, {200, Page({"p/log/2"}, "")}});
  auto h = StoreAt(honest);
  ASSERT_TRUE(h);
  auto both = h->List("log/", "");
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  EXPECT_EQ(both->size(), 2u);
  ASSERT_EQ(honest.requests().size(), 2u);
  EXPECT_NE(honest.requests()[1].find("continuation-token=t1"), std::string::npos) << honest.requests()[1];
}

// A listing the service garbled (a proxy's error page, a cut-off body)
// says nothing of the store: it is an I/O error, which verify reports as
// its own failure, not as damage to the store.
TEST(S3Hostile, AListingThatIsNotXmlIsAnIoError) {
  for (const std::string& body : {std::string("<html><body>Bad Gateway</body></html"), std::string("<ListBucketResult><Contents>"),
                                 std::string("not xml at all")}) {
    ScriptedServer server({{200, body}});
    auto s = StoreAt(server);
    ASSERT_TRUE(s);
    auto listed = s->List("log/", "");
    ASSERT_FALSE(listed.ok()) << body;
    EXPECT_TRUE(listed.status().IsIOError()) << body << ": " << listed.status().ToString();
    EXPECT_NE(listed.status().message().find("listing"), std::string::npos) << listed.status().ToString();
  }
}

// A config, log record or checkpoint is read whole into memory: one that
// says it is larger than any blob a store writes is refused at once, and
// not asked for again.
TEST(S3Hostile, ABodyLargerThanAnyBlobIsRefused) {
  ScriptedServer server({{200, "", "HTTP/1.1 200 OK\r\nContent-Length: 4611686018427387904\r\n\r\n" +
                                       std::string(100000, 'x')}});
  auto s = StoreAt(server);
  ASSERT_TRUE(s);
  auto got = s->Get("config");
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("larger than"), std::string::npos) << got.status().ToString();
  EXPECT_EQ(server.requests().size(), 1u);
}

// A service that ignores Range and sends the whole blob: the range is
// taken from it, and the transfer stops once it has passed, instead of
// taking in the whole blob for every chunk read.
TEST(S3Hostile, ARangedGetAnsweredWithTheWholeBlobKeepsOnlyTheRange) {
  std::string blob(16 << 20, '\0');
  for (size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<char>(i * 131 + (i >> 12));
  const std::string whole = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(blob.size()) + "\r\n\r\n" + blob;
  ScriptedServer server({{200, "", whole}, {200, "", whole}});
  auto s = StoreAt(server);
  ASSERT_TRUE(s);
  std::vector<char> buf(100);
  size_t got = 0;
  Status st = s->GetRange("packs/a", 1000, buf.size(), buf.data(), &got);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(got, buf.size());
  EXPECT_EQ(std::string(buf.data(), got), blob.substr(1000, 100));
  // Past the end of what the blob holds: what there is.
  st = s->GetRange("packs/a", blob.size() - 10, buf.size(), buf.data(), &got);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(got, 10u);
  EXPECT_EQ(std::string(buf.data(), got), blob.substr(blob.size() - 10));
  // The server notes what it sent once its side of a connection is done.
  for (int i = 0; i < 500 && server.sent().size() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const std::vector<size_t> sent = server.sent();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_LT(sent[0], whole.size() / 2) << "the first transfer was not cut off";
}

// A service that keeps a request alive with a byte now and then: below
// 1 KiB/s for the stall timeout, the request is given up (and retried).
TEST(S3Hostile, AnAnswerThatTricklesInIsGivenUp) {
  const std::string body(400, 'c');
  const std::string raw = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  ScriptedServer server({{200, "", raw, 100}, {200, "", raw, 100}, {200, "", raw, 100}});
  auto s = StoreAt(server, 2, 1000);
  ASSERT_TRUE(s);
  const auto start = std::chrono::steady_clock::now();
  auto got = s->Get("config");
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // At 80 bytes a second the body would take 5 s an attempt.
  EXPECT_FALSE(got.ok()) << "took " << secs << " s";
  EXPECT_EQ(server.requests().size(), 2u);
}

}  // namespace
}  // namespace chunkstore::internal
