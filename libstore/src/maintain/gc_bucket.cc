// Garbage collection of a bucket store.
//
// Rules (docs/format.md, "Bucket gc"):
//  - gc holds the bucket's exclusive lock, so no publish or catalog change
//    runs anywhere meanwhile, and refreshes its cache under it: its view of
//    the store is the whole log.
//  - Its decision is one log record (objects and chunks dropped, packs
//    dropped, chunks moved by compaction), written after any new pack is
//    uploaded and before any blob is deleted. Killed before the record, it
//    changed nothing but leave an unreferenced new pack; killed after, the
//    packs it meant to delete are unreferenced too. Both are orphans, which
//    a later gc deletes once older than the grace period.
//  - Caches that have not seen the record yet may still read a deleted
//    pack: the reader refreshes on a missing pack and looks the chunk up
//    again (reader.cc).
#include "format/manifest.h"
#include "format/pack_format.h"
#include "index/sql.h"
#include "store/store_impl.h"

namespace chunkstore {

using namespace internal;

namespace {

// Copies a sparse pack's live records into a new pack and uploads it; the
// moves are added to r.
Status CompactRemotePack(Store::Impl* impl, const PackRow& old, LogRecord* r) {
  std::vector<std::pair<Digest, ChunkLocation>> chunks;
  {
    std::lock_guard<std::mutex> l(impl->db_mu);
    Query q(impl->index->db(),
            "SELECT id, pack, offset, raw_len, stored_len, codec, xxh64 FROM chunks WHERE pack = ?1 ORDER BY offset");
    if (!q.ok()) return impl->index->Error("gc cannot read a pack's chunks");
    q.use().Int(1, old.id);
    int rc;
    while ((rc = q.use().Step()) == SQLITE_ROW) {
      Digest id;
      q.use().ColId(0, &id);
      chunks.emplace_back(id, ReadChunkLocation(q.use(), 1));
    }
    if (rc != SQLITE_DONE) return impl->index->Error("gc cannot read a pack's chunks");
  }
  Result<std::unique_ptr<File>> src = impl->OpenPack(old.name, old.size);
  if (!src.ok()) return src.status();
  Result<std::unique_ptr<PackWriter>> made = impl->NewPackWriter();
  if (!made.ok()) return made.status();
  std::unique_ptr<PackWriter> w = std::move(*made);
  const uint32_t pack_index = static_cast<uint32_t>(r->packs.size());
  const size_t moves_before = r->chunks.size();
  std::vector<uint8_t> record;
  Status s;
  for (const auto& [id, loc] : chunks) {
    record.resize(kRecordHeaderSize + loc.stored_len);
    size_t got = 0;
    s = (*src)->ReadAt(loc.offset, record.size(), record.data(), &got);
    if (!s.ok()) break;
    Result<RecordHeader> h = DecodeRecordHeader(record.data(), got);
    if (got != record.size() || !h.ok() || h->chunk_id != id ||
        XxHash64(record.data() + kRecordHeaderSize, loc.stored_len) != loc.xxh64) {
      s = Status::Corruption("gc found chunk " + id.Hex() + " damaged in pack " + old.name +
                                 " at offset " + std::to_string(loc.offset) +
                                 "; not compacting it (run verify)",
                             "", id.Hex());
      break;
    }
    LogRecord::Chunk moved{id, pack_index, loc};
    moved.loc.offset = w->size;
    r->chunks.push_back(moved);
    s = w->Append(record.data(), kRecordHeaderSize, record.data() + kRecordHeaderSize, loc.stored_len);
    if (!s.ok()) break;
  }
  if (s.ok()) s = w->Flush();
  if (s.ok()) s = impl->bucket->UploadPack(w->name, *w->file, w->size);
  if (s.ok()) r->packs.push_back({w->name, w->size});
  else r->chunks.resize(moves_before);
  impl->ReleaseWriter(std::move(w), false);
  return s;
}

}  // namespace

Result<GcReport> internal::BucketGc(Store::Impl* impl, const GcOptions& options) {
  Bucket* bucket = impl->bucket.get();
  BlobStore* blobs = bucket->blobs();
  std::unique_ptr<BucketLock> lock;
  if (!options.dry_run) {
    Result<std::unique_ptr<BucketLock>> l = bucket->Lock(true, 0);
    if (!l.ok()) return l.status();
    lock = std::move(*l);
  }
  CHUNKSTORE_RETURN_IF_ERROR(impl->Refresh());
  GcReport report;
  Garbage g;
  {
    std::lock_guard<std::mutex> l(impl->db_mu);
    Index* index = impl->index.get();
    CHUNKSTORE_RETURN_IF_ERROR(index->BeginRead());
    Status s = FindGarbage(index, &g);
    index->Rollback();
    CHUNKSTORE_RETURN_IF_ERROR(s);
  }
  report.objects_removed = g.dead_objects.size();
  report.chunks_removed = g.dead_chunks.size();

  LogRecord r;
  r.kind = LogRecord::kGc;
  r.time = NowSeconds();
  r.removed_objects = g.dead_objects;
  std::unordered_set<int64_t> dropped;
  for (auto& [id, use] : g.packs) {
    const uint64_t data = use.row.size > kPackHeaderSize ? use.row.size - kPackHeaderSize : 0;
    const bool empty = use.live_bytes == 0;
    const bool sparse = !empty && static_cast<double>(use.live_bytes) <
                                      options.compact_below * static_cast<double>(data);
    if (!empty && !sparse) continue;
    if (!options.dry_run && sparse) {
      Status s = CompactRemotePack(impl, use.row, &r);
      if (s.IsCorruption()) return s;
      if (!s.ok()) {
        ++report.packs_skipped;
        continue;
      }
    }
    dropped.insert(id);
    r.removed_packs.push_back(use.row.name);
    empty ? ++report.packs_deleted : ++report.packs_compacted;
    report.bytes_reclaimed += empty ? use.row.size : data - use.live_bytes;
  }
  for (const auto& [chunk, pack] : g.dead_chunks) {
    if (dropped.count(pack)) continue;  // goes with its pack
    auto it = g.packs.find(pack);
    if (it != g.packs.end()) r.removed_chunks.push_back({chunk, it->second.row.name});
  }
  if (options.dry_run) return report;
  const bool changes = !r.removed_objects.empty() || !r.removed_chunks.empty() || !r.removed_packs.empty();
  if (changes) CHUNKSTORE_RETURN_IF_ERROR(bucket->Write(impl->index.get(), &impl->db_mu, r, nullptr));
  {
    std::lock_guard<std::mutex> l(impl->packs_mu);
    impl->read_packs.clear();
  }
  for (const std::string& name : r.removed_packs) {
    Status s = blobs->Delete(Bucket::PackKey(name));
    if (!s.ok()) return s.WithContext("gc recorded its work but could not delete pack " + name +
                                      " (the next gc removes it)");
  }

  // Orphans: pack blobs no record names (interrupted uploads, interrupted
  // gc runs), once older than the grace period by the bucket's clock. The
  // lock blob written above gives that clock's "now".
  Result<std::vector<BlobInfo>> locks = blobs->List(lock->key());
  int64_t now = NowSeconds();
  if (locks.ok() && !locks->empty()) now = locks->front().modified;
  Result<std::vector<BlobInfo>> packs = blobs->List("packs/");
  if (!packs.ok()) return packs.status();
  std::unordered_set<std::string> known;
  {
    std::lock_guard<std::mutex> l(impl->db_mu);
    Result<std::vector<PackRow>> rows = impl->index->ListPacks();
    if (!rows.ok()) return rows.status();
    for (const auto& row : *rows) known.insert(row.name);
  }
  for (const BlobInfo& b : *packs) {
    const std::string name = b.key.substr(6);
    if (known.count(name) || now - b.modified < options.orphan_grace_seconds) continue;
    if (blobs->Delete(b.key).ok()) report.bytes_reclaimed += b.size;
  }
  return report;
}

}  // namespace chunkstore
