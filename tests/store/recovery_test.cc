// SPDX-License-Identifier: Apache-2.0
// The index is a cache of the change log: deleted, truncated, with a page
// zeroed, or with its write-ahead log lost after acknowledged publishes,
// it is caught up or rebuilt and gives back the same objects, names and
// bytes; a store whose index is gone is refused for writing and never
// written over; names from storage that are not pack names reach no file.
#include <sqlite3.h>

#include <set>

#include "log_forge.h"
#include "test_util.h"

namespace chunkstore {
namespace {

using testing::RandomBytes;
using testing::ReadObject;

// Everything a user can see of a store, for comparing two states of it.
struct Seen {
  std::vector<std::string> listing, unnamed, history, stats;
  std::map<std::string, std::vector<uint8_t>> bytes;
  bool operator==(const Seen& o) const {
    return listing == o.listing && unnamed == o.unnamed && history == o.history && stats == o.stats &&
           bytes == o.bytes;
  }
};

Seen Look(Store& s) {
  Seen v;
  const auto listed = s.List();
  const auto unnamed = s.ListUnnamed();
  EXPECT_TRUE(listed.ok() && unnamed.ok());
  if (!listed.ok() || !unnamed.ok()) return v;
  for (const auto& e : *listed) v.listing.push_back(e.name + "@" + std::to_string(e.version) + "=" + e.id);
  for (const auto& o : *unnamed) v.unnamed.push_back(o.id + (o.pinned ? " pinned" : ""));
  for (const char* name : {"w", "docs/a", "tiny"}) {
    auto h = s.History(name);
    if (h.ok()) {
      for (const auto& e : *h) v.history.push_back(e.name + "@" + std::to_string(e.version) + "=" + e.id);
    }
  }
  const auto st = *s.Stats();
  v.stats = {std::to_string(st.objects), std::to_string(st.names), std::to_string(st.chunks),
             std::to_string(st.logical_bytes), std::to_string(st.stored_bytes)};
  std::set<std::string> ids;
  for (const char* name : {"w", "docs/a", "tiny"}) {
    auto h = s.History(name);
    if (h.ok()) {
      for (const auto& e : *h) ids.insert(e.id);
    }
  }
  for (const auto& e : *listed) ids.insert(e.id);
  for (const auto& o : *unnamed) ids.insert(o.id);
  for (const auto& id : ids) {
    auto got = ReadObject(s, id);
    EXPECT_TRUE(got.ok()) << id << ": " << got.status().ToString();
    if (got.ok()) v.bytes[id] = std::move(*got);
  }
  return v;
}

class RecoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = *Store::Open(path(), testing::SmallChunks());
    Fill(*s);
    seen_ = Look(*s);
    ASSERT_GT(seen_.bytes.size(), 4u);
  }

  // Versions, a tag, a removed name, an unnamed object, an inline object,
  // compressible text, and a gc's work in the log.
  void Fill(Store& s) {
    for (int i = 0; i < 3; ++i) {
      const auto d = RandomBytes(60000 + 1000 * i, 10 + i);
      ASSERT_TRUE(s.PublishBytes(d.data(), d.size(), "w").ok());
    }
    std::string text;
    while (text.size() < 80000) text += "a line of text " + std::to_string(text.size()) + "\n";
    ASSERT_TRUE(s.PublishBytes(text.data(), text.size(), "docs/a").ok());
    ASSERT_TRUE(s.PublishBytes("tiny content", 12, "tiny").ok());
    ASSERT_TRUE(s.Tag("w@1", "docs/a").ok());
    const auto u = RandomBytes(30000, 20);
    ASSERT_TRUE(s.PublishBytes(u.data(), u.size()).ok());
    const auto gone = RandomBytes(50000, 21);
    ASSERT_TRUE(s.PublishBytes(gone.data(), gone.size(), "gone").ok());
    ASSERT_TRUE(s.RemoveName("gone").ok());
    ASSERT_TRUE(s.Gc(testing::GcNow()).ok());
    const auto late = RandomBytes(40000, 22);
    ASSERT_TRUE(s.PublishBytes(late.data(), late.size(), "w").ok());
  }

