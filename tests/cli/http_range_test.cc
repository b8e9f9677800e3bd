// SPDX-License-Identifier: Apache-2.0
// Range headers and multipart/byteranges layouts (cli/http_range.h).
#include <gtest/gtest.h>

#include "http_range.h"

namespace cli {
namespace {

std::vector<std::pair<uint64_t, uint64_t>> Pairs(const RangeRequest& r) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const auto& b : r.ranges) out.emplace_back(b.first, b.last);
  return out;
}

TEST(HttpRange, TheFormsRfc9110Allows) {
  EXPECT_EQ(ParseRange("", 100).outcome, RangeRequest::kWhole);
  EXPECT_EQ(Pairs(ParseRange("bytes=0-9", 100)), (std::vector<std::pair<uint64_t, uint64_t>>{{0, 9}}));
  EXPECT_EQ(Pairs(ParseRange("bytes=90-", 100)), (std::vector<std::pair<uint64_t, uint64_t>>{{90, 99}}));
  EXPECT_EQ(Pairs(ParseRange("bytes=-10", 100)), (std::vector<std::pair<uint64_t, uint64_t>>{{90, 99}}));
  EXPECT_EQ(Pairs(ParseRange("bytes=-1000", 100)), (std::vector<std::pair<uint64_t, uint64_t>>{{0, 99}}));
  EXPECT_EQ(Pairs(ParseRange("bytes=50-1000", 100)), (std::vector<std::pair<uint64_t, uint64_t>>{{50, 99}}));
  EXPECT_EQ(Pairs(ParseRange(" bytes=0-0 , 5-6,, -1 ", 100)),
            (std::vector<std::pair<uint64_t, uint64_t>>{{0, 0}, {5, 6}, {99, 99}}));
  // A range past the end is dropped; if none is left, 416.
  EXPECT_EQ(Pairs(ParseRange("bytes=0-1,200-300", 100)), (std::vector<std::pair<uint64_t, uint64_t>>{{0, 1}}));
  EXPECT_EQ(ParseRange("bytes=100-", 100).outcome, RangeRequest::kUnsatisfiable);
  EXPECT_EQ(ParseRange("bytes=-0", 100).outcome, RangeRequest::kUnsatisfiable);
  EXPECT_EQ(ParseRange("bytes=0-", 0).outcome, RangeRequest::kUnsatisfiable);
}

TEST(HttpRange, WhatIsMalformedIsIgnoredAndTooManyRefused) {
  for (const char* bad : {"items=0-1", "bytes=", "bytes=a-b", "bytes=5-1", "bytes=1", "bytes=--1",
                          "bytes=99999999999999999999-", "bytes=0-1;x"})
    EXPECT_EQ(ParseRange(bad, 100).outcome, RangeRequest::kWhole) << bad;
  std::string many = "bytes=";
  for (size_t i = 0; i <= kMaxRanges; ++i) many += std::to_string(i) + "-" + std::to_string(i) + ",";
  EXPECT_EQ(ParseRange(many, 1000).outcome, RangeRequest::kUnsatisfiable);
}

TEST(HttpRange, AMultipartBodyIsLaidOutAsItIsSent) {
  auto parts = MultipartLayout({{0, 3}, {10, 11}}, 20, "B", "application/octet-stream");
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].text, "--B\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes 0-3/20\r\n\r\n");
  EXPECT_EQ(parts[1].text, "\r\n--B\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes 10-11/20\r\n\r\n");
  EXPECT_EQ(parts[2].text, "\r\n--B--\r\n");
  EXPECT_FALSE(parts[2].has_range);
  EXPECT_EQ(BodyLength(parts), parts[0].text.size() + 4 + parts[1].text.size() + 2 + parts[2].text.size());
}

}  // namespace
}  // namespace cli
