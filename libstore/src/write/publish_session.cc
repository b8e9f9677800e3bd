// SPDX-License-Identifier: Apache-2.0
// PublishSession (publish_session.h), and the ingest sink that connects
// a session to Ingest.
#include "write/publish_session.h"

#include <atomic>
#include <chrono>
#include <optional>

#include "base/clock.h"
#include "format/compress.h"
#include "format/pack_format.h"

namespace chunkstore::internal {

namespace {

// Chunks below this size are looked up in groups (see PublishSession::Defer).
constexpr uint32_t kDeferBelow = 64 << 10;
// Pending small chunks are resolved once they hold this many bytes.
constexpr size_t kDeferLimit = 8 << 20;
// Seals run beside ingest, a few at a time: enough to overlap uploads with
// hashing, few enough to bound memory and staging space.
constexpr size_t kSealsInFlight = 3;

}  // namespace

class SessionSink final : public IngestSink {
 public:
  SessionSink(PublishSession* session, PublishResult* result)
      : session_(session), result_(result), inline_max_(session->t_.meta.inline_max) {}

  bool IsKnown(const Digest& id, uint32_t length) override {
    if (length < kDeferBelow) return false;  // looked up later, in a group
    Result<std::optional<ChunkLocation>> r = session_->t_.index->Lock()->FindChunk(id);
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
      session_->Defer(c.id, c.data, c.length, c.codec, c.packed, session_->results_.size());
      if (session_->pending_bytes_ >= kDeferLimit) return session_->ResolvePending(result_);
      return Status::OK();
    }
    return session_->WriteChunk(c.id, c.data, c.length, c.codec, c.packed, result_);
  }

  std::vector<ManifestEntry> entries;
  std::optional<std::string> inline_content;  // set for an inline object

 private:
  PublishSession* session_;
  PublishResult* result_;
  const uint32_t inline_max_;
};

namespace {
std::atomic<int64_t> g_pack_check_age{600};
}  // namespace

int64_t PackCheckAgeSeconds() { return g_pack_check_age.load(); }
void SetPackCheckAgeForTests(int64_t seconds) { g_pack_check_age = seconds; }

Status PublishSession::CheckPacksStayed() {
  // Where a free lock proves a writer gone, gc never takes a pack a
  // writer holds; elsewhere a pack younger than gc's grace (an hour by
  // default) is safe. Called with the log held: on a bucket with lock
  // blobs no gc runs until the commit is made; on a sequenced one the
  // check narrows the race to the moment before the claim.
  if (t_.packs->LockProvesNoWriter() || sealed_.empty() || first_pack_ms_ < 0) return Status::OK();
  if (SteadyMs() - first_pack_ms_ < PackCheckAgeSeconds() * 1000) return Status::OK();
  size_t gone = 0;
  std::string first;
  for (const Sealed& p : sealed_) {
    Result<std::unique_ptr<File>> f = t_.packs->Open(p.writer->name, 0);
    if (f.ok()) continue;
    if (!f.status().IsNotFound()) return f.status().WithContext("cannot check the packs this publish wrote");
    if (gone++ == 0) first = p.writer->name;
  }
  if (gone == 0) return Status::OK();
  return Status::Busy(std::to_string(gone) + " of the " + std::to_string(sealed_.size()) +
                      " packs this publish wrote (" + first + (gone > 1 ? ", ..." : "") + ") are gone from " +
                      t_.packs->Describe() +
                      ": a gc took them for a crashed writer's, as it does with packs no record names once they "
                      "are older than its --orphan-grace; nothing was committed. Publish again, and give gc a "
                      "grace longer than the longest publish");
}

PublishSession::~PublishSession() {
  if (!done_) Abort();
}


void PublishSession::Abort() {
  done_ = true;
  // Seals still running finish first: their files must stay put until then.
  ReapSeals(0);
  for (Sealed& p : sealed_)
    if (p.writer) t_.packs->Release(std::move(p.writer), false);
  sealed_.clear();
  // Packs already uploaded to a bucket stay there unreferenced; gc removes
  // them after its grace period.
  if (writer_) t_.packs->Release(std::move(writer_), false);
}

Status PublishSession::SealWriter() {
  // Make room first: reaping after starting this one let one more run.
  CHUNKSTORE_RETURN_IF_ERROR(ReapSeals(kSealsInFlight - 1));
  Sealed p;
  p.done = t_.packs->Seal(*writer_);
  p.writer = std::move(writer_);
  sealed_.push_back(std::move(p));
  return Status::OK();
}

