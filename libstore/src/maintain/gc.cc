// SPDX-License-Identifier: Apache-2.0
// Garbage collection (gc.h), for directory and bucket stores alike.
#include "maintain/gc.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "base/clock.h"
#include "format/manifest.h"
#include "format/pack_format.h"
#include "index/apply.h"
#include "maintain/settle.h"

namespace chunkstore::internal {

namespace {

struct PackUse {
  PackRow row;
  uint64_t live_bytes = 0;  // record bytes of chunks still needed
};

// gc's verdict, from one read of an index: objects no name or pin keeps,
// chunks no live manifest lists (with their packs), and every pack's live
// bytes.
struct Garbage {
  std::vector<Digest> dead_objects;
  std::vector<std::pair<Digest, std::string>> dead_chunks;  // id, pack name
  std::map<std::string, PackUse> packs;                      // by name
};

Status FindGarbage(Index& index, Garbage* g) {
  Result<std::vector<Digest>> dead = index.DeadObjects();
  if (!dead.ok()) return dead.status();
  g->dead_objects = std::move(*dead);
  std::unordered_set<Digest, DigestHash> dead_set(g->dead_objects.begin(), g->dead_objects.end());
  std::unordered_set<Digest, DigestHash> live;
  CHUNKSTORE_RETURN_IF_ERROR(index.ForEachObject([&](const ObjectRow& o) -> Status {
    if (dead_set.count(o.id)) return Status::OK();
    if (IsInline(o.size, o.chunk_count)) {
      // Needs no chunk, if it is what it seems: a damaged chunk list must
      // not pass for inline content and free the chunks it names.
      Status s = CheckInline(o.id, o.size, o.manifest);
      if (!s.ok())
        return Status::Corruption("gc stopped: object " + o.id.ObjectId() + " has damaged inline content (" +
                                      s.message() + "); run verify",
                                  o.id.ObjectId());
      return Status::OK();
    }
    Result<std::vector<ManifestEntry>> entries = DecodeManifest(o.id, o.size, o.manifest.data(), o.manifest.size());
    // Never guess what a damaged manifest needs: collect nothing.
    if (!entries.ok())
      return Status::Corruption("gc stopped: object " + o.id.ObjectId() + " has a damaged manifest (" +
                                    entries.status().message() + "); run verify",
                                o.id.ObjectId());
    for (const auto& e : *entries) live.insert(e.id);
    return Status::OK();
  }));
  Result<std::vector<PackRow>> rows = index.ListPacks();
  if (!rows.ok()) return rows.status();
  std::map<int64_t, std::string> names;
  for (const PackRow& p : *rows) {
    g->packs[p.name].row = p;
    names[p.id] = p.name;
  }
  Status bad;
  CHUNKSTORE_RETURN_IF_ERROR(index.ForEachChunk([&](const Digest& id, const ChunkLocation& loc) {
    auto it = names.find(loc.pack_id);
    if (it == names.end()) {
      if (bad.ok()) bad = Status::Corruption("gc stopped: chunk " + id.Hex() + " is in a pack the log does not record");
      return;
    }
    if (live.count(id)) g->packs[it->second].live_bytes += kRecordHeaderSize + loc.stored_len;
    else g->dead_chunks.emplace_back(id, it->second);
  }));
  return bad;
}

// Room a compaction leaves for the log record and index rows it writes.
constexpr uint64_t kCompactionSlack = 1 << 20;

uint64_t DataBytes(const PackRow& p) { return p.size > kPackHeaderSize ? p.size - kPackHeaderSize : 0; }

class Collector {
 public:
  Collector(const GcTarget& t, const GcOptions& o) : t_(t), o_(o) {}

  Result<GcReport> Run();

