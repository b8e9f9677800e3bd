// SPDX-License-Identifier: Apache-2.0
// ObjectStream: std::istream access to verified object bytes.
#include <sstream>

#include "chunkstore/object_stream.h"
#include "test_util.h"

namespace chunkstore {
namespace {

TEST(ObjectStream, ReadsSeeksAndReportsCorruption) {
  testing::TempDir dir;
  const auto data = testing::RandomBytes(200000, 3);
  std::string id;
  {
    auto store = *Store::Open(dir / "s", testing::SmallChunks());
    id = store->PublishBytes(data.data(), data.size())->id;
    ObjectStream in(*store->OpenReader(id));
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(all, std::string(data.begin(), data.end()));
    EXPECT_TRUE(in.status().ok());
    in.clear();
    in.seekg(150000);
    char buf[100];
    in.read(buf, sizeof buf);
    ASSERT_EQ(in.gcount(), 100);
    EXPECT_EQ(std::memcmp(buf, data.data() + 150000, 100), 0);
    EXPECT_EQ(static_cast<int64_t>(in.tellg()), 150100);
    in.seekg(-10, std::ios::end);
    in.read(buf, sizeof buf);
    EXPECT_EQ(in.gcount(), 10);
    EXPECT_TRUE(in.eof());
  }
  // Damage the last record's payload: the stream stops with badbit.
  std::string pack;
  for (auto& e : std::filesystem::directory_iterator(dir / "s/packs")) pack = e.path();
  {
    std::fstream f(pack, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-5, std::ios::end);
    f.put('\x7f');
  }
  auto store = *Store::Open(dir / "s");
  ObjectStream in(*store->OpenReader(id));
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(in.bad());
  EXPECT_TRUE(in.status().IsCorruption()) << in.status().ToString();
  EXPECT_LT(all.size(), data.size());
  EXPECT_EQ(all, std::string(data.begin(), data.begin() + all.size()));
}

}  // namespace
}  // namespace chunkstore