Status PublishSession::ReapSeals(size_t in_flight) {
  size_t running = 0;
  for (const Sealed& p : sealed_) running += !p.reaped;
  for (Sealed& p : sealed_) {
    if (p.reaped) continue;
    const bool ready = p.done.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    if (!ready && running <= in_flight) break;
    Status s = p.done.get();
    p.reaped = true;
    if (!s.ok() && seal_error_.ok()) seal_error_ = s;
    --running;
  }
  return seal_error_;
}

Status PublishSession::WriteChunk(const Digest& id, const uint8_t* raw, uint32_t raw_len,
                                  Codec codec, const std::vector<uint8_t>& packed,
                                  PublishResult* result) {
  const bool compressed = codec != Codec::kRaw;
  const uint32_t stored_len = compressed ? static_cast<uint32_t>(packed.size()) : raw_len;
  if (writer_ && writer_->size > writer_->committed + kPackHeaderSize &&
      writer_->size + kRecordHeaderSize + stored_len > t_.packs->seal_at())
    CHUNKSTORE_RETURN_IF_ERROR(SealWriter());
  if (!writer_) {
    Result<std::unique_ptr<PackWriter>> w = t_.packs->Acquire();
    if (!w.ok()) return w.status();
    writer_ = std::move(*w);
    if (first_pack_ms_ < 0) first_pack_ms_ = SteadyMs();
  }
  const uint8_t* payload = compressed ? packed.data() : raw;
  const RecordHeader h = MakeRecordHeader(id, raw_len, codec, payload, stored_len);
  uint8_t header[kRecordHeaderSize];
  EncodeRecordHeader(h, header);
  // pack_id: the writer's place in the change's packs.
  const ChunkLocation loc = RecordLocation(h, static_cast<int64_t>(sealed_.size()), writer_->size);
  CHUNKSTORE_RETURN_IF_ERROR(writer_->Append(header, sizeof header, payload, h.stored_len));
  new_chunks_.emplace_back(id, loc);
  written_.insert(id);
  result->new_bytes += sizeof header + h.stored_len;
  written_bytes_ += sizeof header + h.stored_len;
  return Status::OK();
}

void PublishSession::Defer(const Digest& id, const uint8_t* raw, uint32_t raw_len, Codec codec,
                           const std::vector<uint8_t>& packed, size_t result_index) {
  Pending p{id, raw_len, codec, {}, result_index};
  if (codec != Codec::kRaw) p.bytes = packed;
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
    auto db = t_.index->Lock();
    ReadTxn txn(db.get());
    CHUNKSTORE_RETURN_IF_ERROR(txn.status());
    for (size_t i = 0; i < pending_.size(); ++i) {
      Result<std::optional<ChunkLocation>> loc = db->FindChunk(pending_[i].id);
      if (!loc.ok()) return loc.status();
      known[i] = loc->has_value();
    }
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
        WriteChunk(p.id, p.bytes.data(), p.raw_len, p.codec, p.bytes, r ? r : &ignored));
  }
  pending_.clear();
  pending_ids_.clear();
  pending_bytes_ = 0;
  return Status::OK();
}

Status PublishSession::AddRow(ObjectRow row, const std::string& name, PublishResult result, const ObjectRole& role) {
  row.created = NowSeconds();
  row.pinned = name.empty() && !role.member;
  row.tree = role.tree;
  if (role.tree) row.refs = role.refs;
  // The same content twice in one tree is one row. Whether the store
  // holds a member already is settled at commit, holding the log.
  const bool droppable = (role.member || role.tree) && !row.pinned;
  const bool list = !(droppable && listed_ids_.count(row.id));
  if (list) listed_ids_.insert(row.id);
  result.id = row.id.ObjectId();
  result.size = row.size;
  result.chunks = row.chunk_count;
  result.name = name;
  names_.emplace_back(name, row.id);
  objects_.push_back(std::move(row));
  listed_.push_back(list);
  droppable_.push_back(droppable);
  member_.push_back(role.member);
  results_.push_back(std::move(result));
  return Status::OK();
}

Status PublishSession::FinishObject(const Digest& id, uint64_t size, std::vector<ManifestEntry> entries,
                                    const std::vector<ChainState>& chain, const std::string& name,
                                    PublishResult result, const ObjectRole& role) {
  ObjectRow row;
  row.id = id;
  row.size = size;
  row.chunk_count = static_cast<uint32_t>(entries.size());
  row.manifest = EncodeManifest(id, size, entries, chain);
  return AddRow(std::move(row), name, std::move(result), role);
}

