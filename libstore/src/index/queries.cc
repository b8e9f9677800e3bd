// SPDX-License-Identifier: Apache-2.0
// The index's queries: one method per question the store asks, each one
// statement (prepared once where it is frequent). See index.h.
#include "index/sql.h"

namespace chunkstore::internal {

namespace {

// Names compare bytewise; no UTF-8 byte is 0xff, so prefix + 0xff bounds
// every name that starts with prefix.
std::string PrefixEnd(const std::string& prefix) { return prefix + "\xff"; }

}  // namespace

Status Index::Prepare() {
  st_ = std::make_unique<Statements>();
  struct {
    Stmt* stmt;
    const char* sql;
  } all[] = {
      {&st_->begin, "BEGIN IMMEDIATE"},
      {&st_->begin_read, "BEGIN"},
      {&st_->commit, "COMMIT"},
      {&st_->rollback, "ROLLBACK"},
      {&st_->data_version, "PRAGMA data_version"},
      {&st_->get_meta, "SELECT value FROM meta WHERE key=?1"},
      {&st_->set_meta, "INSERT OR REPLACE INTO meta VALUES(?1, ?2)"},
      {&st_->find_chunk, "SELECT pack, offset, raw_len, stored_len, codec, xxh64 FROM chunks WHERE id=?1"},
      {&st_->insert_chunk, "INSERT OR IGNORE INTO chunks VALUES(?1,?2,?3,?4,?5,?6,?7)"},
      {&st_->delete_chunk, "DELETE FROM chunks WHERE id=?1"},
      {&st_->delete_chunk_in_pack,
       "DELETE FROM chunks WHERE id=?1 AND pack=(SELECT id FROM packs WHERE name=?2)"},
      {&st_->chunks_in_pack,
       "SELECT id, pack, offset, raw_len, stored_len, codec, xxh64 FROM chunks WHERE pack=?1 ORDER BY offset"},
      {&st_->insert_pack, "INSERT INTO packs(name, size) VALUES(?1, ?2)"},
      {&st_->set_pack_size, "UPDATE packs SET size=?2 WHERE id=?1"},
      {&st_->find_pack, "SELECT id, name, size FROM packs WHERE id=?1"},
      {&st_->find_pack_by_name, "SELECT id, name, size FROM packs WHERE name=?1"},
      {&st_->list_packs, "SELECT id, name, size FROM packs ORDER BY id"},
      {&st_->delete_pack_chunks, "DELETE FROM chunks WHERE pack=(SELECT id FROM packs WHERE name=?1)"},
      {&st_->delete_pack, "DELETE FROM packs WHERE name=?1"},
      {&st_->find_object, "SELECT size, chunk_count, manifest, created, pinned FROM objects WHERE id=?1"},
      // The literal bound makes objects_by_size (a partial index) usable.
      {&st_->find_object_of_size,
       "SELECT id, size, chunk_count, manifest, created, pinned FROM objects "
       "WHERE size=?1 AND size >= 1048576 ORDER BY created DESC LIMIT 1"},
      // An inline row's manifest column holds content, not chunk ids: the
      // CASE gives it a NULL key, so SQLite skips the seek into chunks that
      // a plain ON condition would still make with its first 32 bytes. A
      // version-2 manifest's first chunk id follows its 4-byte magic
      // (format/manifest.h); the join is only a guess the caller checks.
      {&st_->find_object_chunk,
       "SELECT o.size, o.chunk_count, o.manifest, o.created, o.pinned, c.pack, c.offset, c.raw_len, "
       "c.stored_len, c.codec, c.xxh64 FROM objects o LEFT JOIN chunks c "
       "ON c.id = CASE WHEN o.chunk_count = 0 THEN NULL WHEN substr(o.manifest, 1, 4) = x'434B4D32' "
       "THEN substr(o.manifest, 5, 32) ELSE substr(o.manifest, 1, 32) END WHERE o.id=?1"},
      {&st_->insert_object, "INSERT OR IGNORE INTO objects VALUES(?1,?2,?3,?4,?5,?6)"},
      {&st_->pin_object, "UPDATE objects SET pinned = 1 WHERE id=?1 AND pinned = 0"},
      {&st_->find_prefix, "SELECT id FROM objects WHERE id>=?1 AND id<=?2 LIMIT ?3"},
      {&st_->delete_object_names, "DELETE FROM names WHERE object=?1"},
      {&st_->delete_object, "DELETE FROM objects WHERE id=?1"},
      {&st_->insert_name,
       "INSERT INTO names SELECT ?1, coalesce(max(version), 0) + 1, ?2, ?3 FROM names "
       "WHERE name=?1 RETURNING version"},
      {&st_->put_name, "INSERT OR REPLACE INTO names VALUES(?1, ?2, ?3, ?4)"},
      {&st_->find_name, "SELECT version, object, created FROM names WHERE name=?1 AND version=?2"},
      {&st_->find_latest_name,
       "SELECT version, object, created FROM names WHERE name=?1 ORDER BY version DESC LIMIT 1"},
      {&st_->remove_name, "DELETE FROM names WHERE name=?1"},
      {&st_->insert_tree, "INSERT OR IGNORE INTO trees VALUES(?1)"},
      {&st_->insert_tree_ref, "INSERT OR IGNORE INTO tree_refs VALUES(?1, ?2)"},
      {&st_->is_tree, "SELECT 1 FROM trees WHERE id=?1"},
      {&st_->refs_of, "SELECT child FROM tree_refs WHERE tree=?1 ORDER BY child"},
      {&st_->delete_tree, "DELETE FROM trees WHERE id=?1"},
      {&st_->delete_tree_refs, "DELETE FROM tree_refs WHERE tree=?1"},
      {&st_->trees_holding, "SELECT tree FROM tree_refs WHERE child=?1 LIMIT ?2"},
      {&st_->find_stat, "SELECT dev, ino, size, mtime_ns, ctime_ns, object FROM stat_cache WHERE path=?1"},
      {&st_->put_stat, "INSERT OR REPLACE INTO stat_cache VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)"},
      {&st_->latest_names_of,
       "SELECT n.name FROM names n WHERE n.object=?1 AND n.version = "
       "(SELECT max(version) FROM names m WHERE m.name = n.name) ORDER BY n.name"},
  };
  // The bucket cache's table exists only in bucket caches: its statements
  // are prepared by PrepareBucketCache.
  for (auto& s : all) {
    if (sqlite3_prepare_v3(db_, s.sql, -1, SQLITE_PREPARE_PERSISTENT, s.stmt->addr(), nullptr) != SQLITE_OK)
      return Error("cannot prepare index statements");
  }
  return Status::OK();
}

// ---- chunks ----------------------------------------------------------------

Result<std::optional<ChunkLocation>> Index::FindChunk(const Digest& id) {
  Use u(st_->find_chunk);
  u.Id(1, id);
  const int rc = u.Step();
  if (rc == SQLITE_DONE) return std::optional<ChunkLocation>();
  if (rc != SQLITE_ROW) return Error("cannot look up a chunk");
  return std::optional<ChunkLocation>(ReadChunkLocation(u, 0));
}

Status Index::InsertChunk(const Digest& id, const ChunkLocation& loc) {
  Use u(st_->insert_chunk);
  u.Id(1, id)
      .Int(2, loc.pack_id)
      .Int(3, static_cast<int64_t>(loc.offset))
      .Int(4, loc.raw_len)
      .Int(5, loc.stored_len)
      .Int(6, static_cast<int64_t>(loc.codec))
      .Int(7, static_cast<int64_t>(loc.xxh64));
  if (u.Step() != SQLITE_DONE) return Error("cannot record a chunk");
  return Status::OK();
}

Status Index::PutChunk(const Digest& id, const ChunkLocation& loc) {
  NoteChunksRemoved();
  {
    Use u(st_->delete_chunk);
    u.Id(1, id);
    if (u.Step() != SQLITE_DONE) return Error("cannot record a chunk");
  }
  return InsertChunk(id, loc);
}

Result<bool> Index::DeleteChunkInPack(const Digest& id, const std::string& pack) {
  NoteChunksRemoved();
  Use u(st_->delete_chunk_in_pack);
  u.Id(1, id).Text(2, pack);
  if (u.Step() != SQLITE_DONE) return Error("cannot remove a chunk");
  return sqlite3_changes(db_) > 0;
}

Result<std::vector<std::pair<Digest, ChunkLocation>>> Index::ChunksInPack(int64_t pack_id) {
  Use u(st_->chunks_in_pack);
  u.Int(1, pack_id);
  std::vector<std::pair<Digest, ChunkLocation>> out;
  int rc;
  while ((rc = u.Step()) == SQLITE_ROW) {
    Digest id;
    if (!u.ColId(0, &id)) return Status::Corruption("a chunk row of the index has a malformed id");
    out.emplace_back(id, ReadChunkLocation(u, 1));
  }
  if (rc != SQLITE_DONE) return Error("cannot read a pack's chunks");
  return out;
}

Status Index::ForEachChunk(const std::function<void(const Digest&, const ChunkLocation&)>& fn) {
  Query q(db_, "SELECT id, pack, offset, raw_len, stored_len, codec, xxh64 FROM chunks ORDER BY id");
  if (!q.ok()) return Error("cannot read chunks");
  int rc;
  while ((rc = q.use().Step()) == SQLITE_ROW) {
    Digest id;
    if (!q.use().ColId(0, &id)) return Status::Corruption("a chunk row of the index has a malformed id");
    fn(id, ReadChunkLocation(q.use(), 1));
  }
  if (rc != SQLITE_DONE) return Error("cannot read chunks");
  return Status::OK();
}

// ---- packs -----------------------------------------------------------------

Result<int64_t> Index::InsertPack(const std::string& name, uint64_t size) {
  Use u(st_->insert_pack);
  u.Text(1, name).Int(2, static_cast<int64_t>(size));
  if (u.Step() != SQLITE_DONE) return Error("cannot record a pack");
  return sqlite3_last_insert_rowid(db_);
}

Status Index::SetPackSize(int64_t id, uint64_t size) {
  Use u(st_->set_pack_size);
  u.Int(1, id).Int(2, static_cast<int64_t>(size));
  if (u.Step() != SQLITE_DONE) return Error("cannot record a pack's size");
  return Status::OK();
}

namespace {

Result<std::optional<PackRow>> OnePack(Index* index, Use& u) {
  const int rc = u.Step();
  if (rc == SQLITE_DONE) return std::optional<PackRow>();
  if (rc != SQLITE_ROW) return index->Error("cannot look up a pack");
  return std::optional<PackRow>(PackRow{u.ColInt(0), u.ColText(1), static_cast<uint64_t>(u.ColInt(2))});
}

}  // namespace

Result<std::optional<PackRow>> Index::FindPack(int64_t id) {
  Use u(st_->find_pack);
  u.Int(1, id);
  return OnePack(this, u);
}

Result<std::optional<PackRow>> Index::FindPackByName(const std::string& name) {
  Use u(st_->find_pack_by_name);
  u.Text(1, name);
  return OnePack(this, u);
}

Result<std::vector<PackRow>> Index::ListPacks() {
  Use u(st_->list_packs);
  std::vector<PackRow> out;
  int rc;
  while ((rc = u.Step()) == SQLITE_ROW)
    out.push_back(PackRow{u.ColInt(0), u.ColText(1), static_cast<uint64_t>(u.ColInt(2))});
  if (rc != SQLITE_DONE) return Error("cannot list packs");
  return out;
}

Status Index::DeletePack(const std::string& name) {
  NoteChunksRemoved();
  for (Stmt* st : {&st_->delete_pack_chunks, &st_->delete_pack}) {
    Use u(*st);
    u.Text(1, name);
    if (u.Step() != SQLITE_DONE) return Error("cannot remove a pack");
  }
  return Status::OK();
}

// ---- objects ---------------------------------------------------------------

Result<std::optional<ObjectRow>> Index::FindObject(const Digest& id) {
  Use u(st_->find_object);
  u.Id(1, id);
  const int rc = u.Step();
  if (rc == SQLITE_DONE) return std::optional<ObjectRow>();
  if (rc != SQLITE_ROW) return Error("cannot look up an object");
  return std::optional<ObjectRow>(ReadObjectRow(u, id, 0));
}

Result<std::optional<ObjectRow>> Index::FindObjectOfSize(uint64_t size) {
  if (size < kSizeIndexedFrom) return std::optional<ObjectRow>();
  Use u(st_->find_object_of_size);
  u.Int(1, static_cast<int64_t>(size));
  const int rc = u.Step();
  if (rc == SQLITE_DONE) return std::optional<ObjectRow>();
  if (rc != SQLITE_ROW) return Error("cannot look up an object");
  Digest id;
  if (!u.ColId(0, &id)) return std::optional<ObjectRow>();  // damaged row: no candidate
  return std::optional<ObjectRow>(ReadObjectRow(u, id, 1));
}

Result<std::optional<std::pair<ObjectRow, std::optional<ChunkLocation>>>> Index::FindObjectAndFirstChunk(
    const Digest& id) {
  using Found = std::pair<ObjectRow, std::optional<ChunkLocation>>;
  Use u(st_->find_object_chunk);
  u.Id(1, id);
  const int rc = u.Step();
  if (rc == SQLITE_DONE) return std::optional<Found>();
  if (rc != SQLITE_ROW) return Error("cannot look up an object");
  Found f;
  f.first = ReadObjectRow(u, id, 0);
  if (sqlite3_column_type(st_->find_object_chunk.get(), 5) != SQLITE_NULL) f.second = ReadChunkLocation(u, 5);
  return std::optional<Found>(std::move(f));
}

Result<bool> Index::InsertObject(const ObjectRow& row) {
  Use u(st_->insert_object);
  u.Id(1, row.id)
      .Int(2, static_cast<int64_t>(row.size))
      .Int(3, row.chunk_count)
      .Blob(4, row.manifest.data(), row.manifest.size())
      .Int(5, row.created)
      .Int(6, row.pinned ? 1 : 0);
  if (u.Step() != SQLITE_DONE) return Error("cannot record an object");
  const bool added = sqlite3_changes(db_) > 0;
  // A tree keeps its kind and refs even when its bytes were stored before
  // as a plain object: the content is the same, and so are the refs.
  if (row.tree) CHUNKSTORE_RETURN_IF_ERROR(InsertTree(row.id, row.refs));
  if (added) return true;
  if (row.pinned) {
    Use p(st_->pin_object);
    p.Id(1, row.id);
    if (p.Step() != SQLITE_DONE) return Error("cannot record an object");
  }
  return false;
}

Result<std::vector<Digest>> Index::FindObjectsByPrefix(const std::string& hex_prefix, int limit) {
  // Object ids are raw 32-byte blobs: the prefix becomes the byte range
  // [prefix 00.., prefix ff..]; an odd digit count fixes the high nibble.
  Digest lo, hi;
  hi.bytes.fill(0xff);
  for (size_t i = 0; i < hex_prefix.size() && i < 64; ++i) {
    const char c = hex_prefix[i];
    const int v = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
    uint8_t& l = lo.bytes[i / 2];
    uint8_t& h = hi.bytes[i / 2];
    if (i % 2 == 0) {
      l = static_cast<uint8_t>(v << 4);
      h = static_cast<uint8_t>(v << 4 | 0x0f);
    } else {
      l = static_cast<uint8_t>(l | v);
      h = static_cast<uint8_t>((h & 0xf0) | v);
    }
  }
  Use u(st_->find_prefix);
  u.Id(1, lo).Id(2, hi).Int(3, limit);
  std::vector<Digest> out;
  int rc;
  while ((rc = u.Step()) == SQLITE_ROW) {
    Digest d;
    if (u.ColId(0, &d)) out.push_back(d);
  }
  if (rc != SQLITE_DONE) return Error("cannot search object ids");
  return out;
}

Status Index::DeleteObject(const Digest& id) {
  // Counted as a removal: a publish that reuses objects (a tree's files)
  // checks them again unless nothing can have removed one.
  NoteChunksRemoved();
  for (Stmt* st : {&st_->delete_object_names, &st_->delete_object, &st_->delete_tree, &st_->delete_tree_refs}) {
    Use u(*st);
    u.Id(1, id);
    if (u.Step() != SQLITE_DONE) return Error("cannot remove an object");
  }
  return Status::OK();
}

Status Index::ForEachObject(const std::function<Status(const ObjectRow&)>& fn) {
  Query q(db_,
          "SELECT o.id, o.size, o.chunk_count, o.manifest, o.created, o.pinned, t.id IS NOT NULL "
          "FROM objects o LEFT JOIN trees t ON t.id = o.id ORDER BY o.id");
  if (!q.ok()) return Error("cannot read objects");
  int rc;
  while ((rc = q.use().Step()) == SQLITE_ROW) {
    Digest id;
    if (!q.use().ColId(0, &id)) return Status::Corruption("an object row of the index has a malformed id");
    ObjectRow row = ReadObjectRow(q.use(), id, 1);
    if (q.use().ColInt(6) != 0) {
      row.tree = true;
      Result<std::vector<Digest>> refs = TreeRefsOf(id);
      if (!refs.ok()) return refs.status();
      row.refs = std::move(*refs);
    }
    CHUNKSTORE_RETURN_IF_ERROR(fn(row));
  }
  if (rc != SQLITE_DONE) return Error("cannot read objects");
  return Status::OK();
}

Result<std::vector<ObjectRow>> Index::ListUnnamed() {
  Query q(db_,
          "SELECT id, size, chunk_count, created, pinned FROM objects "
          "WHERE id NOT IN (SELECT object FROM names) AND (pinned = 1 OR id NOT IN (SELECT child FROM tree_refs)) "
          "ORDER BY created, id");
  if (!q.ok()) return Error("cannot list objects");
  std::vector<ObjectRow> out;
  int rc;
  while ((rc = q.use().Step()) == SQLITE_ROW) {
    ObjectRow o;
    if (!q.use().ColId(0, &o.id)) return Status::Corruption("an object row of the index has a malformed id");
    o.size = static_cast<uint64_t>(q.use().ColInt(1));
    o.chunk_count = static_cast<uint32_t>(q.use().ColInt(2));
    o.created = q.use().ColInt(3);
    o.pinned = q.use().ColInt(4) != 0;
    out.push_back(std::move(o));
  }
  if (rc != SQLITE_DONE) return Error("cannot list objects");
  return out;
}

Result<std::vector<Digest>> Index::DeadObjects() {
  // Every version of every name keeps its object, not only the latest; a
  // live tree keeps what it names, down to the last file (a dead tree
  // keeps nothing).
  Query q(db_,
          "WITH RECURSIVE live(id) AS ("
          " SELECT id FROM objects WHERE pinned = 1"
          " UNION SELECT object FROM names"
          " UNION SELECT r.child FROM tree_refs r JOIN live l ON r.tree = l.id)"
          " SELECT id FROM objects WHERE id NOT IN live ORDER BY id");
  if (!q.ok()) return Error("cannot find dead objects");
  std::vector<Digest> out;
  int rc;
  while ((rc = q.use().Step()) == SQLITE_ROW) {
    Digest d;
    if (!q.use().ColId(0, &d)) return Status::Corruption("an object row of the index has a malformed id");
    out.push_back(d);
  }
  if (rc != SQLITE_DONE) return Error("cannot find dead objects");
  return out;
}

// ---- names -----------------------------------------------------------------

Result<int64_t> Index::AddName(const std::string& name, const Digest& object, int64_t created) {
  // One statement finds the next version and inserts it.
  Use u(st_->insert_name);
  u.Text(1, name).Id(2, object).Int(3, created);
  if (u.Step() != SQLITE_ROW) return Error("cannot record a name");
  const int64_t version = u.ColInt(0);
  if (u.Step() != SQLITE_DONE) return Error("cannot record a name");
  return version;
}

Status Index::PutNameVersion(const NameRow& row) {
  Use u(st_->put_name);
  u.Text(1, row.name).Int(2, row.version).Id(3, row.object).Int(4, row.created);
  if (u.Step() != SQLITE_DONE) return Error("cannot record a name");
  return Status::OK();
}

Result<std::optional<NameRow>> Index::FindName(const std::string& name, int64_t version) {
  Stmt& stmt = version == 0 ? st_->find_latest_name : st_->find_name;
  Use u(stmt);
  u.Text(1, name);
  if (version != 0) u.Int(2, version);
  const int rc = u.Step();
  if (rc == SQLITE_DONE) return std::optional<NameRow>();
  if (rc != SQLITE_ROW) return Error("cannot look up a name");
  NameRow row;
  row.name = name;
  row.version = u.ColInt(0);
  if (!u.ColId(1, &row.object)) return Status::Corruption("name " + name + " has a malformed object id");
  row.created = u.ColInt(2);
  return std::optional<NameRow>(std::move(row));
}

Result<bool> Index::RemoveName(const std::string& name) {
  Use u(st_->remove_name);
  u.Text(1, name);
  if (u.Step() != SQLITE_DONE) return Error("cannot remove a name");
  return sqlite3_changes(db_) > 0;
}

Result<std::vector<std::string>> Index::LatestNamesOf(const Digest& object) {
  Use u(st_->latest_names_of);
  u.Id(1, object);
  std::vector<std::string> out;
  int rc;
  while ((rc = u.Step()) == SQLITE_ROW) out.push_back(u.ColText(0));
  if (rc != SQLITE_DONE) return Error("cannot query names");
  return out;
}

namespace {

// Rows of (name, version, object, created, size).
Result<std::vector<NameListing>> Listings(Index* index, Query& q) {
  if (!q.ok()) return index->Error("cannot query names");
  std::vector<NameListing> out;
  int rc;
  while ((rc = q.use().Step()) == SQLITE_ROW) {
    NameListing e;
    e.row.name = q.use().ColText(0);
    e.row.version = q.use().ColInt(1);
    if (!q.use().ColId(2, &e.row.object))
      return Status::Corruption("name " + e.row.name + " has a malformed object id");
    e.row.created = q.use().ColInt(3);
    e.size = static_cast<uint64_t>(q.use().ColInt(4));
    out.push_back(std::move(e));
  }
  if (rc != SQLITE_DONE) return index->Error("cannot query names");
  return out;
}

}  // namespace

Result<std::vector<NameListing>> Index::ListLatest(const std::string& prefix) {
  Query q(db_,
          "SELECT n.name, n.version, n.object, n.created, o.size FROM names n "
          "JOIN objects o ON o.id = n.object "
          "WHERE n.name >= ?1 AND n.name < ?2 AND n.version = "
          "(SELECT max(version) FROM names m WHERE m.name = n.name) ORDER BY n.name");
  const std::string hi = PrefixEnd(prefix);
  if (q.ok()) q.use().Text(1, prefix).Text(2, hi);
  return Listings(this, q);
}

Result<std::vector<NameListing>> Index::History(const std::string& name) {
  Query q(db_,
          "SELECT n.name, n.version, n.object, n.created, coalesce(o.size, 0) FROM names n "
          "LEFT JOIN objects o ON o.id = n.object WHERE n.name = ?1 ORDER BY n.version DESC");
  if (q.ok()) q.use().Text(1, name);
  return Listings(this, q);
}

Result<std::vector<NameRow>> Index::DanglingNames() {
  Query q(db_,
          "SELECT n.name, n.version, n.object, n.created, 0 FROM names n LEFT JOIN objects o ON o.id = n.object "
          "WHERE o.id IS NULL ORDER BY n.name, n.version");
  if (!q.ok()) return Error("cannot list names");
  std::vector<NameRow> out;
  int rc;
  while ((rc = q.use().Step()) == SQLITE_ROW) {
    NameRow r;
    r.name = q.use().ColText(0);
    r.version = q.use().ColInt(1);
    q.use().ColId(2, &r.object);  // a malformed id stays all zeros: still dangling
    r.created = q.use().ColInt(3);
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return Error("cannot list names");
  return out;
}

Status Index::ForEachName(const std::function<void(const NameRow&)>& fn) {
  Query q(db_, "SELECT name, version, object, created FROM names ORDER BY name, version");
  if (!q.ok()) return Error("cannot read names");
  int rc;
  while ((rc = q.use().Step()) == SQLITE_ROW) {
    NameRow r;
    r.name = q.use().ColText(0);
    r.version = q.use().ColInt(1);
    if (!q.use().ColId(2, &r.object)) return Status::Corruption("name " + r.name + " has a malformed object id");
    r.created = q.use().ColInt(3);
    fn(r);
  }
  if (rc != SQLITE_DONE) return Error("cannot read names");
  return Status::OK();
}

// ---- the whole index -------------------------------------------------------

Result<IndexTotals> Index::Totals() {
  IndexTotals t;
  struct {
    const char* sql;
    uint64_t* a;
    uint64_t* b;
    uint64_t* c;
  } rows[] = {
      {"SELECT count(*), total(size), 0 FROM objects", &t.objects, &t.logical_bytes, nullptr},
      {"SELECT count(DISTINCT name), 0, 0 FROM names", &t.names, nullptr, nullptr},
      {"SELECT count(*), total(raw_len), total(stored_len) FROM chunks", &t.chunks, &t.raw_bytes, &t.stored_bytes},
      {"SELECT count(*), total(size), 0 FROM objects WHERE chunk_count = 0 AND size > 0", &t.inline_objects,
       &t.inline_bytes, nullptr},
      {"SELECT count(*), total(size), 0 FROM packs", &t.packs, &t.pack_bytes, nullptr},
  };
  for (const auto& r : rows) {
    Query q(db_, r.sql);
    if (!q.ok() || q.use().Step() != SQLITE_ROW) return Error("cannot compute statistics");
    *r.a = static_cast<uint64_t>(q.use().ColInt(0));
    if (r.b) *r.b = static_cast<uint64_t>(q.use().ColInt(1));
    if (r.c) *r.c = static_cast<uint64_t>(q.use().ColInt(2));
  }
  return t;
}

Status Index::Clear() {
  NoteChunksRemoved();
  for (const char* sql : {"DELETE FROM names", "DELETE FROM objects", "DELETE FROM chunks", "DELETE FROM packs",
                          "DELETE FROM trees", "DELETE FROM tree_refs"})
    CHUNKSTORE_RETURN_IF_ERROR(Exec(sql));
  if (sqlite3_table_column_metadata(db_, nullptr, "applied_log", "key", nullptr, nullptr, nullptr, nullptr, nullptr) ==
      SQLITE_OK)
    CHUNKSTORE_RETURN_IF_ERROR(Exec("DELETE FROM applied_log"));
  if (sqlite3_table_column_metadata(db_, nullptr, "applied_effects", "key", nullptr, nullptr, nullptr, nullptr,
                                    nullptr) == SQLITE_OK)
    CHUNKSTORE_RETURN_IF_ERROR(Exec("DELETE FROM applied_effects"));
  return Status::OK();
}

// ---- bucket caches ---------------------------------------------------------

Status Index::PrepareBucketCache() {
  if (st_->is_applied.get()) return Status::OK();
  // applied_log is the table every version of the cache has; the effects
  // of each record (what makes its place in the log order matter, see
  // MarkApplied) are kept beside it, so a cache stays usable by a version
  // that knows only applied_log (its records then have no effects row,
  // which counts as "not known").
  CHUNKSTORE_RETURN_IF_ERROR(Exec("CREATE TABLE IF NOT EXISTS applied_log(key TEXT PRIMARY KEY) WITHOUT ROWID"));
  CHUNKSTORE_RETURN_IF_ERROR(
      Exec("CREATE TABLE IF NOT EXISTS applied_effects(key TEXT PRIMARY KEY, effects TEXT NOT NULL) WITHOUT ROWID"));
  for (auto [stmt, sql] : {std::pair<Stmt*, const char*>{&st_->is_applied, "SELECT 1 FROM applied_log WHERE key=?1"},
                           {&st_->mark_applied, "INSERT OR IGNORE INTO applied_log VALUES(?1)"},
                           {&st_->mark_effects, "INSERT OR REPLACE INTO applied_effects VALUES(?1, ?2)"}})
    if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, stmt->addr(), nullptr) != SQLITE_OK)
      return Error("cannot prepare the index cache");
  return Status::OK();
}

