// Publishing: pack writers, the publish session (chunk records, then one
// index transaction), and the ingest sink that connects the two.
//
// Write order, which is what makes a publish atomic and durable:
//   1. chunk records are appended to a pack this writer holds locked;
//   2. the pack is fsynced (and its directory, when the pack is new);
//   3. one index transaction records the pack length, the new chunks, the
//      objects and their names, and commits (SQLite syncs its WAL).
// A crash before 3 leaves bytes past the pack's committed length, which no
// row points at; the next writer of that pack cuts them off.
#include <chrono>
#include <optional>

#include "format/compress.h"
#include "ingest/ingest.h"
#include "format/pack_format.h"
#include "store/store_impl.h"

namespace chunkstore {

using namespace internal;

namespace {

std::string RandomPackName() { return "pack-" + RandomHex(8) + ".pack"; }

// Small records are gathered and written together. A larger one goes to
// the file straight from the chunk's buffer: staging it would cost a pass
// over its bytes for a saving of one write call.
constexpr size_t kWriteBuffer = 1 << 20;
constexpr size_t kStageBelow = 64 << 10;
// Chunks below this size are looked up in groups (see PublishSession::Defer).
constexpr uint32_t kDeferBelow = 64 << 10;
// Pending small chunks are resolved once they hold this many bytes.
constexpr size_t kDeferLimit = 8 << 20;

}  // namespace

Status internal::PackWriter::Append(const uint8_t* header, size_t header_len, const uint8_t* data,
                                    size_t n) {
  if (header_len + n >= kStageBelow) {
    CHUNKSTORE_RETURN_IF_ERROR(Flush());
    CHUNKSTORE_RETURN_IF_ERROR(file->Append(header, header_len));
    CHUNKSTORE_RETURN_IF_ERROR(file->Append(data, n));
  } else {
    if (buffer.size() + header_len + n > kWriteBuffer) CHUNKSTORE_RETURN_IF_ERROR(Flush());
    buffer.insert(buffer.end(), header, header + header_len);
    buffer.insert(buffer.end(), data, data + n);
  }
  size += header_len + n;
  // Keep the disk busy while hashing goes on, instead of leaving all of a
  // large publish to the final fdatasync.
  if (size - written_back >= (8u << 20)) {
    CHUNKSTORE_RETURN_IF_ERROR(Flush());
    file->StartWriteBack();
    written_back = size;
  }
  return Status::OK();
}

Status internal::PackWriter::Flush() {
  if (buffer.empty()) return Status::OK();
  Status s = file->Append(buffer.data(), buffer.size());
  buffer.clear();
  return s;
}

Result<std::unique_ptr<PackWriter>> Store::Impl::AcquireWriter() {
  // A bucket store's packs are assembled in the cache, uploaded whole, and
  // never appended to again.
  if (bucket) return NewPackWriter();
  // Idle writers keep their file open but not their lock, so a gc in
  // another process may compact their pack meanwhile; re-take the lock and
  // re-check the pack's row before appending again.
  for (;;) {
    std::unique_ptr<PackWriter> w;
    {
      std::lock_guard<std::mutex> l(writers_mu);
      if (idle_writers.empty()) break;
      w = std::move(idle_writers.back());
      idle_writers.pop_back();
    }
    Result<std::unique_ptr<FileLock>> lock = env->TryLockExistingFile(w->path);
    if (!lock.ok()) continue;  // someone else writes it now, or a gc removed it
    w->lock = std::move(*lock);
    std::optional<PackRow> row;
    {
      std::lock_guard<std::mutex> l(db_mu);
      Result<std::optional<PackRow>> r = index->FindPack(w->id);
      if (!r.ok()) return r.status();
      row = *r;
    }
    if (!row || row->name != w->name || row->size >= options.pack_target_size) continue;
    Result<uint64_t> len = w->file->Size();
    if (!len.ok() || *len < row->size) continue;
    if (*len > row->size) CHUNKSTORE_RETURN_IF_ERROR(w->file->Truncate(row->size));
    w->committed = w->size = row->size;
    return w;
  }
  // Adopt a committed pack with room that no other writer holds.
  std::vector<PackRow> packs;
  {
    std::lock_guard<std::mutex> l(db_mu);
    Result<std::vector<PackRow>> r = index->ListPacks();
    if (!r.ok()) return r.status();
    packs = std::move(*r);
  }
  for (const PackRow& p : packs) {
    if (p.size >= options.pack_target_size) continue;
    auto w = std::make_unique<PackWriter>();
    w->name = p.name;
    w->path = packs_dir() + "/" + p.name;
    Result<std::unique_ptr<FileLock>> lock = env->TryLockExistingFile(w->path);
    if (!lock.ok()) continue;  // busy (someone else writes it) or gone
    w->lock = std::move(*lock);
    // Re-read the committed length now that nobody else can append.
    std::optional<PackRow> row;
    {
      std::lock_guard<std::mutex> l(db_mu);
      Result<std::optional<PackRow>> r = index->FindPack(p.id);
      if (!r.ok()) return r.status();
      row = *r;
    }
    if (!row || row->size >= options.pack_target_size) continue;
    Result<std::unique_ptr<File>> f = env->OpenFile(w->path, OpenMode::kAppend);
    if (!f.ok()) continue;  // a missing pack is verify's business, not ours
    w->file = std::move(*f);
    Result<uint64_t> len = w->file->Size();
    if (!len.ok()) return len.status();
    if (*len < row->size) continue;  // damaged pack: never append after a hole
    if (*len > row->size) CHUNKSTORE_RETURN_IF_ERROR(w->file->Truncate(row->size));
    w->id = row->id;
    w->committed = w->size = row->size;
    return w;
  }
  return NewPackWriter();
}

std::vector<ManifestEntry> Store::Impl::EarlierVersion(const Source& source, const IngestConfig& cfg) {
  // An object of the same size is likely an earlier version of this input
  // (or this input again): checking its chunks where they were cut costs
  // no chunker pass, and stops helping, at no loss, where the input
  // differs.
  const std::optional<uint64_t> size = source.Size();
  if (!size || *size < kSizeIndexedFrom || !UsesPipeline(cfg, size)) return {};
  std::lock_guard<std::mutex> l(db_mu);
  Result<std::optional<ObjectRow>> row = index->FindObjectOfSize(*size);
  if (!row.ok() || !row->has_value()) return {};
  const ObjectRow& o = **row;
  Result<std::vector<ManifestEntry>> e = DecodeManifest(o.id, o.size, o.manifest.data(), o.manifest.size());
  if (!e.ok()) return {};
  return std::move(*e);
}

Result<std::unique_ptr<PackWriter>> Store::Impl::NewPackWriter() {
  // A random name, so writers in other processes never collide; the pack
  // becomes part of the store when its row commits. It is created as
  // "<name>.new", locked, and only then renamed to its real name (the lock
  // stays with the file): a gc therefore never sees an unlocked new pack
  // under a .pack name, and leaves young .new files alone.
  auto w = std::make_unique<PackWriter>();
  w->name = RandomPackName();
  w->path = packs_dir() + "/" + w->name;
  const std::string fresh = w->path + ".new";
  Result<std::unique_ptr<File>> f = env->OpenFile(fresh, OpenMode::kCreateNew);
  if (!f.ok()) return f.status();
  w->file = std::move(*f);
  auto discard = [&](const Status& s) {
    w->lock.reset();
    env->RemoveFile(fresh);
    return s;
  };
  Result<std::unique_ptr<FileLock>> lock = env->TryLockFile(fresh);
  if (!lock.ok()) return discard(lock.status());
  w->lock = std::move(*lock);
  uint8_t header[kPackHeaderSize];
  EncodePackHeader(header);
  Status s = w->file->Append(header, sizeof header);
  if (s.ok()) s = env->RenameFile(fresh, w->path);
  if (!s.ok()) return discard(s);
  w->size = kPackHeaderSize;
  w->needs_dir_sync = true;
  return w;
}

void Store::Impl::ReleaseWriter(std::unique_ptr<PackWriter> w, bool clean) {
  if (bucket) {  // uploaded, or abandoned: the staging copy goes either way
    w->lock.reset();
    env->RemoveFile(w->path);
    return;
  }
  if (!clean) {
    w->buffer.clear();
    if (w->id == 0) {
      // Never committed: nothing refers to this file.
      env->RemoveFile(w->path);
      return;
    }
    if (!w->file->Truncate(w->committed).ok()) return;  // drop it; the next adopter truncates
    w->size = w->committed;
  }
  if (w->size >= options.pack_target_size) return;  // full: closing releases the lock
  w->lock.reset();
  std::lock_guard<std::mutex> l(writers_mu);
  idle_writers.push_back(std::move(w));
}

namespace internal {

class SessionSink final : public IngestSink {
 public:
  SessionSink(PublishSession* session, PublishResult* result)
      : session_(session), result_(result), inline_max_(session->store_->meta.inline_max) {}

