// SPDX-License-Identifier: Apache-2.0
// repair (repair.h).
#include "maintain/repair.h"

#include <map>
#include <set>
#include <unordered_map>

#include "base/clock.h"
#include "format/compress.h"
#include "format/manifest.h"
#include "format/pack_format.h"
#include "hash/digest.h"

namespace chunkstore::internal {

namespace {

bool IsWarning(const std::string& kind) { return kind == "orphan-pack" || kind == "log-cut-short"; }

// The packs one repair writes, in the order the change lists them.
class RepairPacks {
 public:
  explicit RepairPacks(PackSet* packs) : packs_(packs) {}
  ~RepairPacks() { Release(false); }

  // Appends a verified chunk, compressed as the store compresses, and
  // records where it went in *c.
  Status Add(const Digest& id, const Buffer& raw, const Compression& with, ChangeSet* c, uint64_t* written) {
    if (!writer_) {
      Result<std::unique_ptr<PackWriter>> made = packs_->New();
      if (!made.ok()) return made.status();
      writer_ = std::move(*made);
      c->packs.push_back({writer_->name, 0});
    }
    std::vector<uint8_t> packed;
    const Codec codec = TryCompress(raw.data(), raw.size(), &packed, {with});
    const bool compressed = codec != Codec::kRaw;
    const uint8_t* payload = compressed ? packed.data() : raw.data();
    const RecordHeader h = MakeRecordHeader(id, static_cast<uint32_t>(raw.size()), codec, payload,
                                            static_cast<uint32_t>(compressed ? packed.size() : raw.size()));
    uint8_t header[kRecordHeaderSize];
    EncodeRecordHeader(h, header);
    // The change set's chunk names its pack by place (pack_id unused).
    ChangeSet::Chunk chunk{id, static_cast<uint32_t>(c->packs.size() - 1), RecordLocation(h, 0, writer_->size)};
    CHUNKSTORE_RETURN_IF_ERROR(writer_->Append(header, sizeof header, payload, h.stored_len));
    c->chunks.push_back(chunk);
    *written += sizeof header + h.stored_len;
    if (writer_->size >= packs_->seal_at()) Seal(c);
    return Status::OK();
  }

  // Makes every pack durable (before any change names it) and gives the
  // change their lengths.
  Status Finish(ChangeSet* c) {
    if (writer_) Seal(c);
    Status first;
    for (auto& s : sealing_) {
      Status done = s.get();
      if (first.ok() && !done.ok()) first = done;
    }
    sealing_.clear();
    return first;
  }

  // Done with the packs: kept (committed) or dropped.
  void Release(bool committed) {
    for (auto& s : sealing_) s.wait();
    sealing_.clear();
    if (writer_) sealed_.push_back(std::move(writer_));
    for (auto& w : sealed_) packs_->Release(std::move(w), committed);
    sealed_.clear();
  }

 private:
  void Seal(ChangeSet* c) {
    c->packs.back().size = writer_->size;
    sealing_.push_back(packs_->Seal(*writer_));
    sealed_.push_back(std::move(writer_));
  }

