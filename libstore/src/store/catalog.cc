// SPDX-License-Identifier: Apache-2.0
// The catalog side of a store: stat, names (list, history, tag, remove),
// object removal and store-wide statistics. Every change is a change set
// committed through the store's log, whatever kind of store it is.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "base/clock.h"
#include "format/manifest.h"
#include "format/pack_format.h"
#include "index/refs.h"
#include "store/store_impl.h"
#include "store/trees.h"

namespace chunkstore {

using namespace internal;

namespace {

NameEntry ToEntry(const NameListing& l) {
  return NameEntry{l.row.name, l.row.version, l.row.object.ObjectId(), l.size, l.row.created};
}

// Commits a catalog change: the log is held (so no gc runs meanwhile, and
// check sees every change committed before), check may refuse or complete
// the change, then it is committed.
Status CommitChange(Store::Impl* impl, ChangeSet& change, const std::function<Status(Index&)>& check,
                    Applied* applied) {
  Result<std::unique_ptr<ChangeLog::Held>> held = impl->log->Hold(false, impl->options.busy_timeout_ms);
  if (!held.ok()) return held.status();
  const ChangeSet unchecked = change;
  {
    auto db = impl->index.Lock();
    CHUNKSTORE_RETURN_IF_ERROR(check(*db));
  }
  change.time = NowSeconds();
  (*held)->RecheckWith([&](Index& index, ChangeSet& c) {
    const int64_t time = c.time;
    c = unchecked;
    c.time = time;
    return check(index);
  });
  return (*held)->Commit(change, applied);
}

}  // namespace

bool VerifyReport::corrupt() const {
  for (const auto& p : problems)
    if (p.kind != "orphan-pack" && p.kind != "log-cut-short") return true;
  return false;
}

Result<bool> Store::Exists(const std::string& ref_in) {
  Result<std::string> ref = ExpandRef(impl_.get(), ref_in);
  if (!ref.ok()) return ref.status().IsNotFound() ? Result<bool>(false) : Result<bool>(ref.status());
  Result<Digest> d = ResolveRef(*impl_->index.Lock(), *ref, nullptr);
  if (d.ok()) {
    Result<ObjectRow> row = LoadObject(*impl_->index.Lock(), *d);
    if (row.ok()) return true;
    if (row.status().IsNotFound()) return false;
    return row.status();
  }
  if (d.status().IsNotFound()) return false;
  return d.status();
}

Result<ObjectInfo> Store::Stat(const std::string& ref_in) {
  Result<std::string> ref = ExpandRef(impl_.get(), ref_in);
  if (!ref.ok()) return ref.status();
  auto db = impl_->index.Lock();
  ObjectRow row;
  Result<Digest> id = ResolveRef(*db, *ref, &row);
  if (!id.ok()) return id.status();
  Result<bool> tree = db->IsTree(*id);
  if (!tree.ok()) return tree.status();
  ObjectInfo info;
  info.id = id->ObjectId();
  info.size = row.size;
  info.chunks = row.chunk_count;
  info.created = row.created;
  info.pinned = row.pinned;
  info.tree = *tree;
  info.stored_inline = IsInline(row.size, row.chunk_count);
  if (info.stored_inline) info.stored_bytes = row.manifest.size();
  Result<std::vector<ManifestEntry>> entries =
      info.stored_inline ? std::vector<ManifestEntry>{}
                         : DecodeManifest(*id, row.size, row.manifest.data(), row.manifest.size());
  if (!entries.ok()) return Status::Corruption("object " + info.id + ": " + entries.status().message(), info.id);
  std::unordered_set<Digest, DigestHash> seen;
  for (const auto& e : *entries) {
    if (!seen.insert(e.id).second) continue;
    Result<std::optional<ChunkLocation>> loc = db->FindChunk(e.id);
    if (!loc.ok()) return loc.status();
    if (!loc->has_value()) continue;
    info.stored_bytes += kRecordHeaderSize + (*loc)->stored_len;
    if ((*loc)->codec != Codec::kRaw) ++info.compressed_chunks;
  }
  Result<std::vector<std::string>> names = db->LatestNamesOf(*id);
  if (!names.ok()) return names.status();
  info.names = std::move(*names);
  return info;
}

Result<std::vector<NameEntry>> Store::List(const std::string& prefix) {
  Result<std::vector<NameListing>> rows = impl_->index.Lock()->ListLatest(prefix);
  if (!rows.ok()) return rows.status();
  std::vector<NameEntry> out;
  for (const auto& r : *rows) out.push_back(ToEntry(r));
  return out;
}

Result<std::vector<ObjectInfo>> Store::ListUnnamed() {
  Result<std::vector<ObjectRow>> rows = impl_->index.Lock()->ListUnnamed();
  if (!rows.ok()) return rows.status();
  std::vector<ObjectInfo> out;
  for (const ObjectRow& r : *rows) {
    ObjectInfo o;
    o.id = r.id.ObjectId();
    o.size = r.size;
    o.chunks = r.chunk_count;
    o.created = r.created;
    o.pinned = r.pinned;
    o.stored_inline = IsInline(r.size, r.chunk_count);
    out.push_back(std::move(o));
  }
  return out;
}

Result<std::vector<NameEntry>> Store::History(const std::string& name) {
  CHUNKSTORE_RETURN_IF_ERROR(ValidateName(name));
  Result<std::vector<NameListing>> rows = impl_->index.Lock()->History(name);
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return Status::NotFound("no name " + name);
  std::vector<NameEntry> out;
  for (const auto& r : *rows) out.push_back(ToEntry(r));
  return out;
}

Result<NameEntry> Store::Tag(const std::string& ref_in, const std::string& name) {
  CHUNKSTORE_RETURN_IF_ERROR(ValidateName(name));
  Result<std::string> expanded = ExpandRef(impl_.get(), ref_in);
  if (!expanded.ok()) return expanded.status();
  const std::string& ref = *expanded;
  ChangeSet c;
  c.kind = ChangeSet::kTag;
  Digest id;
  uint64_t size = 0;
  Applied applied;
  CHUNKSTORE_RETURN_IF_ERROR(CommitChange(
      impl_.get(), c,
      [&](Index& index) -> Status {
        // Resolved under the log: the object cannot be removed before the tag.
        ObjectRow row;
        Result<Digest> d = ResolveRef(index, ref, &row);
        if (!d.ok()) return d.status();
        id = *d;
        size = row.size;
        c.names.push_back({name, id, 0, 0});
        return Status::OK();
      },
      &applied));
  if (applied.versions.empty() || applied.versions[0] == 0)
    return Status::NotFound("object " + id.ObjectId() + " was removed by another writer");
  return NameEntry{name, applied.versions[0], id.ObjectId(), size, c.time};
}

Status Store::RemoveName(const std::string& name) { return RemoveNames({name}); }

Status Store::RemoveNames(const std::vector<std::string>& names) {
  if (names.empty()) return Status::InvalidArgument("no names to remove");
  ChangeSet c;
  c.kind = ChangeSet::kRemoveName;
  for (const std::string& name : names) {
    CHUNKSTORE_RETURN_IF_ERROR(ValidateName(name));
    if (std::find(c.removed_names.begin(), c.removed_names.end(), name) == c.removed_names.end())
      c.removed_names.push_back(name);
  }
  return CommitChange(
      impl_.get(), c,
      [&](Index& index) -> Status {
        std::string missing;
        for (const std::string& name : c.removed_names) {
          Result<std::optional<NameRow>> row = index.FindName(name, 0);
          if (!row.ok()) return row.status();
          if (!row->has_value()) missing += (missing.empty() ? "" : ", ") + name;
        }
        if (!missing.empty())
          return Status::NotFound("no name " + missing + (c.removed_names.size() > 1 ? " (nothing removed)" : ""));
        return Status::OK();
      },
      nullptr);
}

Status Store::RemoveObject(const std::string& ref_in) {
  Result<std::string> expanded = ExpandRef(impl_.get(), ref_in);
  if (!expanded.ok()) return expanded.status();
  const std::string& ref = *expanded;
  ChangeSet c;
  c.kind = ChangeSet::kRemoveObject;
  return CommitChange(
      impl_.get(), c,
      [&](Index& index) -> Status {
        ObjectRow row;
        Result<Digest> id = ResolveRef(index, ref, &row);
        if (!id.ok()) return id.status();
        // A tree that names it would lose a file: the tree goes first (or,
        // if no name keeps it, at the next gc, which frees this too).
        Result<std::vector<Digest>> holders = index.TreesHolding(*id, 1);
        if (!holders.ok()) return holders.status();
        if (!holders->empty())
          return Status::InvalidArgument("object " + id->ObjectId() + " is part of tree " +
                                         holders->front().ObjectId() +
                                         "; remove the tree first (a tree no name keeps goes at the next gc)");
        c.removed_objects.push_back(*id);
        return Status::OK();
      },
      nullptr);
}

Result<StoreStats> Store::Stats() {
  IndexTotals t;
  std::unordered_map<std::string, uint64_t> committed;  // pack name -> length the log holds
  {
    auto db = impl_->index.Lock();
    // One consistent snapshot across the queries.
    ReadTxn txn(db.get());
    CHUNKSTORE_RETURN_IF_ERROR(txn.status());
    Result<IndexTotals> got = db->Totals();
    if (!got.ok()) return got.status();
    t = *got;
    Result<std::vector<PackRow>> rows = db->ListPacks();
    if (!rows.ok()) return rows.status();
    for (const PackRow& r : *rows) committed[r.name] = r.size;
  }
  StoreStats st;
  st.objects = t.objects;
  st.logical_bytes = t.logical_bytes;
  st.names = t.names;
  st.chunks = t.chunks;
  st.unique_bytes = t.raw_bytes + t.inline_bytes;
  st.stored_bytes = t.stored_bytes + t.chunks * kRecordHeaderSize + t.inline_bytes;
  st.inline_objects = t.inline_objects;
  st.inline_bytes = t.inline_bytes;
  st.pack_count = t.packs;
  st.pack_bytes = t.pack_bytes;
  const uint64_t used = st.stored_bytes - st.inline_bytes + st.pack_count * kPackHeaderSize;
  st.garbage_bytes = st.pack_bytes > used ? st.pack_bytes - used : 0;
  // Pack bytes the log does not hold: a writer's work in progress, or what
  // a killed one left. Where a free lock proves its writer gone (a
  // directory's flocks), they are garbage the next gc takes at once.
  Result<std::vector<PackFile>> files = impl_->packs->List();
  if (!files.ok()) return files.status();
  const bool can_prove = !impl_->read_only && impl_->packs->LockProvesNoWriter();
  for (const PackFile& f : *files) {
    auto it = committed.find(f.name);
    const uint64_t held = it == committed.end() ? 0 : it->second;
    if (f.size <= held) continue;
    // A young .new file may be a pack being made, not yet locked (gc
    // leaves those for ten minutes too).
    const bool young_new = f.name.size() > 4 && f.name.compare(f.name.size() - 4, 4, ".new") == 0 &&
                           NowSeconds() - f.modified < 600;
    const bool dead = can_prove && !young_new && impl_->packs->LockForMaintenance(f.name).ok();
    (dead ? st.garbage_bytes : st.uncommitted_bytes) += f.size - held;
  }
  return st;
}

}  // namespace chunkstore
