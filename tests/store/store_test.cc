// SPDX-License-Identifier: Apache-2.0
// Store round trips, range reads, dedupe, corruption detection and opening
// rules, on disk and in memory.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <sstream>
#include <thread>

#include <sched.h>

#include "chunkstore/env.h"
#include "hash/digest.h"
#include "read/chunk_loader.h"
#include "store/store_impl.h"
#include "base/task_pool.h"
#include "test_util.h"

namespace chunkstore {
namespace {

using testing::RandomBytes;
using testing::ReadObject;
using testing::SmallChunks;
using testing::TempDir;

std::string IdOf(const std::vector<uint8_t>& data) {
  return internal::Sha256::Of(data.data(), data.size()).ObjectId();
}

// Each test runs against an on-disk store and an in-memory one.
class StoreTest : public ::testing::TestWithParam<bool> {
 protected:
  std::unique_ptr<Store> Open(const Options& o = SmallChunks()) {
    auto s = GetParam() ? Store::OpenInMemory(o) : Store::Open(dir_ / "store", o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  TempDir dir_;
};

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Memory" : "Disk"; });

TEST_P(StoreTest, RoundTripsEdgeSizesFromBytesFilesAndStreams) {
  auto store = Open();
  const auto& c = store->chunking();
  const size_t sizes[] = {0, 1, c.min_size, c.max_size, c.max_size + 1, 200000};
  uint64_t seed = 1;
  for (size_t n : sizes) {
    const auto data = RandomBytes(n, seed++);
    const std::string id = IdOf(data);
    auto a = store->PublishBytes(data.data(), data.size());
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(a->id, id);
    EXPECT_EQ(a->size, n);

    const std::string path = dir_ / ("in" + std::to_string(n));
    testing::WriteFile(path, data);
    auto b = store->PublishFile(path);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_EQ(b->id, id);

    std::istringstream in(std::string(data.begin(), data.end()));
    auto s = store->PublishStream(in);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->id, id);

    auto back = ReadObject(*store, id, 3000);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, data) << "size " << n;
  }
}

TEST_P(StoreTest, MultiThreadedPipelineMatchesInline) {
  // Large enough for the threaded pipeline (> 2 max chunks), with a stream
  // source so the read-into-slot path with carried tails runs too.
  Options o = SmallChunks();
  o.threads = 3;
  auto store = Open(o);
  const auto data = RandomBytes(3 << 20, 77);
  std::istringstream in(std::string(data.begin(), data.end()));
  auto r = store->PublishStream(in);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->id, IdOf(data));
  auto chunks = store->Chunks(r->id);
  ASSERT_TRUE(chunks.ok());
  const auto expect = ChunkBuffer(store->chunking(), data.data(), data.size());
  ASSERT_EQ(chunks->size(), expect.size());
  for (size_t i = 0; i < expect.size(); ++i) {
    EXPECT_EQ((*chunks)[i].offset, expect[i].offset);
    EXPECT_EQ((*chunks)[i].length, expect[i].length);
  }
  auto back = ReadObject(*store, r->id);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, data);
}

TEST_P(StoreTest, SeeksAndEarlyCloseDuringReadAhead) {
  // Sequential reads keep later chunks verifying on the store's workers;
  // a seek elsewhere drops them and closing the reader waits for them, so
  // no task outlives the reader it reads for (ASan and TSan check that).
  Options o = SmallChunks();
  o.threads = 2;
  o.cache_bytes = 0;
  auto store = Open(o);
  const auto data = RandomBytes(1 << 20, 78);
  auto r = store->PublishBytes(data.data(), data.size());
  ASSERT_TRUE(r.ok());
  std::mt19937_64 rng(5);
  std::vector<uint8_t> buf(3000);
  for (int round = 0; round < 40; ++round) {
    auto reader = store->OpenReader(r->id);
    ASSERT_TRUE(reader.ok());
    for (int step = 0; step < 6; ++step) {
      const uint64_t at = rng() % data.size();
      ASSERT_TRUE((*reader)->Seek(at).ok());
      for (int k = 0; k < 3; ++k) {
        const uint64_t pos = (*reader)->Tell();
        auto n = (*reader)->Read(buf.data(), buf.size());
        ASSERT_TRUE(n.ok()) << n.status().ToString();
        ASSERT_EQ(*n, std::min<size_t>(buf.size(), data.size() - pos));
        ASSERT_TRUE(std::equal(buf.begin(), buf.begin() + *n, data.begin() + pos)) << pos;
      }
    }
  }  // each reader closes with read-ahead still in flight
}

TEST_P(StoreTest, PullCallbackAndEmptyObject) {
  auto store = Open();
  const auto data = RandomBytes(100000, 5);
  size_t pos = 0;
  auto r = store->PublishPull([&](void* buf, size_t n) -> Result<size_t> {
    const size_t k = std::min<size_t>({n, 777, data.size() - pos});
    std::memcpy(buf, data.data() + pos, k);
    pos += k;
    return k;
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->id, IdOf(data));
  auto empty = store->PublishBytes(nullptr, 0);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->id, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(empty->chunks, 0u);
  auto reader = store->OpenReader(empty->id);
  ASSERT_TRUE(reader.ok());
  uint8_t b;
  EXPECT_EQ(*(*reader)->Read(&b, 1), 0u);
}

TEST_P(StoreTest, PullCallbackErrorFailsThePublishCleanly) {
  auto store = Open();
  int calls = 0;
  auto r = store->PublishPull([&](void* buf, size_t n) -> Result<size_t> {
    if (++calls > 3) return Status::IOError("network went away");
    std::memset(buf, calls, n);
    return n;
  });
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsIOError());
  EXPECT_NE(r.status().message().find("network went away"), std::string::npos);
}

