// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the tests: deterministic random bytes, temporary
// directories, reading a whole object, gc without the grace period, and
// SQL against a closed store's index.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "chunkstore/store.h"
#include "base/random_bytes.h"
#include "file_bytes.h"

namespace chunkstore::testing {

inline std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) { return SeededRandomBytes(n, seed); }

class TempDir {
 public:
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "chunkstore-test-XXXXXX").string();
    if (::mkdtemp(templ.data()) == nullptr) std::abort();
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void WriteFile(const std::string& path, const std::vector<uint8_t>& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  ASSERT_TRUE(f.good()) << path;
}

inline std::vector<uint8_t> ReadFile(const std::string& path) { return ReadFileBytes(path); }

// Reads an object through the verifying reader, in reads of `step` bytes.
inline Result<std::vector<uint8_t>> ReadObject(Store& store, const std::string& ref,
                                               size_t step = 1 << 20) {
  auto r = store.OpenReader(ref);
  if (!r.ok()) return r.status();
  std::vector<uint8_t> out((*r)->size());
  size_t pos = 0;
  while (pos < out.size()) {
    auto n = (*r)->Read(out.data() + pos, std::min(step, out.size() - pos));
    if (!n.ok()) return n.status();
    if (*n == 0) return Status::IOError("short object");
    pos += *n;
  }
  return out;
}

// Small chunks keep multi-chunk tests fast.
inline Options SmallChunks() {
  Options o;
  o.chunking.min_size = 1024;
  o.chunking.avg_size = 4096;
  o.chunking.max_size = 16384;
  return o;
}

// Flips the lowest bit of the byte at offset_in_pack in the store's pack
// (a store with exactly one pack).
inline void FlipPackByte(const std::filesystem::path& store_dir, uint64_t offset_in_pack) {
  std::filesystem::path pack;
  for (auto& e : std::filesystem::directory_iterator(store_dir / "packs")) pack = e.path();
  std::fstream f(pack, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset_in_pack));
  char c;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(offset_in_pack));
  f.put(static_cast<char>(c ^ 0x01));
}

// Publishes n small objects through store ("w/0" to "w/<n-1>") on a
// thread of its own, for checks that must hold while a writer goes on; the
// destructor waits for it. A bounded number: a check that reads the whole
// store each time stays quick under sanitizers too.
class BackgroundPublisher {
 public:
  BackgroundPublisher(Store& store, uint64_t n)
      : thread_([this, &store, n] {
          for (uint64_t i = 0; i < n; ++i) {
            const auto d = RandomBytes(3000, 100 + i);
            EXPECT_TRUE(store.PublishBytes(d.data(), d.size(), "w/" + std::to_string(i)).ok());
          }
          done_ = true;
        }) {}
  ~BackgroundPublisher() { thread_.join(); }
  bool done() const { return done_.load(); }

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// gc that removes unreferenced pack files at once, not after the hour
// a writer's new pack is given.
inline GcOptions GcNow() {
  GcOptions o;
  o.orphan_grace_seconds = 0;
  return o;
}

// Runs SQL statements on the index of the store in store_dir (closed, or
// at least not writing); returns the first column of every result row,
// concatenated ("NULL" for NULL). An SQL error fails the test.
inline std::string Sql(const std::string& store_dir, const std::string& statements) {
  sqlite3* db = nullptr;
  const std::string path = store_dir + "/index.db";
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK) << path;
  std::string out;
  char* err = nullptr;
  const int rc = sqlite3_exec(
      db, statements.c_str(),
      [](void* o, int, char** v, char**) {
        *static_cast<std::string*>(o) += v[0] ? v[0] : "NULL";
        return 0;
      },
      &out, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "") << " in: " << statements;
  sqlite3_free(err);
  sqlite3_close(db);
  return out;
}

}  // namespace chunkstore::testing
