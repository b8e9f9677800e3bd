// SPDX-License-Identifier: Apache-2.0
// Stores written by earlier versions of chunkstore (tests/golden/): the
// current code opens a copy of each, verifies it and reads every object
// back, byte for byte.
#include <fstream>
#include <sstream>

#include "hash/digest.h"
#include "test_util.h"

namespace chunkstore {
namespace {

struct Expected {
  std::string ref, sha256;
};

std::vector<Expected> ExpectedContents() {
  std::vector<Expected> out;
  std::ifstream f(std::string(CHUNKSTORE_GOLDEN) + "/expected.txt");
  for (std::string line; std::getline(f, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    Expected e;
    in >> e.ref >> e.sha256;
    out.push_back(e);
  }
  return out;
}

class GoldenStore : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::filesystem::copy(std::string(CHUNKSTORE_GOLDEN) + "/" + GetParam(), dir_ / "s",
                          std::filesystem::copy_options::recursive);
  }
  testing::TempDir dir_;
};

INSTANTIATE_TEST_SUITE_P(Versions, GoldenStore, ::testing::Values("store-v1", "store-v2"));

TEST_P(GoldenStore, OpensVerifiesAndReadsEveryObject) {
  const auto expected = ExpectedContents();
  ASSERT_EQ(expected.size(), 9u);
  for (int round = 0; round < 2; ++round) {  // the second open finds what the first left
    Options o;
    o.create_if_missing = false;
    auto s = Store::Open(dir_ / "s", o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    auto v = (*s)->Verify();
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_TRUE(v->problems.empty()) << v->problems[0].kind << ": " << v->problems[0].message;
    EXPECT_EQ(v->objects_checked, 7u);
    for (const Expected& e : expected) {
      auto got = testing::ReadObject(**s, e.ref);
      ASSERT_TRUE(got.ok()) << e.ref << ": " << got.status().ToString();
      EXPECT_EQ(internal::Sha256::Of(got->data(), got->size()).Hex(), e.sha256) << e.ref;
    }
    EXPECT_EQ((*s)->History("data/text")->size(), 2u);
    EXPECT_EQ((*s)->List()->size(), 5u);
    EXPECT_EQ((*s)->ListUnnamed()->size(), 2u);
    EXPECT_TRUE((*s)->Resolve("gone").status().IsNotFound());
    EXPECT_EQ((*s)->Stats()->objects, 7u);
  }
}

// An older store keeps writing what it was made with (zlib), whatever the
// default for new stores has become.
TEST_P(GoldenStore, KeepsWritingZlib) {
  Options o;  // default compression: zstd
  o.create_if_missing = false;
  std::string text;
  while (text.size() < 200000) text += "new text for an old store " + std::to_string(text.size()) + "\n";
  {
    auto s = Store::Open(dir_ / "s", o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_TRUE((*s)->compression() == Compression::Zlib(1)) << (*s)->compression().ToString();
    auto r = (*s)->PublishBytes(text.data(), text.size(), "new/text");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_GT((*s)->Stat("new/text")->compressed_chunks, 0u);
  }
  // Every chunk record in the store is raw or zlib (codec 0 or 1).
  EXPECT_EQ(testing::Sql(dir_ / "s", "SELECT count(*) FROM chunks WHERE codec > 1"), "0");
  EXPECT_NE(testing::Sql(dir_ / "s", "SELECT count(*) FROM chunks WHERE codec = 1"), "0");
  auto s = Store::Open(dir_ / "s", o);
  ASSERT_TRUE(s.ok());
  auto got = testing::ReadObject(**s, "new/text");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(std::string(got->begin(), got->end()), text);
}

}  // namespace
}  // namespace chunkstore