TEST_P(StoreTest, RangeReadsAtAndAcrossEveryChunkBoundary) {
  auto store = Open();
  const auto data = RandomBytes(150000, 11);
  auto r = store->PublishBytes(data.data(), data.size());
  ASSERT_TRUE(r.ok());
  auto chunks = store->Chunks(r->id);
  ASSERT_TRUE(chunks.ok());
  ASSERT_GT(chunks->size(), 5u);
  auto reader = store->OpenReader(r->id);
  ASSERT_TRUE(reader.ok());
  std::vector<uint8_t> buf(40000);
  for (const auto& c : *chunks) {
    for (int64_t delta : {-5, -1, 0, 1, 5}) {
      const int64_t start = static_cast<int64_t>(c.offset) + delta;
      if (start < 0) continue;
      for (size_t len : {size_t{1}, size_t{10}, size_t{c.length}, size_t{c.length + 20}, buf.size()}) {
        auto n = (*reader)->ReadAt(static_cast<uint64_t>(start), buf.data(), len);
        ASSERT_TRUE(n.ok());
        const size_t expect = std::min<size_t>(len, data.size() - static_cast<size_t>(start));
        ASSERT_EQ(*n, expect);
        EXPECT_TRUE(std::equal(buf.begin(), buf.begin() + *n, data.begin() + start))
            << "offset " << start << " length " << len;
      }
    }
  }
  // Past the end: clipped to nothing.
  EXPECT_EQ(*(*reader)->ReadAt(data.size(), buf.data(), 10), 0u);
  EXPECT_EQ(*(*reader)->ReadAt(data.size() + 100, buf.data(), 10), 0u);
  EXPECT_EQ(*(*reader)->ReadAt(data.size() - 3, buf.data(), 10), 3u);
  EXPECT_TRUE((*reader)->Seek(data.size()).ok());
  EXPECT_TRUE((*reader)->Seek(data.size() + 1).IsInvalidArgument());
}

// ReadView hands out the reader's own verified chunk bytes: each view is
// the rest of one chunk at most, the cursor moves past it, and mixed with
// Read, Seek and ReadAt it walks the object exactly as Read does.
TEST_P(StoreTest, ReadViewsWalkTheObjectChunkByChunk) {
  auto store = Open();
  const auto data = RandomBytes(150000, 12);
  auto r = store->PublishBytes(data.data(), data.size());
  ASSERT_TRUE(r.ok());
  auto chunks = store->Chunks(r->id);
  ASSERT_TRUE(chunks.ok());
  ASSERT_GT(chunks->size(), 5u);
  for (size_t limit : {size_t{1000}, SIZE_MAX}) {
    auto reader = store->OpenReader(r->id);
    ASSERT_TRUE(reader.ok());
    std::vector<uint8_t> got;
    for (;;) {
      const uint64_t at = (*reader)->Tell();
      auto v = (*reader)->ReadView(limit);
      ASSERT_TRUE(v.ok()) << v.status().ToString();
      if (v->size == 0) break;
      EXPECT_LE(v->size, limit);
      // Never past the end of the chunk holding the cursor.
      for (const auto& c : *chunks) {
        if (at >= c.offset && at < c.offset + c.length) {
          EXPECT_LE(at + v->size, c.offset + c.length);
        }
      }
      got.insert(got.end(), v->data, v->data + v->size);
      EXPECT_EQ((*reader)->Tell(), at + v->size);
    }
    EXPECT_EQ(got, data);
  }
  auto reader = std::move(*store->OpenReader(r->id));
  std::vector<uint8_t> buf(7000);
  ASSERT_TRUE(reader->Seek((*chunks)[2].offset + 3).ok());
  auto v = reader->ReadView(10);
  ASSERT_TRUE(v.ok());
  ASSERT_EQ(v->size, 10u);
  EXPECT_TRUE(std::equal(v->data, v->data + 10, data.begin() + (*chunks)[2].offset + 3));
  ASSERT_EQ(*reader->Read(buf.data(), buf.size()), buf.size());  // across chunks
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), data.begin() + (*chunks)[2].offset + 13));
  ASSERT_EQ(*reader->ReadAt(0, buf.data(), 100), 100u);  // elsewhere: cursor stays
  v = reader->ReadView(5);
  ASSERT_TRUE(v.ok());
  const size_t at = (*chunks)[2].offset + 13 + buf.size();
  EXPECT_TRUE(std::equal(v->data, v->data + v->size, data.begin() + at));
  EXPECT_EQ(reader->ReadView(0)->size, 0u);
  ASSERT_TRUE(reader->Seek(data.size()).ok());
  EXPECT_EQ(reader->ReadView(100)->size, 0u);
}

