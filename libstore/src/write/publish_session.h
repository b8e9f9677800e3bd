// SPDX-License-Identifier: Apache-2.0
// PublishSession: the chunks and objects of one or more publishes, made
// part of the store as one change.
//
// Chunks are cut, hashed and (when new) compressed by Ingest; new ones are
// appended to a pack writer as they arrive (a bucket's writer is sealed
// and uploaded each time it fills, beside the ingest). Commit seals what
// is left — the pack bytes become durable where readers will find them —
// then holds the store's change log, checks that every chunk the session
// reused is still there (a gc may have removed one meanwhile), and commits
// one change set naming the packs, the new chunks, the objects and their
// names. A crash before the log has the change leaves only pack bytes that
// nothing refers to.
//
// Thread safety: one thread at a time per session.
#pragma once

#include <future>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "chunkstore/store.h"
#include "format/change_set.h"
#include "format/manifest.h"
#include "index/index.h"
#include "ingest/ingest.h"
#include "ingest/source.h"
#include "log/change_log.h"
#include "packs/pack_set.h"
#include "write/prepared.h"

namespace chunkstore::internal {

// What a session publishes into. None of it is owned.
struct PublishTarget {
  IndexHandle* index = nullptr;
  PackSet* packs = nullptr;
  ChangeLog* log = nullptr;
  StoreMeta meta;
  unsigned threads = 1;
  int busy_timeout_ms = 10000;
  const void* owner = nullptr;  // the store: prepared objects must come from it
};

// What an added object is besides its bytes.
struct ObjectRole {
  // Part of a tree: neither pinned nor named, kept alive by the tree that
  // names it. An object the store holds already is not listed again.
  bool member = false;
  // A tree object (format/tree.h) naming refs (sorted, distinct).
  bool tree = false;
  std::vector<Digest> refs;
};

// How long a session may hold packs no record names before its commit
// checks they are still there (600 s; tests lower it).
int64_t PackCheckAgeSeconds();
void SetPackCheckAgeForTests(int64_t seconds);

class PublishSession {
 public:
  explicit PublishSession(PublishTarget target) : t_(std::move(target)) {}
  ~PublishSession();

  Result<PublishResult> AddSource(Source& source, const std::string& name, const ObjectRole& role = {});
  // A one-chunk object whose chunk was read, hashed and (if larger than
  // inline objects) compressed elsewhere, as Ingest would have: c.id is
  // the SHA-256 of c.data[0, c.length), which is the whole content, and
  // c.codec and c.packed what TryCompress gave. For the small files of a
  // tree, prepared on many threads at once.
  Result<PublishResult> AddWhole(IngestedChunk& c, const std::string& name, const ObjectRole& role);
  // Copying from another store. A chunk's bytes, verified by the caller
  // against id: written (compressed as this store writes) unless this
  // session or the store holds it already. Returns whether it was written.
  Result<bool> AddChunk(const Digest& id, const uint8_t* raw, uint32_t length);
  // An object whose chunks were all added or are in the store, with the
  // manifest's entries and chain states (chain empty: a version-1
  // manifest; no entries: the empty object).
  Result<PublishResult> AddObject(const Digest& id, uint64_t size, const std::vector<ManifestEntry>& entries,
                                  const std::vector<ChainState>& chain, const std::string& name,
                                  const ObjectRole& role);
  // A version of name for an object this session adds or the store holds,
  // recorded with the time it was created at (0: the change's).
  void AddNameVersion(const std::string& name, const Digest& object, int64_t created) {
    extra_names_.push_back({name, object, 0, created});
  }
  // Whether this session has the object among those it adds.
  bool Holds(const Digest& id) const { return listed_ids_.count(id) != 0; }
  // Bytes of chunk records this session has written so far.
  uint64_t written_bytes() const { return written_bytes_; }
  // Records that something added to this session (a tree) names an object
  // the store holds without adding it again, and returns its size;
  // NotFound if the index lacks it. Commit checks again that it is still
  // there.
  Result<uint64_t> ReuseObject(const Digest& id);
  // The same for objects the caller found in the index itself, after
  // TakeMark (so that a removal since is seen at commit).
  void NoteReused(const Digest& id) { reused_objects_.push_back(id); }
  // Takes the mark a commit compares with (see mark_); call before any
  // lookup whose answer the commit relies on.
  Status TakeMark();
  Result<PublishResult> AddPrepared(const PreparedState& prepared, const std::string& name);
  // Commits everything added; fills in name versions in results().
  Status Commit();
  std::vector<PublishResult>& results() { return results_; }
  // After Commit: gives results_[root] the new bytes of every result from
  // first to root (a tree's members and subtrees, the root last).
  void SumNewBytes(size_t first, size_t root) {
    uint64_t sum = 0;
    for (size_t i = first; i <= root && i < results_.size(); ++i) sum += results_[i].new_bytes;
    if (root < results_.size()) results_[root].new_bytes = sum;
  }
  // The results of what was added in its own right, not as part of a tree
  // (ObjectRole::member), in the order added.
  std::vector<PublishResult> TopResults() const {
    std::vector<PublishResult> out;
    for (size_t i = 0; i < results_.size(); ++i)
      if (!member_[i]) out.push_back(results_[i]);
    return out;
  }

