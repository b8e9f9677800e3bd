// SPDX-License-Identifier: Apache-2.0
// Store::OpenReaders: many refs opened against one index snapshot. Each
// answer is the one OpenReader gives for that ref, in order, and a ref that
// fails (missing, malformed, damaged) fails alone.
#include <cstring>

#include "test_util.h"

namespace chunkstore {
namespace {

using testing::RandomBytes;
using testing::TempDir;

std::vector<uint8_t> ReadAll(Reader& r) {
  std::vector<uint8_t> out(r.size());
  size_t pos = 0;
  while (pos < out.size()) {
    auto n = r.Read(out.data() + pos, out.size() - pos);
    if (!n.ok() || *n == 0) break;
    pos += *n;
  }
  out.resize(pos);
  return out;
}

// Small chunks, so a few KiB make a multi-chunk object; inline_max is the
// parameter: the default limit, or 0 (small objects in packs).
class OpenReadersTest : public ::testing::TestWithParam<uint32_t> {
 protected:
  void SetUp() override {
    Options o = testing::SmallChunks();
    o.inline_max = GetParam();
    auto s = Store::Open(dir_ / "s", o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }
  std::string Publish(const std::vector<uint8_t>& data, const std::string& name = "") {
    auto r = store_->PublishBytes(data.data(), data.size(), name);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->id : "";
  }

  // Runs one statement that must change one row, with the store closed.
  void AlterIndex(const std::string& statement) {
    store_.reset();
    EXPECT_EQ(testing::Sql(dir_ / "s", statement + "; SELECT changes()"), "1") << statement;
    auto s = Store::Open(dir_ / "s");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
};

TEST_P(OpenReadersTest, AnswersEachRefInOrderAsOpenReaderDoes) {
  const auto tiny = RandomBytes(200, 1), one_chunk = RandomBytes(900, 2), big = RandomBytes(60000, 3),
             named = RandomBytes(300, 4);
  const std::string tiny_id = Publish(tiny), one_id = Publish(one_chunk), big_id = Publish(big);
  Publish(named, "docs/readme");
  const std::string missing = "sha256:" + std::string(64, 'a');
  const std::vector<std::string> refs = {tiny_id,          big_id,     missing, "docs/readme", "no such name",
                                         one_id.substr(7), "sha256:zz", tiny_id.substr(0, 15), tiny_id};
  const std::vector<const std::vector<uint8_t>*> expected = {&tiny,   &big,    nullptr, &named, nullptr,
                                                             &one_chunk, nullptr, &tiny,   &tiny};
  auto readers = store_->OpenReaders(refs);
  ASSERT_EQ(readers.size(), refs.size());
  for (size_t i = 0; i < refs.size(); ++i) {
    auto alone = store_->OpenReader(refs[i]);
    if (expected[i] == nullptr) {
      ASSERT_FALSE(readers[i].ok()) << refs[i];
      ASSERT_FALSE(alone.ok()) << refs[i];
      EXPECT_EQ(readers[i].status().ToString(), alone.status().ToString()) << refs[i];
      continue;
    }
    ASSERT_TRUE(readers[i].ok()) << refs[i] << ": " << readers[i].status().ToString();
    EXPECT_EQ((*readers[i])->id(), (*alone)->id()) << refs[i];
    EXPECT_TRUE(ReadAll(**readers[i]) == *expected[i]) << refs[i];
  }
  EXPECT_TRUE(store_->OpenReaders({}).empty());
  // Readers from the batch are ordinary readers: they outlive the call,
  // and ranges read as they do from OpenReader.
  uint8_t buf[64];
  ASSERT_TRUE(readers[1].ok());
  auto n = (*readers[1])->ReadAt(30000, buf, sizeof buf);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, sizeof buf);
  EXPECT_EQ(0, std::memcmp(buf, big.data() + 30000, sizeof buf));
}

TEST_P(OpenReadersTest, ADamagedObjectFailsAloneAndNamesItself) {
  const auto a = RandomBytes(200, 5), b = RandomBytes(210, 6), c = RandomBytes(220, 7);
  const std::string ida = Publish(a), idb = Publish(b), idc = Publish(c);
  // Inline, b's content lives in its row: change it. In packs, b is a
  // chunk: drop its chunk row.
  AlterIndex(GetParam() > 0
                 ? "UPDATE objects SET manifest = zeroblob(210) WHERE hex(id) = upper('" + idb.substr(7) + "')"
                 : "DELETE FROM chunks WHERE hex(id) = upper('" + (*store_->Chunks(idb))[0].id + "')");
  auto readers = store_->OpenReaders({ida, idb, idc});
  ASSERT_EQ(readers.size(), 3u);
  ASSERT_TRUE(readers[0].ok()) << readers[0].status().ToString();
  ASSERT_TRUE(readers[2].ok()) << readers[2].status().ToString();
  EXPECT_TRUE(ReadAll(**readers[0]) == a);
  EXPECT_TRUE(ReadAll(**readers[2]) == c);
  ASSERT_FALSE(readers[1].ok());
  EXPECT_TRUE(readers[1].status().IsCorruption()) << readers[1].status().ToString();
  EXPECT_NE(readers[1].status().message().find(idb), std::string::npos) << readers[1].status().ToString();
}

INSTANTIATE_TEST_SUITE_P(InlineLimit, OpenReadersTest, ::testing::Values(512u, 0u),
                         [](const auto& info) { return info.param ? "Inline" : "InPacks"; });

}  // namespace
}  // namespace chunkstore