// ReadViews hands out several chunks' bytes from one call, each view
// within one chunk, and every view of a call still shows its bytes when
// the call has returned (a later chunk's load must not reuse an earlier
// one's buffer).
TEST_P(StoreTest, ReadViewsShowSeveralChunksAtOnce) {
  auto store = Open();
  const auto data = RandomBytes(150000, 13);
  auto r = store->PublishBytes(data.data(), data.size());
  ASSERT_TRUE(r.ok());
  // Read whole between a call and the look at its views: its chunk
  // buffers come from the pool an earlier chunk's buffer would have gone
  // back to, had a view's chunk been let go.
  const auto other = RandomBytes(150000, 14);
  auto other_id = store->PublishBytes(other.data(), other.size());
  ASSERT_TRUE(other_id.ok());
  auto chunks = store->Chunks(r->id);
  ASSERT_TRUE(chunks.ok());
  ASSERT_GT(chunks->size(), 5u);
  const size_t largest = std::max_element(chunks->begin(), chunks->end(), [](const auto& a, const auto& b) {
                           return a.length < b.length;
                         })->length;
  auto reader = std::move(*store->OpenReader(r->id));
  std::vector<uint8_t> got;
  size_t calls = 0, most = 0;
  for (;;) {
    const uint64_t at = reader->Tell();
    ByteView views[3];
    auto count = reader->ReadViews(3 * largest, views, 3);
    ASSERT_TRUE(count.ok()) << count.status().ToString();
    if (*count == 0) break;
    ASSERT_LE(*count, 3u);
    ++calls;
    most = std::max(most, *count);
    size_t total = 0;
    for (size_t i = 0; i < *count; ++i) {
      ASSERT_GT(views[i].size, 0u);
      // Each view within one chunk, in order.
      const uint64_t from = at + total;
      for (const auto& c : *chunks) {
        if (from >= c.offset && from < c.offset + c.length) {
          EXPECT_LE(from + views[i].size, c.offset + c.length);
        }
      }
      total += views[i].size;
    }
    EXPECT_LE(total, 3 * largest);
    EXPECT_EQ(reader->Tell(), at + total);
    auto read_other = ReadObject(*store, other_id->id);
    ASSERT_TRUE(read_other.ok());
    ASSERT_EQ(*read_other, other);
    for (size_t i = 0; i < *count; ++i) got.insert(got.end(), views[i].data, views[i].data + views[i].size);
  }
  EXPECT_EQ(got, data);
  EXPECT_EQ(most, 3u);  // calls did span chunks
  EXPECT_LT(calls, chunks->size());
  // Limits: n bytes at most, max_views views at most, nothing for none.
  ASSERT_TRUE(reader->Seek((*chunks)[1].offset - 10).ok());
  ByteView views[4];
  auto count = reader->ReadViews(25, views, 4);
  ASSERT_TRUE(count.ok());
  ASSERT_EQ(*count, 2u);
  EXPECT_EQ(views[0].size, 10u);
  EXPECT_EQ(views[1].size, 15u);
  EXPECT_TRUE(std::equal(views[0].data, views[0].data + 10, data.begin() + (*chunks)[1].offset - 10));
  EXPECT_TRUE(std::equal(views[1].data, views[1].data + 15, data.begin() + (*chunks)[1].offset));
  EXPECT_EQ(*reader->ReadViews(SIZE_MAX, views, 0), 0u);
  EXPECT_EQ(*reader->ReadViews(0, views, 4), 0u);
  EXPECT_EQ(reader->Tell(), (*chunks)[1].offset + 15);
  ASSERT_TRUE(reader->Seek(data.size()).ok());
  EXPECT_EQ(*reader->ReadViews(100, views, 4), 0u);
}

TEST_P(StoreTest, RepublishAddsNoBytes) {
  auto store = Open();
  const auto data = RandomBytes(300000, 3);
  auto first = store->PublishBytes(data.data(), data.size());
  ASSERT_TRUE(first.ok());
  EXPECT_GT(first->new_bytes, data.size());
  auto again = store->PublishBytes(data.data(), data.size());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->id, first->id);
  EXPECT_EQ(again->new_bytes, 0u);
  EXPECT_EQ(again->reused_chunks, again->chunks);
}

TEST_P(StoreTest, DuplicateChunksInsideOneObjectAreStoredOnce) {
  auto store = Open();
  std::vector<uint8_t> data(200000, 0);  // zeros: every chunk is max-size and identical
  auto r = store->PublishBytes(data.data(), data.size());
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->chunks, 10u);
  EXPECT_EQ(r->reused_chunks, r->chunks - 2);  // one full-size chunk and the tail are new
  auto back = ReadObject(*store, r->id);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, data);
}

TEST_P(StoreTest, CompressibleDataIsStoredCompressed) {
  auto store = Open();
  std::string text;
  while (text.size() < 100000) text += "line " + std::to_string(text.size() % 977) + " of some log\n";
  auto r = store->PublishBytes(text.data(), text.size());
  ASSERT_TRUE(r.ok());
  EXPECT_LT(r->new_bytes, text.size() / 2);
  auto back = ReadObject(*store, r->id);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(std::string(back->begin(), back->end()), text);
}

