// SQLite-backed index: schema creation and checks, prepared statements for
// every hot query, and translation of SQLite errors into Status values that
// a user can act on (no SQLite jargon leaks out).
#include "index/index.h"

#include "index/sql.h"

#include <cstring>

namespace chunkstore::internal {

namespace {

const char* kSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE packs(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  size INTEGER NOT NULL);
CREATE TABLE chunks(
  id BLOB PRIMARY KEY,
  pack INTEGER NOT NULL,
  offset INTEGER NOT NULL,
  raw_len INTEGER NOT NULL,
  stored_len INTEGER NOT NULL,
  codec INTEGER NOT NULL,
  xxh64 INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX chunks_by_pack ON chunks(pack, offset);
CREATE TABLE objects(
  id BLOB PRIMARY KEY,
  size INTEGER NOT NULL,
  chunk_count INTEGER NOT NULL,
  manifest BLOB NOT NULL,
  created INTEGER NOT NULL,
  pinned INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX objects_by_size ON objects(size, created) WHERE size >= 1048576;
CREATE TABLE names(
  name TEXT NOT NULL,
  version INTEGER NOT NULL,
  object BLOB NOT NULL,
  created INTEGER NOT NULL,
  PRIMARY KEY(name, version)) WITHOUT ROWID;
CREATE INDEX names_by_object ON names(object);
)sql";

}  // namespace

Status ValidateInlineMax(uint32_t inline_max, const ChunkerParams& chunking) {
  if (inline_max > kInlineMaxLimit)
    return Status::InvalidArgument("inline limit " + std::to_string(inline_max) +
                                   " is out of range: it must be 0 to " + std::to_string(kInlineMaxLimit));
  if (inline_max > 0 && inline_max >= chunking.min_size)
    return Status::InvalidArgument("inline limit " + std::to_string(inline_max) +
                                   " must be smaller than the chunk min size " +
                                   std::to_string(chunking.min_size));
  return Status::OK();
}

uint32_t EffectiveInlineMax(uint32_t inline_max, const ChunkerParams& chunking) {
  return inline_max < chunking.min_size ? inline_max : chunking.min_size - 1;
}

struct Index::Statements {
  Stmt find_chunk, insert_chunk, insert_pack, set_pack_size, find_pack, list_packs;
  Stmt find_object, find_object_of_size, find_object_chunk, insert_object, pin_object, find_prefix, insert_name, find_name,
      find_latest_name;
  Stmt begin, begin_read, commit, rollback, data_version;
};

Index::Index(sqlite3* db) : db_(db) {}

Index::~Index() {
  st_.reset();  // statements must be finalized before the connection closes
  sqlite3_close_v2(db_);
}

Status Index::Error(const char* what) const {
  const int code = sqlite3_extended_errcode(db_) & 0xff;
  const std::string msg = sqlite3_errmsg(db_);
  switch (code) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::Busy(std::string(what) +
                          ": another process is holding the store's index; try again");
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return Status::Corruption(std::string(what) + ": the index database is damaged (" + msg +
                                ")");
    case SQLITE_FULL:
      return Status::IOError(std::string(what) + ": the disk is full");
    case SQLITE_READONLY:
      return Status::IOError(std::string(what) + ": the store is read-only");
    case SQLITE_CANTOPEN:
      return Status::IOError(std::string(what) + ": cannot open the index database");
    default:
      return Status::IOError(std::string(what) + ": index error (" + msg + ")");
  }
}

Status Index::Exec(const char* sql) {
  if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) return Error("index");
  return Status::OK();
}

