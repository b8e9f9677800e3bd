// SPDX-License-Identifier: Apache-2.0
// Checkpoints of a directory store's change log: written once the log
// since the last one outgrows its bound, each the first frame of a new
// segment; two segments are kept; an index rebuilt from the newest
// checkpoint and what follows it shows what the store showed. A crash at
// every file operation of a checkpointing commit, then power loss, loses
// nothing acknowledged and leaves a log that the next commit extends; so
// does an I/O error, a full disk or a short write at every file operation,
// and a failure at every write of the index.
#include <filesystem>
#include <set>

#include "fault_env.h"
#include "sqlite_fault_vfs.h"
#include "format/change_set.h"
#include "log/segment.h"
#include "test_util.h"

namespace chunkstore {
namespace {

using testing::RandomBytes;

std::vector<std::string> Segments(const std::string& store) {
  std::vector<std::string> out;
  for (auto& e : std::filesystem::directory_iterator(store + "/log"))
    if (internal::IsSegmentName(e.path().filename().string(), nullptr)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The kind of each change set in a segment, in order.
std::vector<internal::ChangeSet::Kind> Kinds(const std::string& store, const std::string& segment) {
  std::vector<internal::ChangeSet::Kind> kinds;
  auto f = Env::Posix()->OpenFile(store + "/log/" + segment, OpenMode::kRead);
  EXPECT_TRUE(f.ok());
  if (!f.ok()) return kinds;
  auto scan = internal::ScanSegment(**f, segment);
  EXPECT_TRUE(scan.ok()) << scan.status().ToString();
  if (!scan.ok()) return kinds;
  EXPECT_TRUE(scan->damage.empty()) << segment << ": " << scan->damage;
  for (const auto& fr : scan->frames) kinds.push_back(internal::DecodeChangeSet(fr.payload)->kind);
  return kinds;
}

std::vector<uint8_t> Payload(int i) { return RandomBytes(20000 + static_cast<size_t>(i) * 100, 900 + static_cast<uint64_t>(i)); }

Options Small(uint64_t checkpoint_bytes, Env* env = nullptr) {
  Options o = testing::SmallChunks();
  o.checkpoint_bytes = checkpoint_bytes;
  o.env = env;
  return o;
}

void ExpectObjects(Store& s, int n, const std::string& when) {
  auto listed = s.List();
  ASSERT_TRUE(listed.ok()) << when;
  EXPECT_EQ(listed->size(), static_cast<size_t>(n)) << when;
  for (int i = 0; i < n; ++i) {
    auto got = testing::ReadObject(s, "o" + std::to_string(i));
    ASSERT_TRUE(got.ok()) << when << ": o" << i << ": " << got.status().ToString();
    EXPECT_EQ(*got, Payload(i)) << when;
  }
  auto v = s.Verify();
  ASSERT_TRUE(v.ok()) << when;
  EXPECT_FALSE(v->corrupt()) << when << ": " << (v->problems.empty() ? "" : v->problems[0].message);
}

TEST(Checkpoint, TheLogIsFoldedIntoCheckpointsAndTwoSegmentsAreKept) {
  testing::TempDir dir;
  const std::string path = dir / "s";
  {
    auto s = *Store::Open(path, Small(4000));
    for (int i = 0; i < 30; ++i) {
      const auto d = Payload(i);
      ASSERT_TRUE(s->PublishBytes(d.data(), d.size(), "o" + std::to_string(i)).ok());
    }
    ExpectObjects(*s, 30, "after the publishes");
  }
  const auto segments = Segments(path);
  ASSERT_EQ(segments.size(), 2u) << "the newest segment and the one before it";
  EXPECT_NE(segments.back(), "00000000000000000001.log") << "no checkpoint was written";
  for (const auto& seg : segments) {
    const auto kinds = Kinds(path, seg);
    ASSERT_FALSE(kinds.empty()) << seg;
    EXPECT_EQ(kinds[0], internal::ChangeSet::kCheckpoint) << seg << " starts with its checkpoint";
    for (size_t i = 1; i < kinds.size(); ++i) EXPECT_EQ(kinds[i], internal::ChangeSet::kPublish) << seg;
  }
  // The index, lost, comes back from the newest checkpoint and the rest.
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + "/index.db" + suffix);
  Options rebuild = Small(4000);
  rebuild.rebuild_index = true;
  auto s = Store::Open(path, rebuild);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ExpectObjects(**s, 30, "after a rebuild");
  // With the older segment gone too: the newest holds the whole state.
  s->reset();
  std::filesystem::remove(path + "/log/" + segments.front());
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + "/index.db" + suffix);
  s = Store::Open(path, rebuild);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ExpectObjects(**s, 30, "after a rebuild from the newest segment alone");
}

// The store with n objects whose next commit writes a checkpoint (the log
// since the last one is past its bound).
void CheckpointDue(const std::string& path, int n, Env* env) {
  auto s = *Store::Open(path, Small(1ull << 30, env));
  for (int i = 0; i < n; ++i) {
    const auto d = Payload(i);
    ASSERT_TRUE(s->PublishBytes(d.data(), d.size(), "o" + std::to_string(i)).ok());
  }
}

TEST(PowerLoss, CrashAtEveryPointOfACheckpointThenPowerLoss) {
  testing::TempDir dir;
  {
    testing::FaultEnv env(Env::Posix());
    CheckpointDue(dir / "template", 4, &env);
    if (HasFatalFailure()) return;
  }
  const auto next = Payload(4);
  int total = 0;
  {
    std::filesystem::copy(dir / "template", dir / "probe", std::filesystem::copy_options::recursive);
    testing::FaultEnv env(Env::Posix());
    auto s = *Store::Open(dir / "probe", Small(1, &env));
    env.FailAt(0);
    ASSERT_TRUE(s->PublishBytes(next.data(), next.size(), "o4").ok());
    total = env.count();
    s.reset();
    ASSERT_EQ(Segments(dir / "probe").size(), 2u) << "the probe's publish wrote no checkpoint";
  }
  ASSERT_GT(total, 5);
  for (int n = 1; n <= total + 1; ++n) {
    const std::string path = dir / ("round" + std::to_string(n));
    const std::string when = "crash at " + std::to_string(n);
    std::filesystem::copy(dir / "template", path, std::filesystem::copy_options::recursive);
    testing::FaultEnv env(Env::Posix());
    bool returned = false, after_returned = false;
    const auto after = Payload(5);
    {
      auto s = *Store::Open(path, Small(1, &env));
      env.CrashAt(n);
      returned = s->PublishBytes(next.data(), next.size(), "o4").ok();
      env.FailAt(0);
      // A checkpoint that failed is not the publish's failure: the commit
      // was made before it. What is acknowledged after it must last too.
      if (returned) after_returned = s->PublishBytes(after.data(), after.size(), "o5").ok();
    }
    env.DropUnsyncedData();
    {
      auto s = Store::Open(path, Small(1ull << 30, &env));
      ASSERT_TRUE(s.ok()) << when << ": " << s.status().ToString();
      const bool has = (*s)->Resolve("o4").ok(), has_after = (*s)->Resolve("o5").ok();
      EXPECT_TRUE(has || !returned) << when << ": a publish that returned was lost";
      EXPECT_TRUE(has_after || !after_returned) << when << ": a publish after the checkpoint was lost";
      EXPECT_TRUE(has || !has_after) << when;
      const int had = has_after ? 6 : has ? 5 : 4;
      ExpectObjects(**s, had, when);
      // The log goes on from wherever the crash left it.
      const auto more = Payload(had);
      ASSERT_TRUE((*s)->PublishBytes(more.data(), more.size(), "o" + std::to_string(had)).ok()) << when;
      ExpectObjects(**s, had + 1, when + ", then a publish");
      const int expect = had + 1;
      s->reset();
      Options rebuild = Small(1, &env);
      rebuild.rebuild_index = true;
      auto r = Store::Open(path, rebuild);
      ASSERT_TRUE(r.ok()) << when << ": " << r.status().ToString();
      ExpectObjects(**r, expect, when + ", then a rebuild");
    }
    std::filesystem::remove_all(path);
  }
}

// Fails one operation of a checkpointing publish, n = 1, 2, ...: the
// publish fails cleanly or (the checkpoint failing after the commit)
// succeeds; either way the next publish succeeds and the store verifies.
TEST(Checkpoint, AFailureAtEveryPointOfACheckpointingPublishLosesNothing) {
  testing::TempDir dir;
  CheckpointDue(dir / "template", 4, nullptr);
  if (HasFatalFailure()) return;
  const auto next = Payload(4), after = Payload(5);
  for (int kind = 0; kind < 3; ++kind) {
    int failed = 0;
    for (int n = 1;; ++n) {
      const std::string path = dir / "round";
      const std::string when = "failure " + std::to_string(kind) + " at " + std::to_string(n);
      std::filesystem::remove_all(path);
      std::filesystem::copy(dir / "template", path, std::filesystem::copy_options::recursive);
      testing::FaultEnv env(Env::Posix());
      auto s = *Store::Open(path, Small(1, &env));
      env.FailAt(n, kind == 1, kind == 2);
      auto r = s->PublishBytes(next.data(), next.size(), "o4");
      const bool fired = env.fired();
      env.FailAt(0);
      if (!fired) break;  // past the last operation
      if (!r.ok()) {
        ++failed;
        EXPECT_TRUE(kind == 1 ? r.status().IsNoSpace() : r.status().IsIOError()) << when << ": " << r.status().ToString();
      }
      ASSERT_TRUE(s->PublishBytes(after.data(), after.size(), "o5").ok()) << when;
      s.reset();
      auto again = Store::Open(path, Small(1, &env));
      ASSERT_TRUE(again.ok()) << when << ": " << again.status().ToString();
      const bool has = (*again)->Resolve("o4").ok();
      EXPECT_TRUE(has || !r.ok()) << when << ": a publish that returned was lost";
      for (int i : {0, 1, 2, 3, 5}) {
        auto got = testing::ReadObject(**again, "o" + std::to_string(i));
        ASSERT_TRUE(got.ok()) << when << ": o" << i << ": " << got.status().ToString();
        EXPECT_EQ(*got, Payload(i)) << when;
      }
      auto v = (*again)->Verify();
      ASSERT_TRUE(v.ok()) << when;
      EXPECT_FALSE(v->corrupt()) << when << ": " << (v->problems.empty() ? "" : v->problems[0].message);
    }
    EXPECT_GT(failed, 0) << "kind " << kind << ": no failure point made the publish fail";
  }
}

// The index's writes fail in turn during a checkpointing publish.
TEST(Checkpoint, AnIndexWriteFailureAtEveryPointOfACheckpointingPublishLosesNothing) {
  testing::TempDir dir;
  CheckpointDue(dir / "template", 4, nullptr);
  if (HasFatalFailure()) return;
  testing::ScopedSqliteFaults faults;
  const auto next = Payload(4), after = Payload(5);
  int total = 0;
  {
    std::filesystem::copy(dir / "template", dir / "probe", std::filesystem::copy_options::recursive);
    auto s = *Store::Open(dir / "probe", Small(1));
    testing::SqliteFaults::FailAt(0);
    ASSERT_TRUE(s->PublishBytes(next.data(), next.size(), "o4").ok());
    total = testing::SqliteFaults::Count();
  }
  ASSERT_GT(total, 0);
  for (int n = 1; n <= total; ++n) {
    const std::string path = dir / "round";
    const std::string when = "index write failure at " + std::to_string(n);
    std::filesystem::remove_all(path);
    std::filesystem::copy(dir / "template", path, std::filesystem::copy_options::recursive);
    auto s = *Store::Open(path, Small(1));
    testing::SqliteFaults::FailAt(n);
    auto r = s->PublishBytes(next.data(), next.size(), "o4");
    testing::SqliteFaults::FailAt(0);
    if (!r.ok()) {
      EXPECT_TRUE(r.status().IsIOError()) << when << ": " << r.status().ToString();
    }
    ASSERT_TRUE(s->PublishBytes(after.data(), after.size(), "o5").ok()) << when;
    s.reset();
    auto again = Store::Open(path, Small(1));
    ASSERT_TRUE(again.ok()) << when << ": " << again.status().ToString();
    EXPECT_TRUE((*again)->Resolve("o4").ok() || !r.ok()) << when << ": a publish that returned was lost";
    for (int i : {0, 1, 2, 3, 5}) {
      auto got = testing::ReadObject(**again, "o" + std::to_string(i));
      ASSERT_TRUE(got.ok()) << when << ": o" << i << ": " << got.status().ToString();
    }
    auto v = (*again)->Verify();
    ASSERT_TRUE(v.ok()) << when;
    EXPECT_FALSE(v->corrupt()) << when << ": " << (v->problems.empty() ? "" : v->problems[0].message);
  }
}

}  // namespace
}  // namespace chunkstore
