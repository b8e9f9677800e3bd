// SPDX-License-Identifier: Apache-2.0
// SHA-256 known answers (FIPS 180-2 examples), incremental hashing, hex,
// and xxHash64's published value for the empty input.
#include "hash/digest.h"
#include "test_util.h"

namespace chunkstore::internal {
namespace {

std::string Hash(const std::string& s) { return Sha256::Of(s.data(), s.size()).Hex(); }

TEST(Sha256, KnownAnswers) {
  EXPECT_EQ(Hash(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Hash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Hash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Hash(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalEqualsOneShot) {
  const auto data = testing::RandomBytes(100000, 3);
  Sha256 h;
  for (size_t pos = 0; pos < data.size(); pos += 777)
    h.Update(data.data() + pos, std::min<size_t>(777, data.size() - pos));
  EXPECT_EQ(h.Finish(), Sha256::Of(data.data(), data.size()));
  h.Reset();
  EXPECT_EQ(h.Finish().Hex(), Hash(""));
}

TEST(Digest, HexRoundTripAndRejects) {
  const Digest d = Sha256::Of("x", 1);
  EXPECT_EQ(Digest::FromHex(d.Hex()), d);
  std::string upper = d.Hex();
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  EXPECT_EQ(Digest::FromHex(upper), d);
  EXPECT_FALSE(Digest::FromHex(d.Hex().substr(1)));
  EXPECT_FALSE(Digest::FromHex(std::string(63, 'a') + "g"));
  EXPECT_EQ(d.ObjectId(), "sha256:" + d.Hex());
}

TEST(XxHash64, KnownAnswer) {
  EXPECT_EQ(XxHash64("", 0), 0xEF46DB3751D8E999ULL);
  EXPECT_NE(XxHash64("a", 1), XxHash64("b", 1));
}

}  // namespace
}  // namespace chunkstore::internal