  bool IsKnown(const Digest& id, uint32_t length) override {
    if (length < kDeferBelow) return false;  // looked up later, in a group
    std::lock_guard<std::mutex> l(session_->store_->db_mu);
    Result<std::optional<ChunkLocation>> r = session_->store_->index->FindChunk(id);
    return r.ok() && r->has_value();
  }

  Status Accept(IngestedChunk& c) override {
    if (c.whole_input && c.length <= inline_max_) {  // an inline object: no chunk to store
      inline_content.emplace(reinterpret_cast<const char*>(c.data), c.length);
      return Status::OK();
    }
    entries.push_back({c.id, c.length});
    if (session_->written_.count(c.id)) {
      ++result_->reused_chunks;
      return Status::OK();
    }
    if (c.known) {
      ++result_->reused_chunks;
      session_->reused_.push_back(c.id);
      return Status::OK();
    }
    if (c.length < kDeferBelow) {
      if (session_->pending_ids_.count(c.id)) {
        ++result_->reused_chunks;
        return Status::OK();
      }
      session_->Defer(c.id, c.data, c.length, c.compressed, c.packed, session_->results_.size());
      if (session_->pending_bytes_ >= kDeferLimit) return session_->ResolvePending(result_);
      return Status::OK();
    }
    return session_->WriteChunk(c.id, c.data, c.length, c.compressed, c.packed, result_);
  }

