// SPDX-License-Identifier: Apache-2.0
// ApplyChange, Snapshot and CompareIndexes (apply.h).
#include "index/apply.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "format/layout.h"

namespace chunkstore::internal {

Status ApplyChange(Index& index, const ChangeSet& c, Applied* applied) {
  std::vector<int64_t>* versions = applied ? &applied->versions : nullptr;
  if (c.kind == ChangeSet::kCheckpoint) CHUNKSTORE_RETURN_IF_ERROR(index.Clear());
  std::vector<int64_t> pack_ids;
  pack_ids.reserve(c.packs.size());
  for (const auto& p : c.packs) {
    if (!IsPackName(p.name)) return Status::Corruption("a change names a pack '" + p.name + "' that is not a pack name");
    Result<std::optional<PackRow>> row = index.FindPackByName(p.name);
    if (!row.ok()) return row.status();
    if (row->has_value()) {
      if ((*row)->size != p.size) CHUNKSTORE_RETURN_IF_ERROR(index.SetPackSize((*row)->id, p.size));
      pack_ids.push_back((*row)->id);
    } else {
      Result<int64_t> id = index.InsertPack(p.name, p.size);
      if (!id.ok()) return id.status();
      pack_ids.push_back(*id);
    }
  }
  // Rows go in in key order: B-tree inserts that follow each other through
  // the leaves touch each page once, where random ones (ids are hashes)
  // touch a page per row. The result does not depend on the order.
  auto by_id = [](const auto& rows) {
    std::vector<uint32_t> order(rows.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return rows[a].id < rows[b].id; });
    return order;
  };
  for (const uint32_t at : by_id(c.chunks)) {
    const auto& ch = c.chunks[at];
    if (ch.pack >= pack_ids.size()) return Status::Corruption("a change names a pack it does not list");
    ChunkLocation loc = ch.loc;
    loc.pack_id = pack_ids[ch.pack];
    if (c.kind == ChangeSet::kGc || c.kind == ChangeSet::kCheckpoint) {
      CHUNKSTORE_RETURN_IF_ERROR(c.kind == ChangeSet::kGc ? index.PutChunk(ch.id, loc) : index.InsertChunk(ch.id, loc));
      continue;
    }
    Result<std::optional<ChunkLocation>> have = index.FindChunk(ch.id);
    if (!have.ok()) return have.status();
    if (!have->has_value()) {  // the common case: a new chunk, nothing to replace
      CHUNKSTORE_RETURN_IF_ERROR(index.InsertChunk(ch.id, loc));
      continue;
    }
    bool write = false;
    if ((*have)->pack_id != loc.pack_id) {
      Result<std::optional<PackRow>> old = index.FindPack((*have)->pack_id);
      if (!old.ok()) return old.status();
      write = !old->has_value() || c.packs[ch.pack].name < (*old)->name;
    }
    if (write) CHUNKSTORE_RETURN_IF_ERROR(index.PutChunk(ch.id, loc));
  }
  const size_t first = applied ? applied->added.size() : 0;  // what earlier changes appended stays
  if (applied) applied->added.resize(first + c.objects.size(), false);
  for (const uint32_t at : by_id(c.objects)) {
    Result<bool> added = index.InsertObject(c.objects[at]);
    if (!added.ok()) return added.status();
    if (applied) applied->added[first + at] = *added;
  }
  for (const auto& n : c.names) {
    const int64_t created = n.created ? n.created : c.time;
    if (n.version > 0) {
      CHUNKSTORE_RETURN_IF_ERROR(index.PutNameVersion(NameRow{n.name, n.version, n.object, created}));
      if (versions) versions->push_back(n.version);
      continue;
    }
    Result<std::optional<ObjectRow>> ob = index.FindObject(n.object);
    if (!ob.ok()) return ob.status();
    if (!ob->has_value()) {  // removed by a change applied before this one
      if (versions) versions->push_back(0);
      continue;
    }
    Result<int64_t> v = index.AddName(n.name, n.object, created);
    if (!v.ok()) return v.status();
    if (versions) versions->push_back(*v);
  }
  for (const auto& name : c.removed_names) {
    Result<bool> removed = index.RemoveName(name);
    if (!removed.ok()) return removed.status();
  }
  for (const auto& id : c.removed_objects) CHUNKSTORE_RETURN_IF_ERROR(index.DeleteObject(id));
  for (const auto& rc : c.removed_chunks) {
    Result<bool> removed = index.DeleteChunkInPack(rc.id, rc.pack);
    if (!removed.ok()) return removed.status();
  }
  for (const auto& p : c.removed_packs) CHUNKSTORE_RETURN_IF_ERROR(index.DeletePack(p));
  return Status::OK();
}

Result<ChangeSet> Snapshot(Index& index, int64_t time) {
  ChangeSet c;
  c.kind = ChangeSet::kCheckpoint;
  c.time = time;
  Result<std::vector<PackRow>> packs = index.ListPacks();
  if (!packs.ok()) return packs.status();
  std::unordered_map<int64_t, uint32_t> slot;
  for (const PackRow& p : *packs) {
    slot[p.id] = static_cast<uint32_t>(c.packs.size());
    c.packs.push_back({p.name, p.size});
  }
  Status bad;
  CHUNKSTORE_RETURN_IF_ERROR(index.ForEachChunk([&](const Digest& id, const ChunkLocation& loc) {
    auto it = slot.find(loc.pack_id);
    if (it == slot.end()) {
      if (bad.ok()) bad = Status::Corruption("chunk " + id.Hex() + " is indexed in a pack the index does not record");
      return;
    }
    c.chunks.push_back({id, it->second, loc});
  }));
  CHUNKSTORE_RETURN_IF_ERROR(bad);
  CHUNKSTORE_RETURN_IF_ERROR(index.ForEachObject([&](const ObjectRow& o) {
    c.objects.push_back(o);
    return Status::OK();
  }));
  CHUNKSTORE_RETURN_IF_ERROR(index.ForEachName([&](const NameRow& n) {
    c.names.push_back({n.name, n.object, n.version, n.created});
  }));
  return c;
}