// Compressible chunks of every size the reader treats apart: small ones
// (record header and payload in one read), ones of 64 KiB and more (the
// payload read on its own and inflated from a scratch buffer) and the
// largest, each one chunk of its own object, read back whole, by ranges and
// through a second handle.
TEST_P(StoreTest, CompressedChunksOfEverySizeReadBack) {
  Options o;
  o.chunking.min_size = 1 << 20;  // every object below is a single chunk
  o.chunking.avg_size = 2 << 20;
  o.chunking.max_size = 4 << 20;
  auto store = Open(o);
  const size_t sizes[] = {600, 4096, 65535 - 64, 65536, 65600, 300000, 1 << 20};
  std::vector<std::pair<std::string, std::string>> published;
  for (size_t size : sizes) {
    std::string text;
    for (size_t i = 0; text.size() < size; ++i) text += "record " + std::to_string(i * 7919 % 10007) + ";";
    text.resize(size);
    auto r = store->PublishBytes(text.data(), text.size());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->chunks, 1u) << size;
    EXPECT_LT(r->new_bytes, size) << size;
    auto info = store->Stat(r->id);
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->compressed_chunks, 1u) << size << " bytes were meant to be stored compressed";
    published.emplace_back(r->id, std::move(text));
  }
  auto check = [&](Store& s) {
    for (const auto& [id, text] : published) {
      auto whole = ReadObject(s, id);
      ASSERT_TRUE(whole.ok()) << text.size() << ": " << whole.status().ToString();
      EXPECT_TRUE(std::equal(whole->begin(), whole->end(), text.begin(), text.end())) << text.size();
      auto reader = s.OpenReader(id);
      ASSERT_TRUE(reader.ok());
      for (uint64_t at : {uint64_t{0}, uint64_t{1}, text.size() / 2, text.size() - 1}) {
        char buf[100];
        auto n = (*reader)->ReadAt(at, buf, sizeof buf);
        ASSERT_TRUE(n.ok()) << text.size() << " at " << at << ": " << n.status().ToString();
        EXPECT_EQ(std::string(buf, *n), text.substr(at, sizeof buf)) << text.size() << " at " << at;
      }
    }
  };
  check(*store);
  if (!GetParam()) {  // a directory store: again through a fresh handle
    store.reset();
    check(*Open(o));
  }
}

TEST_P(StoreTest, NamesAndVersions) {
  auto store = Open();
  auto a = store->PublishBytes("one", 3, "doc");
  auto b = store->PublishBytes("two", 3, "doc");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->version, 1);
  EXPECT_EQ(b->version, 2);
  EXPECT_EQ(*store->Resolve("doc"), b->id);
  EXPECT_EQ(*store->Resolve("doc@latest"), b->id);
  EXPECT_EQ(*store->Resolve("doc@1"), a->id);
  EXPECT_EQ(*store->Resolve("doc@2"), b->id);
  EXPECT_TRUE(store->Resolve("doc@3").status().IsNotFound());
  EXPECT_TRUE(store->Resolve("doc@0").status().IsInvalidArgument());
  // What follows the last '@' is not a version: the whole is a name.
  EXPECT_TRUE(store->Resolve("doc@x").status().IsNotFound());
  EXPECT_TRUE(store->Resolve("nothing").status().IsNotFound());
  EXPECT_TRUE(store->PublishBytes("x", 1, "bad\x01name").status().IsInvalidArgument());
  EXPECT_TRUE(store->PublishBytes("x", 1, std::string(1025, 'n')).status().IsInvalidArgument());
}

TEST_P(StoreTest, BatchIsAllOrNothing) {
  auto store = Open();
  const auto d1 = RandomBytes(50000, 1), d2 = RandomBytes(50000, 2);
  {
    auto batch = store->NewBatch();
    ASSERT_TRUE(batch->AddBytes(d1.data(), d1.size(), "one").ok());
    ASSERT_TRUE(batch->AddBytes(d2.data(), d2.size(), "two").ok());
    // Not visible before commit...
    EXPECT_TRUE(store->Resolve(IdOf(d1)).status().IsNotFound());
  }  // ...nor after the batch is dropped.
  EXPECT_TRUE(store->Resolve(IdOf(d1)).status().IsNotFound());
  EXPECT_TRUE(store->Resolve("two").status().IsNotFound());

  auto batch = store->NewBatch();
  ASSERT_TRUE(batch->AddBytes(d1.data(), d1.size(), "one").ok());
  ASSERT_TRUE(batch->AddBytes(d2.data(), d2.size(), "two").ok());
  auto done = batch->Commit();
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ASSERT_EQ(done->size(), 2u);
  EXPECT_EQ((*done)[1].version, 1);
  EXPECT_EQ(*ReadObject(*store, "one"), d1);
  EXPECT_EQ(*ReadObject(*store, "two"), d2);
  EXPECT_TRUE(batch->Commit().status().IsInvalidArgument());
}

