// SPDX-License-Identifier: Apache-2.0
// verify (verify.h).
#include "maintain/verify.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "format/manifest.h"
#include "format/pack_format.h"
#include "format/tree.h"
#include "hash/sha256_pair.h"
#include "index/apply.h"
#include "index/refs.h"
#include "maintain/settle.h"

namespace chunkstore::internal {

namespace {

struct ChunkToCheck {
  Digest id;
  ChunkLocation loc;
  Digest object;  // the first object found that contains it
  bool has_object = false;
  std::vector<uint32_t> more;  // the other objects that contain it (indices into those walked)
};

class Verifier {
 public:
  Verifier(const VerifyTarget& t, const VerifyOptions& o) : t_(t), o_(o) {}
  Result<VerifyReport> Run();

 private:
  void Problem(std::string kind, const std::string& object, const std::string& chunk, const std::string& pack,
               uint64_t offset, std::string msg) {
    std::lock_guard<std::mutex> l(mu_);
    report_.problems.push_back({std::move(kind), object, chunk, pack, offset, std::move(msg)});
  }
  Status CheckIndexAndLog();
  Status CheckPacks(std::map<int64_t, PackRow>* packs);
  // Reads the objects whole, recomputing their ids, on every core.
  void ReadObjects(const std::vector<ObjectRow>& objects);
  // A tree's content, once proven to be its own: a canonical tree whose
  // entries are the refs its change recorded (gc keeps what those name),
  // whose files have the sizes their objects have and whose directories
  // are trees.
  void CheckTree(const ObjectRow& o, const std::string& content);
  // Every object a tree names is in the store.
  Status CheckTreeRefs(const ObjectRow& o);

  VerifyTarget t_;
  VerifyOptions o_;
  VerifyReport report_;
  std::mutex mu_;
  // Chunks a full read of an object verified, or found damaged (and
  // reported, naming the object).
  std::unordered_set<Digest, DigestHash> verified_;
  std::vector<std::pair<std::string, Status>> failed_reads_;  // object, what failed
  uint64_t objects_read_ = 0;  // for progress
  // Checks of a pack or record begun, counted; every check up to
  // caught_up_after_ began before the index last caught up with the log.
  uint64_t checks_ = 0, caught_up_after_ = 0;
  std::map<int64_t, std::string> pack_names_;  // the packs verify listed, by index id
  bool renumbered_ = false;  // a catch-up rebuilt the index cache: those ids mean other packs now

