// SPDX-License-Identifier: Apache-2.0
// Index: the SQLite database that answers "where is chunk C", "what is
// object O made of", "what does name N point at" quickly.
//
// The index is a cache. A store's truth is its packs and its change log
// (log/, or a bucket's log); the index is what applying the log's change
// sets (index/apply.h) gives, and can always be rebuilt from it. Only this
// folder knows SQL: every query the store makes is a named method here,
// and only index/*.cc include <sqlite3.h>.
//
// Thread safety: none; an Index is one SQLite connection. IndexHandle
// pairs it with the mutex that serializes its users (Lock()).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/buffer.h"
#include "chunkstore/options.h"
#include "chunkstore/status.h"
#include "format/rows.h"
#include "hash/digest.h"

struct sqlite3;

namespace chunkstore::internal {

// Schema versions: 1 and 2 were stores whose index was their only record
// of objects and names (2 with inline objects); 3 is the index of a store
// with a change log. A version-3 index caches the log; its meta table
// records how far (log_position, see docs/format.md).
constexpr int kSchemaVersion = 3;
constexpr int kLastLoglessVersion = 2;
// Objects of at least this size are indexed by size (objects_by_size); the
// SQL in index.cc repeats it as the literal 1048576, which a partial index
// needs.
constexpr uint64_t kSizeIndexedFrom = 1 << 20;

// At most kInlineMaxLimit, and below the chunk min size (so an inline
// candidate is always a single chunk); InvalidArgument otherwise.
Status ValidateInlineMax(uint32_t inline_max, const ChunkerParams& chunking);
// What a new store records for a requested inline_max: lowered below the
// chunk min size.
uint32_t EffectiveInlineMax(uint32_t inline_max, const ChunkerParams& chunking);

// A name version joined with its object's size (0 if the object is gone).
struct NameListing {
  NameRow row;
  uint64_t size = 0;
};

// Totals over the index, for Store::Stats.
struct IndexTotals {
  uint64_t objects = 0, logical_bytes = 0, names = 0, chunks = 0, raw_bytes = 0, stored_bytes = 0;
  uint64_t inline_objects = 0, inline_bytes = 0, packs = 0, pack_bytes = 0;
};

class Index {
 public:
  struct OpenOptions {
    // Create the file with this meta (schema version 3); nullptr opens an
    // existing index.
    const StoreMeta* create = nullptr;
    // synchronous=FULL: every commit is durable. An index whose log is the
    // truth does not need it (a commit lost at power loss is caught up from
    // the log); one that is a store's only record (a version 1 or 2 store
    // not yet migrated) does.
    bool durable = false;
    int busy_timeout_ms = 10000;
    // Never write: the store is on read-only media, or the caller only
    // reads. The index is opened immutable (no locks, no WAL changes).
    bool read_only = false;
    // A new index built aside (a rebuild) in one pass: no rollback journal,
    // no syncs and a large page cache while it fills. FinishBulkLoad makes
    // it an ordinary index, synced; until then a crash leaves a file that
    // must be thrown away.
    bool bulk_load = false;
    // Keep the write-ahead log's index in this process's memory instead of
    // the shared -shm file (SQLite's exclusive locking mode): the index is
    // this process's alone until it closes. Open turns it on by itself when
    // the disk is too full for -shm, so reads go on working.
    bool exclusive = false;
  };
  // path ":memory:" gives a private in-memory database (in-memory stores,
  // and the scratch index gc and verify replay the log into).
  static Result<std::unique_ptr<Index>> Open(const std::string& path, const OpenOptions& options);
  // The SQLite library's version ("3.40.1").
  static const char* LibraryVersion();
  // Ends a bulk load: the file gets its write-ahead log back and is synced
  // to disk (outside any transaction).
  Status FinishBulkLoad();
  ~Index();
  Index(const Index&) = delete;
  Index& operator=(const Index&) = delete;

  const StoreMeta& meta() const { return meta_; }
  // True when opened in exclusive mode (asked for, or for want of space).
  bool exclusive() const { return exclusive_; }
  int schema_version() const { return schema_version_; }