  std::vector<ManifestEntry> entries;
  std::optional<std::string> inline_content;  // set for an inline object

 private:
  PublishSession* session_;
  PublishResult* result_;
  const uint32_t inline_max_;
};

PublishSession::~PublishSession() {
  if (!done_) Abort();
}

void PublishSession::Abort() {
  done_ = true;
  if (writer_) store_->ReleaseWriter(std::move(writer_), false);
  // Packs already uploaded stay in the bucket unreferenced; gc removes
  // them after its grace period.
  ReapUploads(0);
  shipped_.clear();
  bucket_lock_.reset();
}

Status PublishSession::EnsureBucketLock() {
  if (!store_->bucket || bucket_lock_) return Status::OK();
  Result<std::unique_ptr<BucketLock>> lock = store_->LockBucketShared();
  if (!lock.ok()) return lock.status();
  bucket_lock_ = std::move(*lock);
  return Status::OK();
}

// Uploads run beside ingest, a few at a time: enough to overlap the
// network with hashing, few enough to bound memory and staging space.
constexpr size_t kUploadsInFlight = 3;

Status PublishSession::ShipFullWriter() {
  CHUNKSTORE_RETURN_IF_ERROR(writer_->Flush());
  // Make room first: reaping after starting this one let a fourth run.
  CHUNKSTORE_RETURN_IF_ERROR(ReapUploads(kUploadsInFlight - 1));
  PackWriter* w = writer_.get();
  Bucket* bucket = store_->bucket.get();
  Shipped p;
  p.name = w->name;
  p.size = w->size;
  p.writer = std::move(writer_);
  p.upload = std::async(std::launch::async,
                        [w, bucket] { return bucket->UploadPack(w->name, *w->file, w->size); });
  shipped_.push_back(std::move(p));
  return Status::OK();
}

Status PublishSession::ReapUploads(size_t in_flight) {
  size_t running = 0;
  for (const Shipped& p : shipped_) running += p.writer != nullptr;
  for (Shipped& p : shipped_) {
    if (!p.writer) continue;
    const bool ready = p.upload.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    if (!ready && running <= in_flight) break;
    Status s = p.upload.get();
    if (!s.ok() && upload_error_.ok()) upload_error_ = s;
    store_->ReleaseWriter(std::move(p.writer), s.ok());
    --running;
  }
  return upload_error_;
}

Status PublishSession::CommitToBucket() {
  Status s = ResolvePending(nullptr);
  if (s.ok() && objects_.empty() && shipped_.empty() && !writer_) {  // nothing was added
    done_ = true;
    bucket_lock_.reset();
    return Status::OK();
  }
  if (s.ok() && writer_) s = ShipFullWriter();
  Status uploads = ReapUploads(0);
  if (s.ok()) s = uploads;
  if (!s.ok()) {
    Abort();
    return s.WithContext("cannot publish to " + store_->dir);
  }
  // The packs are in the bucket; one log record makes them and the
  // objects part of the store.
  LogRecord r;
  r.kind = LogRecord::kPublish;
  r.time = NowSeconds();
  for (const Shipped& p : shipped_) r.packs.push_back({p.name, p.size});
  for (const auto& [id, loc] : new_chunks_)
    r.chunks.push_back({id, static_cast<uint32_t>(loc.pack_id), loc});
  r.objects = objects_;
  for (const auto& n : names_)
    if (!n.first.empty()) r.names.push_back(n);
  std::vector<int64_t> versions;
  s = store_->bucket->Write(store_->index.get(), &store_->db_mu, r, &versions);
  if (!s.ok()) {
    Abort();
    return s.WithContext("cannot commit the publish");
  }
  for (size_t i = 0, k = 0; i < names_.size(); ++i)
    if (!names_[i].first.empty() && k < versions.size()) results_[i].version = versions[k++];
  done_ = true;
  shipped_.clear();
  bucket_lock_.reset();
  return Status::OK();
}

Status PublishSession::WriteChunk(const Digest& id, const uint8_t* raw, uint32_t raw_len,
                                  bool compressed, const std::vector<uint8_t>& packed,
                                  PublishResult* result) {
  const uint32_t stored_len = compressed ? static_cast<uint32_t>(packed.size()) : raw_len;
  if (writer_ && store_->bucket && writer_->size > kPackHeaderSize &&
      writer_->size + kRecordHeaderSize + stored_len > store_->options.remote_pack_size)
    CHUNKSTORE_RETURN_IF_ERROR(ShipFullWriter());
  if (!writer_) {
    Result<std::unique_ptr<PackWriter>> w = store_->AcquireWriter();
    if (!w.ok()) return w.status();
    writer_ = std::move(*w);
  }
  RecordHeader h;
  h.codec = compressed ? Codec::kZlib : Codec::kRaw;
  h.raw_len = raw_len;
  h.stored_len = compressed ? static_cast<uint32_t>(packed.size()) : raw_len;
  h.chunk_id = id;
  const uint8_t* payload = compressed ? packed.data() : raw;
  h.xxh64 = XxHash64(payload, h.stored_len);
  uint8_t header[kRecordHeaderSize];
  EncodeRecordHeader(h, header);
  ChunkLocation loc;
  loc.pack_id = static_cast<int64_t>(shipped_.size());  // bucket stores: which pack; set at commit otherwise
  loc.offset = writer_->size;
  loc.raw_len = raw_len;
  loc.stored_len = h.stored_len;
  loc.codec = h.codec;
  loc.xxh64 = h.xxh64;
  CHUNKSTORE_RETURN_IF_ERROR(writer_->Append(header, sizeof header, payload, h.stored_len));
  new_chunks_.emplace_back(id, loc);
  written_.insert(id);
  result->new_bytes += sizeof header + h.stored_len;
  return Status::OK();
}

void PublishSession::Defer(const Digest& id, const uint8_t* raw, uint32_t raw_len, bool compressed,
                           const std::vector<uint8_t>& packed, size_t result_index) {
  Pending p{id, raw_len, compressed, {}, result_index};
  if (compressed) p.bytes = packed;
  else p.bytes.assign(raw, raw + raw_len);
  pending_bytes_ += p.bytes.size();
  pending_ids_.insert(id);
  pending_.push_back(std::move(p));
}

Status PublishSession::ResolvePending(PublishResult* current) {
  if (pending_.empty()) return Status::OK();
  std::vector<bool> known(pending_.size());
  {
    // One read transaction for the whole group instead of one per lookup.
    std::lock_guard<std::mutex> l(store_->db_mu);
    Index* index = store_->index.get();
    CHUNKSTORE_RETURN_IF_ERROR(index->BeginRead());
    for (size_t i = 0; i < pending_.size(); ++i) {
      Result<std::optional<ChunkLocation>> loc = index->FindChunk(pending_[i].id);
      if (!loc.ok()) {
        index->Rollback();
        return loc.status();
      }
      known[i] = loc->has_value();
    }
    index->Rollback();  // read-only: ends the snapshot
  }
  for (size_t i = 0; i < pending_.size(); ++i) {
    Pending& p = pending_[i];
    // Chunks of the object still being added count towards `current`.
    PublishResult* r = p.result < results_.size() ? &results_[p.result] : current;
    if (known[i]) {
      if (r) ++r->reused_chunks;
      reused_.push_back(p.id);
      continue;
    }
    PublishResult ignored;
    CHUNKSTORE_RETURN_IF_ERROR(
        WriteChunk(p.id, p.bytes.data(), p.raw_len, p.compressed, p.bytes, r ? r : &ignored));
  }
  pending_.clear();
  pending_ids_.clear();
  pending_bytes_ = 0;
  return Status::OK();
}

Status PublishSession::FinishObject(const Digest& id, uint64_t size,
                                    std::vector<ManifestEntry> entries, const std::string& name,
                                    PublishResult result) {
  ObjectRow row;
  row.id = id;
  row.size = size;
  row.chunk_count = static_cast<uint32_t>(entries.size());
  row.manifest = EncodeManifest(id, size, entries);
  row.created = NowSeconds();
  row.pinned = name.empty();
  objects_.push_back(std::move(row));
  names_.emplace_back(name, id);
  result.id = id.ObjectId();
  result.size = size;
  result.chunks = entries.size();
  result.name = name;
  results_.push_back(std::move(result));
  return Status::OK();
}

Status PublishSession::FinishInline(const Digest& id, std::string content, const std::string& name,
                                    PublishResult result) {
  ObjectRow row;
  row.id = id;
  row.size = content.size();
  row.chunk_count = 0;
  result.new_bytes += content.size();
  row.manifest = std::move(content);
  row.created = NowSeconds();
  row.pinned = name.empty();
  objects_.push_back(std::move(row));
  names_.emplace_back(name, id);
  result.id = id.ObjectId();
  result.size = objects_.back().size;
  result.chunks = 0;
  result.name = name;
  results_.push_back(std::move(result));
  return Status::OK();
}

Status PublishSession::TakeMark() {
  if (mark_ || store_->bucket) return Status::OK();
  std::lock_guard<std::mutex> l(store_->db_mu);
  Result<Index::ChangeMark> m = store_->index->Mark();
  if (!m.ok()) return m.status();
  mark_ = *m;
  mark_index_ = store_->index.get();
  return Status::OK();
}

Result<PublishResult> PublishSession::AddSource(Source& source, const std::string& name) {
  if (!name.empty()) CHUNKSTORE_RETURN_IF_ERROR(ValidateName(name));
  CHUNKSTORE_RETURN_IF_ERROR(EnsureBucketLock());
  CHUNKSTORE_RETURN_IF_ERROR(TakeMark());
  PublishResult result;
  SessionSink sink(this, &result);
  IngestConfig cfg;
  cfg.chunking = store_->meta.chunking;
  cfg.compress = store_->meta.compression;
  cfg.threads = store_->threads;
  cfg.inline_max = store_->meta.inline_max;
  const std::vector<ManifestEntry> expected = store_->EarlierVersion(source, cfg);
  if (!expected.empty()) cfg.expected = &expected;
  Result<IngestOutcome> out = Ingest(source, cfg, &sink);
  if (!out.ok()) return out.status().WithContext("cannot publish " + source.Describe());
  if (sink.inline_content) {
    CHUNKSTORE_RETURN_IF_ERROR(FinishInline(out->object_id, std::move(*sink.inline_content), name, result));
    return results_.back();
  }
  CHUNKSTORE_RETURN_IF_ERROR(
      FinishObject(out->object_id, out->size, std::move(sink.entries), name, result));
  return results_.back();
}

Result<PublishResult> PublishSession::AddPrepared(const PreparedObject::State& p,
                                                  const std::string& name) {
  if (!name.empty()) CHUNKSTORE_RETURN_IF_ERROR(ValidateName(name));
  if (p.owner != store_)
    return Status::InvalidArgument("a prepared object can only be published to the store that prepared it");
  CHUNKSTORE_RETURN_IF_ERROR(EnsureBucketLock());
  CHUNKSTORE_RETURN_IF_ERROR(TakeMark());
  if (p.kind == PreparedObject::State::Kind::kFile) {
    Result<FileStamp> now = p.file->Restat();
    if (!now.ok()) return now.status();
    if (!(*now == p.file->stamp()))
      return Status::InvalidArgument(p.file->Describe() +
                                     " changed after it was prepared; prepare it again");
  }
  PublishResult result;
  std::vector<uint8_t> raw, packed;
  if (p.size > 0 && p.size <= store_->meta.inline_max && p.entries.size() == 1) {
    std::string content(p.size, '\0');
    CHUNKSTORE_RETURN_IF_ERROR(p.ReadContent(0, reinterpret_cast<uint8_t*>(content.data()), content.size()));
    if (Sha256::Of(content.data(), content.size()) != p.id)
      return Status::InvalidArgument("the prepared content changed after it was prepared; prepare it again");
    CHUNKSTORE_RETURN_IF_ERROR(FinishInline(p.id, std::move(content), name, result));
    return results_.back();
  }
  uint64_t offset = 0;
  for (const ManifestEntry& e : p.entries) {
    bool known = written_.count(e.id) != 0;
    if (!known) {
      std::lock_guard<std::mutex> l(store_->db_mu);
      Result<std::optional<ChunkLocation>> r = store_->index->FindChunk(e.id);
      if (!r.ok()) return r.status();
      known = r->has_value();
    }
    if (known) {
      ++result.reused_chunks;
      if (!written_.count(e.id)) reused_.push_back(e.id);
    } else {
      // Only new chunks are read again, and they are hashed again: what
      // goes into the pack must be what the id promises.
      raw.resize(e.length);
      CHUNKSTORE_RETURN_IF_ERROR(p.ReadContent(offset, raw.data(), e.length));
      if (Sha256::Of(raw.data(), e.length) != e.id)
        return Status::InvalidArgument("the prepared content changed after it was prepared "
                                       "(chunk at offset " + std::to_string(offset) +
                                       " no longer matches); prepare it again");
      const bool compressed =
          store_->meta.compression && TryCompress(raw.data(), e.length, &packed);
      CHUNKSTORE_RETURN_IF_ERROR(
          WriteChunk(e.id, raw.data(), e.length, compressed, packed, &result));
    }
    offset += e.length;
  }
  CHUNKSTORE_RETURN_IF_ERROR(FinishObject(p.id, p.size, p.entries, name, result));
  return results_.back();
}

Status PublishSession::Commit() {
  if (done_) return Status::InvalidArgument("this publish was already committed or abandoned");
  if (store_->bucket) return CommitToBucket();
  Status s = ResolvePending(nullptr);
  if (!s.ok()) {
    Abort();
    return s;
  }
  if (writer_) {
    s = writer_->Flush();
    if (s.ok() && store_->options.sync) s = writer_->file->Sync();
    if (s.ok() && store_->options.sync && writer_->needs_dir_sync)
      s = store_->env->SyncDir(store_->packs_dir());
    if (!s.ok()) {
      Abort();
      return s.WithContext("cannot make chunk data durable");
    }
  }
  {
    std::lock_guard<std::mutex> l(store_->db_mu);
    Index* index = store_->index.get();
    s = index->Begin();
    int64_t pack_id = writer_ ? writer_->id : 0;
    if (s.ok() && writer_) {
      if (pack_id == 0) {
        Result<int64_t> id = index->InsertPack(writer_->name, writer_->size);
        if (id.ok()) pack_id = *id;
        else s = id.status();
      } else {
        s = index->SetPackSize(pack_id, writer_->size);
      }
    }
    // A gc that ran since these chunks were found may have removed them;
    // committing would leave the object pointing at nothing. Unless the
    // index shows that nothing can have removed one, check each again.
    bool unchanged = false;
    if (s.ok() && mark_ && mark_index_ == index) {
      Result<Index::ChangeMark> now = index->Mark();
      unchanged = now.ok() && *now == *mark_;
    }
    for (size_t i = 0; s.ok() && !unchanged && i < reused_.size(); ++i) {
      Result<std::optional<ChunkLocation>> loc = index->FindChunk(reused_[i]);
      if (!loc.ok()) s = loc.status();
      else if (!loc->has_value())
        s = Status::Busy("a concurrent gc removed chunk " + reused_[i].Hex() +
                         ", which this publish reuses; publish again");
    }
    for (auto& [id, loc] : new_chunks_) {
      if (!s.ok()) break;
      loc.pack_id = pack_id;
      s = index->InsertChunk(id, loc);
    }
    const int64_t now = NowSeconds();
    for (size_t i = 0; s.ok() && i < objects_.size(); ++i) {
      Result<bool> added = index->InsertObject(objects_[i]);
      if (!added.ok()) s = added.status();
      // An inline object already stored added nothing after all.
      else if (!*added && IsInline(objects_[i].size, objects_[i].chunk_count)) results_[i].new_bytes = 0;
      if (s.ok() && !names_[i].first.empty()) {
        Result<int64_t> v = index->AddName(names_[i].first, names_[i].second, now);
        if (v.ok()) results_[i].version = *v;
        else s = v.status();
      }
    }
    if (s.ok()) s = index->Commit();
    if (!s.ok()) {
      index->Rollback();
    } else if (writer_) {
      writer_->id = pack_id;
      writer_->committed = writer_->size;
      writer_->needs_dir_sync = false;
    }
  }
  if (!s.ok()) {
    Abort();
    return s.WithContext("cannot commit the publish");
  }
  done_ = true;
  if (writer_) store_->ReleaseWriter(std::move(writer_), true);
  return Status::OK();
}

}  // namespace internal

}  // namespace chunkstore
