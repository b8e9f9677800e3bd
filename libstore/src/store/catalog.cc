// The catalog side of a store: stat, names (list, history, tag, remove),
// object removal and store-wide statistics.
#include <chrono>

#include "format/manifest.h"
#include "format/pack_format.h"
#include "index/sql.h"
#include "store/store_impl.h"

namespace chunkstore {

using namespace internal;

namespace {

// Rows of name versions joined with their objects' sizes.
Result<std::vector<NameEntry>> NameRows(Index* index, Query& q) {
  if (!q.ok()) return index->Error("cannot query names");
  std::vector<NameEntry> out;
  int rc;
  while ((rc = q.use().Step()) == SQLITE_ROW) {
    NameEntry e;
    e.name = q.use().ColText(0);
    e.version = q.use().ColInt(1);
    Digest d;
    if (!q.use().ColId(2, &d)) return Status::Corruption("name " + e.name + " has a malformed object id");
    e.id = d.ObjectId();
    e.created = q.use().ColInt(3);
    e.size = static_cast<uint64_t>(q.use().ColInt(4));
    out.push_back(std::move(e));
  }
  if (rc != SQLITE_DONE) return index->Error("cannot query names");
  return out;
}

}  // namespace

bool VerifyReport::corrupt() const {
  for (const auto& p : problems)
    if (p.kind != "orphan-pack") return true;
  return false;
}

Result<bool> Store::Exists(const std::string& ref) {
  Result<Digest> d = impl_->ResolveRef(ref);
  if (d.ok()) return true;
  if (d.status().IsNotFound()) return false;
  return d.status();
}

Result<ObjectInfo> Store::Stat(const std::string& ref) {
  Result<Digest> id = impl_->ResolveRef(ref);
  if (!id.ok()) return id.status();
  Result<ObjectRow> row = impl_->LoadObject(*id);
  if (!row.ok()) return row.status();
  ObjectInfo info;
  info.id = id->ObjectId();
  info.size = row->size;
  info.chunks = row->chunk_count;
  info.created = row->created;
  info.pinned = row->pinned;
  info.stored_inline = IsInline(row->size, row->chunk_count);
  if (info.stored_inline) info.stored_bytes = row->manifest.size();
  Result<std::vector<ManifestEntry>> entries =
      info.stored_inline ? std::vector<ManifestEntry>{}
                         : DecodeManifest(*id, row->size, row->manifest.data(), row->manifest.size());
  if (!entries.ok())
    return Status::Corruption("object " + info.id + ": " + entries.status().message(), info.id);
  std::lock_guard<std::mutex> l(impl_->db_mu);
  std::unordered_set<Digest, DigestHash> seen;
  for (const auto& e : *entries) {
    if (!seen.insert(e.id).second) continue;
    Result<std::optional<ChunkLocation>> loc = impl_->index->FindChunk(e.id);
    if (!loc.ok()) return loc.status();
    if (!loc->has_value()) continue;
    info.stored_bytes += kRecordHeaderSize + (*loc)->stored_len;
    if ((*loc)->codec == Codec::kZlib) ++info.compressed_chunks;
  }
  Query q(impl_->index->db(),
          "SELECT n.name FROM names n WHERE n.object=?1 AND n.version = "
          "(SELECT max(version) FROM names m WHERE m.name = n.name) ORDER BY n.name");
  if (!q.ok()) return impl_->index->Error("cannot query names");
  q.use().Id(1, *id);
  int rc;
  while ((rc = q.use().Step()) == SQLITE_ROW) info.names.push_back(q.use().ColText(0));
  if (rc != SQLITE_DONE) return impl_->index->Error("cannot query names");
  return info;
}

Result<std::vector<NameEntry>> Store::List(const std::string& prefix) {
  std::lock_guard<std::mutex> l(impl_->db_mu);
  // Names compare bytewise; no UTF-8 byte is 0xff, so prefix + 0xff bounds
  // every name that starts with prefix.
  Query q(impl_->index->db(),
          "SELECT n.name, n.version, n.object, n.created, o.size FROM names n "
          "JOIN objects o ON o.id = n.object "
          "WHERE n.name >= ?1 AND n.name < ?2 AND n.version = "
          "(SELECT max(version) FROM names m WHERE m.name = n.name) ORDER BY n.name");
  const std::string hi = prefix + "\xff";
  if (q.ok()) q.use().Text(1, prefix).Text(2, hi);
  return NameRows(impl_->index.get(), q);
}

Result<std::vector<ObjectInfo>> Store::ListUnnamed() {
  std::lock_guard<std::mutex> l(impl_->db_mu);
  Query q(impl_->index->db(),
          "SELECT id, size, chunk_count, created, pinned FROM objects "
          "WHERE id NOT IN (SELECT object FROM names) ORDER BY created, id");
  if (!q.ok()) return impl_->index->Error("cannot list objects");
  std::vector<ObjectInfo> out;
  int rc;
  while ((rc = q.use().Step()) == SQLITE_ROW) {
    ObjectInfo o;
    Digest d;
    if (!q.use().ColId(0, &d)) return Status::Corruption("an object row has a malformed id");
    o.id = d.ObjectId();
    o.size = static_cast<uint64_t>(q.use().ColInt(1));
    o.chunks = static_cast<uint64_t>(q.use().ColInt(2));
    o.created = q.use().ColInt(3);
    o.pinned = q.use().ColInt(4) != 0;
    o.stored_inline = IsInline(o.size, static_cast<uint32_t>(o.chunks));
    out.push_back(std::move(o));
  }
  if (rc != SQLITE_DONE) return impl_->index->Error("cannot list objects");
  return out;
}

Result<std::vector<NameEntry>> Store::History(const std::string& name) {
  CHUNKSTORE_RETURN_IF_ERROR(ValidateName(name));
  std::lock_guard<std::mutex> l(impl_->db_mu);
  Query q(impl_->index->db(),
          "SELECT n.name, n.version, n.object, n.created, coalesce(o.size, 0) FROM names n "
          "LEFT JOIN objects o ON o.id = n.object WHERE n.name = ?1 ORDER BY n.version DESC");
  if (q.ok()) q.use().Text(1, name);
  Result<std::vector<NameEntry>> rows = NameRows(impl_->index.get(), q);
  if (rows.ok() && rows->empty()) return Status::NotFound("no name " + name);
  return rows;
}

namespace {

// A catalog change to a bucket store: under the shared lock (so no gc runs
// meanwhile), written to the bucket's log, then applied to the cache.
Status WriteBucketChange(Store::Impl* impl, const LogRecord& r, std::vector<int64_t>* versions) {
  return impl->bucket->Write(impl->index.get(), &impl->db_mu, r, versions);
}

}  // namespace

Result<NameEntry> Store::Tag(const std::string& ref, const std::string& name) {
  CHUNKSTORE_RETURN_IF_ERROR(ValidateName(name));
  if (impl_->bucket) {
    Result<std::unique_ptr<BucketLock>> lock = impl_->LockBucketShared();
    if (!lock.ok()) return lock.status();
    Result<Digest> id = impl_->ResolveRef(ref);
    if (!id.ok()) return id.status();
    Result<ObjectRow> row = impl_->LoadObject(*id);
    if (!row.ok()) return row.status();
    LogRecord r;
    r.kind = LogRecord::kTag;
    r.time = NowSeconds();
    r.names.emplace_back(name, *id);
    std::vector<int64_t> versions;
    CHUNKSTORE_RETURN_IF_ERROR(WriteBucketChange(impl_.get(), r, &versions));
    if (versions.empty() || versions[0] == 0)
      return Status::NotFound("object " + id->ObjectId() + " was removed by another writer");
    return NameEntry{name, versions[0], id->ObjectId(), row->size, r.time};
  }
  Result<Digest> id = impl_->ResolveRef(ref);
  if (!id.ok()) return id.status();
  std::lock_guard<std::mutex> l(impl_->db_mu);
  Index* index = impl_->index.get();
  CHUNKSTORE_RETURN_IF_ERROR(index->Begin());
  // The object may have been removed since it was resolved.
  Result<std::optional<ObjectRow>> row = index->FindObject(*id);
  if (!row.ok() || !row->has_value()) {
    index->Rollback();
    return row.ok() ? Status::NotFound("no object " + id->ObjectId()) : row.status();
  }
  const int64_t now = NowSeconds();
  Result<int64_t> v = index->AddName(name, *id, now);
  if (!v.ok()) {
    index->Rollback();
    return v.status();
  }
  CHUNKSTORE_RETURN_IF_ERROR(index->Commit());
  return NameEntry{name, *v, id->ObjectId(), (*row)->size, now};
}

Status Store::RemoveName(const std::string& name) {
  CHUNKSTORE_RETURN_IF_ERROR(ValidateName(name));
  if (impl_->bucket) {
    Result<std::unique_ptr<BucketLock>> lock = impl_->LockBucketShared();
    if (!lock.ok()) return lock.status();
    {
      std::lock_guard<std::mutex> l(impl_->db_mu);
      Result<std::optional<NameRow>> row = impl_->index->FindName(name, 0);
      if (!row.ok()) return row.status();
      if (!row->has_value()) return Status::NotFound("no name " + name);
    }
    LogRecord r;
    r.kind = LogRecord::kRemoveName;
    r.time = NowSeconds();
    r.removed_names.push_back(name);
    return WriteBucketChange(impl_.get(), r, nullptr);
  }
  std::lock_guard<std::mutex> l(impl_->db_mu);
  Query q(impl_->index->db(), "DELETE FROM names WHERE name = ?1");
  if (!q.ok()) return impl_->index->Error("cannot remove a name");
  q.use().Text(1, name);
  if (q.use().Step() != SQLITE_DONE) return impl_->index->Error("cannot remove a name");
  if (sqlite3_changes(impl_->index->db()) == 0) return Status::NotFound("no name " + name);
  return Status::OK();
}

Status Store::RemoveObject(const std::string& ref) {
  std::unique_ptr<BucketLock> bucket_lock;
  if (impl_->bucket) {
    Result<std::unique_ptr<BucketLock>> lock = impl_->LockBucketShared();
    if (!lock.ok()) return lock.status();
    bucket_lock = std::move(*lock);
  }
  Result<Digest> id = impl_->ResolveRef(ref);
  if (!id.ok()) return id.status();
  if (impl_->bucket) {
    LogRecord r;
    r.kind = LogRecord::kRemoveObject;
    r.time = NowSeconds();
    r.removed_objects.push_back(*id);
    return WriteBucketChange(impl_.get(), r, nullptr);
  }
  std::lock_guard<std::mutex> l(impl_->db_mu);
  Index* index = impl_->index.get();
  CHUNKSTORE_RETURN_IF_ERROR(index->Begin());
  for (const char* sql : {"DELETE FROM names WHERE object = ?1", "DELETE FROM objects WHERE id = ?1"}) {
    Query q(index->db(), sql);
    if (q.ok()) q.use().Id(1, *id);
    if (!q.ok() || q.use().Step() != SQLITE_DONE) {
      Status s = index->Error("cannot remove an object");
      index->Rollback();
      return s;
    }
  }
  return index->Commit();
}

Result<StoreStats> Store::Stats() {
  std::lock_guard<std::mutex> l(impl_->db_mu);
  Index* index = impl_->index.get();
  StoreStats st;
  auto one_row = [&](const char* sql, auto&& read) -> Status {
    Query q(index->db(), sql);
    if (!q.ok() || q.use().Step() != SQLITE_ROW) return index->Error("cannot compute statistics");
    read(q.use());
    return Status::OK();
  };
  // BEGIN gives one consistent snapshot across the queries.
  CHUNKSTORE_RETURN_IF_ERROR(index->Exec("BEGIN"));
  Status s = one_row("SELECT count(*), total(size) FROM objects", [&](Use& u) {
    st.objects = static_cast<uint64_t>(u.ColInt(0));
    st.logical_bytes = static_cast<uint64_t>(u.ColInt(1));
  });
  if (s.ok())
    s = one_row("SELECT count(DISTINCT name) FROM names",
                [&](Use& u) { st.names = static_cast<uint64_t>(u.ColInt(0)); });
  if (s.ok())
    s = one_row("SELECT count(*), total(raw_len), total(stored_len) FROM chunks", [&](Use& u) {
      st.chunks = static_cast<uint64_t>(u.ColInt(0));
      st.unique_bytes = static_cast<uint64_t>(u.ColInt(1));
      st.stored_bytes = static_cast<uint64_t>(u.ColInt(2)) + st.chunks * kRecordHeaderSize;
    });
  if (s.ok())
    s = one_row("SELECT count(*), total(size) FROM objects WHERE chunk_count = 0 AND size > 0", [&](Use& u) {
      st.inline_objects = static_cast<uint64_t>(u.ColInt(0));
      st.inline_bytes = static_cast<uint64_t>(u.ColInt(1));
    });
  st.unique_bytes += st.inline_bytes;
  st.stored_bytes += st.inline_bytes;
  if (s.ok())
    s = one_row("SELECT count(*), total(size) FROM packs", [&](Use& u) {
      st.pack_count = static_cast<uint64_t>(u.ColInt(0));
      st.pack_bytes = static_cast<uint64_t>(u.ColInt(1));
    });
  index->Exec("COMMIT");
  if (!s.ok()) return s;
  const uint64_t used = st.stored_bytes - st.inline_bytes + st.pack_count * kPackHeaderSize;
  st.garbage_bytes = st.pack_bytes > used ? st.pack_bytes - used : 0;
  return st;
}

}  // namespace chunkstore
