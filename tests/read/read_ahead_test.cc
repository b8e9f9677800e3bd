// SPDX-License-Identifier: Apache-2.0
// Read-ahead of sequential reads: what is verified ahead, and what happens
// to it when the reader seeks away or closes. A wrapped Env records which
// pack records are read and can make one record's read slow, so the tests
// can tell which chunks the read-ahead touched.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "chunkstore/env.h"
#include "read/chunk_loader.h"
#include "read/read_ahead_budget.h"
#include "test_util.h"

namespace chunkstore {
namespace {

using testing::RandomBytes;
using testing::SmallChunks;
using testing::TempDir;

// Records the offset of every read of a file opened through it; reads of
// exactly `slow_len` bytes (one chosen chunk's record) take `slow_ms`.
// Everything else is the wrapped Env.
class WatchedEnv : public EnvWrapper {
 public:
  explicit WatchedEnv(Env* target) : EnvWrapper(target) {}
  Result<std::unique_ptr<File>> OpenFile(const std::string& path, OpenMode mode) override {
    auto f = target()->OpenFile(path, mode);
    if (!f.ok()) return f;
    return std::unique_ptr<File>(new Watched(std::move(*f), this));
  }
  std::set<uint64_t> ReadOffsets() {
    std::lock_guard<std::mutex> l(mu_);
    return reads_;
  }
  void ForgetReads() {
    std::lock_guard<std::mutex> l(mu_);
    reads_.clear();
  }
  std::atomic<size_t> slow_len{0};
  std::atomic<int> slow_ms{200};
  // While set, the slow read waits for it to be cleared instead of for
  // slow_ms (at most a minute): the test decides when it ends, not the
  // machine's load.
  std::atomic<bool> hold{false};

 private:
  class Watched : public File {
   public:
    Watched(std::unique_ptr<File> f, WatchedEnv* env) : f_(std::move(f)), env_(env) {}
    Status Append(const void* d, size_t n) override { return f_->Append(d, n); }
    Status ReadAt(uint64_t off, size_t n, void* buf, size_t* got) const override {
      {
        std::lock_guard<std::mutex> l(env_->mu_);
        env_->reads_.insert(off);
      }
      if (n == env_->slow_len.load()) {
        if (env_->hold.load()) {
          for (int i = 0; i < 60000 && env_->hold.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(env_->slow_ms.load()));
        }
      }
      return f_->ReadAt(off, n, buf, got);
    }
    Status Sync() override { return f_->Sync(); }
    void StartWriteBack() override { f_->StartWriteBack(); }
    Status Truncate(uint64_t size) override { return f_->Truncate(size); }
    Result<uint64_t> Size() const override { return f_->Size(); }

