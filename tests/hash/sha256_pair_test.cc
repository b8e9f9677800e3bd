// SPDX-License-Identifier: Apache-2.0
// Sha256Pair, Sha256Stream and Sha256::Of against OpenSSL: known answers,
// every length around the padding boundaries, unequal and overlapping
// messages, unaligned starts, a stream that hashes pieces on the way, and
// the same answers with interleaving turned off.
#include "hash/sha256_pair.h"

#include <openssl/evp.h>

#include <random>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "test_util.h"

namespace chunkstore::internal {
namespace {

// The oracle: OpenSSL's one-shot digest, independent of Sha256 and of
// the code under test.
Digest OpenSsl(const uint8_t* p, size_t n) {
  Digest d;
  unsigned len = 0;
  EXPECT_EQ(EVP_Digest(p, n, d.bytes.data(), &len, EVP_sha256(), nullptr), 1);
  return d;
}

// Takes data[0, n) into the stream and returns its own digest, hashed
// alongside (the way the ingest pipeline's object hash takes an unhashed
// chunk along).
Digest UpdateAndHash(Sha256Stream& stream, const uint8_t* data, size_t n) {
  Sha256Partial own;
  own.Start(data, n);
  size_t used = 0;
  while (used < n) {
    used += stream.UpdateAlongside(data + used, n - used, own);
    if (!own.HasBlocks()) break;
  }
  stream.Update(data + used, n - used);
  return own.Finish();
}

struct PairCase {
  size_t a_off, a_len, b_off, b_len;
};

void ExpectPair(const std::vector<uint8_t>& data, const PairCase& c) {
  Digest da, db;
  Sha256Pair(data.data() + c.a_off, c.a_len, &da, data.data() + c.b_off, c.b_len, &db);
  ASSERT_EQ(da, OpenSsl(data.data() + c.a_off, c.a_len))
      << "a at " << c.a_off << " length " << c.a_len << " (b length " << c.b_len << ")";
  ASSERT_EQ(db, OpenSsl(data.data() + c.b_off, c.b_len))
      << "b at " << c.b_off << " length " << c.b_len << " (a length " << c.a_len << ")";
}

class Sha256PairTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { SetSha256PairInterleaveForTesting(GetParam()); }
  void TearDown() override { SetSha256PairInterleaveForTesting(true); }
};

TEST_P(Sha256PairTest, KnownAnswers) {
  const std::string abc = "abc";
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  const std::string million(1000000, 'a');
  Digest d1, d2;
  Sha256Pair(abc.data(), abc.size(), &d1, million.data(), million.size(), &d2);
  EXPECT_EQ(d1.Hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(d2.Hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  Sha256Pair(two_blocks.data(), two_blocks.size(), &d1, "", 0, &d2);
  EXPECT_EQ(d1.Hex(), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(d2.Hex(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

// Every length from 0 to 300 against every length in the same range
// modulo a stride, so each padding case (0-55 and 56-63 bytes left over,
// whole blocks) meets each other one, with the shorter on either side.
TEST_P(Sha256PairTest, EveryLengthAroundThePadding) {
  const auto data = chunkstore::testing::RandomBytes(1024, 11);
  for (size_t la = 0; la <= 300; ++la)
    for (size_t lb = la % 7; lb <= 300; lb += 7) ExpectPair(data, {1, la, 600, lb});
}

// Sha256::Of, which takes this library's own one-lane path where the CPU
// has SHA extensions and OpenSSL's otherwise: every padding case, an
// unaligned start, nothing at all, and a long message.
TEST_P(Sha256PairTest, OneShotDigestAtEveryLengthAroundThePadding) {
  const auto data = chunkstore::testing::RandomBytes(3 << 20, 13);
  for (size_t n = 0; n <= 300; ++n)
    ASSERT_EQ(Sha256::Of(data.data() + 1, n), OpenSsl(data.data() + 1, n)) << n;
  EXPECT_EQ(Sha256::Of(nullptr, 0), OpenSsl(data.data(), 0));
  EXPECT_EQ(Sha256::Of(data.data() + 3, data.size() - 3), OpenSsl(data.data() + 3, data.size() - 3));
}

TEST_P(Sha256PairTest, LongUnequalOverlappingAndUnaligned) {
  const auto data = chunkstore::testing::RandomBytes(5 << 20, 12);
  std::mt19937_64 rng(12);
  for (int i = 0; i < 40; ++i) {
    PairCase c;
    c.a_off = rng() % 4096;
    c.b_off = rng() % 4096;
    c.a_len = rng() % (data.size() - c.a_off);
    c.b_len = i % 4 == 0 ? c.a_len : rng() % (data.size() - c.b_off);
    if (c.b_len + c.b_off > data.size()) c.b_len = data.size() - c.b_off;
    ExpectPair(data, c);
  }
  ExpectPair(data, {0, data.size(), 0, data.size()});  // the same message twice
  ExpectPair(data, {3, 1 << 20, 3 + 64, 1 << 20});      // overlapping, a block apart
}

// A stream fed in pieces of every size from 0 to 200 bytes and then in
// long ones, each piece through Update or UpdateAndHash in turn, so the
// paired pass starts at every offset within the stream's block: each
// piece's digest and the whole stream's must be OpenSSL's.
TEST_P(Sha256PairTest, StreamWithPiecesHashedOnTheWay) {
  const auto data = chunkstore::testing::RandomBytes(3 << 20, 13);
  std::mt19937_64 rng(13);
  Sha256Stream stream;
  size_t pos = 0, piece = 0;
  while (pos < data.size()) {
    size_t n = piece <= 200 ? piece : rng() % (300 << 10);
    n = std::min(n, data.size() - pos);
    if (piece % 2 == 0) {
      const Digest own = UpdateAndHash(stream, data.data() + pos, n);
      ASSERT_EQ(own, OpenSsl(data.data() + pos, n)) << "piece " << piece << " of " << n
                                                    << " bytes at " << pos;
    } else {
      stream.Update(data.data() + pos, n);
    }
    pos += n;
    ++piece;
  }
  EXPECT_EQ(stream.Finish(), OpenSsl(data.data(), data.size()));
}

// A stream fed pieces through UpdateAlongside, each taking along other
// messages of assorted lengths (short and long, block-sized or not) that
// run out mid-piece or last over several pieces, the way the ingest
// pipeline's object hash takes chunks along: the stream's digest and
// every message's must be OpenSSL's (also when finished part-way), and
// a piece must be taken whole unless the message ran out of whole blocks
// first.
TEST_P(Sha256PairTest, StreamTakingOtherMessagesAlong) {
  const auto data = chunkstore::testing::RandomBytes(4 << 20, 15);
  std::mt19937_64 rng(15);
  Sha256Stream stream;
  Sha256Partial other;
  size_t other_off = 0, other_len = 0, messages = 0;
  bool open = false;
  auto start_other = [&] {
    const size_t kinds[] = {0, 1, 63, 64, 65, 128, 4096 + 17, 300 << 10, 1 << 20};
    other_len = kinds[messages % 9] + (messages >= 9 ? rng() % 3 : 0);
    other_off = rng() % (data.size() - other_len);
    other.Start(data.data() + other_off, other_len);
    open = true;
    ++messages;
  };
  auto finish_other = [&] {
    ASSERT_EQ(other.Finish(), OpenSsl(data.data() + other_off, other_len))
        << "message " << messages << " of " << other_len << " bytes";
    open = false;
  };
  size_t pos = 0, piece = 0;
  while (pos < data.size()) {
    size_t n = piece <= 130 ? piece : rng() % (400 << 10);
    n = std::min(n, data.size() - pos);
    size_t left = n;
    while (left > 0) {
      if (!open) start_other();
      const size_t used = stream.UpdateAlongside(data.data() + pos, left, other);
      ASSERT_LE(used, left);
      if (used < left) {
        ASSERT_FALSE(other.HasBlocks()) << "piece " << piece << " cut short";
      }
      pos += used;
      left -= used;
      if (!other.HasBlocks()) finish_other();
      if (::testing::Test::HasFatalFailure()) return;
    }
    // A caller may also finish a message it has taken part of the way
    // (and without interleaving, nothing else ends one of 64+ bytes).
    if (open && piece % 3 == 0) finish_other();
    if (::testing::Test::HasFatalFailure()) return;
    ++piece;
  }
  if (open) finish_other();
  EXPECT_EQ(stream.Finish(), OpenSsl(data.data(), data.size()));
  EXPECT_GT(messages, 20u);
}

// A run of messages of assorted lengths, some skipped, through
// Sha256LanesWhile (the way reads verify chunks): every message
// begun must be finished once, with OpenSSL's digest.
TEST_P(Sha256PairTest, RunOfMessagesThroughTwoRefilledLanes) {
  const auto data = chunkstore::testing::RandomBytes(3 << 20, 16);
  std::mt19937_64 rng(16);
  const size_t kinds[] = {0, 1, 55, 64, 65, 1000, 4096, 100 << 10, 1 << 20};
  std::vector<std::pair<size_t, size_t>> messages;  // offset, length
  for (size_t i = 0; i < 60; ++i) {
    const size_t n = kinds[i % 9] + rng() % 3;
    messages.emplace_back(rng() % (data.size() - n), n);
  }
  std::vector<int> finished(messages.size(), 0);
  size_t next = 0;
  Sha256LanesWhile(
      [&](Sha256Partial& lane, size_t* k, bool) {
        if (next == messages.size()) return LaneStart::kNone;
        *k = next++;
        if (*k % 7 == 3) return LaneStart::kSettled;  // skipped: never finished
        lane.Start(data.data() + messages[*k].first, messages[*k].second);
        return LaneStart::kStarted;
      },
      [&](size_t k, Sha256Partial& lane) {
        ++finished[k];
        EXPECT_EQ(lane.Finish(), OpenSsl(data.data() + messages[k].first, messages[k].second))
            << "message " << k << " of " << messages[k].second;
      });
  for (size_t k = 0; k < messages.size(); ++k) EXPECT_EQ(finished[k], k % 7 == 3 ? 0 : 1) << k;
}

// Sha256LanesWhile (the way a read-ahead run verifies queued chunks):
// a message queued while the run has one lane busy and the other idle is
// taken up between the busy lane's stretches, beside it, not after it;
// the run ends only when next() has nothing and no lane is busy; every
// digest is OpenSSL's.
TEST_P(Sha256PairTest, LanesTakeMessagesThatArriveWhileTheyRun) {
  const auto data = chunkstore::testing::RandomBytes(3 << 20, 18);
  // offset, length: a long message alone, then three that come later.
  const std::vector<std::pair<size_t, size_t>> messages = {
      {0, 1 << 20}, {5, 300000}, {100000, 65}, {7, 200001}};
  size_t queued = 1, next = 0, asks_while_alone = 0, ends = 0;
  std::vector<int> finished(messages.size(), 0);
  std::vector<bool> started_beside_first(messages.size(), false);
  Sha256LanesWhile(
      [&](Sha256Partial& lane, size_t* k, bool last) {
        EXPECT_EQ(ends, 0u) << "asked again after it ended";
        if (next == queued) {
          if (last) {
            ++ends;
            return LaneStart::kNone;
          }
          // The first message is in the other lane: the others arrive
          // once it has asked a few times (once where nothing
          // interleaves: a lone lane is then hashed whole at once).
          if (queued == 1 && ++asks_while_alone == (Sha256PairInterleaves() ? 3u : 1u)) queued = messages.size();
          return LaneStart::kNone;
        }
        *k = next++;
        started_beside_first[*k] = finished[0] == 0;
        lane.Start(data.data() + messages[*k].first, messages[*k].second);
        return LaneStart::kStarted;
      },
      [&](size_t k, Sha256Partial& lane) {
        ++finished[k];
        EXPECT_EQ(lane.Finish(), OpenSsl(data.data() + messages[k].first, messages[k].second)) << "message " << k;
      });
  EXPECT_EQ(ends, 1u);
  EXPECT_EQ(asks_while_alone, Sha256PairInterleaves() ? 3u : 1u);
  for (size_t k = 0; k < messages.size(); ++k) EXPECT_EQ(finished[k], 1) << k;
  if (Sha256PairInterleaves()) {
    // 1 MiB alone asks every 64 KiB: the second message came long
    // before the first was done.
    EXPECT_TRUE(started_beside_first[1]);
  }
}

// Advance between paired stretches: the digest is still the message's.
TEST_P(Sha256PairTest, AdvanceAloneThenPaired) {
  const auto data = chunkstore::testing::RandomBytes(1 << 20, 19);
  Sha256Partial a, b;
  a.Start(data.data(), 700001);
  b.Start(data.data() + 3, 200000);
  // Without interleaving a lone lane is only marked done (its Finish
  // hashes it whole).
  EXPECT_EQ(a.Advance(100), Sha256PairInterleaves());
  EXPECT_TRUE(b.HasBlocks());
  while (a.HasBlocks() && b.HasBlocks()) Sha256PairBlocks(a, b);
  while (a.Advance(7)) {
  }
  EXPECT_FALSE(a.HasBlocks());
  EXPECT_EQ(a.Finish(), OpenSsl(data.data(), 700001));
  EXPECT_EQ(b.Finish(), OpenSsl(data.data() + 3, 200000));
}

// Interleaving turned off between starting two messages: the one started
// without it is hashed whole by its Finish, the other goes on as it was.
TEST(Sha256Pair, LanesStartedEitherSideOfTurningInterleavingOff) {
  const auto data = chunkstore::testing::RandomBytes(300000, 17);
  for (bool first_on : {true, false}) {
    Sha256Partial a, b;
    SetSha256PairInterleaveForTesting(first_on);
    a.Start(data.data(), 200000);
    SetSha256PairInterleaveForTesting(!first_on);
    b.Start(data.data() + 1000, 150000);
    SetSha256PairInterleaveForTesting(true);
    while (a.HasBlocks() && b.HasBlocks()) Sha256PairBlocks(a, b);
    EXPECT_EQ(a.Finish(), OpenSsl(data.data(), 200000)) << first_on;
    EXPECT_EQ(b.Finish(), OpenSsl(data.data() + 1000, 150000)) << first_on;
  }
}

TEST_P(Sha256PairTest, StreamOfNothingAndOfOnePiece) {
  const std::string kEmpty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  Sha256Stream empty;
  empty.Update(nullptr, 0);
  EXPECT_EQ(UpdateAndHash(empty, nullptr, 0).Hex(), kEmpty);
  EXPECT_EQ(empty.Finish().Hex(), kEmpty);
  const auto data = chunkstore::testing::RandomBytes(1000, 14);
  for (size_t n : {0, 1, 55, 56, 63, 64, 65, 119, 128, 1000}) {
    Sha256Stream one;
    EXPECT_EQ(UpdateAndHash(one, data.data(), n), OpenSsl(data.data(), n)) << n;
    EXPECT_EQ(one.Finish(), OpenSsl(data.data(), n)) << n;
  }
}

// Sha256PairKeepsSpeed is measured, so its answer depends on the core;
// what is fixed is that it is never true without interleaving, and that
// the test override wins over the measurement.
TEST(Sha256Pair, KeepsSpeedOnlyWhereItInterleaves) {
  const bool measured = Sha256PairKeepsSpeed();
  RecordProperty("pair_keeps_speed", measured ? "yes" : "no");
  if (!Sha256PairInterleaves()) {
    EXPECT_FALSE(measured);
  }
  SetSha256PairInterleaveForTesting(false);
  EXPECT_FALSE(Sha256PairKeepsSpeed());
  SetSha256PairKeepsSpeedForTesting(1);
  EXPECT_FALSE(Sha256PairKeepsSpeed());
  SetSha256PairInterleaveForTesting(true);
  EXPECT_EQ(Sha256PairKeepsSpeed(), Sha256PairInterleaves());
  SetSha256PairKeepsSpeedForTesting(0);
  EXPECT_FALSE(Sha256PairKeepsSpeed());
  SetSha256PairKeepsSpeedForTesting(-1);
  EXPECT_EQ(Sha256PairKeepsSpeed(), measured);
}

INSTANTIATE_TEST_SUITE_P(Paths, Sha256PairTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Interleaved" : "OpenSsl"; });

// The interleaved path is what the ingest pipeline uses on this project's
// machines; a build or CPU where it silently fell back would leave it
// untested: it must interleave exactly where the CPU has SHA extensions.
TEST(Sha256Pair, InterleavesWhereTheCpuHasShaExtensions) {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  ASSERT_TRUE(__get_cpuid_count(7, 0, &a, &b, &c, &d));
  const bool cpu_has_sha = b & (1u << 29);
  EXPECT_EQ(Sha256PairInterleaves(), cpu_has_sha);
  SetSha256PairInterleaveForTesting(false);
  EXPECT_FALSE(Sha256PairInterleaves());
  SetSha256PairInterleaveForTesting(true);
  EXPECT_EQ(Sha256PairInterleaves(), cpu_has_sha);
#else
  EXPECT_FALSE(Sha256PairInterleaves());
#endif
}

}  // namespace
}  // namespace chunkstore::internal