  // The chunk list of the newest object of the source's size, when the
  // source is large enough for an ingest with cfg to use it (see
  // IngestConfig::expected); empty otherwise, or if the lookup fails: it
  // is only a hint.
  std::vector<ManifestEntry> EarlierVersion(const Source& source, const IngestConfig& cfg);

 private:
  friend class SessionSink;
  Status WriteChunk(const Digest& id, const uint8_t* raw, uint32_t raw_len, Codec codec,
                    const std::vector<uint8_t>& packed, PublishResult* result);
  // Small chunks are not looked up one by one while they arrive (each
  // lookup would be its own read transaction); they wait here and are
  // looked up together, then written if new.
  void Defer(const Digest& id, const uint8_t* raw, uint32_t raw_len, Codec codec,
             const std::vector<uint8_t>& packed, size_t result_index);
  Status ResolvePending(PublishResult* current);
  Status FinishObject(const Digest& id, uint64_t size, std::vector<ManifestEntry> entries,
                      const std::vector<ChainState>& chain, const std::string& name, PublishResult result,
                      const ObjectRole& role = {});
  // An object kept in its index row (size 1 to meta.inline_max).
  Status FinishInline(const Digest& id, std::string content, const std::string& name, PublishResult result,
                      const ObjectRole& role = {});
  // Records row with its name and result; a member or tree this session
  // holds already is listed once, and one the store holds is left out of
  // the change at commit.
  Status AddRow(ObjectRow row, const std::string& name, PublishResult result, const ObjectRole& role);
  void Abort();
  // Seals the current writer (its bytes go on their way to durability)
  // and starts a new one on the next chunk.
  Status SealWriter();
  // Ends finished seals, and waits for the oldest while more than
  // in_flight are running.
  Status ReapSeals(size_t in_flight);
  PublishTarget t_;
  std::unique_ptr<PackWriter> writer_;
  std::vector<std::pair<Digest, ChunkLocation>> new_chunks_;  // loc.pack_id: index into sealed_
  std::unordered_set<Digest, DigestHash> written_;
  std::vector<Digest> reused_;  // taken from the index, re-checked at commit
  // Taken before the first lookup; if the index's mark is the same at
  // commit, nothing can have removed a reused chunk and the re-check is
  // skipped.
  std::optional<Index::ChangeMark> mark_;
  const Index* mark_index_ = nullptr;
  struct Pending {
    Digest id;
    uint32_t raw_len;
    Codec codec;
    std::vector<uint8_t> bytes;  // raw, or the compressed form
    size_t result;               // index into results_ (or the object being added)
  };
  std::vector<Pending> pending_;
  std::unordered_set<Digest, DigestHash> pending_ids_;
  size_t pending_bytes_ = 0;
  // Parallel, one per added object: its row, whether the change lists it,
  // its name ("" for none) and its result.
  std::vector<ObjectRow> objects_;
  std::vector<bool> listed_;
  std::vector<bool> droppable_;  // a member or subtree: left out at commit if the store holds it
  std::vector<bool> member_;
  std::vector<std::pair<std::string, Digest>> names_;
  std::vector<PublishResult> results_;
  std::unordered_set<Digest, DigestHash> listed_ids_;
  std::vector<Digest> reused_objects_;  // named by a tree, not listed; re-checked at commit
  std::vector<ChangeSet::Name> extra_names_;  // AddNameVersion's
  uint64_t written_bytes_ = 0;
  bool done_ = false;
  struct Sealed {
    std::unique_ptr<PackWriter> writer;
    std::future<Status> done;  // valid until reaped
    bool reaped = false;
  };
  std::vector<Sealed> sealed_;  // every writer of this session, in order
  // When this session took its first pack (SteadyMs; -1: none yet). Where
  // no lock tells gc that a pack is being written (a bucket), gc takes a
  // pack no record names for a crashed writer's once it is older than its
  // grace: a session that ran that long checks its packs at commit.
  int64_t first_pack_ms_ = -1;
  // Checks that every pack this session sealed is still there.
  Status CheckPacksStayed();
  Status seal_error_;           // the first failed seal
};

}  // namespace chunkstore::internal