Result<std::unique_ptr<Index>> Index::Open(const std::string& path, const StoreMeta* create,
                                           bool durable, int busy_timeout_ms) {
  const bool memory = path == ":memory:";
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
  if (create) flags |= SQLITE_OPEN_CREATE;
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  std::unique_ptr<Index> index(new Index(db));
  if (rc != SQLITE_OK) {
    if (db == nullptr) return Status::IOError("cannot open index " + path + ": out of memory");
    return index->Error(("cannot open index " + path).c_str());
  }
  sqlite3_busy_timeout(db, busy_timeout_ms);
  sqlite3_extended_result_codes(db, 1);
  if (create) {
    if (!memory) CHUNKSTORE_RETURN_IF_ERROR(index->Exec("PRAGMA journal_mode=WAL"));
    CHUNKSTORE_RETURN_IF_ERROR(index->Exec("BEGIN"));
    CHUNKSTORE_RETURN_IF_ERROR(index->Exec(kSchema));
    const auto& c = create->chunking;
    // Only a store that may hold inline objects needs the newer version.
    const int version = create->inline_max > 0 ? kSchemaVersion : 1;
    std::string meta =
        "INSERT INTO meta VALUES('format','chunkstore'),('schema_version','" +
        std::to_string(version) + "'),('chunk_min','" + std::to_string(c.min_size) +
        "'),('chunk_avg','" + std::to_string(c.avg_size) + "'),('chunk_max','" +
        std::to_string(c.max_size) + "'),('chunk_level','" + std::to_string(c.level) +
        "'),('compression','" + (create->compression ? "zlib" : "none") + "')";
    if (create->inline_max > 0) meta += ",('inline_max','" + std::to_string(create->inline_max) + "')";
    CHUNKSTORE_RETURN_IF_ERROR(index->Exec(meta.c_str()));
    CHUNKSTORE_RETURN_IF_ERROR(index->Exec("COMMIT"));
  }
  CHUNKSTORE_RETURN_IF_ERROR(index->LoadMeta());
  // Stores created before objects_by_size get it on their first writable
  // open (a no-op once it exists). It is an optimization only: an open
  // that cannot write (busy, read-only) goes on without it.
  if (!create)
    sqlite3_exec(db, "CREATE INDEX IF NOT EXISTS objects_by_size ON objects(size, created) WHERE size >= 1048576",
                 nullptr, nullptr, nullptr);
  // In WAL mode FULL syncs the log at every commit, which is what makes a
  // returned publish durable; NORMAL may lose the last commits on power loss.
  CHUNKSTORE_RETURN_IF_ERROR(
      index->Exec(durable ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL"));
  CHUNKSTORE_RETURN_IF_ERROR(index->Prepare());
  return index;
}

Status Index::LoadMeta() {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT key, value FROM meta", -1, &s, nullptr) != SQLITE_OK) {
    const int code = sqlite3_extended_errcode(db_) & 0xff;
    if (code == SQLITE_NOTADB || code == SQLITE_ERROR)  // not SQLite / no meta table
      return Status::InvalidArgument("not a chunkstore store (its index has no store metadata)");
    return Error("cannot read store metadata");
  }
  std::string format;
  int64_t version = -1;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    const std::string key = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    const std::string value = reinterpret_cast<const char*>(sqlite3_column_text(s, 1));
    const auto num = [&] { return static_cast<uint32_t>(std::strtoull(value.c_str(), nullptr, 10)); };
    if (key == "format") format = value;
    else if (key == "schema_version") version = std::strtoll(value.c_str(), nullptr, 10);
    else if (key == "chunk_min") meta_.chunking.min_size = num();
    else if (key == "chunk_avg") meta_.chunking.avg_size = num();
    else if (key == "chunk_max") meta_.chunking.max_size = num();
    else if (key == "chunk_level") meta_.chunking.level = static_cast<int>(num());
    else if (key == "compression") meta_.compression = value == "zlib";
    else if (key == "inline_max") meta_.inline_max = num();
  }
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) return Error("cannot read store metadata");
  if (format != "chunkstore")
    return Status::InvalidArgument("not a chunkstore store (its index names no chunkstore format)");
  if (version > kSchemaVersion)
    return Status::Unsupported("the store uses schema version " + std::to_string(version) +
                               ", newer than this chunkstore understands (" +
                               std::to_string(kSchemaVersion) + "); upgrade chunkstore");
  if (version < 1) return Status::Corruption("the store's schema version is missing");
  CHUNKSTORE_RETURN_IF_ERROR(
      meta_.chunking.Validate().WithContext("the store records invalid chunk parameters"));
  if (meta_.inline_max > 0 && version < 2)
    return Status::Corruption("the store records an inline limit but schema version " +
                              std::to_string(version));
  CHUNKSTORE_RETURN_IF_ERROR(ValidateInlineMax(meta_.inline_max, meta_.chunking)
                                 .WithContext("the store records an invalid inline limit"));
  return Status::OK();
}