namespace {

// A row's content, reduced to 64 bits: two indexes agree on a row when
// their fingerprints do.
uint64_t Fingerprint(const std::string& bytes) { return XxHash64(bytes.data(), bytes.size()); }

std::string ObjectBytes(const ObjectRow& o) {
  std::string s = std::to_string(o.size) + "/" + std::to_string(o.chunk_count) + "/" + std::to_string(o.pinned) + "/" +
                  std::to_string(o.created) + "/" + o.manifest;
  if (o.tree) {
    s += "/tree";
    for (const Digest& r : o.refs) s.append(reinterpret_cast<const char*>(r.bytes.data()), r.bytes.size());
  }
  return s;
}

std::string ChunkBytes(const ChunkLocation& loc, const std::string& pack) {
  return pack + "/" + std::to_string(loc.offset) + "/" + std::to_string(loc.raw_len) + "/" +
         std::to_string(loc.stored_len) + "/" + std::to_string(static_cast<int>(loc.codec)) + "/" +
         std::to_string(loc.xxh64);
}

}  // namespace

Result<std::vector<IndexDifference>> CompareIndexes(Index& index, Index& truth, size_t limit) {
  std::vector<IndexDifference> out;
  auto note = [&](std::string what, const Digest* object = nullptr) {
    if (out.size() < limit) out.push_back({std::move(what), object ? object->ObjectId() : ""});
  };
  // Packs, by name.
  std::map<int64_t, std::string> index_pack_names, truth_pack_names;
  std::map<std::string, uint64_t> truth_packs;
  {
    Result<std::vector<PackRow>> t = truth.ListPacks();
    if (!t.ok()) return t.status();
    for (const PackRow& p : *t) {
      truth_packs[p.name] = p.size;
      truth_pack_names[p.id] = p.name;
    }
    Result<std::vector<PackRow>> i = index.ListPacks();
    if (!i.ok()) return i.status();
    for (const PackRow& p : *i) {
      index_pack_names[p.id] = p.name;
      auto it = truth_packs.find(p.name);
      if (it == truth_packs.end()) note("pack " + p.name + " is in the index but not in the log");
      else if (it->second != p.size)
        note("pack " + p.name + " has " + std::to_string(p.size) + " committed bytes in the index, " +
             std::to_string(it->second) + " in the log");
      if (it != truth_packs.end()) truth_packs.erase(it);
    }
    for (const auto& [name, size] : truth_packs) note("pack " + name + " is in the log but not in the index");
  }
  // Chunks: the truth's fingerprints, then the index's walk.
  std::unordered_map<Digest, uint64_t, DigestHash> chunks;
  CHUNKSTORE_RETURN_IF_ERROR(truth.ForEachChunk([&](const Digest& id, const ChunkLocation& loc) {
    chunks[id] = Fingerprint(ChunkBytes(loc, truth_pack_names[loc.pack_id]));
  }));
  CHUNKSTORE_RETURN_IF_ERROR(index.ForEachChunk([&](const Digest& id, const ChunkLocation& loc) {
    auto it = chunks.find(id);
    if (it == chunks.end()) {
      note("chunk " + id.Hex() + " is in the index but not in the log");
      return;
    }
    if (it->second != Fingerprint(ChunkBytes(loc, index_pack_names[loc.pack_id])))
      note("chunk " + id.Hex() + " is recorded differently in the index and in the log");
    chunks.erase(it);
  }));
  for (const auto& [id, fp] : chunks) note("chunk " + id.Hex() + " is in the log but not in the index");
  // Objects (manifests included).
  std::unordered_map<Digest, uint64_t, DigestHash> objects;
  CHUNKSTORE_RETURN_IF_ERROR(truth.ForEachObject([&](const ObjectRow& o) {
    objects[o.id] = Fingerprint(ObjectBytes(o));
    return Status::OK();
  }));
  CHUNKSTORE_RETURN_IF_ERROR(index.ForEachObject([&](const ObjectRow& o) {
    auto it = objects.find(o.id);
    if (it == objects.end()) note("object " + o.id.ObjectId() + " is in the index but not in the log", &o.id);
    else if (it->second != Fingerprint(ObjectBytes(o)))
      note("object " + o.id.ObjectId() + " (its manifest, size, pin or tree refs) differs between the index and the log", &o.id);
    if (it != objects.end()) objects.erase(it);
    return Status::OK();
  }));
  for (const auto& [id, fp] : objects) note("object " + id.ObjectId() + " is in the log but not in the index", &id);
  // Name versions.
  std::map<std::pair<std::string, int64_t>, Digest> names;
  CHUNKSTORE_RETURN_IF_ERROR(truth.ForEachName([&](const NameRow& n) { names[{n.name, n.version}] = n.object; }));
  CHUNKSTORE_RETURN_IF_ERROR(index.ForEachName([&](const NameRow& n) {
    const std::string what = "name " + n.name + "@" + std::to_string(n.version);
    auto it = names.find({n.name, n.version});
    if (it == names.end()) note(what + " is in the index but not in the log");
    else if (it->second != n.object)
      note(what + " points at " + n.object.ObjectId() + " in the index, " + it->second.ObjectId() + " in the log");
    if (it != names.end()) names.erase(it);
  }));
  for (const auto& [key, object] : names)
    note("name " + key.first + "@" + std::to_string(key.second) + " is in the log but not in the index");
  return out;
}

}  // namespace chunkstore::internal
