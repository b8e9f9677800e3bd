// SPDX-License-Identifier: Apache-2.0
// StreamCopy copies as memcpy does at every alignment and length, guard
// bytes on either side untouched; and a read of a whole object into one
// buffer large enough to take it (the path that uses it) gives the
// object's bytes exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "base/stream_copy.h"
#include "test_util.h"

namespace chunkstore {
namespace {

using internal::StreamCopy;
using testing::RandomBytes;

TEST(StreamCopyTest, CopiesLikeMemcpyAtEveryAlignment) {
  const auto src = RandomBytes((1 << 20) + 64, 7);
  std::vector<uint8_t> dst((1 << 20) + 128);
  for (size_t n : {0ul, 1ul, 15ul, 16ul, 63ul, 64ul, 65ul, 255ul, 256ul, 257ul, 1000ul, 4109ul, (1ul << 20) + 7})
    for (size_t to = 0; to < 18; ++to)
      for (size_t from = 0; from < 4; ++from) {
        std::memset(dst.data(), 0xAA, std::min(dst.size(), to + n + 64));
        StreamCopy(dst.data() + to, src.data() + from, n);
        ASSERT_EQ(std::memcmp(dst.data() + to, src.data() + from, n), 0) << n << " bytes to +" << to << " from +" << from;
        for (size_t i = 0; i < to; ++i) ASSERT_EQ(dst[i], 0xAA) << "before, " << n << " to +" << to;
        for (size_t i = to + n; i < std::min(dst.size(), to + n + 64); ++i)
          ASSERT_EQ(dst[i], 0xAA) << "after, " << n << " to +" << to;
      }
}

TEST(StreamCopyTest, AWholeReadIntoOneLargeBufferIsExact) {
  testing::TempDir dir;
  auto store = Store::Open(dir / "s", testing::SmallChunks());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const size_t size = internal::kStreamCopyMin + 12345;
  const auto data = RandomBytes(size, 8);
  auto put = (*store)->PublishBytes(data.data(), data.size(), "big");
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  auto r = (*store)->OpenReader("big");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<uint8_t> buf(size + 16, 0xAA);
  auto got = (*r)->Read(buf.data() + 3, size);  // one call, as readinto of a numpy array
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(*got, size);
  EXPECT_EQ(std::memcmp(buf.data() + 3, data.data(), size), 0);
  EXPECT_EQ(buf[0], 0xAA);
  EXPECT_EQ(buf[size + 3], 0xAA);
  EXPECT_TRUE((*r)->IdProven());
}

}  // namespace
}  // namespace chunkstore