   private:
    std::unique_ptr<File> f_;
    WatchedEnv* env_;
  };
  std::mutex mu_;
  std::set<uint64_t> reads_;
};

// Offsets in the pack of each chunk's record, for objects published one
// after the other into a fresh store (one pack, records in order: a
// 16-byte pack header, then a 64-byte header and the stored bytes each;
// random data is stored raw).
std::vector<uint64_t> RecordOffsets(const std::vector<std::vector<ChunkInfo>>& objects) {
  std::vector<uint64_t> at;
  uint64_t off = 16;
  for (const auto& chunks : objects) {
    for (const auto& c : chunks) {
      at.push_back(off);
      off += 64 + c.length;
    }
  }
  return at;
}

Options Watched(WatchedEnv* env, unsigned threads) {
  Options o = SmallChunks();
  o.env = env;
  o.threads = threads;
  o.cache_bytes = 0;  // every read verifies, through the pack
  return o;
}

// A read that is not a whole read (it starts at byte 1) proves each chunk
// by its own SHA-256; the chunks read ahead are hashed two at a time. One
// of them damaged in its pack (stored raw, so only its SHA-256 covers it)
// fails the read when it is reached, and none of its bytes come out, with
// one worker or two.
TEST(ReadAhead, AChunkReadAheadThatFailsItsSha256IsNeverHandedOut) {
  for (unsigned threads : {1u, 2u}) {
    TempDir dir;
    WatchedEnv env(Env::Posix());
    auto store = *Store::Open(dir / "s", Watched(&env, threads));
    const auto data = RandomBytes(400000, 84);
    auto r = store->PublishBytes(data.data(), data.size());
    ASSERT_TRUE(r.ok());
    const auto chunks = *store->Chunks(r->id);
    ASSERT_GE(chunks.size(), 6u);
    const auto records = RecordOffsets({chunks});
    const size_t bad = 3;
    std::string pack;
    for (const auto& e : std::filesystem::directory_iterator(dir / "s/packs")) pack = e.path().string();
    {
      std::fstream f(pack, std::ios::in | std::ios::out | std::ios::binary);
      f.seekg(static_cast<std::streamoff>(records[bad] + 64 + chunks[bad].length / 2));
      char c = 0;
      f.read(&c, 1);
      c = static_cast<char>(c ^ 0x10);
      f.seekp(static_cast<std::streamoff>(records[bad] + 64 + chunks[bad].length / 2));
      f.write(&c, 1);
    }
    auto reader = std::move(*store->OpenReader(r->id));
    ASSERT_TRUE(reader->Seek(1).ok());
    std::vector<uint8_t> got(data.size());
    size_t done = 1;
    Status failed;
    while (done < data.size()) {
      auto n = reader->Read(got.data() + done, std::min<size_t>(4096, data.size() - done));
      if (!n.ok()) {
        failed = n.status();
        break;
      }
      ASSERT_GT(*n, 0u);
      done += *n;
    }
    EXPECT_TRUE(failed.IsCorruption()) << threads << " threads: " << failed.ToString();
    EXPECT_NE(failed.message().find(chunks[bad].id.substr(0, 16)), std::string::npos) << failed.message();
    // Nothing of the damaged chunk, and only true bytes before it.
    EXPECT_LE(done, chunks[bad].offset) << threads << " threads";
    EXPECT_TRUE(std::equal(got.begin() + 1, got.begin() + static_cast<std::ptrdiff_t>(done), data.begin() + 1));
  }
}

TEST(ReadAhead, ABackwardSeekWaitsForTheTasksItDrops) {
  // Read chunk 0 (chunks 1-4 go ahead), seek into chunk 2 (3-6 ahead),
  // seek back to 0: the reader drops 3-6 and sends 1-4 again. Chunk 6 is
  // slow, so one worker is still fetching it for this reader when the
  // other has finished 1-4; without the wait at the drop, closing the
  // reader frees it under that fetch (ASan and TSan report it).
  TempDir dir;
  WatchedEnv env(Env::Posix());
  auto store = *Store::Open(dir / "s", Watched(&env, 2));
  const auto data = RandomBytes(400000, 80);
  auto r = store->PublishBytes(data.data(), data.size());
  ASSERT_TRUE(r.ok());
  auto chunks = store->Chunks(r->id);
  ASSERT_TRUE(chunks.ok());
  ASSERT_GE(chunks->size(), 8u);
  // A small record is read in one piece: header (64 bytes) and payload.
  for (size_t k = 0; k < 6; ++k) ASSERT_NE((*chunks)[k].length, (*chunks)[6].length) << k;
  env.slow_len = 64 + (*chunks)[6].length;
  std::vector<uint8_t> buf(100);
  {
    auto reader = store->OpenReader(r->id);
    ASSERT_TRUE(reader.ok());
    for (size_t chunk : {size_t{0}, size_t{2}, size_t{0}}) {
      const uint64_t at = (*chunks)[chunk].offset + 10;
      ASSERT_TRUE((*reader)->Seek(at).ok());
      auto n = (*reader)->Read(buf.data(), buf.size());
      ASSERT_TRUE(n.ok()) << n.status().ToString();
      ASSERT_TRUE(std::equal(buf.begin(), buf.begin() + *n, data.begin() + at));
    }
  }  // closes with chunk 6 still being fetched, unless the drop waited
  env.slow_len = 0;
}

// LimitReadAhead: sequential reads up to the limit verify no chunk that
// starts past it, and reading on past the limit still returns the right
// bytes (verified as they are reached).
TEST(ReadAhead, StopsAtTheLimitItIsGiven) {
  TempDir dir;
  WatchedEnv env(Env::Posix());
  auto store = *Store::Open(dir / "s", Watched(&env, 2));
  const auto data = RandomBytes(400000, 81);
  auto r = store->PublishBytes(data.data(), data.size());
  ASSERT_TRUE(r.ok());
  auto chunks = *store->Chunks(r->id);
  ASSERT_GE(chunks.size(), 20u);
  const auto records = RecordOffsets({chunks});
  // The range ends inside chunk 3: chunks 0-3 may be read, 4 on may not.
  const uint64_t end = chunks[3].offset + chunks[3].length / 2;
  env.ForgetReads();
  auto reader = std::move(*store->OpenReader(r->id));
  reader->LimitReadAhead(end);
  std::vector<uint8_t> got(end);
  size_t done = 0;
  while (done < end) {
    auto n = reader->Read(got.data() + done, end - done);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    ASSERT_GT(*n, 0u);
    done += *n;
  }
  EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin()));
  // Anything the read-ahead had queued has run by now.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto read = env.ReadOffsets();
  for (size_t k = 0; k < records.size(); ++k)
    EXPECT_EQ(read.count(records[k]) > 0, k <= 3) << "chunk " << k;
  // Past the limit, reads go on.
  std::vector<uint8_t> rest(data.size() - end);
  done = 0;
  while (done < rest.size()) {
    auto n = reader->Read(rest.data() + done, rest.size() - done);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    ASSERT_GT(*n, 0u);
    done += *n;
  }
  EXPECT_TRUE(std::equal(rest.begin(), rest.end(), data.begin() + static_cast<std::ptrdiff_t>(end)));
}