  // Transactions: prefer WriteTxn and ReadTxn below. A write transaction
  // takes the database's write lock at Begin; a read transaction is one
  // consistent snapshot (and one lock round trip) for many lookups.
  Status Begin();
  Status BeginRead();
  Status Commit();
  void Rollback();

  // ---- meta --------------------------------------------------------------
  // A value of the meta table ("" when absent).
  Result<std::string> GetMeta(const std::string& key);
  Status SetMeta(const std::string& key, const std::string& value);
  // Rewrites the rows that describe the store (chunking, compression,
  // inline limit, schema version) for meta.
  Status SetStoreMeta(const StoreMeta& meta, int schema_version);

  // ---- chunks ------------------------------------------------------------
  Result<std::optional<ChunkLocation>> FindChunk(const Digest& id);
  Status InsertChunk(const Digest& id, const ChunkLocation& loc);  // ignored if present
  // Replaces any row of id (a chunk moved by gc, or kept in another copy).
  Status PutChunk(const Digest& id, const ChunkLocation& loc);
  // Removes id's row if it is in the named pack. Returns whether it did.
  Result<bool> DeleteChunkInPack(const Digest& id, const std::string& pack);
  // Live chunks of a pack, in file order.
  Result<std::vector<std::pair<Digest, ChunkLocation>>> ChunksInPack(int64_t pack_id);
  // Every chunk row, in id order.
  Status ForEachChunk(const std::function<void(const Digest&, const ChunkLocation&)>& fn);

  // ---- packs -------------------------------------------------------------
  Result<int64_t> InsertPack(const std::string& name, uint64_t size);
  Status SetPackSize(int64_t id, uint64_t size);
  Result<std::optional<PackRow>> FindPack(int64_t id);
  Result<std::optional<PackRow>> FindPackByName(const std::string& name);
  Result<std::vector<PackRow>> ListPacks();
  // Removes a pack's row and every chunk row still in it.
  Status DeletePack(const std::string& name);

  // ---- objects -----------------------------------------------------------
  Result<std::optional<ObjectRow>> FindObject(const Digest& id);
  // The object row and the location of the chunk its manifest lists first
  // (nullopt for the empty object or an unindexed chunk), in one query:
  // for the many single-chunk objects that is everything a reader needs.
  Result<std::optional<std::pair<ObjectRow, std::optional<ChunkLocation>>>> FindObjectAndFirstChunk(
      const Digest& id);
  // The newest object of exactly this size, if any (nullopt below
  // kSizeIndexedFrom): a likely earlier version of a file of that size,
  // which a publish verifies chunk by chunk instead of chunking again.
  Result<std::optional<ObjectRow>> FindObjectOfSize(uint64_t size);
  // Records an object; if its id is present already, only pins it (when
  // row.pinned). Returns whether the row is new.
  Result<bool> InsertObject(const ObjectRow& row);
  // Ids of objects whose id starts with the given hex digits (at most limit).
  Result<std::vector<Digest>> FindObjectsByPrefix(const std::string& hex_prefix, int limit);
  // Removes an object and every name version that points at it.
  Status DeleteObject(const Digest& id);
  // Every object row, in id order. A row whose id is malformed is
  // Corruption (it stops the walk).
  Status ForEachObject(const std::function<Status(const ObjectRow&)>& fn);
  // Objects no name version points at, oldest first (manifest left empty),
  // but for those a tree names that were never published on their own.
  Result<std::vector<ObjectRow>> ListUnnamed();
  // Unpinned objects no name version points at: garbage.
  Result<std::vector<Digest>> DeadObjects();

  // ---- trees (tree_queries.cc) -------------------------------------------
  // Marks id as a tree naming refs (an object row of its own is added by
  // InsertObject, which calls this for a tree's row).
  Status InsertTree(const Digest& id, const std::vector<Digest>& refs);
  Result<bool> IsTree(const Digest& id);
  // The objects a tree names, sorted (as its change set gave them).
  Result<std::vector<Digest>> TreeRefsOf(const Digest& id);
  // Up to limit trees that name child.
  Result<std::vector<Digest>> TreesHolding(const Digest& child, int limit);