TEST_P(StoreTest, ConcurrentPublishersAndReaders) {
  Options o = SmallChunks();
  o.threads = 2;
  auto store = Open(o);
  std::vector<std::vector<uint8_t>> payloads;
  for (int i = 0; i < 8; ++i) payloads.push_back(RandomBytes(100000 + i * 1000, 100 + i));
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      auto r = store->PublishBytes(payloads[i].data(), payloads[i].size(), "obj" + std::to_string(i));
      if (!r.ok()) ++failures;
      auto back = ReadObject(*store, "obj" + std::to_string(i));
      if (!back.ok() || *back != payloads[i]) ++failures;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_P(StoreTest, IdPrefixesAndAmbiguity) {
  auto store = Open();
  std::vector<std::string> ids;
  for (int i = 0; i < 300; ++i) {
    const std::string s = "payload " + std::to_string(i);
    ids.push_back(store->PublishBytes(s.data(), s.size())->id);
  }
  const std::string& id = ids[0];
  EXPECT_EQ(*store->Resolve(id.substr(7, 8)), id);
  EXPECT_EQ(*store->Resolve("sha256:" + id.substr(7, 12)), id);
  std::string upper = id.substr(7, 10);
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  EXPECT_EQ(*store->Resolve(upper), id);
  // Fewer than 8 digits is not an id prefix at all.
  EXPECT_TRUE(store->Resolve("sha256:" + id.substr(7, 4)).status().IsInvalidArgument());
  EXPECT_TRUE(store->Resolve("sha256:zz").status().IsInvalidArgument());
  EXPECT_TRUE(store->Resolve("sha256:" + std::string(64, '0')).status().IsNotFound());
  EXPECT_TRUE(store->Resolve("sha256:00000000").status().IsNotFound());
  EXPECT_TRUE(store->Resolve("").status().IsInvalidArgument());
}

TEST(StoreOpen, AmbiguousPrefixListsCandidates) {
  // The decimal strings "69235" and "95303" have SHA-256 ids that share
  // their first 8 hex digits, c11eb5e6 (found by search, checked here).
  auto store = *Store::OpenInMemory(SmallChunks());
  auto a = store->PublishBytes("69235", 5);
  auto b = store->PublishBytes("95303", 5);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->id.substr(0, 15), "sha256:c11eb5e6");
  ASSERT_EQ(b->id.substr(0, 15), "sha256:c11eb5e6");
  auto r = store->Resolve("c11eb5e6");
  ASSERT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("ambiguous"), std::string::npos);
  EXPECT_NE(r.status().message().find("matches 2 objects"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(a->id), std::string::npos);
  EXPECT_NE(r.status().message().find(b->id), std::string::npos);
  // One more digit tells them apart.
  EXPECT_TRUE(store->Resolve(a->id.substr(7, 9)).ok() || store->Resolve(a->id.substr(7, 10)).ok());
}

TEST(StoreOpen, RefusesNonStoreDirectoryUnchanged) {
  TempDir dir;
  testing::WriteFile(dir / "notes.txt", {'h', 'i'});
  auto s = Store::Open(dir.path());
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.status().IsInvalidArgument());
  EXPECT_NE(s.status().message().find("not a chunkstore store"), std::string::npos);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
}

TEST(StoreOpen, RefusesGarbageIndex) {
  TempDir dir;
  testing::WriteFile(dir / "index.db", RandomBytes(8192, 1));
  auto s = Store::Open(dir.path());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("not a chunkstore store"), std::string::npos)
      << s.status().ToString();
}

TEST(StoreOpen, MissingStoreWithoutCreateIsNotFound) {
  TempDir dir;
  Options o;
  o.create_if_missing = false;
  auto s = Store::Open(dir / "absent", o);
  EXPECT_TRUE(s.status().IsNotFound());
  EXPECT_FALSE(std::filesystem::exists(dir / "absent"));
}

TEST(StoreOpen, NewerSchemaIsUnsupportedAndUntouched) {
  TempDir dir;
  ASSERT_TRUE(Store::Open(dir / "s").ok());
  {
    testing::Sql(dir / "s", "UPDATE meta SET value='99' WHERE key='schema_version'");
  }
  const auto before = testing::ReadFile(dir / "s/index.db");
  auto s = Store::Open(dir / "s");
  ASSERT_TRUE(s.status().IsUnsupported()) << s.status().ToString();
  EXPECT_NE(s.status().message().find("schema version 99"), std::string::npos);
  EXPECT_EQ(testing::ReadFile(dir / "s/index.db"), before);
}

TEST(StoreOpen, ChunkParametersAreFixedAtCreation) {
  TempDir dir;
  ASSERT_TRUE(Store::Open(dir / "s", SmallChunks()).ok());
  auto s = Store::Open(dir / "s");  // default options now
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->chunking().avg_size, 4096u);
}

TEST(StoreOpen, RejectsBadChunkParameters) {
  TempDir dir;
  Options o;
  o.chunking.min_size = 10;
  auto s = Store::Open(dir / "s", o);
  EXPECT_TRUE(s.status().IsInvalidArgument());
  EXPECT_FALSE(std::filesystem::exists(dir / "s"));
}

