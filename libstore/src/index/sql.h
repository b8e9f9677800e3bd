// SPDX-License-Identifier: Apache-2.0
// Small RAII helpers over SQLite prepared statements, and the index's set
// of prepared statements. Internal to index/: nothing else sees SQL.
#pragma once

#include <sqlite3.h>

#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "hash/digest.h"
#include "index/index.h"

namespace chunkstore::internal {

// A prepared statement that resets itself when a query is done with it.
class Stmt {
 public:
  Stmt() = default;
  ~Stmt() { sqlite3_finalize(s_); }
  sqlite3_stmt** addr() { return &s_; }
  sqlite3_stmt* get() { return s_; }

 private:
  sqlite3_stmt* s_ = nullptr;
};

// Binds and steps a Stmt; resets it when done.
class Use {
 public:
  explicit Use(Stmt& s) : s_(s.get()) {}
  explicit Use(sqlite3_stmt* s) : s_(s) {}
  ~Use() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  Use& Blob(int i, const void* p, size_t n) {
    sqlite3_bind_blob(s_, i, p, static_cast<int>(n), SQLITE_STATIC);
    return *this;
  }
  Use& Id(int i, const Digest& d) { return Blob(i, d.bytes.data(), 32); }
  Use& Int(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Use& Text(int i, const std::string& t) {
    sqlite3_bind_text(s_, i, t.data(), static_cast<int>(t.size()), SQLITE_STATIC);
    return *this;
  }
  int Step() { return sqlite3_step(s_); }
  // Ready for new bindings and another Step.
  void Reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  int64_t ColInt(int i) { return sqlite3_column_int64(s_, i); }
  bool ColIsNull(int i) { return sqlite3_column_type(s_, i) == SQLITE_NULL; }
  std::string ColText(int i) {
    const auto* p = sqlite3_column_text(s_, i);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(s_, i))
             : std::string();
  }
  std::string ColBlob(int i) {
    const void* p = sqlite3_column_blob(s_, i);
    return p ? std::string(static_cast<const char*>(p), sqlite3_column_bytes(s_, i))
             : std::string();
  }
  // The column's bytes without a copy, valid until the next Step or Reset.
  std::string_view ColBlobView(int i) {
    const void* p = sqlite3_column_blob(s_, i);
    return p ? std::string_view(static_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(s_, i)))
             : std::string_view();
  }
  bool ColId(int i, Digest* d) {
    if (sqlite3_column_bytes(s_, i) != 32) return false;
    std::memcpy(d->bytes.data(), sqlite3_column_blob(s_, i), 32);
    return true;
  }

 private:
  sqlite3_stmt* s_;
};

// A one-off statement: prepared on construction, finalized on destruction.
class Query {
 public:
  Query(sqlite3* db, const char* sql) { ok_ = sqlite3_prepare_v2(db, sql, -1, stmt_.addr(), nullptr) == SQLITE_OK; }
  bool ok() const { return ok_; }
  Use& use() {
    if (!use_) use_ = std::make_unique<Use>(stmt_.get());
    return *use_;
  }

 private:
  Stmt stmt_;
  bool ok_ = false;
  std::unique_ptr<Use> use_;
};

// Reads a chunk location from six consecutive columns starting at `first`:
// pack, offset, raw_len, stored_len, codec, xxh64 (the chunks table's order).
inline ChunkLocation ReadChunkLocation(Use& u, int first) {
  ChunkLocation loc;
  loc.pack_id = u.ColInt(first);
  loc.offset = static_cast<uint64_t>(u.ColInt(first + 1));
  loc.raw_len = static_cast<uint32_t>(u.ColInt(first + 2));
  loc.stored_len = static_cast<uint32_t>(u.ColInt(first + 3));
  loc.codec = static_cast<Codec>(u.ColInt(first + 4));
  loc.xxh64 = static_cast<uint64_t>(u.ColInt(first + 5));
  return loc;
}

// Reads an object row (size, chunk_count, manifest, created, pinned) from
// five consecutive columns starting at `first`.
inline ObjectRow ReadObjectRow(Use& u, const Digest& id, int first) {
  ObjectRow row;
  row.id = id;
  row.size = static_cast<uint64_t>(u.ColInt(first));
  row.chunk_count = static_cast<uint32_t>(u.ColInt(first + 1));
  row.manifest = u.ColBlob(first + 2);
  row.created = u.ColInt(first + 3);
  row.pinned = u.ColInt(first + 4) != 0;
  return row;
}

// The statements the index prepares once, for its frequent queries.
struct Index::Statements {
  Stmt begin, begin_read, commit, rollback, data_version, get_meta, set_meta;
  Stmt find_chunk, insert_chunk, delete_chunk, delete_chunk_in_pack, chunks_in_pack;
  Stmt insert_pack, set_pack_size, find_pack, find_pack_by_name, list_packs, delete_pack_chunks, delete_pack;
  Stmt find_object, find_object_of_size, find_object_chunk, insert_object, pin_object, find_prefix,
      delete_object_names, delete_object;
  Stmt insert_name, put_name, find_name, find_latest_name, remove_name, latest_names_of;
  Stmt is_applied, mark_applied, mark_effects;
  // Trees and the stat cache (tree_queries.cc).
  Stmt insert_tree, insert_tree_ref, is_tree, refs_of, delete_tree, delete_tree_refs, trees_holding;
  Stmt find_stat, put_stat;
};

}  // namespace chunkstore::internal