// Readers together hold no more read ahead than the process's budget, and
// one reader no more than half of it beyond its first chunk: a reader past
// it reads what it is asked for (and, in a whole read, the next chunk,
// which proves the link), and every byte still comes out right. What
// readers hand out or drop goes back to the budget.
TEST(ReadAhead, ReadersTogetherHoldNoMoreThanTheBudget) {
  TempDir dir;
  WatchedEnv env(Env::Posix());
  auto store = *Store::Open(dir / "s", Watched(&env, 2));
  const auto data = RandomBytes(400000, 83), other = RandomBytes(200000, 84);
  auto r = store->PublishBytes(data.data(), data.size());
  auto o = store->PublishBytes(other.data(), other.size());
  ASSERT_TRUE(r.ok() && o.ok());
  auto chunks = *store->Chunks(r->id), other_chunks = *store->Chunks(o->id);
  ASSERT_GE(chunks.size(), 20u);
  ASSERT_GE(other_chunks.size(), 4u);
  const auto records = RecordOffsets({chunks, other_chunks});
  const std::set<uint64_t> others(records.begin() + static_cast<std::ptrdiff_t>(chunks.size()), records.end());
  auto first_byte = [](Reader& reader, uint8_t want) {
    uint8_t b = 0;
    auto n = reader.Read(&b, 1);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    ASSERT_EQ(*n, 1u);
    EXPECT_EQ(b, want);
  };
  ASSERT_EQ(internal::ReadAheadBytesHeld(), 0u);
  struct Restore {
    ~Restore() { internal::SetReadAheadBudgetForTesting(0); }
  } restore;
  // Room for two of the largest chunks, several of the usual ones: fewer
  // than a reader's depth (8 chunks), so a reader would take it all but
  // for taking at most half.
  uint64_t largest = 0;
  for (const ChunkInfo& c : chunks) largest = std::max<uint64_t>(largest, internal::BufferPool::CapacityFor(c.length));
  const uint64_t budget = 2 * largest;
  internal::SetReadAheadBudgetForTesting(budget);
  std::vector<std::unique_ptr<Reader>> readers;
  uint64_t before = 0;
  for (int i = 0; i < 12; ++i) {
    readers.push_back(std::move(*store->OpenReader(r->id)));
    first_byte(*readers.back(), data[0]);
    const uint64_t held = internal::ReadAheadBytesHeld();
    EXPECT_LE(held, budget) << "after reader " << i;
    if (i == 0) {
      EXPECT_LE(held, budget / 2) << "one reader took more than half the budget";
    }
    if (i < 2) {
      EXPECT_GT(held, before) << "reader " << i << " read nothing ahead";
    }
    before = held;
  }
  // A reader that finds the budget spent (none of it left, as set here)
  // reads its first chunk and the next, nothing further. It reads another
  // object than the readers before it, whose read-ahead may still be under
  // way.
  ASSERT_GT(internal::ReadAheadBytesHeld(), 0u);
  internal::SetReadAheadBudgetForTesting(internal::ReadAheadBytesHeld());
  env.ForgetReads();
  readers.push_back(std::move(*store->OpenReader(o->id)));
  first_byte(*readers.back(), other[0]);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // any read-ahead it queued can be seen
  for (uint64_t off : env.ReadOffsets())
    EXPECT_TRUE(!others.count(off) || off == records[chunks.size()] || off == records[chunks.size() + 1])
        << "a reader past the budget read the record at " << off;
  // Every reader reads the rest right, the budget spent or not.
  for (auto& reader : readers) {
    const auto& want = reader->size() == data.size() ? data : other;
    std::vector<uint8_t> rest(want.size() - 1);
    size_t done = 0;
    while (done < rest.size()) {
      auto n = reader->Read(rest.data() + done, rest.size() - done);
      ASSERT_TRUE(n.ok()) << n.status().ToString();
      ASSERT_GT(*n, 0u);
      done += *n;
      EXPECT_LE(internal::ReadAheadBytesHeld(), budget);
    }
    EXPECT_TRUE(std::equal(rest.begin(), rest.end(), want.begin() + 1));
  }
  readers.clear();
  EXPECT_EQ(internal::ReadAheadBytesHeld(), 0u) << "closed readers kept their share";
  // With the budget back, a reader reads ahead again; closed before it
  // reads what it read ahead, it gives that back.
  internal::SetReadAheadBudgetForTesting(0);
  auto again = std::move(*store->OpenReader(r->id));
  first_byte(*again, data[0]);
  EXPECT_GT(internal::ReadAheadBytesHeld(), 0u);
  again.reset();
  EXPECT_EQ(internal::ReadAheadBytesHeld(), 0u);
}