TEST(StoreOpen, ReopenedStoreServesEarlierObjects) {
  TempDir dir;
  const auto data = RandomBytes(500000, 9);
  std::string id;
  {
    auto s = *Store::Open(dir / "s", SmallChunks());
    id = s->PublishBytes(data.data(), data.size(), "keep")->id;
  }
  auto s = *Store::Open(dir / "s");
  EXPECT_EQ(*ReadObject(*s, "keep"), data);
  // A second publish into the reopened store appends to the same pack.
  const auto more = RandomBytes(100000, 10);
  ASSERT_TRUE(s->PublishBytes(more.data(), more.size()).ok());
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir / "s/packs"), {}), 1);
}

TEST(OneByteEdit, AddsAtMostTwoChunksOn64MiB) {
  auto store = *Store::OpenInMemory();  // default 256 KiB / 1 MiB / 4 MiB
  auto data = RandomBytes(64u << 20, 2024);
  auto first = store->PublishBytes(data.data(), data.size());
  ASSERT_TRUE(first.ok());
  data[data.size() / 2] ^= 0x5a;
  auto second = store->PublishBytes(data.data(), data.size());
  ASSERT_TRUE(second.ok());
  EXPECT_NE(second->id, first->id);
  EXPECT_LE(second->chunks - second->reused_chunks, 2u);
  EXPECT_GE(second->chunks - second->reused_chunks, 1u);
  EXPECT_LT(second->new_bytes, 2 * 4 * (1u << 20) + 1024);
}

using testing::FlipPackByte;

TEST(Corruption, FlippedPayloadByteIsReportedWithObjectAndChunk) {
  TempDir dir;
  const auto data = RandomBytes(100000, 4);
  std::string id;
  {
    auto s = *Store::Open(dir / "s", SmallChunks());
    id = s->PublishBytes(data.data(), data.size())->id;
  }
  FlipPackByte(dir / "s", 16 + 64 + 10);  // first record's payload
  auto s = *Store::Open(dir / "s");
  auto chunks = *s->Chunks(id);
  auto reader = s->OpenReader(id);
  ASSERT_TRUE(reader.ok());
  std::vector<uint8_t> buf(100);
  auto r = (*reader)->ReadAt(0, buf.data(), buf.size());
  ASSERT_TRUE(r.status().IsCorruption());
  EXPECT_EQ(r.status().object_id(), id);
  EXPECT_EQ(r.status().chunk_id(), chunks[0].id);
  EXPECT_NE(r.status().message().find(chunks[0].id), std::string::npos);
  // Chunks that are intact still read.
  auto later = (*reader)->ReadAt(chunks[2].offset, buf.data(), buf.size());
  ASSERT_TRUE(later.ok());
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), data.begin() + chunks[2].offset));
}

TEST(Corruption, ReadViewAndReadViewsHandOutIntactChunksThenNameTheDamagedOne) {
  TempDir dir;
  const auto data = RandomBytes(100000, 5);
  std::string id;
  {
    auto s = *Store::Open(dir / "s", SmallChunks());
    id = s->PublishBytes(data.data(), data.size())->id;
  }
  auto s = *Store::Open(dir / "s");
  auto chunks = *s->Chunks(id);
  ASSERT_GT(chunks.size(), 3u);
  std::vector<uint8_t> whole = ReadObject(*s, id).value();
  ASSERT_EQ(whole, data);
  s.reset();
  // Records follow one another from offset 16, each a 64-byte header and
  // the (raw: random data does not compress) chunk; damage the third.
  uint64_t record = 16;
  for (int k = 0; k < 2; ++k) record += 64 + chunks[k].length;
  FlipPackByte(dir / "s", record + 64 + 7);
  s = *Store::Open(dir / "s");
  auto reader = std::move(*s->OpenReader(id));
  std::vector<uint8_t> got;
  Status failure;
  for (;;) {
    auto v = reader->ReadView(SIZE_MAX);
    if (!v.ok()) {
      failure = v.status();
      break;
    }
    if (v->size == 0) break;
    got.insert(got.end(), v->data, v->data + v->size);
  }
  ASSERT_TRUE(failure.IsCorruption()) << failure.ToString();
  EXPECT_EQ(failure.object_id(), id);
  EXPECT_EQ(failure.chunk_id(), chunks[2].id);
  // Exactly the two intact chunks before it, and no byte of the third.
  ASSERT_EQ(got.size(), chunks[2].offset);
  EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin()));
  // ReadViews: the views of the intact chunks, then the damaged one's
  // error, never its bytes.
  reader = std::move(*s->OpenReader(id));
  ByteView views[2];
  auto count = reader->ReadViews(SIZE_MAX, views, 2);  // the two intact chunks
  ASSERT_TRUE(count.ok()) << count.status().ToString();
  ASSERT_EQ(*count, 2u);
  EXPECT_EQ(views[0].size + views[1].size, chunks[2].offset);
  EXPECT_TRUE(std::equal(views[0].data, views[0].data + views[0].size, data.begin()));
  EXPECT_TRUE(std::equal(views[1].data, views[1].data + views[1].size, data.begin() + views[0].size));
  count = reader->ReadViews(SIZE_MAX, views, 2);
  ASSERT_TRUE(count.status().IsCorruption()) << count.status().ToString();
  EXPECT_EQ(count.status().object_id(), id);
  EXPECT_EQ(count.status().chunk_id(), chunks[2].id);
  // One call reaching the damaged chunk after intact ones fails whole.
  reader = std::move(*s->OpenReader(id));
  ByteView more[8];
  count = reader->ReadViews(SIZE_MAX, more, 8);
  ASSERT_TRUE(count.status().IsCorruption()) << count.status().ToString();
  EXPECT_EQ(count.status().chunk_id(), chunks[2].id);
}