Status PublishSession::FinishInline(const Digest& id, std::string content, const std::string& name,
                                    PublishResult result, const ObjectRole& role) {
  ObjectRow row;
  row.id = id;
  row.size = content.size();
  row.chunk_count = 0;
  result.new_bytes += content.size();
  row.manifest = std::move(content);
  return AddRow(std::move(row), name, std::move(result), role);
}

Result<PublishResult> PublishSession::AddWhole(IngestedChunk& c, const std::string& name, const ObjectRole& role) {
  if (!name.empty()) CHUNKSTORE_RETURN_IF_ERROR(ValidateName(name));
  CHUNKSTORE_RETURN_IF_ERROR(TakeMark());
  if (c.length == 0) {  // the empty object has no chunk (and is never inline)
    CHUNKSTORE_RETURN_IF_ERROR(FinishObject(Sha256::Of(nullptr, 0), 0, {}, {}, name, PublishResult(), role));
    return results_.back();
  }
  c.offset = 0;
  c.whole_input = true;
  // Larger chunks are looked up one by one as they come (small ones wait
  // for a group): a chunk the store has is not written twice.
  if (!c.known && c.length >= kDeferBelow && c.length > t_.meta.inline_max) {
    Result<std::optional<ChunkLocation>> r = t_.index->Lock()->FindChunk(c.id);
    if (!r.ok()) return r.status();
    c.known = r->has_value();
  }
  PublishResult result;
  SessionSink sink(this, &result);
  CHUNKSTORE_RETURN_IF_ERROR(sink.Accept(c));
  if (sink.inline_content) {
    CHUNKSTORE_RETURN_IF_ERROR(FinishInline(c.id, std::move(*sink.inline_content), name, result, role));
    return results_.back();
  }
  CHUNKSTORE_RETURN_IF_ERROR(FinishObject(c.id, c.length, std::move(sink.entries), {ChainStart()}, name, result, role));
  return results_.back();
}

Result<bool> PublishSession::AddChunk(const Digest& id, const uint8_t* raw, uint32_t length) {
  CHUNKSTORE_RETURN_IF_ERROR(TakeMark());
  if (written_.count(id) || pending_ids_.count(id)) return false;
  Result<std::optional<ChunkLocation>> have = t_.index->Lock()->FindChunk(id);
  if (!have.ok()) return have.status();
  if (have->has_value()) {
    reused_.push_back(id);
    return false;
  }
  std::vector<uint8_t> packed;
  const Codec codec = TryCompress(raw, length, &packed, {t_.meta.compression});
  PublishResult ignored;
  CHUNKSTORE_RETURN_IF_ERROR(WriteChunk(id, raw, length, codec, packed, &ignored));
  return true;
}

Result<PublishResult> PublishSession::AddObject(const Digest& id, uint64_t size, const std::vector<ManifestEntry>& entries,
                                                const std::vector<ChainState>& chain, const std::string& name,
                                                const ObjectRole& role) {
  if (!name.empty()) CHUNKSTORE_RETURN_IF_ERROR(ValidateName(name));
  CHUNKSTORE_RETURN_IF_ERROR(TakeMark());
  ObjectRow row;
  row.id = id;
  row.size = size;
  row.chunk_count = static_cast<uint32_t>(entries.size());
  row.manifest = chain.empty() || entries.empty() ? EncodeManifest(id, size, entries) : EncodeManifest(id, size, entries, chain);
  CHUNKSTORE_RETURN_IF_ERROR(AddRow(std::move(row), name, PublishResult(), role));
  return results_.back();
}

Result<uint64_t> PublishSession::ReuseObject(const Digest& id) {
  CHUNKSTORE_RETURN_IF_ERROR(TakeMark());
  Result<std::optional<ObjectRow>> have = t_.index->Lock()->FindObject(id);
  if (!have.ok()) return have.status();
  if (!have->has_value()) return Status::NotFound("no object " + id.ObjectId());
  reused_objects_.push_back(id);
  return (*have)->size;
}

Status PublishSession::TakeMark() {
  if (mark_) return Status::OK();
  auto db = t_.index->Lock();
  Result<Index::ChangeMark> m = db->Mark();
  if (!m.ok()) return m.status();
  mark_ = *m;
  mark_index_ = db.get();
  return Status::OK();
}