  std::string path() const { return dir_ / "s"; }
  Result<std::unique_ptr<Store>> Open(bool rebuild = false) {
    Options o = testing::SmallChunks();
    o.rebuild_index = rebuild;
    o.create_if_missing = false;
    return Store::Open(path(), o);
  }
  void RemoveIndex() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path() + "/index.db" + suffix);
  }
  // The rebuilt store shows what the store showed, and verifies.
  void ExpectRebuiltIdentical() {
    auto s = Open(true);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_FALSE((*s)->notices().empty());
    EXPECT_TRUE(Look(**s) == seen_);
    auto v = (*s)->Verify();
    ASSERT_TRUE(v.ok());
    EXPECT_TRUE(v->problems.empty()) << v->problems[0].kind << ": " << v->problems[0].message;
  }

  testing::TempDir dir_;
  Seen seen_;
};

TEST_F(RecoveryTest, ADeletedIndexIsRefusedThenRebuiltIdentical) {
  RemoveIndex();
  auto s = Open();
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.status().IsCorruption()) << s.status().ToString();
  EXPECT_NE(s.status().message().find("index rebuild"), std::string::npos) << s.status().message();
  ExpectRebuiltIdentical();
}

TEST_F(RecoveryTest, ATruncatedIndexIsRefusedThenRebuiltIdentical) {
  std::filesystem::resize_file(path() + "/index.db", std::filesystem::file_size(path() + "/index.db") / 2);
  for (const char* suffix : {"-wal", "-shm"}) std::filesystem::remove(path() + "/index.db" + suffix);
  auto s = Open();
  if (s.ok()) {
    // SQLite may open a cut file; then the damage shows when it is read.
    auto v = (*s)->Verify();
    ASSERT_TRUE(v.ok() || v.status().IsCorruption()) << v.status().ToString();
    if (v.ok()) {
      EXPECT_TRUE(v->corrupt());
    }
  }
  ExpectRebuiltIdentical();
}

TEST_F(RecoveryTest, AZeroedIndexPageIsFoundByVerifyThenRebuiltIdentical) {
  {
    std::fstream f(path() + "/index.db", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);  // the second page
    const std::string zeros(4096, '\0');
    f.write(zeros.data(), zeros.size());
  }
  auto s = Open();
  if (s.ok()) {
    auto v = (*s)->Verify();
    // Never "ok" on a damaged index.
    if (v.ok()) {
      EXPECT_TRUE(v->corrupt());
    } else {
      EXPECT_TRUE(v.status().IsCorruption()) << v.status().ToString();
    }
  }
  ExpectRebuiltIdentical();
}

// The index's last commits live in its write-ahead log until a checkpoint
// moves them into the file; losing it (or its tail) loses them from the
// index, not from the store.
TEST_F(RecoveryTest, ALostWriteAheadLogIsCaughtUpFromTheChangeLog) {
  for (bool truncate : {false, true}) {
    std::vector<uint8_t> more = RandomBytes(70000, truncate ? 30 : 31);
    std::string saved_db;
    {
      auto s = Open();
      ASSERT_TRUE(s.ok());
      // With the store open, its index's newest pages are in the -wal.
      ASSERT_TRUE((*s)->PublishBytes(more.data(), more.size(), truncate ? "t" : "u").ok());
      const auto db = testing::ReadFile(path() + "/index.db");
      saved_db.assign(db.begin(), db.end());
      const auto wal = testing::ReadFile(path() + "/index.db-wal");
      ASSERT_FALSE(wal.empty());
      if (truncate) {
        // The -wal cut to its first half, as a crash mid-write leaves it.
        std::vector<uint8_t> half(wal.begin(), wal.begin() + static_cast<std::ptrdiff_t>(wal.size() / 2));
        testing::WriteFile(path() + "/saved-wal", half);
      }
    }
    // What the disk would hold: the file without what was in the -wal.
    testing::WriteFile(path() + "/index.db", std::vector<uint8_t>(saved_db.begin(), saved_db.end()));
    std::filesystem::remove(path() + "/index.db-shm");
    std::filesystem::remove(path() + "/index.db-wal");
    if (truncate) std::filesystem::rename(path() + "/saved-wal", path() + "/index.db-wal");
    auto s = Open();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    auto got = ReadObject(**s, truncate ? "t" : "u");
    ASSERT_TRUE(got.ok()) << "an acknowledged publish was lost with the index's -wal: " << got.status().ToString();
    EXPECT_EQ(*got, more);
    EXPECT_TRUE(Look(**s).listing.size() >= seen_.listing.size());
    auto v = (*s)->Verify();
    ASSERT_TRUE(v.ok());
    EXPECT_TRUE(v->problems.empty()) << v->problems[0].kind << ": " << v->problems[0].message;
  }
}