TEST(Corruption, DamagedRecordHeaderAndMissingPack) {
  TempDir dir;
  const auto data = RandomBytes(50000, 4);
  std::string id;
  {
    auto s = *Store::Open(dir / "s", SmallChunks());
    id = s->PublishBytes(data.data(), data.size())->id;
  }
  FlipPackByte(dir / "s", 16 + 20);  // inside the first record's chunk id
  {
    auto s = *Store::Open(dir / "s");
    std::vector<uint8_t> buf(10);
    EXPECT_TRUE((*s->OpenReader(id))->ReadAt(0, buf.data(), 10).status().IsCorruption());
  }
  for (auto& e : std::filesystem::directory_iterator(dir / "s/packs")) std::filesystem::remove(e.path());
  auto s = *Store::Open(dir / "s");
  std::vector<uint8_t> buf(10);
  auto r = (*s->OpenReader(id))->ReadAt(0, buf.data(), 10);
  ASSERT_TRUE(r.status().IsCorruption());
  EXPECT_NE(r.status().message().find("missing"), std::string::npos) << r.status().message();
}

TEST(Corruption, SingleChunkObjectWithItsChunkRowGoneFailsAtOpen) {
  // Single-chunk objects opened by full id take a one-query path; it must
  // check as much as the general one.
  TempDir dir;
  std::string id;
  {
    Options o = SmallChunks();
    o.inline_max = 0;  // a chunk, not an inline object
    auto s = *Store::Open(dir / "s", o);
    id = s->PublishBytes("small object", 12)->id;
    ASSERT_EQ(s->Chunks(id)->size(), 1u);
  }
  {
    auto s = *Store::Open(dir / "s");
    auto back = ReadObject(*s, id);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, (std::vector<uint8_t>{'s', 'm', 'a', 'l', 'l', ' ', 'o', 'b', 'j', 'e', 'c', 't'}));
  }
  testing::Sql(dir / "s", "DELETE FROM chunks");
  auto s = *Store::Open(dir / "s");
  for (const std::string& ref : {id, id.substr(7), id.substr(7, 12)}) {
    auto r = s->OpenReader(ref);
    ASSERT_TRUE(r.status().IsCorruption()) << ref << ": " << r.status().ToString();
    EXPECT_NE(r.status().message().find("not in the index"), std::string::npos);
  }
}

TEST(Corruption, PublishingBesideADeletedPackDoesNotRecreateIt) {
  TempDir dir;
  const auto a = RandomBytes(50000, 1), b = RandomBytes(50000, 2);
  std::string pack;
  {
    auto s = *Store::Open(dir / "s", SmallChunks());
    ASSERT_TRUE(s->PublishBytes(a.data(), a.size(), "a").ok());
  }
  for (auto& e : std::filesystem::directory_iterator(dir / "s/packs")) pack = e.path();
  std::filesystem::remove(pack);
  auto s = *Store::Open(dir / "s");
  ASSERT_TRUE(s->PublishBytes(b.data(), b.size(), "b").ok());  // goes to a new pack
  EXPECT_FALSE(std::filesystem::exists(pack));
  EXPECT_EQ(*ReadObject(*s, "b"), b);
  auto v = s->Verify();
  ASSERT_TRUE(v.ok());
  ASSERT_TRUE(v->corrupt());
  EXPECT_EQ(v->problems[0].kind, "missing-pack");
}

TEST(Corruption, ManifestNamingAnUnindexedChunkFailsAtOpen) {
  TempDir dir;
  const auto data = RandomBytes(50000, 4);
  std::string id;
  {
    auto s = *Store::Open(dir / "s", SmallChunks());
    id = s->PublishBytes(data.data(), data.size())->id;
  }
  testing::Sql(dir / "s", "DELETE FROM chunks WHERE id = (SELECT id FROM chunks LIMIT 1)");
  auto s = *Store::Open(dir / "s");
  auto r = s->OpenReader(id);
  ASSERT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("not in the index"), std::string::npos);
}