  // ---- the stat cache (tree_queries.cc) -----------------------------------
  // What a file looked like when its content was last published as
  // object: a later publish of the same path that finds it unchanged need
  // not read it again. A cache: never part of the log, kept across
  // checkpoints, lost with the index.
  struct StatEntry {
    std::string path;  // absolute
    int64_t dev = 0, ino = 0, size = 0, mtime_ns = 0, ctime_ns = 0;
    Digest object;
  };
  Result<std::optional<StatEntry>> FindStat(const std::string& path);
  // Every entry whose path starts with prefix, sorted by path, with the
  // size of its object (nullopt when the index no longer has the object).
  // The paths share one buffer: tens of thousands of rows cost a few large
  // allocations, not two each.
  class StatScan {
   public:
    // The entry for path (its path left empty), or null; object_size is
    // set when one is found.
    const StatEntry* Find(std::string_view path, std::optional<uint64_t>* object_size) const;
    size_t size() const { return rows_.size(); }

   private:
    friend class Index;
    struct Row {
      size_t at = 0, len = 0;  // the path in paths_
      StatEntry entry;         // path left empty
      std::optional<uint64_t> object_size;
    };
    std::string_view Path(const Row& r) const { return std::string_view(paths_.data() + r.at, r.len); }
    HugePageVector<char> paths_;
    HugePageVector<Row> rows_;
  };
  Status ScanStat(const std::string& prefix, StatScan* out);
  Status PutStat(const StatEntry& e);
  // The size of each object in ids, which must be sorted ascending
  // (repeats allowed): sizes[i] for ids[i], nullopt where the index has no
  // such object. Costs about a scan of the rows among the ids where they
  // are dense, a lookup each where they are sparse.
  Status ObjectSizesInOrder(const std::vector<Digest>& ids, std::vector<std::optional<uint64_t>>* sizes);

  // ---- names -------------------------------------------------------------
  // Appends a version to a name's history and returns its number (1-based).
  Result<int64_t> AddName(const std::string& name, const Digest& object, int64_t created);
  // Records a given version (checkpoints).
  Status PutNameVersion(const NameRow& row);
  // version 0 means the latest.
  Result<std::optional<NameRow>> FindName(const std::string& name, int64_t version);
  // Drops a name's whole history; whether it had any.
  Result<bool> RemoveName(const std::string& name);
  // Names whose latest version points at object, sorted.
  Result<std::vector<std::string>> LatestNamesOf(const Digest& object);
  // The latest version of every name starting with prefix, sorted by name,
  // with its object's size (names whose object is gone are left out).
  Result<std::vector<NameListing>> ListLatest(const std::string& prefix);
  // Every version of a name, newest first.
  Result<std::vector<NameListing>> History(const std::string& name);
  // Name versions whose object the index does not have.
  Result<std::vector<NameRow>> DanglingNames();
  // Every name version, by name then version.
  Status ForEachName(const std::function<void(const NameRow&)>& fn);

  // ---- the whole index ---------------------------------------------------
  Result<IndexTotals> Totals();
  // Deletes every pack, chunk, object and name row (a rebuild, or a
  // checkpoint applied over what a cache held).
  Status Clear();
  // SQLite's own check of the database file: problems, one a line (none
  // when the file is sound).
  Result<std::vector<std::string>> IntegrityCheck();

  // ---- bucket caches -----------------------------------------------------
  // Which of a bucket's log keys the cache has applied.
  Status PrepareBucketCache();
  Result<bool> IsApplied(const std::string& key);
  // effects: what the record does that depends on its place in the log
  // order (bucket.h, RecordEffects).
  Status MarkApplied(const std::string& key, const std::string& effects);
  Result<std::string> NewestApplied();
  // The keys applied after key, in order, each with its effects (nullopt:
  // not known, applied by an older version).
  Result<std::vector<std::pair<std::string, std::optional<std::string>>>> AppliedEffectsAfter(const std::string& key);
  Result<std::set<std::string>> AppliedAfter(const std::string& key);
  Result<uint64_t> CountAppliedAfter(const std::string& key);