Result<bool> Index::IsApplied(const std::string& key) {
  Use u(st_->is_applied);
  u.Text(1, key);
  const int rc = u.Step();
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) return Error("cannot read the index cache");
  return false;
}

Status Index::MarkApplied(const std::string& key, const std::string& effects) {
  {
    Use u(st_->mark_applied);
    u.Text(1, key);
    if (u.Step() != SQLITE_DONE) return Error("cannot record an applied log record");
  }
  Use u(st_->mark_effects);
  u.Text(1, key).Text(2, effects);
  if (u.Step() != SQLITE_DONE) return Error("cannot record an applied log record");
  return Status::OK();
}

Result<std::string> Index::NewestApplied() {
  Query q(db_, "SELECT coalesce(max(key), '') FROM applied_log");
  if (!q.ok() || q.use().Step() != SQLITE_ROW) return Error("cannot read the index cache");
  return q.use().ColText(0);
}

Result<uint64_t> Index::CountAppliedAfter(const std::string& key) {
  Query q(db_, "SELECT count(*) FROM applied_log WHERE key > ?1");
  if (!q.ok()) return Error("cannot read the index cache");
  q.use().Text(1, key);
  if (q.use().Step() != SQLITE_ROW) return Error("cannot read the index cache");
  return static_cast<uint64_t>(q.use().ColInt(0));
}

