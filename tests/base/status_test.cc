// SPDX-License-Identifier: Apache-2.0
// Status and Result: the text a status prints as, and what taking the value
// of a failed Result does (it aborts, naming the error, in every build:
// never a value that is not there).
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "chunkstore/status.h"

namespace chunkstore {
namespace {

TEST(Status, PrintsItsCodeAndMessage) {
  EXPECT_EQ(Status::OK().ToString(), "OK");
  EXPECT_EQ(Status::NotFound("no object sha256:ab").ToString(), "not found: no object sha256:ab");
  EXPECT_EQ(Status::IOError("disk full").WithContext("writing pack").ToString(),
            "I/O error: writing pack: disk full");
  EXPECT_TRUE(Status::OK().WithContext("ignored").ok());
}

TEST(Result, HoldsAValueOrAnError) {
  Result<std::string> good(std::string("bytes"));
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, "bytes");
  EXPECT_EQ(good->size(), 5u);
  Result<std::string> bad(Status::Corruption("chunk 12ab: content does not match its SHA-256"));
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().IsCorruption());
}

using ResultDeathTest = ::testing::Test;

TEST_F(ResultDeathTest, TakingTheValueOfAnErrorAbortsWithTheErrorInEveryBuild) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Result<int> bad(Status::NotFound("no such object"));
  EXPECT_DEATH((void)bad.value(), "value of a failed Result: not found: no such object");
  EXPECT_DEATH((void)*bad, "not found: no such object");
  Result<std::unique_ptr<int>> gone(Status::IOError("cannot read pack"));
  EXPECT_DEATH((void)gone->get(), "I/O error: cannot read pack");
  EXPECT_DEATH((void)*std::move(gone), "I/O error: cannot read pack");
}

}  // namespace
}  // namespace chunkstore