  PackSet* packs_;
  std::unique_ptr<PackWriter> writer_;
  std::vector<std::unique_ptr<PackWriter>> sealed_;
  std::vector<std::future<Status>> sealing_;
};

}  // namespace

Result<RepairReport> RepairStoreChunks(const RepairTarget& t, const ChunkFetch& fetch, const RepairOptions& options) {
  const VerifyTarget& v = t.verify;
  // One repair or gc at a time: gc would refuse a pack holding a damaged
  // record anyway, and must not count the new packs as garbage before the
  // change that names them.
  Result<std::unique_ptr<FileLock>> gc_lock = v.log->LockGc();
  if (!gc_lock.ok()) return gc_lock.status();

  VerifyOptions vo;
  vo.progress = options.progress;
  Result<VerifyReport> checked = VerifyStore(v, vo);
  if (!checked.ok()) return checked.status();
  RepairReport report;
  std::map<std::string, std::set<std::string>> damaged;  // chunk id (hex) -> objects needing it
  bool log_damaged = false;
  for (const VerifyProblem& p : checked->problems) {
    // The damage is found in the index; an index that is not its log's
    // view would send the fix to the wrong rows.
    if (p.kind == "index-differs" || p.kind == "index-damaged")
      return Status::Corruption("repair stopped before writing anything: " + p.message +
                                "; run index rebuild, then repair again");
    if (p.kind == "log-damaged") log_damaged = true;
    if ((p.kind == "corrupt-chunk" || p.kind == "missing-chunk") && Digest::FromHex(p.chunk_id)) {
      std::set<std::string>& objects = damaged[p.chunk_id];
      if (!p.object_id.empty()) objects.insert(p.object_id);
    } else if (p.kind == "missing-pack" || p.kind == "short-pack" || p.kind == "bad-pack-header") {
      ++report.pack_files;  // each of its damaged chunks is a problem of its own, above
    } else if (!IsWarning(p.kind)) {
      ++report.other_problems;
    }
  }
  if (log_damaged) {
    // Damage the replay stopped at gave verify nothing to compare the
    // index with, and a change appended after it is one no replay reaches.
    // Damage it went around (a bucket checkpoint passed over for the one
    // before it) leaves the log whole.
    Result<std::vector<ChangeLog::Problem>> log = v.log->Check(nullptr);
    if (!log.ok()) return log.status();
    for (const ChangeLog::Problem& p : *log)
      if (p.stopped)
        return Status::Corruption("repair stopped before writing anything: " + p.message +
                                  "; mend the log first (a bucket: repair quarantine KEY; a directory store: its "
                                  "damaged log segment from a copy), then repair again");
  }
  report.damaged = damaged.size();
  if (damaged.empty()) return report;
  // Verify names one object per damaged chunk; the report names every
  // object whose chunk list has it.
  {
    std::unordered_map<Digest, std::set<std::string>*, DigestHash> wanted;
    for (auto& [hex, objects] : damaged) wanted[*Digest::FromHex(hex)] = &objects;
    auto db = v.index->Lock();
    CHUNKSTORE_RETURN_IF_ERROR(db->ForEachObject([&](const ObjectRow& o) -> Status {
      if (IsInline(o.size, o.chunk_count)) return Status::OK();
      Result<std::vector<ManifestEntry>> entries = DecodeManifest(o.id, o.size, o.manifest.data(), o.manifest.size());
      if (!entries.ok()) return Status::OK();  // verify reported it
      for (const ManifestEntry& e : *entries)
        if (auto it = wanted.find(e.id); it != wanted.end()) it->second->insert(o.id.ObjectId());
      return Status::OK();
    }));
  }

  ChangeSet c;
  RepairPacks out(v.packs);
  for (const auto& [hex, objects] : damaged) {
    const Digest id = *Digest::FromHex(hex);
    Result<std::optional<ChunkLoader::Bytes>> got = fetch(id, objects.empty() ? "" : *objects.begin());
    std::string reason;
    if (!got.ok()) {
      reason = "the source's copy could not be read: " + got.status().message();
    } else if (!got->has_value() || !**got) {
      reason = "the source does not have it";
    } else {
      const Buffer& bytes = ***got;
      // The source is input like any other: only bytes that are the chunk
      // go in, whatever the source checked.
      if (bytes.size() == 0 || bytes.size() > kMaxRecordLength) reason = "the source's copy has an impossible length";
      else if (Sha256::Of(bytes.data(), bytes.size()) != id) reason = "the source's copy does not match its SHA-256";
    }
    if (!reason.empty()) {
      report.unrepaired.push_back({hex, std::vector<std::string>(objects.begin(), objects.end()), reason});
      continue;
    }
    CHUNKSTORE_RETURN_IF_ERROR(out.Add(id, ***got, t.meta.compression, &c, &report.bytes_written));
    report.repaired.push_back(hex);
  }
  if (c.chunks.empty()) return report;
  CHUNKSTORE_RETURN_IF_ERROR(out.Finish(&c));
  for (const auto& p : c.packs) report.packs.push_back(p.name);

  // A gc change: its chunks replace whatever row the index has for them
  // (index/apply.h), where a publish's would keep the row it found.
  c.kind = ChangeSet::kGc;
  c.time = NowSeconds();
  Result<std::unique_ptr<ChangeLog::Held>> held = v.log->Hold(true, t.busy_timeout_ms);
  if (!held.ok()) return held.status();
  bool made = false;
  Status s = (*held)->Commit(c, nullptr, &made);
  held->reset();
  out.Release(made);
  if (!s.ok()) return made ? s.WithContext("the repaired chunks are in the store's log") : s;
  return report;
}

}  // namespace chunkstore::internal