// A reader closed with read-ahead still queued behind another reader's
// (one worker, busy with a slow chunk of the first object) does not read
// the chunks it no longer needs: the queued task finds the reader gone
// and skips them.
TEST(ReadAhead, ClosingSkipsTheReadAheadNotYetStarted) {
  TempDir dir;
  WatchedEnv env(Env::Posix());
  auto store = *Store::Open(dir / "s", Watched(&env, 1));
  const auto a = RandomBytes(200000, 82), b = RandomBytes(200000, 83);
  auto ra = store->PublishBytes(a.data(), a.size());
  auto rb = store->PublishBytes(b.data(), b.size());
  ASSERT_TRUE(ra.ok() && rb.ok());
  const auto ca = *store->Chunks(ra->id), cb = *store->Chunks(rb->id);
  ASSERT_GE(ca.size(), 6u);
  ASSERT_GE(cb.size(), 6u);
  const auto records = RecordOffsets({ca, cb});
  // Chunk 1 of a is the slow one (its length is no other chunk's here).
  for (size_t k = 0; k < ca.size() + cb.size(); ++k) {
    const uint32_t len = k < ca.size() ? ca[k].length : cb[k - ca.size()].length;
    if (k != 1) {
      ASSERT_NE(len, ca[1].length) << k;
    }
  }
  env.slow_len = 64 + ca[1].length;
  // The worker stays on a's slow chunk until b's reader is closed.
  env.hold = true;
  env.ForgetReads();
  std::vector<uint8_t> buf(100);
  // Both readers start at byte 1: not whole reads, so each chunk is proven
  // alone (a whole read waits for chunk 1's first bytes before it hands
  // out chunk 0, and chunk 1 is held).
  auto reader_a = std::move(*store->OpenReader(ra->id));
  ASSERT_TRUE(reader_a->Seek(1).ok());
  ASSERT_TRUE(reader_a->Read(buf.data(), buf.size()).ok());  // a's chunks 1.. go ahead, 1 is slow
  std::atomic<bool> closing{false};
  // Closing b marks its tasks dropped and then waits for them, so the held
  // chunk is let go only after the close has begun.
  // (A jthread, so a failed assertion above the close still joins it.)
  std::jthread release([&] {
    for (int i = 0; i < 60000 && !closing.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    env.hold = false;
  });
  {
    auto reader_b = std::move(*store->OpenReader(rb->id));
    ASSERT_TRUE(reader_b->Seek(1).ok());
    ASSERT_TRUE(reader_b->Read(buf.data(), buf.size()).ok());  // b's go ahead, queued behind a's
    EXPECT_TRUE(std::equal(buf.begin(), buf.end(), b.begin() + 1));
    closing = true;
  }  // closes while b's read-ahead waits for the worker
  release.join();
  // Reading a to its end runs every task queued before a's last ones,
  // b's among them.
  std::vector<uint8_t> rest(a.size());
  size_t done = 1 + buf.size();
  while (done < a.size()) {
    auto n = reader_a->Read(rest.data(), rest.size());
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    ASSERT_GT(*n, 0u);
    done += *n;
  }
  const auto read = env.ReadOffsets();
  EXPECT_GT(read.count(records[0]), 0u);            // a's chunk 0, read by reader_a
  EXPECT_GT(read.count(records[ca.size()]), 0u);    // b's chunk 0, read by reader_b
  for (size_t k = 1; k < cb.size(); ++k)
    EXPECT_EQ(read.count(records[ca.size() + k]), 0u) << "b's chunk " << k;
  env.slow_len = 0;
}

}  // namespace
}  // namespace chunkstore