Result<std::vector<std::pair<std::string, std::optional<std::string>>>> Index::AppliedEffectsAfter(
    const std::string& key) {
  Query q(db_,
          "SELECT a.key, e.effects FROM applied_log a LEFT JOIN applied_effects e ON e.key = a.key "
          "WHERE a.key > ?1 ORDER BY a.key");
  if (!q.ok()) return Error("cannot read the index cache");
  q.use().Text(1, key);
  std::vector<std::pair<std::string, std::optional<std::string>>> out;
  int rc;
  while ((rc = q.use().Step()) == SQLITE_ROW)
    out.emplace_back(q.use().ColText(0), q.use().ColIsNull(1) ? std::nullopt : std::optional<std::string>(q.use().ColText(1)));
  if (rc != SQLITE_DONE) return Error("cannot read the index cache");
  return out;
}

Result<std::set<std::string>> Index::AppliedAfter(const std::string& key) {
  Query q(db_, "SELECT key FROM applied_log WHERE key > ?1");
  if (!q.ok()) return Error("cannot read the index cache");
  q.use().Text(1, key);
  std::set<std::string> out;
  int rc;
  while ((rc = q.use().Step()) == SQLITE_ROW) out.insert(q.use().ColText(0));
  if (rc != SQLITE_DONE) return Error("cannot read the index cache");
  return out;
}

Result<Index::ChangeMark> Index::Mark() {
  ChangeMark m;
  m.removals = chunk_removals_.load();
  Use u(st_->data_version);
  if (u.Step() != SQLITE_ROW) return Error("cannot read the index's data version");
  m.data_version = u.ColInt(0);
  return m;
}

}  // namespace chunkstore::internal
