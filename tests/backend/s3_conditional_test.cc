// SPDX-License-Identifier: Apache-2.0
// The S3 backend's conditional write (PutIfAbsent) against a scripted
// server: each answer is given in turn, so the cases a real service shows
// only under races and lost answers are reproducible. A 409 (a conditional
// write of the key under way) is asked again; a 412 after a retry is
// ours only when the blob holds our bytes; a 501 means the service has no
// conditional writes. Built into unit_tests.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scripted_s3.h"

namespace chunkstore::internal {
namespace {

using testing::Answer;
using testing::ScriptedServer;
using testing::StoreAt;

const std::string kOurs = "our record";

// One PutIfAbsent of kOurs against a server answering from script: its
// result, and the requests the server saw.
struct Outcome {
  Result<bool> result = Status::IOError("no store");
  std::vector<std::string> requests;
};

Outcome PutAgainst(std::vector<Answer> script) {
  ScriptedServer server(std::move(script));
  Outcome out;
  if (auto s = StoreAt(server)) out.result = s->PutIfAbsent("log/1", kOurs.data(), kOurs.size());
  out.requests = server.requests();
  return out;
}

const std::string kPut = "PUT /bucket/p/log/1 if-none-match";

TEST(S3ConditionalPut, AFirstAnswerDecides) {
  Outcome o = PutAgainst({{200, ""}});
  ASSERT_TRUE(o.result.ok()) << o.result.status().ToString();
  EXPECT_TRUE(*o.result);
  EXPECT_EQ(o.requests, std::vector<std::string>{kPut});
  // Taken by another writer: lost, and no read to check whose it is.
  o = PutAgainst({{412, ""}});
  ASSERT_TRUE(o.result.ok()) << o.result.status().ToString();
  EXPECT_FALSE(*o.result);
  EXPECT_EQ(o.requests.size(), 1u);
  o = PutAgainst({{501, "<Error><Code>NotImplemented</Code></Error>"}});
  EXPECT_TRUE(o.result.status().IsUnsupported()) << o.result.status().ToString();
  o = PutAgainst({{403, "<Error><Code>AccessDenied</Code></Error>"}});
  EXPECT_FALSE(o.result.ok());
  EXPECT_FALSE(o.result.status().IsUnsupported()) << o.result.status().ToString();
  EXPECT_EQ(o.requests.size(), 1u);
}

// A 409 says a conditional write of the key is under way, perhaps our own
// earlier one whose answer was lost; the 412 that follows is ours exactly
// when the blob holds our bytes.
TEST(S3ConditionalPut, A412AfterA409IsOursOnlyWhenTheBlobHoldsOurBytes) {
  Outcome o = PutAgainst({{409, ""}, {412, ""}, {200, kOurs}});
  ASSERT_TRUE(o.result.ok()) << o.result.status().ToString();
  EXPECT_TRUE(*o.result);
  EXPECT_EQ(o.requests, (std::vector<std::string>{kPut, kPut, "GET /bucket/p/log/1"}));
  o = PutAgainst({{409, ""}, {412, ""}, {200, "their record"}});
  ASSERT_TRUE(o.result.ok()) << o.result.status().ToString();
  EXPECT_FALSE(*o.result);
  // Our bytes with one more after them are not our bytes.
  o = PutAgainst({{409, ""}, {412, ""}, {200, kOurs + "!"}});
  ASSERT_TRUE(o.result.ok()) << o.result.status().ToString();
  EXPECT_FALSE(*o.result);
  // The check cannot be made: an error, never a guess.
  o = PutAgainst({{409, ""}, {412, ""}, {404, "<Error><Code>NoSuchKey</Code></Error>"}});
  EXPECT_FALSE(o.result.ok());
  EXPECT_EQ(o.requests.size(), 3u);
}

// A 5xx answer is retried like any outage; a 412 on the retry may be the
// first attempt's own write, so it is checked the same way.
TEST(S3ConditionalPut, A412OnARetryAfterAnOutageIsCheckedToo) {
  Outcome o = PutAgainst({{503, ""}, {412, ""}, {200, kOurs}});
  ASSERT_TRUE(o.result.ok()) << o.result.status().ToString();
  EXPECT_TRUE(*o.result);
  EXPECT_EQ(o.requests.size(), 3u);
  o = PutAgainst({{503, ""}, {412, ""}, {200, "their record"}});
  ASSERT_TRUE(o.result.ok()) << o.result.status().ToString();
  EXPECT_FALSE(*o.result);
}

// Conflicts that never settle give up after a bounded number of tries
// with an error, not a claim.
TEST(S3ConditionalPut, ConflictsThatNeverSettleFail) {
  Outcome o = PutAgainst(std::vector<Answer>(6, Answer{409, "<Error><Code>ConditionalRequestConflict</Code></Error>"}));
  EXPECT_FALSE(o.result.ok());
  EXPECT_EQ(o.requests.size(), 6u);
}

}  // namespace
}  // namespace chunkstore::internal