 private:
  // Runs fn holding the log (gc's one hold, where it holds throughout, or
  // a fresh one), with the truth caught up with the log first.
  Status Step(const std::function<Status(ChangeLog::Held&)>& fn);
  // Commits c and brings the truth along; *made: the log has it.
  Status Commit(ChangeLog::Held& held, ChangeSet& c, bool* made = nullptr);
  Status DropEmptyPacks(const Garbage& g);
  Status CompactSparsePacks(const Garbage& g);
  // Packs with live records whose file is shorter than committed or whose
  // header is damaged (the header only where reading it is cheap).
  Result<std::unordered_set<std::string>> DamagedPackFiles(const Garbage& g);
  Status CompactPack(const std::string& name);
  // Copies the live records of names into one new pack and removes them,
  // in one change; false when none had any left.
  Result<bool> CopyPacks(const std::vector<std::string>& names);
  Status MergeSmallPacks(const Garbage& g);
  Status RemoveOrphans();

  GcTarget t_;
  GcOptions o_;
  GcReport report_;
  std::unique_ptr<Index> truth_;
  std::unique_ptr<ChangeLog::Held> throughout_;
  bool changed_ = false;
};

Status Collector::Step(const std::function<Status(ChangeLog::Held&)>& fn) {
  ChangeLog::Held* held = throughout_.get();
  std::unique_ptr<ChangeLog::Held> mine;
  if (!held) {
    Result<std::unique_ptr<ChangeLog::Held>> h = t_.log->Hold(true, t_.busy_timeout_ms);
    if (!h.ok()) return h.status();
    mine = std::move(*h);
    held = mine.get();
  }
  CHUNKSTORE_RETURN_IF_ERROR(held->Replay(*truth_));
  return fn(*held);
}

Status Collector::Commit(ChangeLog::Held& held, ChangeSet& c, bool* made_out) {
  c.kind = ChangeSet::kGc;
  c.time = NowSeconds();
  bool made = false;
  Status s = held.Commit(c, nullptr, &made);
  if (made_out) *made_out = made;
  if (made) changed_ = true;
  CHUNKSTORE_RETURN_IF_ERROR(s);
  return held.Replay(*truth_);
}

Result<GcReport> Collector::Run() {
  std::unique_ptr<FileLock> gc_lock;
  if (!o_.dry_run) {
    Result<std::unique_ptr<FileLock>> l = t_.log->LockGc();
    if (!l.ok()) return l.status();
    gc_lock = std::move(*l);
  }
  // Idle writers of this process hold pack locks; let gc have them.
  t_.packs->DropIdleWriters();
  Result<std::unique_ptr<Index>> truth = t_.index->NewScratch();
  if (!truth.ok()) return truth.status();
  truth_ = std::move(*truth);

  Garbage g;
  // held: null for a dry run, which compared already (CompareSettled).
  auto decide = [&](ChangeLog::Held* held) -> Status {
    // The live index must be what the log says before gc trusts either.
    std::vector<IndexDifference> diffs;
    for (int attempt = 0; held; ++attempt) {
      {
        auto db = t_.index->Lock();
        Result<std::vector<IndexDifference>> d = CompareIndexes(*db, *truth_, 1);
        if (!d.ok()) return d.status();
        diffs = std::move(*d);
      }
      // Where writers do not wait for gc (a bucket's sequenced log), one
      // may have committed between the live index's refresh and the
      // truth's: both follow the log again before the difference counts.
      // (Only a log gc holds throughout, a bucket's, follows itself
      // while held.)
      if (diffs.empty() || !t_.log->gc_holds_throughout() || attempt == 2) break;
      CHUNKSTORE_RETURN_IF_ERROR(t_.log->CatchUp());
      CHUNKSTORE_RETURN_IF_ERROR(held->Replay(*truth_));
    }
    if (!diffs.empty())
      return Status::Corruption("gc stopped: the index differs from the store's log (" + diffs[0].message +
                                    "); run verify, then index rebuild",
                                diffs[0].object_id);
    CHUNKSTORE_RETURN_IF_ERROR(FindGarbage(*truth_, &g));
    report_.objects_removed = g.dead_objects.size();
    report_.chunks_removed = g.dead_chunks.size();
    return Status::OK();
  };

  if (o_.dry_run) {
    // Nothing is held or changed: a replay into the scratch is the truth,
    // and writers go on meanwhile, so only a difference that every one of
    // a few comparisons finds stops the dry run, as it does verify.
    Result<SettledComparison> settled = CompareSettled(*t_.index, *t_.log, 3, 1000);
    if (!settled.ok()) return settled.status();
    for (const auto& p : settled->log_problems)
      if (p.damage) return Status::Corruption("gc stopped: " + p.message);
    if (!settled->walk_failed.ok()) return settled->walk_failed;
    if (!settled->differences.empty()) {
      const IndexDifference& d = settled->differences[0];
      return Status::Corruption("gc stopped: the index differs from the store's log (" + d.message +
                                    "); run verify, then index rebuild",
                                d.object_id);
    }
    truth_ = std::move(settled->truth);
    CHUNKSTORE_RETURN_IF_ERROR(decide(nullptr));
    for (const auto& [name, use] : g.packs) {
      const uint64_t data = DataBytes(use.row);
      if (use.live_bytes == 0) {
        ++report_.packs_deleted;
        report_.bytes_reclaimed += use.row.size;
      } else if (static_cast<double>(use.live_bytes) < o_.compact_below * static_cast<double>(data)) {
        const uint64_t needed = use.live_bytes + kPackHeaderSize + kCompactionSlack;
        if (t_.packs->FreeBytes() < needed) {
          ++report_.packs_left_for_space;
          report_.space_needed = std::max(report_.space_needed, needed);
          continue;
        }
        ++report_.packs_compacted;
        report_.bytes_reclaimed += data - use.live_bytes;
      }
    }
    return report_;
  }

  if (t_.log->gc_holds_throughout()) {
    Result<std::unique_ptr<ChangeLog::Held>> h = t_.log->Hold(true, 0);
    if (!h.ok()) return h.status();
    throughout_ = std::move(*h);
  }
  // Dead objects and chunks: decided and recorded in one step.
  CHUNKSTORE_RETURN_IF_ERROR(Step([&](ChangeLog::Held& held) -> Status {
    CHUNKSTORE_RETURN_IF_ERROR(decide(&held));
    ChangeSet c;
    c.removed_objects = g.dead_objects;
    for (const auto& [id, pack] : g.dead_chunks) c.removed_chunks.push_back({id, pack});
    if (c.empty()) return Status::OK();
    return Commit(held, c);
  }));
  // What frees space without needing any comes first: on a full disk
  // that is what makes room for the compactions after it.
  CHUNKSTORE_RETURN_IF_ERROR(DropEmptyPacks(g));
  CHUNKSTORE_RETURN_IF_ERROR(RemoveOrphans());
  CHUNKSTORE_RETURN_IF_ERROR(CompactSparsePacks(g));
  CHUNKSTORE_RETURN_IF_ERROR(MergeSmallPacks(g));
  throughout_.reset();
  t_.packs->ForgetOpen();
  // A gc is a natural point to fold the log into a checkpoint; one that
  // fails loses nothing (the log stays as it was).
  if (changed_) (void)t_.log->Checkpoint();
  return report_;
}

Status Collector::DropEmptyPacks(const Garbage& g) {
  // The packs whose chunks are all dead, locked so that no writer adopts
  // one while gc removes it.
  std::vector<std::pair<std::string, std::unique_ptr<FileLock>>> locked;
  for (const auto& [name, use] : g.packs) {
    if (use.live_bytes != 0) continue;
    Result<std::unique_ptr<FileLock>> lock = t_.packs->LockForMaintenance(name);
    if (!lock.ok()) {
      if (lock.status().IsBusy()) ++report_.packs_skipped;
      // A pack whose file is gone and whose chunks are all dead (repair
      // wrote its live ones elsewhere) leaves the log too: no writer can
      // adopt a missing file, and nothing needs what it held.
      if (lock.status().IsNotFound()) locked.emplace_back(name, nullptr);
      continue;
    }
    locked.emplace_back(name, std::move(*lock));
  }
  if (locked.empty()) return Status::OK();
  std::vector<std::pair<std::string, uint64_t>> removed;
  bool made = false;
  Status step = Step([&](ChangeLog::Held& held) -> Status {
    ChangeSet c;
    for (const auto& [name, lock] : locked) {
      // A writer may have appended to it between the decision and the lock.
      Result<std::optional<PackRow>> row = truth_->FindPackByName(name);
      if (!row.ok()) return row.status();
      if (!row->has_value()) continue;
      Result<std::vector<std::pair<Digest, ChunkLocation>>> chunks = truth_->ChunksInPack((*row)->id);
      if (!chunks.ok()) return chunks.status();
      if (!chunks->empty()) continue;
      c.removed_packs.push_back(name);
      removed.emplace_back(name, (*row)->size);
    }
    if (c.empty()) return Status::OK();
    return Commit(held, c, &made);
  });
  // Once the log has the change the packs may go, even if the index could
  // not follow for want of space: deleting them is what gives the space
  // back, and the index catches up from the log.
  if (!step.ok() && !(made && IndexBehindLog(step))) return step;
  for (const auto& [name, size] : removed) {
    Status rm = t_.packs->Remove(name);
    if (!rm.ok() && !rm.IsNotFound())
      return rm.WithContext("gc recorded its work but could not delete pack " + name + " (the next gc removes it)");
    ++report_.packs_deleted;
    if (rm.ok()) report_.bytes_reclaimed += size;
  }
  t_.packs->ForgetOpen();
  return Status::OK();
}

Result<std::unordered_set<std::string>> Collector::DamagedPackFiles(const Garbage& g) {
  std::unordered_set<std::string> out;
  Result<std::vector<PackFile>> files = t_.packs->List();
  if (!files.ok()) return files.status();
  std::unordered_map<std::string, uint64_t> sizes;
  for (const PackFile& f : *files) sizes[f.name] = f.size;
  for (const auto& [name, use] : g.packs) {
    auto it = sizes.find(name);
    if (use.live_bytes == 0 || it == sizes.end()) continue;  // a missing one: DropEmptyPacks, once nothing needs it
    if (it->second < use.row.size) {
      out.insert(name);
      continue;
    }
    // The header costs a request per pack on a bucket; a local pack's is
    // one small read.
    if (t_.packs->remote()) continue;
    Result<std::unique_ptr<File>> f = t_.packs->Open(name, use.row.size);
    if (!f.ok()) continue;
    uint8_t header[kPackHeaderSize];
    size_t got = 0;
    if ((*f)->ReadAt(0, sizeof header, header, &got).ok() && !DecodePackHeader(header, got).ok()) out.insert(name);
  }
  return out;
}

Status Collector::CompactSparsePacks(const Garbage& g) {
  // A pack file shorter than the log committed, or with a damaged header,
  // is rewritten whatever its live share: its intact records move to a
  // sound pack and it goes (verify reports it until then). A live record
  // damaged in it stops that copy: repair chunks mends the record first.
  Result<std::unordered_set<std::string>> damaged = DamagedPackFiles(g);
  if (!damaged.ok()) return damaged.status();
  auto sparse = [&](const std::string& name, const PackUse& use) {
    return use.live_bytes != 0 &&
           (damaged->count(name) ||
            static_cast<double>(use.live_bytes) < o_.compact_below * static_cast<double>(DataBytes(use.row)));
  };
  uint64_t total = 0, done = 0;
  for (const auto& [name, use] : g.packs)
    if (sparse(name, use)) total += use.live_bytes;
  for (const auto& [name, use] : g.packs) {
    if (!sparse(name, use)) continue;
    if (o_.progress) o_.progress(done, total);
    done += use.live_bytes;
    // The copy needs room for the live data (and a little for the log and
    // the index): without it a compaction would only fill the disk.
    const uint64_t needed = use.live_bytes + kPackHeaderSize + kCompactionSlack;
    if (t_.packs->FreeBytes() < needed) {
      ++report_.packs_left_for_space;
      report_.space_needed = std::max(report_.space_needed, needed);
      continue;
    }
    Status s = CompactPack(name);
    if (s.IsBusy()) {
      ++report_.packs_skipped;
      continue;
    }
    // A damaged live record stops only this pack's copy: the rest of gc
    // goes on, and the note points to repair.
    if (s.IsCorruption()) {
      ++report_.packs_damaged;
      continue;
    }
    if (s.IsNoSpace() && !IndexBehindLog(s)) {
      // The space went to someone else meanwhile; the copy is gone again.
      ++report_.packs_left_for_space;
      report_.space_needed = std::max(report_.space_needed, needed);
      continue;
    }
    CHUNKSTORE_RETURN_IF_ERROR(s);
  }
  if (o_.progress && total) o_.progress(total, total);
  return Status::OK();
}

Status Collector::CompactPack(const std::string& name) {
  Result<bool> done = CopyPacks({name});
  if (!done.ok()) return done.status();
  return Status::OK();
}

Result<bool> Collector::CopyPacks(const std::vector<std::string>& names) {
  std::vector<std::unique_ptr<FileLock>> locks;
  std::vector<std::string> mine;
  for (const std::string& name : names) {
    Result<std::unique_ptr<FileLock>> lock = t_.packs->LockForMaintenance(name);
    if (!lock.ok()) {
      if (lock.status().IsNotFound()) continue;
      if (names.size() > 1 && lock.status().IsBusy()) continue;  // merged next time
      return lock.status();
    }
    locks.push_back(std::move(*lock));
    mine.push_back(name);
  }
  // Their live records, as the log has them now (nobody can add any while
  // gc holds their locks; only gc removes them).
  struct Source {
    PackRow row;
    std::vector<std::pair<Digest, ChunkLocation>> chunks;
  };
  std::vector<Source> sources;
  CHUNKSTORE_RETURN_IF_ERROR(Step([&](ChangeLog::Held&) -> Status {
    for (const std::string& name : mine) {
      Result<std::optional<PackRow>> row = truth_->FindPackByName(name);
      if (!row.ok()) return row.status();
      if (!row->has_value()) continue;
      Source src;
      src.row = **row;
      Result<std::vector<std::pair<Digest, ChunkLocation>>> c = truth_->ChunksInPack(src.row.id);
      if (!c.ok()) return c.status();
      src.chunks = std::move(*c);
      if (!src.chunks.empty()) sources.push_back(std::move(src));
    }
    return Status::OK();
  }));
  if (sources.empty()) return false;
  Result<std::unique_ptr<PackWriter>> made = t_.packs->New();
  if (!made.ok()) return made.status();
  std::unique_ptr<PackWriter> w = std::move(*made);
  ChangeSet c;
  c.packs.push_back({w->name, 0});
  std::vector<uint8_t> record;
  Status s;
  uint64_t old_data = 0;
  for (const Source& from : sources) {
    old_data += DataBytes(from.row);
    Result<std::unique_ptr<File>> src = t_.packs->Open(from.row.name, from.row.size);
    if (!src.ok()) {
      s = src.status();
      break;
    }
    for (const auto& [id, loc] : from.chunks) {
      record.resize(kRecordHeaderSize + loc.stored_len);
      size_t got = 0;
      s = (*src)->ReadAt(loc.offset, record.size(), record.data(), &got);
      if (!s.ok()) break;
      Result<RecordHeader> h = DecodeRecordHeader(record.data(), got);
      // A damaged record is left where it is (verify reports it); the old
      // pack then stays, since something still points into it.
      if (got != record.size() || !h.ok() || h->chunk_id != id ||
          XxHash64(record.data() + kRecordHeaderSize, loc.stored_len) != loc.xxh64) {
        s = Status::Corruption("gc found chunk " + id.Hex() + " damaged in pack " + from.row.name + " at offset " +
                                   std::to_string(loc.offset) + "; not compacting it (run verify)",
                               "", id.Hex());
        break;
      }
      ChangeSet::Chunk moved{id, 0, loc};
      moved.loc.offset = w->size;
      c.chunks.push_back(moved);
      s = w->Append(record.data(), kRecordHeaderSize, record.data() + kRecordHeaderSize, loc.stored_len);
      if (!s.ok()) break;
    }
    if (!s.ok()) break;
    c.removed_packs.push_back(from.row.name);
  }
  // The copy is durable before any change moves a chunk into it.
  if (s.ok()) s = t_.packs->Seal(*w).get();
  if (!s.ok()) {
    t_.packs->Release(std::move(w), false);
    return s;
  }
  c.packs[0].size = w->size;
  bool committed = false;
  s = Step([&](ChangeLog::Held& held) -> Status { return Commit(held, c, &committed); });
  t_.packs->Release(std::move(w), committed);
  // Once the log durably has the move, the old packs go even if the index
  // could not follow (the error is returned after).
  if (!s.ok() && !(committed && IndexBehindLog(s))) return s;
  t_.packs->ForgetOpen();
  for (const std::string& name : c.removed_packs) {
    Status rm = t_.packs->Remove(name);
    if (!rm.ok() && !rm.IsNotFound())
      return rm.WithContext("gc recorded its work but could not delete pack " + name + " (the next gc removes it)");
  }
  if (c.removed_packs.size() > 1) report_.packs_merged += c.removed_packs.size();
  else ++report_.packs_compacted;
  const uint64_t now_data = c.packs[0].size - kPackHeaderSize;
  report_.bytes_reclaimed += old_data > now_data ? old_data - now_data : 0;
  if (!s.ok()) return s;
  return true;
}

Status Collector::MergeSmallPacks(const Garbage& g) {
  // Where every publish uploads packs of its own (a bucket), small
  // publishes leave many small packs; they are copied together into
  // packs of up to the upload size. A directory's writers append to packs
  // with room instead.
  if (!t_.packs->remote()) return Status::OK();
  const uint64_t target = t_.packs->seal_at(), small = target / 8;
  std::vector<std::vector<std::string>> groups(1);
  uint64_t in_group = 0;
  for (const auto& [name, use] : g.packs) {
    const uint64_t data = DataBytes(use.row);
    const bool sparse = use.live_bytes != 0 &&
                        static_cast<double>(use.live_bytes) < o_.compact_below * static_cast<double>(data);
    if (use.live_bytes == 0 || sparse || data >= small) continue;  // gone, or compacted above, or big enough
    if (in_group + use.live_bytes > target && !groups.back().empty()) {
      groups.emplace_back();
      in_group = 0;
    }
    groups.back().push_back(name);
    in_group += use.live_bytes;
  }
  for (const auto& group : groups) {
    if (group.size() < 2) continue;
    Result<bool> done = CopyPacks(group);
    if (!done.ok()) {
      // Merging is tidying: a busy pack, a cache disk without room for the
      // staged copy, or a damaged record (verify reports it) leave the
      // group as it is and gc goes on.
      if (done.status().IsBusy() || (done.status().IsNoSpace() && !IndexBehindLog(done.status())) ||
          done.status().IsCorruption()) {
        ++report_.packs_skipped;
        continue;
      }
      return done.status();
    }
  }
  return Status::OK();
}

Status Collector::RemoveOrphans() {
  Result<std::vector<PackFile>> files = t_.packs->List();
  if (!files.ok()) return files.status();
  Result<int64_t> now = t_.packs->Now();
  if (!now.ok()) return now.status();
  // A writer killed mid-upload leaves its upload open; one older than the
  // grace period has no writer left to finish it.
  // Best effort: a service or policy that refuses to list uploads must
  // not stop the rest of gc.
  Result<uint64_t> aborted = t_.packs->AbortStaleUploads(*now - o_.orphan_grace_seconds);
  if (aborted.ok()) report_.uploads_aborted += *aborted;
  // A quarantined record's change may have named packs that no readable
  // record names: none of those is deleted while any record is set aside.
  Result<uint64_t> quarantined = t_.log->Quarantined();
  if (!quarantined.ok()) return quarantined.status();
  const bool keep_unnamed = *quarantined > 0;
  std::vector<std::pair<PackFile, std::unique_ptr<FileLock>>> candidates, tails;
  for (const PackFile& f : *files) {
    Result<std::optional<PackRow>> known = truth_->FindPackByName(f.name);
    if (!known.ok()) return known.status();
    if (!known->has_value() && keep_unnamed) continue;
    if (known->has_value()) {
      // Bytes past what the log holds, on a pack no writer holds: what a
      // killed writer appended. Cut at once where a free lock proves it.
      if (f.size > (**known).size && t_.packs->LockProvesNoWriter()) {
        Result<std::unique_ptr<FileLock>> lock = t_.packs->LockForMaintenance(f.name);
        if (lock.ok()) tails.emplace_back(f, std::move(*lock));
      }
      continue;
    }
    const bool is_new = f.name.size() > 4 && f.name.compare(f.name.size() - 4, 4, ".new") == 0;
    // A .new file may be a pack being created this instant, not yet
    // locked: never younger than ten minutes, whatever the grace option.
    // A named pack is locked by its writer from before it had its name
    // until its commit: where locks prove that, a free lock on a pack the
    // log does not name (checked again below under the log's lock) means
    // its writer died, and it goes at once, however young. Elsewhere (a
    // bucket) only its age says so.
    const int64_t min_age = is_new                           ? std::max<int64_t>(o_.orphan_grace_seconds, 600)
                            : t_.packs->LockProvesNoWriter() ? 0
                                                             : o_.orphan_grace_seconds;
    if (*now - f.modified < min_age) continue;
    Result<std::unique_ptr<FileLock>> lock = t_.packs->LockForMaintenance(f.name);
    if (!lock.ok()) continue;  // a writer has it (or it is gone)
    candidates.emplace_back(f, std::move(*lock));
  }
  if (candidates.empty() && tails.empty()) return Status::OK();
  // Only what the log still does not name once gc holds both the log and
  // the pack's lock is an orphan; only what lies past its length then is
  // a tail.
  return Step([&](ChangeLog::Held&) -> Status {
    for (const auto& [f, lock] : tails) {
      Result<std::optional<PackRow>> known = truth_->FindPackByName(f.name);
      if (!known.ok()) return known.status();
      if (!known->has_value() || f.size <= (**known).size) continue;
      if (t_.packs->CutTail(f.name, (**known).size).ok()) report_.bytes_reclaimed += f.size - (**known).size;
    }
    for (const auto& [f, lock] : candidates) {
      Result<std::optional<PackRow>> known = truth_->FindPackByName(f.name);
      if (!known.ok()) return known.status();
      if (known->has_value()) continue;
      if (t_.packs->Remove(f.name).ok()) {
        ++report_.packs_deleted;
        report_.bytes_reclaimed += f.size;
      }
    }
    return Status::OK();
  });
}

}  // namespace

Result<GcReport> CollectGarbage(const GcTarget& target, const GcOptions& options) {
  Collector c(target, options);
  Result<GcReport> r = c.Run();
  // Whole dead packs go without room to spare, but every step is recorded
  // in the log and the index first: a disk without even that room needs
  // its user to free some.
  if (!r.ok() && r.status().IsNoSpace())
    return Status::NoSpace("gc cannot record its work, the disk is full (" + r.status().message() +
                           "); free a few MiB and run gc again");
  return r;
}

}  // namespace chunkstore::internal