std::vector<ManifestEntry> PublishSession::EarlierVersion(const Source& source, const IngestConfig& cfg) {
  // An object of the same size is likely an earlier version of this input
  // (or this input again): checking its chunks where they were cut costs
  // no chunker pass, and stops helping, at no loss, where the input
  // differs.
  const std::optional<uint64_t> size = source.Size();
  if (!size || *size < kSizeIndexedFrom || !UsesPipeline(cfg, size)) return {};
  auto db = t_.index->Lock();
  Result<std::optional<ObjectRow>> row = db->FindObjectOfSize(*size);
  if (!row.ok() || !row->has_value()) return {};
  const ObjectRow& o = **row;
  Result<std::vector<ManifestEntry>> e = DecodeManifest(o.id, o.size, o.manifest.data(), o.manifest.size());
  if (!e.ok()) return {};
  return std::move(*e);
}

Result<PublishResult> PublishSession::AddSource(Source& source, const std::string& name, const ObjectRole& role) {
  if (!name.empty()) CHUNKSTORE_RETURN_IF_ERROR(ValidateName(name));
  CHUNKSTORE_RETURN_IF_ERROR(TakeMark());
  PublishResult result;
  SessionSink sink(this, &result);
  IngestConfig cfg;
  cfg.chunking = t_.meta.chunking;
  cfg.compress = t_.meta.compression;
  cfg.threads = t_.threads;
  cfg.inline_max = t_.meta.inline_max;
  const std::vector<ManifestEntry> expected = EarlierVersion(source, cfg);
  if (!expected.empty()) cfg.expected = &expected;
  Result<IngestOutcome> out = Ingest(source, cfg, &sink);
  if (!out.ok()) return out.status().WithContext("cannot publish " + source.Describe());
  if (sink.inline_content) {
    CHUNKSTORE_RETURN_IF_ERROR(FinishInline(out->object_id, std::move(*sink.inline_content), name, result, role));
    return results_.back();
  }
  CHUNKSTORE_RETURN_IF_ERROR(
      FinishObject(out->object_id, out->size, std::move(sink.entries), out->chain, name, result, role));
  return results_.back();
}

Result<PublishResult> PublishSession::AddPrepared(const PreparedState& p, const std::string& name) {
  if (!name.empty()) CHUNKSTORE_RETURN_IF_ERROR(ValidateName(name));
  if (p.owner != t_.owner)
    return Status::InvalidArgument("a prepared object can only be published to the store that prepared it");
  CHUNKSTORE_RETURN_IF_ERROR(TakeMark());
  if (p.kind == PreparedState::Kind::kFile) {
    Result<FileStamp> now = p.file->Restat();
    if (!now.ok()) return now.status();
    if (!(*now == p.file->stamp()))
      return Status::InvalidArgument(p.file->Describe() +
                                     " changed after it was prepared; prepare it again");
  }
  PublishResult result;
  std::vector<uint8_t> raw, packed;
  if (p.size > 0 && p.size <= t_.meta.inline_max && p.entries.size() == 1) {
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
      Result<std::optional<ChunkLocation>> r = t_.index->Lock()->FindChunk(e.id);
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
      const Codec codec = TryCompress(raw.data(), e.length, &packed, {t_.meta.compression});
      CHUNKSTORE_RETURN_IF_ERROR(WriteChunk(e.id, raw.data(), e.length, codec, packed, &result));
    }
    offset += e.length;
  }
  CHUNKSTORE_RETURN_IF_ERROR(FinishObject(p.id, p.size, p.entries, p.chain, name, result));
  return results_.back();
}

