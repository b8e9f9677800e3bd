// Garbage collection: drop unreferenced objects and chunks, then delete
// packs nothing uses and compact packs that are mostly garbage.
//
// Safety rules (see docs/format.md, "Garbage collection"):
//  - Deciding what is dead and deleting its rows happens in one write
//    transaction, so no publish commits in between. A publish that reused
//    a chunk deleted meanwhile notices at its own commit and fails (Busy)
//    instead of recording a dangling reference.
//  - A pack is only deleted or rewritten while gc holds its lock, so no
//    writer is appending to it. Compaction registers the new pack before
//    filling it and switches chunk rows to it in one transaction; the old
//    file is removed only after that commit. Killed at any point, the store
//    holds every live chunk somewhere the index points at, and a rerun
//    reclaims what is left.
//  - Readers that cached a location from before a compaction find the
//    chunk again through the index (see reader.cc).
//  - Pack files with no row are removed only when unlocked and older than
//    the grace period (an hour by default): a writer's new pack has no row
//    until its first commit, and is created as .new, locked, then renamed.
#include <sys/stat.h>

#include <chrono>
#include <map>

#include "format/manifest.h"
#include "format/pack_format.h"
#include "index/sql.h"
#include "store/store_impl.h"

namespace chunkstore {

using namespace internal;

namespace {

struct LiveChunk {
  Digest id;
  ChunkLocation loc;
};

}  // namespace

Status internal::FindGarbage(Index* index, Garbage* g) {
  sqlite3* db = index->db();
  {
    Query q(db, "SELECT id FROM objects WHERE pinned = 0 AND id NOT IN (SELECT object FROM names)");
    if (!q.ok()) return index->Error("gc cannot find dead objects");
    Digest d;
    while (q.use().Step() == SQLITE_ROW)
      if (q.use().ColId(0, &d)) g->dead_objects.push_back(d);
  }
  std::unordered_set<Digest, DigestHash> dead_set(g->dead_objects.begin(), g->dead_objects.end());
  std::unordered_set<Digest, DigestHash> live;
  {
    Query q(db, "SELECT id, size, manifest, chunk_count FROM objects");
    if (!q.ok()) return index->Error("gc cannot read manifests");
    int rc;
    while ((rc = q.use().Step()) == SQLITE_ROW) {
      Digest oid;
      q.use().ColId(0, &oid);
      if (dead_set.count(oid)) continue;
      const uint64_t size = static_cast<uint64_t>(q.use().ColInt(1));
      const std::string blob = q.use().ColBlob(2);
      if (IsInline(size, static_cast<uint32_t>(q.use().ColInt(3)))) {
        // Needs no chunk, if it is what it seems: a damaged chunk list
        // must not pass for inline content and free the chunks it names.
        Status s = CheckInline(oid, size, blob);
        if (!s.ok())
          return Status::Corruption("gc stopped: object " + oid.ObjectId() + " has damaged inline content (" +
                                        s.message() + "); run verify",
                                    oid.ObjectId());
        continue;
      }
      Result<std::vector<ManifestEntry>> entries =
          DecodeManifest(oid, size, blob.data(), blob.size());
      if (!entries.ok()) {
        // Never guess what a damaged manifest needs: collect nothing.
        return Status::Corruption("gc stopped: object " + oid.ObjectId() + " has a damaged manifest (" +
                                      entries.status().message() + "); run verify",
                                  oid.ObjectId());
      }
      for (const auto& e : *entries) live.insert(e.id);
    }
    if (rc != SQLITE_DONE) return index->Error("gc cannot read manifests");
  }
  {
    Result<std::vector<PackRow>> rows = index->ListPacks();
    if (!rows.ok()) return rows.status();
    for (const PackRow& p : *rows) g->packs[p.id].row = p;
  }
  Query q(db, "SELECT id, pack, stored_len FROM chunks");
  if (!q.ok()) return index->Error("gc cannot read chunks");
  int rc;
  while ((rc = q.use().Step()) == SQLITE_ROW) {
    Digest id;
    q.use().ColId(0, &id);
    const int64_t pack = q.use().ColInt(1);
    const uint64_t bytes = kRecordHeaderSize + static_cast<uint64_t>(q.use().ColInt(2));
    if (live.count(id)) g->packs[pack].live_bytes += bytes;
    else g->dead_chunks.emplace_back(id, pack);
  }
  if (rc != SQLITE_DONE) return index->Error("gc cannot read chunks");
  return Status::OK();
}

Result<GcReport> Store::Gc(const GcOptions& options) {
  Impl* impl = impl_.get();
  Env* env = impl->env;
  Result<std::unique_ptr<FileLock>> gc_lock = env->TryLockFile(impl->root + "/GC.lock");
  if (!gc_lock.ok()) {
    if (gc_lock.status().IsBusy()) return Status::Busy("another gc is running on this store");
    return gc_lock.status();
  }
  {
    // Idle writers of this process hold pack locks; let gc have them.
    std::lock_guard<std::mutex> l(impl->writers_mu);
    impl->idle_writers.clear();
  }
  GcReport report;
  std::map<int64_t, PackUse> packs;
  if (impl->bucket) return BucketGc(impl, options);

  // Phase 1: dead objects and chunks, decided and deleted atomically.
  {
    std::lock_guard<std::mutex> l(impl->db_mu);
    Index* index = impl->index.get();
    sqlite3* db = index->db();
    CHUNKSTORE_RETURN_IF_ERROR(index->Begin());
    auto fail = [&](const char* what) {
      Status s = index->Error(what);
      index->Rollback();
      return s;
    };
    Garbage garbage;
    Status found = FindGarbage(index, &garbage);
    if (!found.ok()) {
      index->Rollback();
      return found;
    }
    packs = std::move(garbage.packs);
    report.objects_removed = garbage.dead_objects.size();
    if (!options.dry_run) {
      Query del(db, "DELETE FROM objects WHERE id = ?1");
      if (!del.ok()) return fail("gc cannot delete objects");
      for (const Digest& d : garbage.dead_objects) {
        del.use().Id(1, d);
        const int rc = del.use().Step();
        del.use().Reset();
        if (rc != SQLITE_DONE) return fail("gc cannot delete objects");
      }
    }
    std::vector<Digest> dead_chunks;
    for (const auto& c : garbage.dead_chunks) dead_chunks.push_back(c.first);
    report.chunks_removed = dead_chunks.size();
    if (options.dry_run) {
      index->Rollback();
    } else {
      Query del(db, "DELETE FROM chunks WHERE id = ?1");
      if (!del.ok()) return fail("gc cannot delete chunks");
      index->NoteChunksRemoved();
      for (const Digest& d : dead_chunks) {
        del.use().Id(1, d);
        const int rc = del.use().Step();
        del.use().Reset();
        if (rc != SQLITE_DONE) return fail("gc cannot delete chunks");
      }
      CHUNKSTORE_RETURN_IF_ERROR(index->Commit());
    }
  }

  // Phase 2: packs.
  for (auto& [id, use] : packs) {
    const uint64_t data = use.row.size > kPackHeaderSize ? use.row.size - kPackHeaderSize : 0;
    const bool empty = use.live_bytes == 0;
    const bool sparse = !empty && static_cast<double>(use.live_bytes) <
                                      options.compact_below * static_cast<double>(data);
    if (!empty && !sparse) continue;
    if (options.dry_run) {
      report.bytes_reclaimed += empty ? use.row.size : data - use.live_bytes;
      empty ? ++report.packs_deleted : ++report.packs_compacted;
      continue;
    }
    const std::string path = impl->packs_dir() + "/" + use.row.name;
    Result<std::unique_ptr<FileLock>> lock = env->TryLockExistingFile(path);
    if (!lock.ok()) {
      ++report.packs_skipped;
      continue;
    }
    if (empty) {
      std::lock_guard<std::mutex> l(impl->db_mu);
      Index* index = impl->index.get();
      CHUNKSTORE_RETURN_IF_ERROR(index->Begin());
      Query q(index->db(), "DELETE FROM packs WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM chunks WHERE pack = ?1)");
      if (q.ok()) q.use().Int(1, id);
      if (!q.ok() || q.use().Step() != SQLITE_DONE) {
        Status s = index->Error("gc cannot delete a pack");
        index->Rollback();
        return s;
      }
      const bool deleted = sqlite3_changes(index->db()) > 0;
      CHUNKSTORE_RETURN_IF_ERROR(index->Commit());
      if (!deleted) continue;
    } else {
      CHUNKSTORE_RETURN_IF_ERROR(impl->CompactPack(use.row));
      ++report.packs_compacted;
      report.bytes_reclaimed += data - use.live_bytes;
    }
    {
      std::lock_guard<std::mutex> l(impl->packs_mu);
      impl->read_packs.erase(id);
    }
    Status rm = env->RemoveFile(path);
    if (!rm.ok() && !rm.IsNotFound()) return rm;
    if (empty) {
      ++report.packs_deleted;
      report.bytes_reclaimed += use.row.size;
    }
  }

  // Phase 3: pack files no row names (crashed writers, killed gc runs).
  // In-memory stores never crash, and their failed publishes remove their
  // own files, so only directory stores need this.
  if (!options.dry_run && impl->owned_env == nullptr) {
    Result<std::vector<std::string>> files = env->ListDir(impl->packs_dir());
    if (!files.ok()) return files.status();
    std::unordered_set<std::string> known;
    {
      std::lock_guard<std::mutex> l(impl->db_mu);
      Result<std::vector<PackRow>> rows = impl->index->ListPacks();
      if (!rows.ok()) return rows.status();
      for (const auto& r : *rows) known.insert(r.name);
    }
    const int64_t now = NowSeconds();
    for (const std::string& name : *files) {
      if (known.count(name) || name.rfind("pack-", 0) != 0) continue;
      const bool is_new = name.size() > 4 && name.compare(name.size() - 4, 4, ".new") == 0;
      // A .new file may be a pack being created this instant, not yet
      // locked: never younger than ten minutes, whatever the grace option.
      const int64_t min_age = is_new ? std::max<int64_t>(options.orphan_grace_seconds, 600)
                                     : options.orphan_grace_seconds;
      const std::string path = impl->packs_dir() + "/" + name;
      struct stat st;
      if (::stat(path.c_str(), &st) != 0 || now - st.st_mtim.tv_sec < min_age) continue;
      Result<std::unique_ptr<FileLock>> lock = env->TryLockExistingFile(path);
      if (!lock.ok()) continue;
      Result<std::unique_ptr<File>> f = env->OpenFile(path, OpenMode::kRead);
      uint64_t size = 0;
      if (f.ok()) {
        Result<uint64_t> sz = (*f)->Size();
        if (sz.ok()) size = *sz;
      }
      if (env->RemoveFile(path).ok()) report.bytes_reclaimed += size;
    }
  }
  return report;
}

Status Store::Impl::CompactPack(const PackRow& old) {
  // Live records of the old pack, in file order.
  std::vector<LiveChunk> chunks;
  {
    std::lock_guard<std::mutex> l(db_mu);
    Query q(index->db(),
            "SELECT id, pack, offset, raw_len, stored_len, codec, xxh64 FROM chunks WHERE pack = ?1 ORDER BY offset");
    if (!q.ok()) return index->Error("gc cannot read a pack's chunks");
    q.use().Int(1, old.id);
    int rc;
    while ((rc = q.use().Step()) == SQLITE_ROW) {
      LiveChunk c;
      q.use().ColId(0, &c.id);
      c.loc = ReadChunkLocation(q.use(), 1);
      chunks.push_back(c);
    }
    if (rc != SQLITE_DONE) return index->Error("gc cannot read a pack's chunks");
  }
  Result<std::unique_ptr<File>> src = env->OpenFile(packs_dir() + "/" + old.name, OpenMode::kRead);
  if (!src.ok()) return src.status();

  // The destination is registered (empty) before it is filled, so a crash
  // leaves a known pack whose uncommitted tail the next writer cuts off.
  Result<std::unique_ptr<PackWriter>> made = NewPackWriter();
  if (!made.ok()) return made.status();
  std::unique_ptr<PackWriter> w = std::move(*made);
  CHUNKSTORE_RETURN_IF_ERROR(w->Flush());
  if (options.sync) {
    CHUNKSTORE_RETURN_IF_ERROR(w->file->Sync());
    CHUNKSTORE_RETURN_IF_ERROR(env->SyncDir(packs_dir()));
  }
  {
    std::lock_guard<std::mutex> l(db_mu);
    CHUNKSTORE_RETURN_IF_ERROR(index->Begin());
    Result<int64_t> id = index->InsertPack(w->name, w->size);
    if (!id.ok()) {
      index->Rollback();
      return id.status();
    }
    CHUNKSTORE_RETURN_IF_ERROR(index->Commit());
    w->id = *id;
    w->committed = w->size;
  }
  std::vector<uint8_t> record;
  std::vector<std::pair<Digest, uint64_t>> moved;
  for (const LiveChunk& c : chunks) {
    record.resize(kRecordHeaderSize + c.loc.stored_len);
    size_t got = 0;
    CHUNKSTORE_RETURN_IF_ERROR((*src)->ReadAt(c.loc.offset, record.size(), record.data(), &got));
    Result<RecordHeader> h = DecodeRecordHeader(record.data(), got);
    // A damaged record is left where it is (verify reports it); the old
    // pack then stays, since something still points into it.
    if (got != record.size() || !h.ok() || h->chunk_id != c.id ||
        XxHash64(record.data() + kRecordHeaderSize, c.loc.stored_len) != c.loc.xxh64)
      return Status::Corruption("gc found chunk " + c.id.Hex() + " damaged in pack " + old.name +
                                    " at offset " + std::to_string(c.loc.offset) +
                                    "; not compacting it (run verify)",
                                "", c.id.Hex());
    moved.emplace_back(c.id, w->size);
    CHUNKSTORE_RETURN_IF_ERROR(w->Append(record.data(), kRecordHeaderSize,
                                         record.data() + kRecordHeaderSize, c.loc.stored_len));
  }
  CHUNKSTORE_RETURN_IF_ERROR(w->Flush());
  if (options.sync) CHUNKSTORE_RETURN_IF_ERROR(w->file->Sync());
  std::lock_guard<std::mutex> l(db_mu);
  CHUNKSTORE_RETURN_IF_ERROR(index->Begin());
  Status s = index->SetPackSize(w->id, w->size);
  Query upd(index->db(), "UPDATE chunks SET pack = ?1, offset = ?2 WHERE id = ?3 AND pack = ?4");
  if (s.ok() && !upd.ok()) s = index->Error("gc cannot move chunks");
  for (size_t i = 0; s.ok() && i < moved.size(); ++i) {
    upd.use().Int(1, w->id).Int(2, static_cast<int64_t>(moved[i].second)).Id(3, moved[i].first).Int(4, old.id);
    if (upd.use().Step() != SQLITE_DONE) s = index->Error("gc cannot move chunks");
    upd.use().Reset();
  }
  if (s.ok()) {
    Query del(index->db(), "DELETE FROM packs WHERE id = ?1");
    if (!del.ok()) s = index->Error("gc cannot drop a pack");
    else {
      del.use().Int(1, old.id);
      if (del.use().Step() != SQLITE_DONE) s = index->Error("gc cannot drop a pack");
    }
  }
  if (s.ok()) s = index->Commit();
  if (!s.ok()) {
    index->Rollback();
    return s;
  }
  return Status::OK();
}

}  // namespace chunkstore
