// SPDX-License-Identifier: Apache-2.0
// The SQLite index: opening and creating it, the schema and its versions,
// the store's meta rows, transactions, and translation of SQLite errors
// into Status values a user can act on (no SQLite jargon leaks out). The
// queries themselves are in queries.cc.
#include "index/index.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "index/sql.h"

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

// Tables added since schema version 3 first appeared: trees and the stat
// cache. An index made before them gets them on its first writable open;
// versions that know nothing of them ignore them.
const char* kTreeSchema = R"sql(
CREATE TABLE IF NOT EXISTS trees(id BLOB PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tree_refs(
  tree BLOB NOT NULL,
  child BLOB NOT NULL,
  PRIMARY KEY(tree, child)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS stat_cache(
  path BLOB PRIMARY KEY,
  dev INTEGER NOT NULL,
  ino INTEGER NOT NULL,
  size INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL,
  ctime_ns INTEGER NOT NULL,
  object BLOB NOT NULL) WITHOUT ROWID;
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

Index::Index(sqlite3* db) : db_(db) {}

Index::~Index() {
  st_.reset();  // statements must be finalized before the connection closes
  sqlite3_close_v2(db_);
}

Status Index::Error(const char* what) const {
  const int extended = sqlite3_extended_errcode(db_), code = extended & 0xff;
  const std::string msg = sqlite3_errmsg(db_);
  // SQLite says SQLITE_FULL only for some writes; a -shm or -wal that cannot
  // grow is SQLITE_IOERR_* with ENOSPC underneath.
  const int sys = sqlite3_system_errno(db_);
  if (code == SQLITE_FULL || (code == SQLITE_IOERR && (sys == ENOSPC || sys == EDQUOT)) ||
      extended == SQLITE_IOERR_SHMSIZE)
    return Status::NoSpace(std::string(what) + ": the disk is full");
  switch (code) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::Busy(std::string(what) +
                          ": another process is holding the store's index; try again");
    case SQLITE_CORRUPT:
      return Status::Corruption(std::string(what) + ": the index database is damaged (" + msg +
                                "); `chunkstore index rebuild` recreates it from the store's log");
    case SQLITE_NOTADB:
      return Status::InvalidArgument(std::string(what) + ": the index file is not a database");
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

Result<std::unique_ptr<Index>> Index::Open(const std::string& path, const OpenOptions& options) {
  Result<std::unique_ptr<Index>> index = OpenOnce(path, options);
  // A disk too full for the -shm file (32 KiB) still lets an existing index
  // be read, and written within its pages, with the WAL index in memory.
  if (!index.ok() && index.status().IsNoSpace() && !options.exclusive && !options.read_only &&
      !options.create && !options.bulk_load && path != ":memory:") {
    OpenOptions alone = options;
    alone.exclusive = true;
    Result<std::unique_ptr<Index>> again = OpenOnce(path, alone);
    // Busy (another process has the index) says more than the first error.
    if (again.ok() || !again.status().IsNoSpace()) return again;
  }
  return index;
}

Result<std::unique_ptr<Index>> Index::OpenOnce(const std::string& path, const OpenOptions& options) {
  const bool memory = path == ":memory:";
  int flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI;
  flags |= options.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
  if (options.create) flags |= SQLITE_OPEN_CREATE;
  // A read-only open takes no locks and never touches -wal or -shm, which
  // is what lets a store on read-only media be read at all; it is only
  // safe while nobody writes the index, which read-only media guarantee.
  std::string uri = path;
  if (!memory) {
    uri = "file:";
    for (char c : path) {
      if (c == '%' || c == '?' || c == '#') {
        char esc[4];
        std::snprintf(esc, sizeof esc, "%%%02X", static_cast<unsigned char>(c));
        uri += esc;
      } else {
        uri += c;
      }
    }
    if (options.read_only) uri += "?immutable=1";
  }
  if (!memory && !options.read_only) {
    // Indexes made before the rule below are made private on their first
    // writable open (SQLite gives -wal and -shm the index's mode when it
    // creates them; existing ones are fixed here too).
    for (const char* suffix : {"", "-wal", "-shm"}) {
      const std::string file = path + suffix;
      struct stat st;
      if (::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 077) != 0)
        ::chmod(file.c_str(), st.st_mode & 0700);
    }
  }
  if (options.create && !memory && !options.read_only) {
    // SQLite would create the file 0644 (less the umask) and give -wal and
    // -shm the mode it finds: made 0600 first, the index (which holds
    // small objects' bytes) is as private as the packs.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) ::close(fd);
  }
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(uri.c_str(), &db, flags, nullptr);
  std::unique_ptr<Index> index(new Index(db));
  if (rc != SQLITE_OK) {
    if (db == nullptr) return Status::IOError("cannot open index " + path + ": out of memory");
    return index->Error(("cannot open index " + path).c_str());
  }
  sqlite3_busy_timeout(db, options.busy_timeout_ms);
  sqlite3_extended_result_codes(db, 1);
  if (options.exclusive && !memory) {
    // Must come before the first read: only then does SQLite keep the WAL
    // index in memory and never map -shm.
    CHUNKSTORE_RETURN_IF_ERROR(index->Exec("PRAGMA locking_mode=EXCLUSIVE"));
    index->exclusive_ = true;
  }
  if (options.bulk_load && !memory) {
    CHUNKSTORE_RETURN_IF_ERROR(index->Exec("PRAGMA journal_mode=OFF"));
    CHUNKSTORE_RETURN_IF_ERROR(index->Exec("PRAGMA cache_size=-65536"));  // 64 MiB
  }
  if (options.create) {
    if (!memory && !options.bulk_load) CHUNKSTORE_RETURN_IF_ERROR(index->Exec("PRAGMA journal_mode=WAL"));
    CHUNKSTORE_RETURN_IF_ERROR(index->CreateSchema(*options.create));
  }
  CHUNKSTORE_RETURN_IF_ERROR(index->LoadMeta());
  if (!options.read_only) {
    CHUNKSTORE_RETURN_IF_ERROR(index->Exec(kTreeSchema));
  } else {
    // An index that cannot be written and predates the tree tables holds
    // no tree: empty stand-ins let every statement prepare.
    Query q(db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='trees'");
    if (!q.ok() || q.use().Step() != SQLITE_ROW) return index->Error("cannot read the index's schema");
    if (q.use().ColInt(0) == 0) {
      std::string temp = kTreeSchema;
      for (size_t at; (at = temp.find("CREATE TABLE IF NOT EXISTS")) != std::string::npos;)
        temp.replace(at, 26, "CREATE TEMP TABLE");
      CHUNKSTORE_RETURN_IF_ERROR(index->Exec(temp.c_str()));
    }
  }
  if (!options.read_only) {
    // Indexes made before objects_by_size get it on their first writable
    // open (a no-op once it exists). It only speeds publishing up: an open
    // that cannot write (busy, read-only) goes on without it.
    sqlite3_exec(db, "CREATE INDEX IF NOT EXISTS objects_by_size ON objects(size, created) WHERE size >= 1048576",
                 nullptr, nullptr, nullptr);
    // In WAL mode FULL syncs the log at every commit; NORMAL may lose the
    // last commits on power loss, which the change log gives back.
    // A tree's publish applies tens of thousands of rows at once; SQLite's
    // default cache of 2 MiB would read most index pages again for each.
    // Pages are held only as they are used.
    if (!options.bulk_load) CHUNKSTORE_RETURN_IF_ERROR(index->Exec("PRAGMA cache_size=-16384"));
    CHUNKSTORE_RETURN_IF_ERROR(index->Exec(options.bulk_load  ? "PRAGMA synchronous=OFF"
                                           : options.durable ? "PRAGMA synchronous=FULL"
                                                             : "PRAGMA synchronous=NORMAL"));
  }
  CHUNKSTORE_RETURN_IF_ERROR(index->Prepare());
  return index;
}

const char* Index::LibraryVersion() { return sqlite3_libversion(); }

Status Index::FinishBulkLoad() {
  // journal_mode=DELETE with synchronous=FULL makes SQLite sync the file
  // at the next commit; the empty transaction below is that commit. Then
  // the index takes up its write-ahead log as every index does.
  CHUNKSTORE_RETURN_IF_ERROR(Exec("PRAGMA journal_mode=DELETE"));
  CHUNKSTORE_RETURN_IF_ERROR(Exec("PRAGMA synchronous=FULL"));
  CHUNKSTORE_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE; UPDATE meta SET value = value WHERE key = 'format'; COMMIT"));
  CHUNKSTORE_RETURN_IF_ERROR(Exec("PRAGMA journal_mode=WAL"));
  CHUNKSTORE_RETURN_IF_ERROR(Exec("PRAGMA cache_size=-2000"));
  return Exec("PRAGMA synchronous=NORMAL");
}

Status Index::CreateSchema(const StoreMeta& meta) {
  CHUNKSTORE_RETURN_IF_ERROR(Exec("BEGIN"));
  Status s = Exec(kSchema);
  if (s.ok()) s = Exec(kTreeSchema);
  if (s.ok()) s = Exec("INSERT INTO meta VALUES('format','chunkstore')");
  if (s.ok()) {
    // The meta rows are written by one statement each, bound: no value is
    // ever spliced into SQL text.
    Query q(db_, "INSERT OR REPLACE INTO meta VALUES(?1, ?2)");
    if (!q.ok()) s = Error("cannot record store metadata");
    const auto& c = meta.chunking;
    const std::pair<std::string, std::string> rows[] = {
        {"schema_version", std::to_string(kSchemaVersion)},
        {"chunk_min", std::to_string(c.min_size)},
        {"chunk_avg", std::to_string(c.avg_size)},
        {"chunk_max", std::to_string(c.max_size)},
        {"chunk_level", std::to_string(c.level)},
        {"compression", CompressionText(meta.compression)},
        {"inline_max", std::to_string(meta.inline_max)},
    };
    for (const auto& [k, v] : rows) {
      if (!s.ok()) break;
      q.use().Text(1, k).Text(2, v);
      if (q.use().Step() != SQLITE_DONE) s = Error("cannot record store metadata");
      q.use().Reset();
    }
  }
  if (s.ok()) return Exec("COMMIT");
  Exec("ROLLBACK");
  return s;
}

Status Index::SetStoreMeta(const StoreMeta& meta, int schema_version) {
  const auto& c = meta.chunking;
  const std::pair<const char*, std::string> rows[] = {
      {"schema_version", std::to_string(schema_version)},
      {"chunk_min", std::to_string(c.min_size)},
      {"chunk_avg", std::to_string(c.avg_size)},
      {"chunk_max", std::to_string(c.max_size)},
      {"chunk_level", std::to_string(c.level)},
      {"compression", CompressionText(meta.compression)},
      {"inline_max", std::to_string(meta.inline_max)},
  };
  for (const auto& [k, v] : rows) CHUNKSTORE_RETURN_IF_ERROR(SetMeta(k, v));
  meta_ = meta;
  schema_version_ = schema_version;
  return Status::OK();
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
    const auto* k = sqlite3_column_text(s, 0);
    const auto* v = sqlite3_column_text(s, 1);
    if (!k || !v) continue;
    const std::string key = reinterpret_cast<const char*>(k);
    const std::string value = reinterpret_cast<const char*>(v);
    const auto num = [&] { return static_cast<uint32_t>(std::strtoull(value.c_str(), nullptr, 10)); };
    if (key == "format") format = value;
    else if (key == "schema_version") version = std::strtoll(value.c_str(), nullptr, 10);
    else if (key == "chunk_min") meta_.chunking.min_size = num();
    else if (key == "chunk_avg") meta_.chunking.avg_size = num();
    else if (key == "chunk_max") meta_.chunking.max_size = num();
    else if (key == "chunk_level") meta_.chunking.level = static_cast<int>(num());
    else if (key == "compression") {
      Result<Compression> c = Compression::Parse(value);
      if (!c.ok()) {
        sqlite3_finalize(s);
        return Status::Corruption("the index names an unknown compression " + value.substr(0, 32));
      }
      meta_.compression = *c;
    }
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
  schema_version_ = static_cast<int>(version);
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

Result<std::string> Index::GetMeta(const std::string& key) {
  Use u(st_->get_meta);
  u.Text(1, key);
  const int rc = u.Step();
  if (rc == SQLITE_DONE) return std::string();
  if (rc != SQLITE_ROW) return Error("cannot read store metadata");
  return u.ColText(0);
}

Status Index::SetMeta(const std::string& key, const std::string& value) {
  Use u(st_->set_meta);
  u.Text(1, key).Text(2, value);
  if (u.Step() != SQLITE_DONE) return Error("cannot record store metadata");
  return Status::OK();
}

Result<std::vector<std::string>> Index::IntegrityCheck() {
  Query q(db_, "PRAGMA integrity_check");
  if (!q.ok()) return Error("cannot check the index");
  std::vector<std::string> problems;
  int rc;
  while ((rc = q.use().Step()) == SQLITE_ROW) {
    std::string line = q.use().ColText(0);
    if (line != "ok") problems.push_back(std::move(line));
  }
  if (rc != SQLITE_DONE) {
    // A database too damaged to check is itself the finding.
    problems.push_back(Error("integrity check").message());
  }
  return problems;
}

}  // namespace chunkstore::internal
