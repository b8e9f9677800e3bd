// SPDX-License-Identifier: Apache-2.0
// Reading input files ahead of a batch (Batch::Prefetch, FilePrefetcher):
// the hint must change nothing but speed. Every test compares with the same
// files added without the hint, or with the files' own bytes.
#include <sys/stat.h>

#include <filesystem>

#include "ingest/file_prefetch.h"
#include "test_util.h"

namespace chunkstore::testing {
namespace {

using internal::FilePrefetcher;

// Files of awkward sizes around the read-ahead limit (64 KiB) and the
// ingest pipeline's threshold, with some repeats so chunks are shared.
std::vector<std::string> MakeFiles(const TempDir& dir, int count) {
  const size_t sizes[] = {0, 1, 255, 4096, 65535, 65536, 65537, 200000, 3 << 20};
  std::vector<std::string> paths;
  for (int i = 0; i < count; ++i) {
    const std::string p = dir / ("f" + std::to_string(1000 + i));
    const size_t n = sizes[i % (sizeof sizes / sizeof sizes[0])];
    WriteFile(p, RandomBytes(n, static_cast<uint64_t>(i % 40)));
    paths.push_back(p);
  }
  return paths;
}

// Each listed index i of `paths` reads back, by the name "n/i", as the
// file's bytes.
void ExpectNamesReadBack(Store& store, const std::vector<std::string>& paths,
                         const std::vector<size_t>& indices) {
  for (size_t i : indices) {
    auto bytes = ReadObject(store, "n/" + std::to_string(i));
    ASSERT_TRUE(bytes.ok()) << i << ": " << bytes.status().ToString();
    EXPECT_EQ(*bytes, ReadFile(paths[i])) << paths[i];
  }
}

struct Added {
  std::vector<std::string> ids;
  std::vector<std::string> errors;  // "" where the add succeeded
};

// Adds `paths` (named after their index) to a new store at `store_dir`,
// with or without the hint, and commits.
Added AddAll(const std::string& store_dir, const std::vector<std::string>& paths, bool hint) {
  auto store = Store::Open(store_dir);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  Added out;
  auto batch = (*store)->NewBatch();
  if (hint) batch->Prefetch(paths);
  for (size_t i = 0; i < paths.size(); ++i) {
    auto r = batch->AddFile(paths[i], "n/" + std::to_string(i));
    out.ids.push_back(r.ok() ? r->id : "");
    out.errors.push_back(r.ok() ? "" : r.status().ToString());
  }
  auto done = batch->Commit();
  EXPECT_TRUE(done.ok()) << done.status().ToString();
  return out;
}

TEST(Prefetch, ManyFilesPublishExactlyAsWithoutTheHint) {
  TempDir dir, in_dir;
  const auto paths = MakeFiles(in_dir, 120);
  const Added plain = AddAll(dir / "plain", paths, false);
  const Added hinted = AddAll(dir / "hinted", paths, true);
  EXPECT_EQ(plain.ids, hinted.ids);
  EXPECT_EQ(plain.errors, hinted.errors);
  auto store = Store::Open(dir / "hinted");
  ASSERT_TRUE(store.ok());
  std::vector<size_t> all(paths.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  ExpectNamesReadBack(**store, paths, all);
}

TEST(Prefetch, BadInputsFailAsWithoutTheHintAndSpoilNothing) {
  TempDir in_dir, dir;
  auto paths = MakeFiles(in_dir, 6);
  std::filesystem::create_directory(in_dir / "subdir");
  paths.insert(paths.begin() + 1, in_dir / "missing");
  paths.insert(paths.begin() + 3, in_dir / "subdir");
  paths.push_back("/dev/null");
  // A FIFO nobody writes to: refused at once, not waited on (with the
  // hint, a helper blocked in open would also keep the batch from ending).
  ASSERT_EQ(::mkfifo((in_dir / "fifo").c_str(), 0644), 0);
  paths.push_back(in_dir / "fifo");
  paths.push_back(paths[0]);
  const Added plain = AddAll(dir / "plain", paths, false);
  const Added hinted = AddAll(dir / "hinted", paths, true);
  EXPECT_EQ(plain.errors, hinted.errors);
  EXPECT_EQ(plain.ids, hinted.ids);
  EXPECT_NE(hinted.errors[1].find("no such file: " + paths[1]), std::string::npos) << hinted.errors[1];
  EXPECT_NE(hinted.errors[3].find("is a directory"), std::string::npos) << hinted.errors[3];
  EXPECT_NE(hinted.errors[paths.size() - 3].find("not a regular file"), std::string::npos)
      << hinted.errors[paths.size() - 3];  // /dev/null
  EXPECT_NE(hinted.errors[paths.size() - 2].find("not a regular file"), std::string::npos)
      << hinted.errors[paths.size() - 2];  // the FIFO
  EXPECT_EQ(hinted.errors.back(), "");
  // The good files around the bad ones were committed.
  auto store = Store::Open(dir / "hinted");
  ASSERT_TRUE(store.ok());
  ExpectNamesReadBack(**store, paths, {0, 2, 4, paths.size() - 4, paths.size() - 1});
}

TEST(Prefetch, AddingOutOfOrderDropsTheHintAndStillReadsEachFile) {
  TempDir in_dir, dir;
  const auto paths = MakeFiles(in_dir, 5);
  auto store = Store::Open(dir.path());
  ASSERT_TRUE(store.ok());
  auto batch = (*store)->NewBatch();
  batch->Prefetch(paths);
  for (int i : {3, 0, 1, 4, 2}) {
    auto r = batch->AddFile(paths[i], "n/" + std::to_string(i));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  ASSERT_TRUE(batch->Commit().ok());
  ExpectNamesReadBack(**store, paths, {0, 1, 2, 3, 4});
}

TEST(Prefetch, ABatchDroppedWhileReadingAheadLeavesNothingBehind) {
  TempDir in_dir, dir;
  const auto paths = MakeFiles(in_dir, 200);
  auto store = Store::Open(dir.path());
  ASSERT_TRUE(store.ok());
  {
    auto batch = (*store)->NewBatch();
    batch->Prefetch(paths);
    ASSERT_TRUE(batch->AddFile(paths[0], "first").ok());
  }  // dropped uncommitted, helper still reading
  auto names = (*store)->List();
  ASSERT_TRUE(names.ok());
  EXPECT_TRUE(names->empty());
  // A committed batch does not wait for reads it no longer needs.
  auto batch = (*store)->NewBatch();
  batch->Prefetch(paths);
  ASSERT_TRUE(batch->AddFile(paths[1], "second").ok());
  ASSERT_TRUE(batch->Commit().ok());
  EXPECT_FALSE(batch->AddFile(paths[2]).ok());  // committed: nothing more
  names = (*store)->List();
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(names->size(), 1u);
}

// The helper and the taker share the reading whichever is ahead; with a
// queue of one, a queue of two and a deep one, every item must still come
// out whole and in the order of the list.
TEST(FilePrefetcher, EveryItemArrivesWholeAndInOrderAtAnyDepth) {
  TempDir in_dir;
  const auto paths = MakeFiles(in_dir, 90);
  for (size_t depth : {size_t{1}, size_t{2}, size_t{64}}) {
    FilePrefetcher p(paths, 65536, depth);
    for (const auto& path : paths) {
      auto item = p.Take(path);
      ASSERT_TRUE(item.has_value()) << depth << " " << path;
      ASSERT_TRUE(item->status.ok()) << item->status.ToString();
      EXPECT_EQ(item->path, path);
      const auto want = ReadFile(path);
      if (want.size() <= 65536) {
        EXPECT_TRUE(item->read) << path;
        EXPECT_EQ(item->bytes, want) << path;
        EXPECT_EQ(item->file, nullptr);
      } else {
        EXPECT_FALSE(item->read) << path;  // left to the ingest pipeline
        EXPECT_TRUE(item->bytes.empty());
        ASSERT_NE(item->file, nullptr);  // opened once, handed over open
        EXPECT_EQ(*item->file->Size(), want.size());
      }
    }
    EXPECT_FALSE(p.Take(paths[0]).has_value());  // past the end
  }
}

TEST(FilePrefetcher, AFileThatGrewSinceItsStatIsLeftToTheOrdinaryPath) {
  // A FIFO-free way to make a file longer than its stat: /proc files
  // report size 0 and have content.
  const std::vector<std::string> paths = {"/proc/self/status", "/proc/self/status"};
  FilePrefetcher p(paths, 65536, 4);
  for (const auto& path : paths) {
    auto item = p.Take(path);
    ASSERT_TRUE(item.has_value());
    EXPECT_TRUE(item->status.ok());
    EXPECT_FALSE(item->read);
  }
}

}  // namespace
}  // namespace chunkstore::testing
