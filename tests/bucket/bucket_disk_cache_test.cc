// SPDX-License-Identifier: Apache-2.0
// The disk cache of a bucket store's chunks (read/disk_cache.h): a chunk
// fetched once is read from local disk by the next store handle on that
// cache, with no request; a cached file that was damaged, cut short or
// removed is fetched again and never returned; the directory stays under
// its limit; a copy does not fill it; a cold 4 KiB read costs one ranged
// GET; files it cannot remove do not let the rest grow past a margin.
// Built into unit_tests (memory and directory buckets).
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bucket_fixture.h"
#include "hash/digest.h"
#include "read/disk_cache.h"

namespace chunkstore {
namespace {

namespace fs = std::filesystem;
using testing::BucketTest;
using testing::RandomBytes;
using testing::ReadObject;
using testing::SmallChunks;

using BucketDiskCacheTest = BucketTest;

size_t PackGets(const std::vector<std::string>& requests) {
  size_t n = 0;
  for (const std::string& r : requests) n += r.rfind("GET packs/", 0) == 0;
  return n;
}

std::vector<fs::path> CachedFiles(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file()) out.push_back(it->path());
  return out;
}

uint64_t CachedBytes(const fs::path& dir) {
  uint64_t n = 0;
  for (const fs::path& p : CachedFiles(dir)) n += fs::file_size(p);
  return n;
}

TEST_P(BucketDiskCacheTest, ASecondHandleReadsFetchedChunksWithoutARequest) {
  const auto d = RandomBytes(300000, 1);
  {
    auto a = OpenMachine(dir_ / "a");
    ASSERT_TRUE(a);
    ASSERT_TRUE(a->PublishBytes(d.data(), d.size(), "x").ok());
  }
  {
    auto a = OpenMachine(dir_ / "a");
    ASSERT_TRUE(a);
    faulty_->ForgetRequests();
    EXPECT_EQ(*ReadObject(*a, "x"), d);
    EXPECT_GT(PackGets(faulty_->request_log()), 0u);
  }
  EXPECT_GE(CachedBytes(fs::path(dir_ / "a") / "chunks"), d.size());
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  faulty_->ForgetRequests();
  EXPECT_EQ(*ReadObject(*a, "x"), d);
  std::vector<uint8_t> part(4096);
  auto r = a->OpenReader("x");
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE((*r)->ReadAt(123456, part.data(), part.size()).ok());
  EXPECT_TRUE(std::equal(part.begin(), part.end(), d.begin() + 123456));
  EXPECT_EQ(PackGets(faulty_->request_log()), 0u);
}

TEST_P(BucketDiskCacheTest, DamagedShortOrMissingCacheFilesAreFetchedAgainNeverReturned) {
  const auto d = RandomBytes(200000, 2);
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  ASSERT_TRUE(a->PublishBytes(d.data(), d.size(), "x").ok());
  ASSERT_TRUE(ReadObject(*a, "x").ok());
  std::vector<fs::path> files = CachedFiles(fs::path(dir_ / "a") / "chunks");
  ASSERT_GE(files.size(), 3u);
  {
    std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(10);
    f.put('\x5a');
  }
  fs::resize_file(files[1], fs::file_size(files[1]) - 1);
  fs::remove(files[2]);
  // A fresh handle: nothing in its memory cache.
  auto b = OpenMachine(dir_ / "a");
  ASSERT_TRUE(b);
  faulty_->ForgetRequests();
  EXPECT_EQ(*ReadObject(*b, "x"), d);
  EXPECT_GE(PackGets(faulty_->request_log()), 3u);
  // And at random, on another fresh handle.
  {
    std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(10);
    f.put('\x33');
  }
  auto c = OpenMachine(dir_ / "a");
  ASSERT_TRUE(c);
  auto r = c->OpenReader("x");
  ASSERT_TRUE(r.ok());
  std::vector<uint8_t> got(d.size());
  ASSERT_TRUE((*r)->ReadAt(0, got.data(), got.size()).ok());
  EXPECT_EQ(got, d);
  // The whole cache may go at any time.
  fs::remove_all(fs::path(dir_ / "a") / "chunks");
  auto e = OpenMachine(dir_ / "a");
  ASSERT_TRUE(e);
  EXPECT_EQ(*ReadObject(*e, "x"), d);
}

TEST_P(BucketDiskCacheTest, StaysUnderItsLimitAndCanBeOff) {
  Options o = SmallChunks();
  o.chunk_cache_bytes = 64 << 10;
  auto a = OpenMachine(dir_ / "a", o);
  ASSERT_TRUE(a);
  const auto d = RandomBytes(1 << 20, 3);
  ASSERT_TRUE(a->PublishBytes(d.data(), d.size(), "x").ok());
  EXPECT_EQ(*ReadObject(*a, "x"), d);
  const uint64_t held = CachedBytes(fs::path(dir_ / "a") / "chunks");
  EXPECT_GT(held, 0u);
  EXPECT_LE(held, o.chunk_cache_bytes);

  Options off = SmallChunks();
  off.chunk_cache_bytes = 0;
  auto b = OpenMachine(dir_ / "b", off);
  ASSERT_TRUE(b);
  EXPECT_EQ(*ReadObject(*b, "x"), d);
  EXPECT_FALSE(fs::exists(fs::path(dir_ / "b") / "chunks"));

  Options elsewhere = SmallChunks();
  elsewhere.chunk_cache_dir = fs::path(dir_ / "shared").string();
  auto c = OpenMachine(dir_ / "c", elsewhere);
  ASSERT_TRUE(c);
  EXPECT_EQ(*ReadObject(*c, "x"), d);
  EXPECT_GE(CachedBytes(fs::path(dir_ / "shared")), d.size());
  EXPECT_FALSE(fs::exists(fs::path(dir_ / "c") / "chunks"));

  // A cache that cannot be written (its directory is a file) costs
  // requests, never a read.
  const fs::path blocked = fs::path(dir_ / "blocked");
  std::ofstream(blocked) << "not a directory";
  Options unwritable = SmallChunks();
  unwritable.chunk_cache_dir = blocked.string();
  auto e = OpenMachine(dir_ / "e", unwritable);
  ASSERT_TRUE(e);
  EXPECT_EQ(*ReadObject(*e, "x"), d);
  EXPECT_EQ(*ReadObject(*e, "x"), d);
  EXPECT_TRUE(fs::is_regular_file(blocked));
}

TEST_P(BucketDiskCacheTest, ACopyDoesNotFillItAndAColdSmallReadIsOneRangedGet) {
  const auto d = RandomBytes(400000, 4);
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  ASSERT_TRUE(a->PublishBytes(d.data(), d.size(), "x").ok());
  auto dst = Store::Open(fs::path(dir_ / "dst").string());
  ASSERT_TRUE(dst.ok());
  auto copied = a->CopyTo(**dst);
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  EXPECT_GT(copied->chunks_sent, 0u);
  EXPECT_EQ(CachedBytes(fs::path(dir_ / "a") / "chunks"), 0u);

  auto b = OpenMachine(dir_ / "b");
  ASSERT_TRUE(b);
  auto r = b->OpenReader("x");
  ASSERT_TRUE(r.ok());
  faulty_->ForgetRequests();
  std::vector<uint8_t> part(4096);
  ASSERT_TRUE((*r)->ReadAt(200000, part.data(), part.size()).ok());
  EXPECT_TRUE(std::equal(part.begin(), part.end(), d.begin() + 200000));
  EXPECT_EQ(PackGets(faulty_->request_log()), 1u);
  EXPECT_EQ(faulty_->request_log().size(), 1u);
}

// From a bucket each chunk read ahead is a request: a read in order that
// takes a little and stops costs the chunk it reads and, in a chained read,
// the next one (each chunk is checked with the next one's first bytes),
// not a burst of read-ahead. Read on, it fetches each chunk once. With and
// without the disk cache (a chained read only without it).
TEST_P(BucketDiskCacheTest, AReadInOrderThatStopsEarlyFetchesNoReadAhead) {
  const auto d = RandomBytes(600000, 6);
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  ASSERT_TRUE(a->PublishBytes(d.data(), d.size(), "x").ok());
  const size_t chunks = a->Chunks("x")->size();
  ASSERT_GT(chunks, 20u);  // more than a full read-ahead
  for (uint64_t cache_size : {uint64_t{0}, uint64_t{64} << 20}) {
    SCOPED_TRACE(cache_size);
    Options o = SmallChunks();
    o.chunk_cache_bytes = cache_size;
    auto b = OpenMachine(dir_ / ("b" + std::to_string(cache_size)), o);
    ASSERT_TRUE(b);
    auto r = b->OpenReader("x");
    ASSERT_TRUE(r.ok());
    faulty_->ForgetRequests();
    std::vector<uint8_t> head(4096);
    ASSERT_EQ(*(*r)->Read(head.data(), head.size()), head.size());
    EXPECT_TRUE(std::equal(head.begin(), head.end(), d.begin()));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // what was read ahead has been asked for
    EXPECT_LE(PackGets(faulty_->request_log()), cache_size == 0 ? 2u : 1u);
    std::vector<uint8_t> rest(d.size());
    size_t got = head.size();
    for (;;) {
      auto n = (*r)->Read(rest.data() + got, rest.size() - got);
      ASSERT_TRUE(n.ok()) << n.status().ToString();
      if (*n == 0) break;
      got += *n;
    }
    ASSERT_EQ(got, d.size());
    EXPECT_TRUE(std::equal(rest.begin() + head.size(), rest.end(), d.begin() + head.size()));
    EXPECT_TRUE((*r)->IdProven());
    EXPECT_LE(PackGets(faulty_->request_log()), chunks);
  }
}

// verify checks what the bucket holds, not the local copies of it.
TEST_P(BucketDiskCacheTest, VerifyFindsDamageInTheBucketBehindAWarmCache) {
  const auto d = RandomBytes(200000, 5);
  auto a = OpenMachine(dir_ / "a");
  ASSERT_TRUE(a);
  ASSERT_TRUE(a->PublishBytes(d.data(), d.size(), "x").ok());
  ASSERT_TRUE(ReadObject(*a, "x").ok());
  auto packs = backend_->List("packs/");
  ASSERT_TRUE(packs.ok());
  ASSERT_FALSE(packs->empty());
  FlipBit((*packs)[0].key, (*packs)[0].size / 2);
  auto b = OpenMachine(dir_ / "a");
  ASSERT_TRUE(b);
  auto v = b->Verify();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(v->corrupt());
  // Reads still get the verified bytes kept on disk.
  EXPECT_EQ(*ReadObject(*b, "x"), d);
}

// The cache on its own: a file of the wrong length is not handed out, and
// eviction takes the least recently read first.
TEST(DiskChunkCache, EvictsTheLeastRecentlyReadAndChecksLengths) {
  const fs::path dir = fs::temp_directory_path() / ("chunkstore-disk-cache-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "ab");
  // Files the cache did not write are never its to remove.
  std::ofstream(dir / "notes.txt") << std::string(5000, 'n');
  std::ofstream(dir / "ab" / "readme") << std::string(5000, 'r');
  // Room for three chunks and a half: a fourth evicts exactly one.
  internal::DiskChunkCache cache(dir.string(), 3500);
  std::vector<internal::Digest> ids;
  std::vector<uint8_t> bytes(1000, 7);
  for (int i = 0; i < 3; ++i) {
    ids.push_back(internal::Sha256::Of(&i, sizeof i));
    cache.Put(ids.back(), bytes.data(), bytes.size());
  }
  internal::Buffer out;
  EXPECT_FALSE(cache.Get(ids[0], 999, &out));
  // 1 is the most recent of the three, until 0 and 2 are read: reading
  // makes them recent, so 1 is the one to go.
  for (int i = 0; i < 3; ++i) {
    const std::string hex = ids[i].Hex();
    const struct timespec when[2] = {{1000 + 100 * i + (i == 1 ? 5000 : 0), 0},
                                     {1000 + 100 * i + (i == 1 ? 5000 : 0), 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, (dir / hex.substr(0, 2) / hex).c_str(), when, 0), 0);
  }
  ASSERT_TRUE(cache.Get(ids[0], 1000, &out));
  ASSERT_TRUE(cache.Get(ids[2], 1000, &out));
  const int four = 4;
  const internal::Digest id4 = internal::Sha256::Of(&four, sizeof four);
  cache.Put(id4, bytes.data(), bytes.size());
  EXPECT_FALSE(cache.Get(ids[1], 1000, &out));
  EXPECT_TRUE(cache.Get(id4, 1000, &out));
  EXPECT_TRUE(fs::exists(dir / "notes.txt") && fs::exists(dir / "ab" / "readme"));
  EXPECT_TRUE(cache.Get(ids[0], 1000, &out) && cache.Get(ids[2], 1000, &out));
  EXPECT_EQ(CachedBytes(dir) - 10000, 3000u);
  // Something other than a file at a chunk's path (a FIFO) is a miss, at once.
  const int five = 5;
  const internal::Digest id5 = internal::Sha256::Of(&five, sizeof five);
  const std::string hex5 = id5.Hex();
  fs::create_directories(dir / hex5.substr(0, 2));
  ASSERT_EQ(::mkfifo((dir / hex5.substr(0, 2) / hex5).c_str(), 0600), 0);
  EXPECT_FALSE(cache.Get(id5, 1000, &out));
  fs::remove_all(dir);
}

// The cache's own count can run high (a chunk written twice, by a
// foreground read and a read-ahead); the scan that corrects it must not
// leave room to grow past the limit before the next one.
TEST(DiskChunkCache, ACountThatRanHighDoesNotLetItRestAboveItsLimit) {
  const fs::path dir = fs::temp_directory_path() / ("chunkstore-disk-cache-high-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const uint64_t limit = 10000;
  internal::DiskChunkCache cache(dir.string(), limit);
  const std::vector<uint8_t> bytes(500, 9);
  auto id = [](int i) { return internal::Sha256::Of(&i, sizeof i); };
  for (int i = 0; i < 19; ++i) cache.Put(id(i), bytes.data(), bytes.size());
  ASSERT_EQ(CachedBytes(dir), 9500u);
  // The same chunk twice more: 10,500 counted, 9,500 held; the count
  // passes the limit and a scan corrects it.
  cache.Put(id(0), bytes.data(), bytes.size());
  cache.Put(id(0), bytes.data(), bytes.size());
  ASSERT_EQ(CachedBytes(dir), 9500u);
  for (int i = 19; i < 23; ++i) {
    cache.Put(id(i), bytes.data(), bytes.size());
    EXPECT_LE(CachedBytes(dir), limit) << "after chunk " << i;
  }
  fs::remove_all(dir);
}

// Sets or clears a file's immutable flag (which even root cannot unlink
// past); false where the file system or the caller cannot.
bool SetImmutable(const fs::path& p, bool on) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  int flags = 0;
  bool ok = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
  flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
  ok = ok && ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
  ::close(fd);
  return ok;
}

// Files it cannot remove (another user's, or immutable) hold the cache
// above its target; it then waits for writes to add a tenth of its limit
// before it scans again, but it does scan again: what it can remove does
// not pile up past that margin.
TEST(DiskChunkCache, FilesItCannotRemoveDoNotLetTheRestGrowWithoutBound) {
  const fs::path dir = fs::temp_directory_path() / ("chunkstore-disk-cache-stuck-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const uint64_t limit = 10000;
  internal::DiskChunkCache cache(dir.string(), limit);
  auto id = [](int i) { return internal::Sha256::Of(&i, sizeof i); };
  const std::vector<uint8_t> stuck(950, 3), bytes(500, 9);
  std::vector<fs::path> pinned;
  struct Unpin {
    std::vector<fs::path>* files;
    fs::path dir;
    ~Unpin() {
      for (const fs::path& p : *files) SetImmutable(p, false);
      fs::remove_all(dir);
    }
  } unpin{&pinned, dir};
  // 9,500 bytes the cache can never remove: above its 9,000 target.
  for (int i = 0; i < 10; ++i) {
    cache.Put(id(i), stuck.data(), stuck.size());
    const std::string hex = id(i).Hex();
    const fs::path p = dir / hex.substr(0, 2) / hex;
    if (!SetImmutable(p, true)) GTEST_SKIP() << "cannot make files immutable in " << dir;
    pinned.push_back(p);
  }
  uint64_t most = 0;
  for (int i = 100; i < 160; ++i) {
    cache.Put(id(i), bytes.data(), bytes.size());
    most = std::max(most, CachedBytes(dir));
  }
  // At most the stuck bytes, the margin and the chunk that passed it.
  EXPECT_LE(most, 9500 + limit / 10 + bytes.size());
  for (const fs::path& p : pinned) EXPECT_TRUE(fs::exists(p));
  // What it can remove was removed, oldest first: the newest are kept.
  internal::Buffer out;
  EXPECT_TRUE(cache.Get(id(159), bytes.size(), &out));
  EXPECT_FALSE(cache.Get(id(100), bytes.size(), &out));
}

#ifndef CHUNKSTORE_TEST_S3
INSTANTIATE_TEST_SUITE_P(Local, BucketDiskCacheTest,
                         ::testing::Values(testing::Backend::kMemory, testing::Backend::kDirectory),
                         [](const ::testing::TestParamInfo<testing::Backend>& p) {
                           return p.param == testing::Backend::kMemory ? "Memory" : "Directory";
                         });
#endif

}  // namespace
}  // namespace chunkstore