// Chunk buffers are recycled: a multi-MiB allocation costs page faults on
// first touch, so a released buffer must serve the next chunk that fits it.
TEST(BufferPool, ReusesTheSmallestFreeBufferThatFitsAndGrowsTheLargestOtherwise) {
  chunkstore::internal::BufferPool pool;
  const uint8_t* big_data;
  const uint8_t* small_data;
  {
    auto small = pool.Get(1 << 20);
    auto big = pool.Get(3 << 20);
    EXPECT_EQ(small->size(), size_t{1} << 20);
    EXPECT_EQ(big->size(), size_t{3} << 20);
    small_data = small->data();
    big_data = big->data();
  }  // both back in the pool
  {
    auto b = pool.Get((2 << 20) + 5);  // only the 3 MiB one fits
    EXPECT_EQ(b->data(), big_data);
    EXPECT_EQ(b->size(), size_t{(2 << 20) + 5});
    auto c = pool.Get(4096);  // the 1 MiB one is all that is left
    EXPECT_EQ(c->data(), small_data);
  }
  {
    auto a = pool.Get(512 << 10);  // both fit: the smaller one
    EXPECT_EQ(a->data(), small_data);
    auto grown = pool.Get((3 << 20) + 1);  // none fits: grows, in whole MiB
    EXPECT_EQ(grown->size(), size_t{(3 << 20) + 1});
    EXPECT_EQ(grown->capacity(), size_t{4} << 20);
  }
}

// The cache keeps what its budget says: a chunk that came in a pooled
// buffer much larger than itself is kept in a copy of its own size (the
// slack would otherwise be held, and counted, for as long as it stays).
TEST(ChunkCache, KeepsAChunkWithSlackInACopyOfItsOwnSize) {
  using chunkstore::internal::Buffer;
  chunkstore::internal::ChunkCache cache(1 << 20);
  auto digest = [](int i) { return chunkstore::internal::Sha256::Of(&i, sizeof i); };
  const uint8_t* loose_data[8];
  for (int i = 0; i < 8; ++i) {
    auto loose = std::make_shared<Buffer>();
    loose->Resize(100 << 10, 4 << 20);  // what a pooled 4 MiB buffer holding a 100 KiB chunk looks like
    std::memset(loose->data(), 'a' + i, loose->size());
    loose_data[i] = loose->data();
    cache.Put(digest(i), loose);
  }
  for (int i = 0; i < 8; ++i) {
    SCOPED_TRACE(i);
    ASSERT_TRUE(cache.Contains(digest(i))) << "eight 100 KiB chunks fit a 1 MiB budget";
    auto got = cache.Get(digest(i));
    ASSERT_TRUE(got);
    EXPECT_NE(got->data(), loose_data[i]) << "kept in a copy";
    EXPECT_EQ(got->size(), size_t{100} << 10);
    EXPECT_EQ(got->capacity(), size_t{100} << 10);
    EXPECT_EQ(std::count(got->data(), got->data() + got->size(), 'a' + i), 100 << 10);
  }
  // A buffer with little slack is kept as it is; the budget still holds.
  auto tight = std::make_shared<Buffer>();
  tight->Resize(250 << 10, 270 << 10);
  const uint8_t* tight_data = tight->data();
  cache.Put(digest(100), tight);
  ASSERT_TRUE(cache.Contains(digest(100)));
  EXPECT_EQ(cache.Get(digest(100))->data(), tight_data);
  int held = 0;
  for (int i = 0; i < 8; ++i) held += cache.Contains(digest(i));
  EXPECT_EQ(held, 7) << "the 270 KiB buffer pushed out the least recent 100 KiB chunk, and no more";
}

// Every store of a process draws on one pool, so a store opened for a
// single read finds a buffer that an earlier one faulted in.
TEST(BufferPool, OneSharedPoolServesEveryStoreOfTheProcess) {
  auto& pool = chunkstore::internal::BufferPool::Shared();
  EXPECT_EQ(&pool, &chunkstore::internal::BufferPool::Shared());
  const uint8_t* first;
  {
    auto b = pool.Get(3 << 20);
    first = b->data();
  }
  auto again = pool.Get(3 << 20);
  EXPECT_EQ(again->data(), first);
}

// Read-ahead workers run as SCHED_BATCH, so that the reader's own thread
// keeps its core; other pools keep the usual policy.
TEST(TaskPool, BackgroundWorkersRunAsBatchOthersAsUsual) {
  chunkstore::internal::TaskPool background(1, true), usual(1);
  EXPECT_EQ(background.Submit([] { return sched_getscheduler(0); }).get(), SCHED_BATCH);
  EXPECT_EQ(usual.Submit([] { return sched_getscheduler(0); }).get(), SCHED_OTHER);
}

// Blocks of 2 MiB and more start on a huge-page boundary, so the huge pages
// they ask for can back them from their first byte; all of a block is
// usable (ASan would flag a block shorter than asked for).
TEST(ChunkMemory, LargeBlocksStartOnAHugePageBoundaryAndSmallOnesWork) {
  for (size_t n : {size_t{2} << 20, (size_t{3} << 20) + 7, size_t{4} << 20}) {
    auto block = chunkstore::internal::AllocateChunkMemory(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(block.get()) % (size_t{2} << 20), 0u) << n;
    std::memset(block.get(), 0xA5, n);
    EXPECT_EQ(block[n - 1], 0xA5);
  }
  for (size_t n : {size_t{0}, size_t{1}, size_t{100}, (size_t{2} << 20) - 1}) {
    auto block = chunkstore::internal::AllocateChunkMemory(n);
    ASSERT_NE(block, nullptr) << n;
    std::memset(block.get(), 0x5A, n);
  }
}

}  // namespace
}  // namespace chunkstore