  // Brings the index up to the log before a missing pack or chunk counts
  // as damage: a gc elsewhere (another machine, on a bucket) may have
  // removed it since this verify listed what to check. A gc records a
  // removal before it deletes, so only a catch-up begun after the check
  // that missed began can tell; one is enough for every check before it.
  // A failure leaves the index as it was.
  void CatchUpSince(uint64_t started) {
    if (caught_up_after_ >= started) return;
    caught_up_after_ = checks_;
    (void)t_.log->CatchUp();
    // A cache far behind starts again from the newest checkpoint, which
    // numbers the packs afresh.
    Result<std::vector<PackRow>> rows = t_.index->Lock()->ListPacks();
    if (!rows.ok()) return;
    for (const PackRow& r : *rows) {
      auto it = pack_names_.find(r.id);
      if (it != pack_names_.end() && it->second != r.name) renumbered_ = true;
    }
    if (renumbered_) t_.packs->ForgetOpen();
  }
  // Whether pack `name`, found missing by the check numbered started, has
  // left the index: a gc removed it, which is no damage.
  bool PackWasRemoved(const std::string& name, uint64_t started) {
    auto gone = [&] {
      Result<std::optional<PackRow>> row = t_.index->Lock()->FindPackByName(name);
      return row.ok() && !row->has_value();
    };
    if (gone()) return true;
    CatchUpSince(started);
    return renumbered_ || gone();
  }
};

// How many times the index is compared with a fresh replay of the log
// before a difference is reported (settle.h).
constexpr int kCompareAttempts = 3;

Status Verifier::CheckIndexAndLog() {
  {
    auto db = t_.index->Lock();
    Result<std::vector<std::string>> sqlite = db->IntegrityCheck();
    if (!sqlite.ok()) return sqlite.status();
    for (const std::string& p : *sqlite) Problem("index-damaged", "", "", "", 0, "the index database: " + p);
  }
  // Writers go on while verify runs: only a difference every one of a few
  // comparisons finds counts (settle.h).
  Result<SettledComparison> settled = CompareSettled(*t_.index, *t_.log, kCompareAttempts, 1000);
  if (!settled.ok()) return settled.status();
  for (const auto& p : settled->log_problems)
    Problem(p.damage ? "log-damaged" : "log-cut-short", "", "", "", 0, p.message);
  if (settled->log_stopped) return Status::OK();
  if (!settled->walk_failed.ok()) {
    // An index too damaged to walk is itself the finding.
    Problem("index-differs", "", "", "", 0, settled->walk_failed.message());
    return Status::OK();
  }
  auto db = t_.index->Lock();
  size_t listed = 0;
  for (const IndexDifference& d : settled->differences)
    if (listed++ < 50) Problem("index-differs", d.object_id, "", "", 0, d.message);
  Result<std::vector<NameRow>> dangling = db->DanglingNames();
  if (!dangling.ok()) return dangling.status();
  for (const NameRow& n : *dangling)
    // Nothing the store does leaves one (removing an object drops its
    // names), so each is damage.
    Problem("dangling-name", n.object.ObjectId(), "", "", 0,
            "name " + n.name + "@" + std::to_string(n.version) + " points at an object the store does not have");
  return Status::OK();
}

Status Verifier::CheckPacks(std::map<int64_t, PackRow>* packs) {
  {
    auto db = t_.index->Lock();
    Result<std::vector<PackRow>> rows = db->ListPacks();
    if (!rows.ok()) return rows.status();
    for (const auto& r : *rows) (*packs)[r.id] = r, pack_names_[r.id] = r.name;
  }
  for (const auto& [id, row] : *packs) {
    const uint64_t started = ++checks_;
    Result<std::unique_ptr<File>> f = t_.packs->Open(row.name, row.size);
    if (!f.ok()) {
      if (!f.status().IsNotFound() && !f.status().IsCorruption()) return f.status();
      if (!PackWasRemoved(row.name, started))
        Problem("missing-pack", "", "", row.name.substr(0, 64), 0, "pack file is missing: " + f.status().message());
      continue;
    }
    uint8_t header[kPackHeaderSize];
    size_t got = 0;
    Status read = (*f)->ReadAt(0, sizeof header, header, &got);
    // A bucket's pack opens without a request; that it is gone shows here.
    if (read.IsNotFound()) {
      if (!PackWasRemoved(row.name, started))
        Problem("missing-pack", "", "", row.name.substr(0, 64), 0, "pack file is missing: " + read.message());
      continue;
    }
    CHUNKSTORE_RETURN_IF_ERROR(read);
    Status decoded = DecodePackHeader(header, got);
    if (!decoded.ok()) Problem("bad-pack-header", "", "", row.name, 0, decoded.message());
    Result<uint64_t> size = (*f)->Size();
    if (size.ok() && *size < row.size)
      Problem("short-pack", "", "", row.name, *size,
              "pack file has " + std::to_string(*size) + " bytes, the store has committed " +
                  std::to_string(row.size));
  }
  Result<std::vector<PackFile>> files = t_.packs->List();
  if (!files.ok()) return files.status();
  std::unordered_set<std::string> known;
  for (const auto& [id, row] : *packs) known.insert(row.name);
  for (const PackFile& f : *files)
    if (!known.count(f.name))
      Problem("orphan-pack", "", "", f.name, 0,
              "pack file is in no committed change (left by an interrupted publish; gc removes it)");
  return Status::OK();
}

void Verifier::CheckTree(const ObjectRow& o, const std::string& content) {
  const std::string oid = o.id.ObjectId();
  Result<TreeData> tree = DecodeTree(content);
  if (!tree.ok()) {
    Problem("bad-tree", oid, "", "", 0, "the tree's content is not a tree: " + tree.status().message());
    return;
  }
  if (TreeRefs(*tree) != o.refs) {
    Problem("bad-tree", oid, "", "", 0, "the objects its change recorded differ from the entries it lists");
    return;
  }
  auto db = t_.index->Lock();
  for (const TreeNode& e : tree->entries) {
    if (e.type == EntryType::kSymlink) continue;
    Result<std::optional<ObjectRow>> row = db->FindObject(e.id);
    if (!row.ok() || !row->has_value()) continue;  // a missing one is reported by CheckTreeRefs
    if (e.type == EntryType::kFile && (*row)->size != e.size)
      Problem("bad-tree", oid, "", "", 0,
              "entry " + e.name.substr(0, 255) + " gives " + std::to_string(e.size) + " bytes; its object " +
                  e.id.ObjectId() + " holds " + std::to_string((*row)->size));
    if (e.type == EntryType::kDirectory) {
      Result<bool> is_tree = db->IsTree(e.id);
      if (is_tree.ok() && !*is_tree)
        Problem("bad-tree", oid, "", "", 0, "entry " + e.name.substr(0, 255) + " is a directory whose object " +
                                                e.id.ObjectId() + " is not a tree");
    }
  }
}

Status Verifier::CheckTreeRefs(const ObjectRow& o) {
  auto db = t_.index->Lock();
  for (const Digest& r : o.refs) {
    Result<std::optional<ObjectRow>> row = db->FindObject(r);
    if (!row.ok()) return row.status();
    if (!row->has_value())
      Problem("dangling-tree-entry", o.id.ObjectId(), "", "", 0,
              "the tree names object " + r.ObjectId() + ", which the store does not have");
  }
  return Status::OK();
}

void Verifier::ReadObjects(const std::vector<ObjectRow>& objects) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    std::vector<uint8_t> buf(1 << 20);
    for (size_t i; (i = next++) < objects.size();) {
      const ObjectRow& o = objects[i];
      const std::string oid = o.id.ObjectId();
      Result<std::unique_ptr<Reader>> r = [&] {
        auto db = t_.index->Lock();
        return OpenObjectReader(t_.read, *db, oid, false);
      }();
      if (!r.ok()) {
        // A missing chunk or a bad manifest is reported from the rows; what
        // is left is a chunk list that cannot be this object's.
        if (r.status().IsCorruption())
          Problem(r.status().chunk_id().empty() ? "bad-object" : "corrupt-chunk", oid, r.status().chunk_id(), "", 0,
                  r.status().message());
        continue;
      }
      // Read from its start to its end, the reader proves the object's id
      // before it hands out the last byte (read/reader.h).
      uint64_t done = 0;
      Status failed;
      std::string content;  // a tree's, to check once it is proven
      while (done < o.size) {
        Result<size_t> n = (*r)->Read(buf.data(), buf.size());
        if (!n.ok()) {
          failed = n.status();
          break;
        }
        if (*n == 0) break;
        if (o.tree && content.size() < kMaxTreeBytes) content.append(reinterpret_cast<const char*>(buf.data()), *n);
        done += *n;
      }
      if (failed.ok() && done == o.size && o.tree) CheckTree(o, content);
      {
        std::lock_guard<std::mutex> l(mu_);
        report_.bytes_checked += done;
        ++objects_read_;
        if (o_.progress) o_.progress(report_.bytes_checked, objects_read_);
      }
      if (failed.ok() && done != o.size) failed = Status::Corruption("object " + oid + " ended early", oid);
      if (!failed.ok()) {
        if (failed.IsCorruption() && failed.chunk_id().empty()) {
          Problem("bad-object", oid, "", "", 0, failed.message());
        } else if (failed.IsCorruption()) {
          // The chunk's own check below says where it is damaged; only a
          // failure that check does not see is reported from here.
          std::lock_guard<std::mutex> l(mu_);
          failed_reads_.push_back({oid, failed});
        }
        continue;
      }
      if (!IsInline(o.size, o.chunk_count)) {
        Result<std::vector<ManifestEntry>> entries = DecodeManifest(o.id, o.size, o.manifest.data(), o.manifest.size());
        if (entries.ok()) {
          std::lock_guard<std::mutex> l(mu_);
          for (const auto& e : *entries) verified_.insert(e.id);
        }
      }
    }
  };
  std::vector<std::thread> workers;
  for (unsigned k = 1; k < std::max(1u, t_.threads); ++k) workers.emplace_back(work);
  work();
  for (auto& w : workers) w.join();
}