Status PublishSession::Commit() {
  if (done_) return Status::InvalidArgument("this publish was already committed or abandoned");
  Status s = ResolvePending(nullptr);
  if (s.ok() && objects_.empty() && sealed_.empty() && !writer_ && reused_objects_.empty() &&
      extra_names_.empty()) {  // nothing was added
    done_ = true;
    return Status::OK();
  }
  // The pack bytes first: durable where readers will find them before any
  // change names them.
  if (s.ok() && writer_) s = SealWriter();
  Status sealed = ReapSeals(0);
  if (s.ok()) s = sealed;
  if (!s.ok()) {
    Abort();
    return s.WithContext("cannot publish to " + t_.packs->Describe());
  }
  ChangeSet change;
  change.kind = ChangeSet::kPublish;
  change.time = NowSeconds();
  for (const Sealed& p : sealed_) change.packs.push_back({p.writer->name, p.writer->size});
  for (const auto& [id, loc] : new_chunks_) change.chunks.push_back({id, static_cast<uint32_t>(loc.pack_id), loc});
  for (const auto& [name, id] : names_) {
    // A name's versions are numbered as they are applied; its time is the
    // change's.
    if (!name.empty()) change.names.push_back({name, id, 0, 0});
  }
  for (const ChangeSet::Name& n : extra_names_) change.names.push_back(n);
  std::vector<size_t> result_of;  // per change.objects: its index in results_
  Applied applied;
  bool made = false;
  {
    Result<std::unique_ptr<ChangeLog::Held>> held = t_.log->Hold(false, t_.busy_timeout_ms);
    if (!held.ok()) s = held.status();
    if (s.ok()) {
      // A gc that ran since these chunks were found may have removed them;
      // committing would leave an object pointing at nothing. Unless the
      // index shows that nothing can have removed one, check each again.
      s = CheckPacksStayed();
      auto db = t_.index->Lock();
      ReadTxn txn(db.get());
      if (s.ok()) s = txn.status();
      bool unchanged = false;
      if (s.ok() && mark_ && mark_index_ == db.get()) {
        Result<Index::ChangeMark> now = db->Mark();
        unchanged = now.ok() && *now == *mark_;
      }
      for (size_t i = 0; s.ok() && !unchanged && i < reused_.size(); ++i) {
        Result<std::optional<ChunkLocation>> loc = db->FindChunk(reused_[i]);
        if (!loc.ok()) s = loc.status();
        else if (!loc->has_value())
          s = Status::Busy("a concurrent gc removed chunk " + reused_[i].Hex() +
                           ", which this publish reuses; publish again");
      }
      for (size_t i = 0; s.ok() && !unchanged && i < reused_objects_.size(); ++i) {
        Result<std::optional<ObjectRow>> row = db->FindObject(reused_objects_[i]);
        if (!row.ok()) s = row.status();
        else if (!row->has_value())
          s = Status::Busy("object " + reused_objects_[i].ObjectId() +
                           ", which this publish's tree names, was removed meanwhile; publish again");
      }
      // Members of a tree the store holds as they are would only be
      // repeated in the log (a republished tree names thousands); with the
      // log held, none can go before this change is made.
      for (size_t i = 0; s.ok() && i < objects_.size(); ++i) {
        if (!listed_[i] || !droppable_[i]) continue;
        Result<std::optional<ObjectRow>> have = db->FindObject(objects_[i].id);
        if (!have.ok()) {
          s = have.status();
          break;
        }
        if (!have->has_value()) continue;
        if (objects_[i].tree) {
          Result<bool> tree = db->IsTree(objects_[i].id);
          if (!tree.ok()) s = tree.status();
          if (!tree.ok() || !*tree) continue;
        }
        listed_[i] = false;
      }
    }
    for (size_t i = 0; s.ok() && i < objects_.size(); ++i) {
      if (!listed_[i]) continue;
      result_of.push_back(i);
      change.objects.push_back(std::move(objects_[i]));
    }
    objects_.clear();
    if (s.ok() && !change.empty()) s = (*held)->Commit(change, &applied, &made);
  }
  // An inline object already stored (or added earlier in this session)
  // added nothing after all.
  for (size_t i = 0; i < applied.added.size() && i < change.objects.size(); ++i)
    if (!applied.added[i] && IsInline(change.objects[i].size, change.objects[i].chunk_count))
      results_[result_of[i]].new_bytes = 0;
  // Nor did one left out of the change because the store held it.
  for (size_t i = 0; i < listed_.size(); ++i)
    if (!listed_[i] && IsInline(results_[i].size, static_cast<uint32_t>(results_[i].chunks))) results_[i].new_bytes = 0;
  if (!s.ok() && !made) {
    Abort();
    return s.WithContext("cannot commit the publish");
  }
  for (size_t i = 0, k = 0; i < names_.size(); ++i)
    if (!names_[i].first.empty() && k < applied.versions.size()) results_[i].version = applied.versions[k++];
  done_ = true;
  for (Sealed& p : sealed_) t_.packs->Release(std::move(p.writer), true);
  sealed_.clear();
  return s;  // OK, or: made, but the index has not caught up yet
}

}  // namespace chunkstore::internal