// After the index is lost, nothing writes over the store, and gc deletes
// nothing: it cannot run, and once rebuilt it finds everything live.
TEST_F(RecoveryTest, NothingIsWrittenOverAStoreThatLostItsIndex) {
  RemoveIndex();
  std::map<std::string, std::vector<uint8_t>> packs;
  for (auto& e : std::filesystem::directory_iterator(path() + "/packs")) packs[e.path()] = testing::ReadFile(e.path());
  Options create = testing::SmallChunks();  // publish creates stores on first use
  auto s = Store::Open(path(), create);
  ASSERT_FALSE(s.ok()) << "a store was opened over packs whose index is gone";
  // Nor with the config gone too: packs and a log, and no way to know them.
  std::filesystem::rename(path() + "/config", path() + "/config.saved");
  auto again = Store::Open(path(), create);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("refusing"), std::string::npos) << again.status().ToString();
  std::filesystem::rename(path() + "/config.saved", path() + "/config");
  std::map<std::string, std::vector<uint8_t>> after;
  for (auto& e : std::filesystem::directory_iterator(path() + "/packs")) after[e.path()] = testing::ReadFile(e.path());
  EXPECT_EQ(after, packs);
  EXPECT_FALSE(std::filesystem::exists(path() + "/index.db"));
  auto rebuilt = Open(true);
  ASSERT_TRUE(rebuilt.ok());
  auto gc = (*rebuilt)->Gc(testing::GcNow());
  ASSERT_TRUE(gc.ok()) << gc.status().ToString();
  EXPECT_EQ(gc->objects_removed, 0u);
  EXPECT_EQ(gc->packs_deleted, 0u);
  EXPECT_TRUE(Look(**rebuilt) == seen_);
}

// A pack name in the index, or in the log, that is not one the store
// writes is damage, named as such; no file outside the store is touched.
TEST_F(RecoveryTest, PackNamesThatAreNotPackNamesReachNoFile) {
  const std::string outside = dir_ / "outside.pack";
  testing::WriteFile(outside, RandomBytes(100, 1));
  for (const char* bad : {"../../outside.pack", "/abs/olute.pack", "pack-zz.pack"}) {
    testing::Sql(path(), std::string("UPDATE packs SET name = '") + bad + "' WHERE id = (SELECT min(id) FROM packs)");
    auto s = Open();
    ASSERT_TRUE(s.ok());
    for (const auto& [id, bytes] : seen_.bytes) {
      auto got = ReadObject(**s, id);
      if (!got.ok()) {
        EXPECT_TRUE(got.status().IsCorruption()) << bad << ": " << got.status().ToString();
      }
    }
    auto v = (*s)->Verify();
    ASSERT_TRUE(v.ok());
    EXPECT_TRUE(v->corrupt()) << bad;
    auto gc = (*s)->Gc(testing::GcNow());
    EXPECT_TRUE(gc.status().IsCorruption()) << bad << ": " << gc.status().ToString();
    s->reset();
    EXPECT_TRUE(std::filesystem::exists(outside)) << bad;
    ExpectRebuiltIdentical();
  }
  // In the log: the replay refuses it.
  testing::RewriteLog(path(), [](internal::ChangeSet& c) {
    if (!c.packs.empty()) c.packs[0].name = "../../outside.pack";
  });
  auto s = Open(true);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.status().IsCorruption()) << s.status().ToString();
  EXPECT_TRUE(std::filesystem::exists(outside));
}

}  // namespace
}  // namespace chunkstore