Result<VerifyReport> Verifier::Run() {
  const bool whole = o_.refs.empty();
  if (whole) CHUNKSTORE_RETURN_IF_ERROR(CheckIndexAndLog());

  // Objects and their manifests.
  std::vector<ObjectRow> objects;
  if (whole) {
    auto db = t_.index->Lock();
    Status walked = db->ForEachObject([&](const ObjectRow& o) {
      objects.push_back(o);
      return Status::OK();
    });
    if (!walked.ok()) {
      if (!walked.IsCorruption()) return walked;
      Problem("index-damaged", "", "", "", 0, walked.message());
    }
  } else {
    for (const std::string& ref : o_.refs) {
      auto db = t_.index->Lock();
      ObjectRow row;
      Result<Digest> id = ResolveRef(*db, ref, &row);
      if (!id.ok()) return id.status();
      Result<bool> tree = db->IsTree(*id);
      if (!tree.ok()) return tree.status();
      if (*tree) {
        Result<std::vector<Digest>> refs = db->TreeRefsOf(*id);
        if (!refs.ok()) return refs.status();
        row.tree = true;
        row.refs = std::move(*refs);
      }
      objects.push_back(std::move(row));
    }
  }
  std::map<Digest, ChunkToCheck> chunks;  // ordered by id; sorted by place below
  std::vector<ObjectRow> readable;
  for (const ObjectRow& o : objects) {
    const uint32_t walked = static_cast<uint32_t>(&o - objects.data());
    ++report_.objects_checked;
    const std::string oid = o.id.ObjectId();
    if (o.tree) CHUNKSTORE_RETURN_IF_ERROR(CheckTreeRefs(o));
    if (IsInline(o.size, o.chunk_count)) {
      Status s = CheckInline(o.id, o.size, o.manifest);
      if (!s.ok()) Problem("bad-inline", oid, "", "", 0, s.message());
      else if (o.tree && !o_.quick) CheckTree(o, o.manifest);
      report_.bytes_checked += o.manifest.size();
      continue;
    }
    Result<std::vector<ManifestEntry>> entries = DecodeManifest(o.id, o.size, o.manifest.data(), o.manifest.size());
    if (!entries.ok()) {
      Problem("bad-manifest", oid, "", "", 0, entries.status().message());
      continue;
    }
    bool complete = true;
    if (entries->size() != o.chunk_count) {
      Problem("bad-manifest", oid, "", "", 0,
              "manifest lists " + std::to_string(entries->size()) + " chunks, the index says " +
                  std::to_string(o.chunk_count));
      complete = false;
    }
    auto db = t_.index->Lock();
    for (const auto& e : *entries) {
      auto seen = chunks.find(e.id);
      if (seen != chunks.end()) {
        // Kept so that a chunk gc dropped meanwhile counts as damage
        // while any object that needs it is still here.
        ChunkToCheck& c = seen->second;
        if (c.object != o.id && (c.more.empty() || c.more.back() != walked)) c.more.push_back(walked);
        continue;
      }
      Result<std::optional<ChunkLocation>> loc = db->FindChunk(e.id);
      if (!loc.ok()) return loc.status();
      if (!loc->has_value()) {
        Problem("missing-chunk", oid, e.id.Hex(), "", 0, "chunk is not in the index");
        complete = false;
        continue;
      }
      if ((*loc)->raw_len != e.length) {
        Problem("bad-manifest", oid, e.id.Hex(), "", 0, "chunk length differs between manifest and index");
        complete = false;
      }
      chunks[e.id] = {e.id, **loc, o.id, true, {}};
    }
    if (complete && !o_.quick) readable.push_back(o);
  }
  if (whole) {  // chunks no object uses are checked too: they may be needed later
    auto db = t_.index->Lock();
    Status walked = db->ForEachChunk([&](const Digest& id, const ChunkLocation& loc) {
      if (!chunks.count(id)) chunks[id] = {id, loc, Digest{}, false, {}};
    });
    if (!walked.ok()) {
      if (!walked.IsCorruption()) return walked;
      Problem("index-damaged", "", "", "", 0, walked.message());
    }
  }

  std::map<int64_t, PackRow> packs;
  if (whole) {
    CHUNKSTORE_RETURN_IF_ERROR(CheckPacks(&packs));
  } else {
    auto db = t_.index->Lock();
    Result<std::vector<PackRow>> rows = db->ListPacks();
    if (!rows.ok()) return rows.status();
    for (const auto& r : *rows) packs[r.id] = r, pack_names_[r.id] = r.name;
  }

  // Full reads: every object's id recomputed, its chunks verified on the way.
  if (!o_.quick) ReadObjects(readable);

  // The chunks no full read vouched for, in file order per pack so reads
  // are sequential.
  std::vector<const ChunkToCheck*> order;
  for (const auto& [id, c] : chunks) {
    ++report_.chunks_checked;
    if (!verified_.count(id)) order.push_back(&c);
  }
  std::sort(order.begin(), order.end(), [](const ChunkToCheck* a, const ChunkToCheck* b) {
    return a->loc.pack_id != b->loc.pack_id ? a->loc.pack_id < b->loc.pack_id : a->loc.offset < b->loc.offset;
  });
  Buffer raw;
  // A gc running meanwhile may have moved a chunk and deleted the pack it
  // was in: before a pack that is not there counts as damage, the chunk's
  // row is read again, and a chunk now elsewhere is checked there.
  auto still_used = [&](const ChunkToCheck& c) {
    auto here = [&](const Digest& id) {
      Result<std::optional<ObjectRow>> o = t_.index->Lock()->FindObject(id);
      return !o.ok() || o->has_value();
    };
    if (c.has_object && here(c.object)) return true;
    for (uint32_t i : c.more)
      if (here(objects[i].id)) return true;
    return false;
  };
  // started: the number of the check that missed it.
  auto moved_or_removed = [&](const ChunkToCheck& c, uint64_t started) {
    for (int pass = 0; pass < 2; ++pass) {
      if (pass == 1) {
        CatchUpSince(started);
        if (renumbered_) return true;  // verify stops: "run verify again"
      }
      Result<std::optional<ChunkLocation>> now = t_.index->Lock()->FindChunk(c.id);
      if (!now.ok()) return false;
      // gc dropped it: no damage, unless an object that needs it is still
      // here (verify found its chunks indexed when it began).
      if (!now->has_value()) return !still_used(c);
      if ((*now)->pack_id != c.loc.pack_id || (*now)->offset != c.loc.offset) {
        Result<std::shared_ptr<File>> file = t_.packs->ForRead((*now)->pack_id);
        return file.ok() && CheckRecord(**file, c.id, **now, o_.quick, &raw, true, t_.packs->remote()).ok();
      }
    }
    return false;
  };
  for (const ChunkToCheck* c : order) {
    if (renumbered_) break;
    const uint64_t started = ++checks_;
    const std::string oid = c->has_object ? c->object.ObjectId() : "";
    auto pit = packs.find(c->loc.pack_id);
    if (pit == packs.end()) {
      if (!moved_or_removed(*c, started))
        Problem("corrupt-chunk", oid, c->id.Hex(), "", c->loc.offset, "the index names a pack it does not record");
      continue;
    }
    const std::string& pack_name = pit->second.name;
    Result<std::shared_ptr<File>> file = t_.packs->ForRead(c->loc.pack_id);
    if (!file.ok()) {
      if (!file.status().IsCorruption()) return file.status();
      if (!moved_or_removed(*c, started))
        Problem("corrupt-chunk", oid, c->id.Hex(), pack_name, c->loc.offset, "its pack file is missing");
      continue;
    }
    report_.bytes_checked += kRecordHeaderSize + c->loc.stored_len;
    if (o_.progress) o_.progress(report_.bytes_checked, objects_read_);
    Status s = CheckRecord(**file, c->id, c->loc, o_.quick, &raw, true, t_.packs->remote());
    if (s.IsNotFound() && moved_or_removed(*c, started)) continue;
    if (s.IsCorruption()) Problem("corrupt-chunk", oid, c->id.Hex(), pack_name, c->loc.offset, s.message());
    else if (s.IsNotFound()) Problem("corrupt-chunk", oid, c->id.Hex(), pack_name, c->loc.offset, "its pack file is missing");
    else if (!s.ok()) return s;
  }
  std::unordered_set<std::string> damaged_chunks;
  for (const auto& p : report_.problems)
    if (p.kind == "corrupt-chunk") damaged_chunks.insert(p.chunk_id);
  // A read that failed where no record check did is read once more: a gc
  // may have moved the object's chunks under it.
  auto read_again = [&](const std::string& oid) -> Status {
    Result<std::unique_ptr<Reader>> r = [&] {
      auto db = t_.index->Lock();
      return OpenObjectReader(t_.read, *db, oid, false);
    }();
    if (!r.ok()) return r.status();
    std::vector<uint8_t> buf(1 << 20);
    for (;;) {
      Result<size_t> n = (*r)->Read(buf.data(), buf.size());
      if (!n.ok()) return n.status();
      if (*n == 0) return Status::OK();
    }
  };
  if (!failed_reads_.empty()) CatchUpSince(++checks_);
  for (const auto& [oid, failed] : failed_reads_) {
    if (damaged_chunks.count(failed.chunk_id())) continue;
    const Status again = read_again(oid);
    if (again.ok()) continue;
    // Removed since (a gc elsewhere collected it): nothing to check.
    if (again.IsNotFound()) {
      const std::optional<Digest> id = Digest::FromHex(oid.size() > 7 ? oid.substr(7) : oid);
      if (id) {
        Result<std::optional<ObjectRow>> row = t_.index->Lock()->FindObject(*id);
        if (row.ok() && !row->has_value()) continue;
      }
    }
    const Status& shown = again.IsCorruption() ? again : failed;
    Problem("corrupt-chunk", oid, shown.chunk_id().empty() ? failed.chunk_id() : shown.chunk_id(), "", 0,
            shown.message());
  }
  if (renumbered_)
    return Status::Busy("the index cache was rebuilt from the store's log while verify ran (other machines wrote "
                        "checkpoints meanwhile); run verify again");
  return std::move(report_);
}

}  // namespace

Result<VerifyReport> VerifyStore(const VerifyTarget& target, const VerifyOptions& options) {
  Verifier v(target, options);
  return v.Run();
}

}  // namespace chunkstore::internal
