// Index: the SQLite database that records packs, chunks, objects and names.
//
// The index is the store's source of truth for what exists: a chunk exists
// when its row does, an object when its row does. Pack bytes not referenced
// by a committed row are garbage, whatever they contain. See docs/format.md
// for the schema.
//
// Thread safety: none. The Store serializes all calls with its own mutex.
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chunkstore/chunker.h"
#include "chunkstore/options.h"
#include "chunkstore/status.h"
#include "format/compress.h"
#include "hash/digest.h"

namespace chunkstore::internal {

// Version 2 stores may hold inline objects (see StoreMeta::inline_max);
// stores created with inline_max 0 keep version 1, which older versions of
// chunkstore still open.
constexpr int kSchemaVersion = 2;
// Objects of at least this size are indexed by size (objects_by_size); the
// SQL in index.cc repeats it as the literal 1048576, which a partial index
// needs.
constexpr uint64_t kSizeIndexedFrom = 1 << 20;

struct ChunkLocation {
  int64_t pack_id = 0;
  uint64_t offset = 0;  // of the record header within the pack
  uint32_t raw_len = 0;
  uint32_t stored_len = 0;
  Codec codec = Codec::kRaw;
  uint64_t xxh64 = 0;
};

struct ObjectRow {
  Digest id;
  uint64_t size = 0;
  uint32_t chunk_count = 0;
  std::string manifest;
  int64_t created = 0;  // unix seconds
  bool pinned = false;  // published without a name: live until removed
};

struct PackRow {
  int64_t id = 0;
  std::string name;
  uint64_t size = 0;  // committed length; bytes beyond are garbage
};

struct NameRow {
  std::string name;
  int64_t version = 0;
  Digest object;
  int64_t created = 0;
};

// What a store records about itself at creation.
struct StoreMeta {
  ChunkerParams chunking;
  bool compression = true;
  // Objects of 1 to inline_max bytes are stored inline: their row has
  // chunk_count 0 and the content itself in place of the manifest.
  uint32_t inline_max = 0;
};

// At most kInlineMaxLimit, and below the chunk min size (so an inline
// candidate is always a single chunk); InvalidArgument otherwise.
Status ValidateInlineMax(uint32_t inline_max, const ChunkerParams& chunking);
// What a new store records for a requested inline_max: lowered below the
// chunk min size.
uint32_t EffectiveInlineMax(uint32_t inline_max, const ChunkerParams& chunking);

class Index {
 public:
  ~Index();
  Index(const Index&) = delete;
  Index& operator=(const Index&) = delete;

  // Opens an existing index (meta == nullptr) or creates a new one with the
  // given meta. path ":memory:" gives a private in-memory database.
  static Result<std::unique_ptr<Index>> Open(const std::string& path, const StoreMeta* create,
                                             bool durable, int busy_timeout_ms);

  const StoreMeta& meta() const { return meta_; }

  // Write transactions take the database's write lock at Begin.
  Status Begin();
  // A read transaction: one consistent snapshot (and one lock round trip)
  // for many lookups. End it with Rollback (or Commit).
  Status BeginRead();
  Status Commit();
  void Rollback();

  Result<std::optional<ChunkLocation>> FindChunk(const Digest& id);
  Status InsertChunk(const Digest& id, const ChunkLocation& loc);  // ignored if present

  Result<int64_t> InsertPack(const std::string& name, uint64_t size);
  Status SetPackSize(int64_t id, uint64_t size);
  Result<std::optional<PackRow>> FindPack(int64_t id);
  Result<std::vector<PackRow>> ListPacks();

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

  // Appends a version to a name's history and returns its number (1-based).
  Result<int64_t> AddName(const std::string& name, const Digest& object, int64_t created);
  // version 0 means the latest.
  Result<std::optional<NameRow>> FindName(const std::string& name, int64_t version);

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
  // Called by whoever deletes chunk rows (gc, applying bucket log records),
  // whether or not the transaction later commits.
  void NoteChunksRemoved() { ++chunk_removals_; }

  // For the catalog, gc and verify queries (sql.h). Same locking rules.
  sqlite3* db() const { return db_; }
  Status Exec(const char* sql);
  // Translates the connection's last error into a Status about `what`.
  Status Error(const char* what) const;

 private:
  explicit Index(sqlite3* db);
  Status Prepare();
  Status LoadMeta();

  sqlite3* db_;
  StoreMeta meta_;
  std::atomic<uint64_t> chunk_removals_{0};
  struct Statements;
  std::unique_ptr<Statements> st_;
};

}  // namespace chunkstore::internal