Status Index::Prepare() {
  st_ = std::make_unique<Statements>();
  struct {
    Stmt* stmt;
    const char* sql;
  } all[] = {
      {&st_->find_chunk,
       "SELECT pack, offset, raw_len, stored_len, codec, xxh64 FROM chunks WHERE id=?1"},
      {&st_->insert_chunk, "INSERT OR IGNORE INTO chunks VALUES(?1,?2,?3,?4,?5,?6,?7)"},
      {&st_->insert_pack, "INSERT INTO packs(name, size) VALUES(?1, ?2)"},
      {&st_->set_pack_size, "UPDATE packs SET size=?2 WHERE id=?1"},
      {&st_->find_pack, "SELECT id, name, size FROM packs WHERE id=?1"},
      {&st_->list_packs, "SELECT id, name, size FROM packs ORDER BY id"},
      {&st_->find_object, "SELECT size, chunk_count, manifest, created, pinned FROM objects WHERE id=?1"},
      // The literal bound makes objects_by_size (a partial index) usable.
      {&st_->find_object_of_size,
       "SELECT id, size, chunk_count, manifest, created, pinned FROM objects "
       "WHERE size=?1 AND size >= 1048576 ORDER BY created DESC LIMIT 1"},
      // An inline row's manifest column holds content, not chunk ids: the
      // CASE gives it a NULL key, so SQLite skips the seek into chunks that
      // a plain ON condition would still make with its first 32 bytes.
      {&st_->find_object_chunk,
       "SELECT o.size, o.chunk_count, o.manifest, o.created, o.pinned, c.pack, c.offset, c.raw_len, "
       "c.stored_len, c.codec, c.xxh64 FROM objects o LEFT JOIN chunks c "
       "ON c.id = CASE WHEN o.chunk_count > 0 THEN substr(o.manifest, 1, 32) END WHERE o.id=?1"},
      {&st_->insert_object, "INSERT OR IGNORE INTO objects VALUES(?1,?2,?3,?4,?5,?6)"},
      {&st_->pin_object, "UPDATE objects SET pinned = 1 WHERE id=?1 AND pinned = 0"},
      {&st_->find_prefix, "SELECT id FROM objects WHERE id>=?1 AND id<=?2 LIMIT ?3"},
      {&st_->insert_name,
       "INSERT INTO names SELECT ?1, coalesce(max(version), 0) + 1, ?2, ?3 FROM names "
       "WHERE name=?1 RETURNING version"},
      {&st_->find_name, "SELECT version, object, created FROM names WHERE name=?1 AND version=?2"},
      {&st_->find_latest_name,
       "SELECT version, object, created FROM names WHERE name=?1 ORDER BY version DESC LIMIT 1"},
      {&st_->begin, "BEGIN IMMEDIATE"},
      {&st_->begin_read, "BEGIN"},
      {&st_->commit, "COMMIT"},
      {&st_->rollback, "ROLLBACK"},
      {&st_->data_version, "PRAGMA data_version"},
  };
  for (auto& s : all) {
    if (sqlite3_prepare_v3(db_, s.sql, -1, SQLITE_PREPARE_PERSISTENT, s.stmt->addr(), nullptr) !=
        SQLITE_OK)
      return Error("cannot prepare index statements");
  }
  return Status::OK();
}

Status Index::Begin() {
  Use u(st_->begin);
  if (u.Step() != SQLITE_DONE) return Error("cannot start a transaction");
  return Status::OK();
}

Status Index::BeginRead() {
  Use u(st_->begin_read);
  if (u.Step() != SQLITE_DONE) return Error("cannot start a read transaction");
  return Status::OK();
}

Status Index::Commit() {
  Use u(st_->commit);
  if (u.Step() != SQLITE_DONE) {
    Status s = Error("cannot commit");
    Rollback();
    return s;
  }
  return Status::OK();
}

void Index::Rollback() {
  if (sqlite3_get_autocommit(db_)) return;  // nothing open
  Use u(st_->rollback);
  u.Step();
}

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

Result<std::optional<PackRow>> Index::FindPack(int64_t id) {
  Use u(st_->find_pack);
  u.Int(1, id);
  const int rc = u.Step();
  if (rc == SQLITE_DONE) return std::optional<PackRow>();
  if (rc != SQLITE_ROW) return Error("cannot look up a pack");
  return std::optional<PackRow>(
      PackRow{u.ColInt(0), u.ColText(1), static_cast<uint64_t>(u.ColInt(2))});
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

Result<std::optional<std::pair<ObjectRow, std::optional<ChunkLocation>>>>
Index::FindObjectAndFirstChunk(const Digest& id) {
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

Result<Index::ChangeMark> Index::Mark() {
  ChangeMark m;
  m.removals = chunk_removals_.load();
  Use u(st_->data_version);
  if (u.Step() != SQLITE_ROW) return Error("cannot read the index's data version");
  m.data_version = u.ColInt(0);
  return m;
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
  if (sqlite3_changes(db_) > 0) return true;
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

Result<int64_t> Index::AddName(const std::string& name, const Digest& object, int64_t created) {
  // One statement finds the next version and inserts it.
  Use u(st_->insert_name);
  u.Text(1, name).Id(2, object).Int(3, created);
  if (u.Step() != SQLITE_ROW) return Error("cannot record a name");
  const int64_t version = u.ColInt(0);
  if (u.Step() != SQLITE_DONE) return Error("cannot record a name");
  return version;
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

}  // namespace chunkstore::internal
