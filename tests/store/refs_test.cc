// SPDX-License-Identifier: Apache-2.0
// Catalog name rules.
#include "test_util.h"

namespace chunkstore {
namespace {

TEST(ValidateName, AcceptsOrdinaryAndUnicodeNames) {
  for (const std::string& n : std::vector<std::string>{"a", "models/llama/7b.bin", "résumé.pdf", "数据集", "emoji-🙂",
                              std::string(1024, 'x'), "with space", "dots..and--dashes"})
    EXPECT_TRUE(ValidateName(n).ok()) << n;
}

TEST(ValidateName, RejectsWithReason) {
  struct Case {
    std::string name;
    const char* needle;
  } cases[] = {
      {"", "empty"},
      {std::string(1025, 'x'), "1025 bytes"},
      {std::string(2048, 'x'), "limit is 1024"},
      {"tab\there", "control character at byte 3"},
      {"new\nline", "control character"},
      {std::string("nul\0x", 5), "control character"},
      {"del\x7f", "control character"},
      {"c1\xc2\x85", "control character"},
      {"bad\xff", "not valid UTF-8"},
      {"cut\xe2\x82", "not valid UTF-8"},
      {"over\xc0\xaf", "not valid UTF-8"},
  };
  for (const auto& c : cases) {
    Status s = ValidateName(c.name);
    EXPECT_TRUE(s.IsInvalidArgument()) << c.needle;
    EXPECT_NE(s.message().find(c.needle), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace chunkstore