  // What could have removed chunk rows since a point in time: commits by
  // other connections (SQLite's data_version) and removals through this
  // one (counted by NoteChunksRemoved). Equal marks mean every chunk row
  // seen between them is still there. A publish uses this to skip
  // re-checking each chunk it reuses when nothing can have removed one.
  struct ChangeMark {
    int64_t data_version = 0;
    uint64_t removals = 0;
    bool operator==(const ChangeMark& o) const {
      return data_version == o.data_version && removals == o.removals;
    }
  };
  Result<ChangeMark> Mark();
  // Called by whoever deletes chunk rows, whether or not the transaction
  // later commits.
  void NoteChunksRemoved() { ++chunk_removals_; }

  // Translates the connection's last error into a Status about `what`:
  // busy, damaged, full, read-only or plain I/O, in words a user can act on.
  Status Error(const char* what) const;

 private:
  explicit Index(sqlite3* db);
  static Result<std::unique_ptr<Index>> OpenOnce(const std::string& path, const OpenOptions& options);
  Status Exec(const char* sql);
  Status Prepare();
  Status LoadMeta();
  Status CreateSchema(const StoreMeta& meta);

  sqlite3* db_;
  StoreMeta meta_;
  int schema_version_ = 0;
  bool exclusive_ = false;
  std::atomic<uint64_t> chunk_removals_{0};
  struct Statements;
  std::unique_ptr<Statements> st_;
};

// A write transaction that rolls back unless committed.
class WriteTxn {
 public:
  explicit WriteTxn(Index* index) : index_(index), status_(index->Begin()) {}
  ~WriteTxn() {
    if (status_.ok() && !done_) index_->Rollback();
  }
  WriteTxn(const WriteTxn&) = delete;
  WriteTxn& operator=(const WriteTxn&) = delete;
  // Whether Begin succeeded.
  const Status& status() const { return status_; }
  Status Commit() {
    done_ = true;
    return index_->Commit();
  }

 private:
  Index* index_;
  Status status_;
  bool done_ = false;
};

// A read snapshot, ended when destroyed.
class ReadTxn {
 public:
  explicit ReadTxn(Index* index) : index_(index), status_(index->BeginRead()) {}
  ~ReadTxn() {
    if (status_.ok()) index_->Rollback();
  }
  ReadTxn(const ReadTxn&) = delete;
  ReadTxn& operator=(const ReadTxn&) = delete;
  const Status& status() const { return status_; }

 private:
  Index* index_;
  Status status_;
};

// An Index and the mutex every use of it holds: the index cannot be
// reached without its lock.
class IndexHandle {
 public:
  class Locked {
   public:
    Index* operator->() const { return index_; }
    Index& operator*() const { return *index_; }
    Index* get() const { return index_; }

   private:
    friend class IndexHandle;
    Locked(std::mutex& mu, Index* index) : lock_(mu), index_(index) {}
    std::unique_lock<std::mutex> lock_;
    Index* index_;
  };

  IndexHandle() = default;
  explicit IndexHandle(std::unique_ptr<Index> index) : index_(std::move(index)) {}
  Locked Lock() { return Locked(mu_, index_.get()); }
  // Replaces the index (a rebuild); the caller holds no Locked.
  void Reset(std::unique_ptr<Index> index) {
    std::lock_guard<std::mutex> l(mu_);
    index_ = std::move(index);
  }
  // An empty in-memory index with this one's store meta, ready for a
  // bucket's log too: what replays of the log fill (gc's truth, verify,
  // checkpoints).
  Result<std::unique_ptr<Index>> NewScratch() {
    StoreMeta meta;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (index_) meta = index_->meta();
    }
    Index::OpenOptions o;
    o.create = &meta;
    Result<std::unique_ptr<Index>> scratch = Index::Open(":memory:", o);
    if (scratch.ok()) CHUNKSTORE_RETURN_IF_ERROR((*scratch)->PrepareBucketCache());
    return scratch;
  }

 private:
  std::mutex mu_;
  std::unique_ptr<Index> index_;
};

}  // namespace chunkstore::internal
