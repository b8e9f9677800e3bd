// verify: re-read stored data and check it, object by object, chunk by
// chunk, and (for the whole store) the index against the pack files.
#include <algorithm>
#include <map>

#include "format/manifest.h"
#include "format/pack_format.h"
#include "index/sql.h"
#include "store/store_impl.h"

namespace chunkstore {

using namespace internal;

namespace {

struct ChunkToCheck {
  Digest id;
  ChunkLocation loc;
  Digest object;  // the first object found that contains it
  bool has_object = false;
};

}  // namespace

Result<VerifyReport> Store::Verify(const VerifyOptions& options) {
  Impl* impl = impl_.get();
  VerifyReport report;
  const bool whole = options.refs.empty();
  auto problem = [&](std::string kind, const std::string& object, const std::string& chunk,
                     const std::string& pack, uint64_t offset, std::string msg) {
    report.problems.push_back({std::move(kind), object, chunk, pack, offset, std::move(msg)});
  };

  // Objects and their manifests.
  std::vector<ObjectRow> objects;
  if (whole) {
    std::lock_guard<std::mutex> l(impl->db_mu);
    Query q(impl->index->db(), "SELECT id FROM objects ORDER BY id");
    if (!q.ok()) return impl->index->Error("verify cannot list objects");
    std::vector<Digest> ids;
    Digest d;
    while (q.use().Step() == SQLITE_ROW)
      if (q.use().ColId(0, &d)) ids.push_back(d);
    for (const Digest& id : ids) {
      Result<std::optional<ObjectRow>> row = impl->index->FindObject(id);
      if (!row.ok()) return row.status();
      if (row->has_value()) objects.push_back(std::move(**row));
    }
  } else {
    for (const std::string& ref : options.refs) {
      Result<Digest> id = impl->ResolveRef(ref);
      if (!id.ok()) return id.status();
      Result<ObjectRow> row = impl->LoadObject(*id);
      if (!row.ok()) return row.status();
      objects.push_back(std::move(*row));
    }
  }

  // Name versions that point at no object: nothing the store does leaves
  // one (removing an object drops its names), so each is damage.
  if (whole) {
    std::lock_guard<std::mutex> l(impl->db_mu);
    Query q(impl->index->db(),
            "SELECT n.name, n.version, n.object FROM names n LEFT JOIN objects o ON o.id = n.object "
            "WHERE o.id IS NULL ORDER BY n.name, n.version");
    if (!q.ok()) return impl->index->Error("verify cannot list names");
    int rc;
    while ((rc = q.use().Step()) == SQLITE_ROW) {
      const std::string name = q.use().ColText(0);
      const int64_t version = q.use().ColInt(1);
      Digest d;
      const bool well_formed = q.use().ColId(2, &d);
      problem("dangling-name", well_formed ? d.ObjectId() : "", "", "", 0,
              "name " + name + "@" + std::to_string(version) + " points at " +
                  (well_formed ? "an object the store does not have" : "a malformed object id"));
    }
    if (rc != SQLITE_DONE) return impl->index->Error("verify cannot list names");
  }

  std::map<Digest, ChunkToCheck> chunks;  // ordered by id; sorted by place below
  for (const ObjectRow& o : objects) {
    ++report.objects_checked;
    const std::string oid = o.id.ObjectId();
    if (IsInline(o.size, o.chunk_count)) {
      Status s = CheckInline(o.id, o.size, o.manifest);
      if (!s.ok()) problem("bad-inline", oid, "", "", 0, s.message());
      report.bytes_checked += o.manifest.size();
      continue;
    }
    Result<std::vector<ManifestEntry>> entries =
        DecodeManifest(o.id, o.size, o.manifest.data(), o.manifest.size());
    if (!entries.ok()) {
      problem("bad-manifest", oid, "", "", 0, entries.status().message());
      continue;
    }
    if (entries->size() != o.chunk_count)
      problem("bad-manifest", oid, "", "", 0,
              "manifest lists " + std::to_string(entries->size()) + " chunks, the index says " +
                  std::to_string(o.chunk_count));
    std::lock_guard<std::mutex> l(impl->db_mu);
    for (const auto& e : *entries) {
      if (chunks.count(e.id)) continue;
      Result<std::optional<ChunkLocation>> loc = impl->index->FindChunk(e.id);
      if (!loc.ok()) return loc.status();
      if (!loc->has_value()) {
        problem("missing-chunk", oid, e.id.Hex(), "", 0, "chunk is not in the index");
        continue;
      }
      if ((*loc)->raw_len != e.length)
        problem("bad-manifest", oid, e.id.Hex(), "", 0,
                "chunk length differs between manifest and index");
      chunks[e.id] = {e.id, **loc, o.id, true};
    }
  }
  if (whole) {  // chunks no object uses are checked too: they may be needed later
    std::lock_guard<std::mutex> l(impl->db_mu);
    Query q(impl->index->db(),
            "SELECT id, pack, offset, raw_len, stored_len, codec, xxh64 FROM chunks");
    if (!q.ok()) return impl->index->Error("verify cannot list chunks");
    while (q.use().Step() == SQLITE_ROW) {
      ChunkToCheck c;
      q.use().ColId(0, &c.id);
      if (chunks.count(c.id)) continue;
      c.loc = ReadChunkLocation(q.use(), 1);
      chunks[c.id] = c;
    }
  }

  // Packs: every row's file exists and is as long as its committed length.
  std::map<int64_t, PackRow> packs;
  {
    std::lock_guard<std::mutex> l(impl->db_mu);
    Result<std::vector<PackRow>> rows = impl->index->ListPacks();
    if (!rows.ok()) return rows.status();
    for (const auto& r : *rows) packs[r.id] = r;
  }
  std::map<int64_t, std::shared_ptr<File>> files;
  for (const auto& [id, row] : packs) {
    Result<std::unique_ptr<File>> f = impl->OpenPack(row.name);
    if (!f.ok()) {
      const int64_t pack_id = id;  // structured bindings cannot be captured before clang 16
      if (whole || std::any_of(chunks.begin(), chunks.end(),
                               [&](const auto& c) { return c.second.loc.pack_id == pack_id; }))
        problem("missing-pack", "", "", row.name, 0, "pack file is missing: " + f.status().message());
      continue;
    }
    uint8_t header[kPackHeaderSize];
    size_t got = 0;
    Status read = (*f)->ReadAt(0, sizeof header, header, &got);
    if (!read.ok()) return read;
    Status decoded = DecodePackHeader(header, got);
    if (!decoded.ok()) problem("bad-pack-header", "", "", row.name, 0, decoded.message());
    Result<uint64_t> size = (*f)->Size();
    if (size.ok() && *size < row.size)
      problem("short-pack", "", "", row.name, *size,
              "pack file has " + std::to_string(*size) + " bytes, the index has committed " +
                  std::to_string(row.size));
    files[id] = std::move(*f);
  }
  if (whole) {
    Result<std::vector<std::string>> names = impl->ListPackFiles();
    if (names.ok()) {
      std::unordered_set<std::string> known;
      for (const auto& [id, row] : packs) known.insert(row.name);
      for (const std::string& n : *names)
        if (!known.count(n))
          problem("orphan-pack", "", "", n, 0,
                  "pack file is not in the index (left by an interrupted publish; gc removes it)");
    }
  }

  // Chunks, in file order per pack so reads are sequential.
  std::vector<const ChunkToCheck*> order;
  for (const auto& [id, c] : chunks) order.push_back(&c);
  std::sort(order.begin(), order.end(), [](const ChunkToCheck* a, const ChunkToCheck* b) {
    return a->loc.pack_id != b->loc.pack_id ? a->loc.pack_id < b->loc.pack_id
                                            : a->loc.offset < b->loc.offset;
  });
  Buffer raw;
  for (const ChunkToCheck* c : order) {
    const std::string oid = c->has_object ? c->object.ObjectId() : "";
    auto pit = packs.find(c->loc.pack_id);
    std::string pack_name;
    if (pit != packs.end()) {
      pack_name = pit->second.name;
    } else {
      pack_name = std::to_string(c->loc.pack_id);
      pack_name.insert(pack_name.begin(), '#');
    }
    auto fit = files.find(c->loc.pack_id);
    ++report.chunks_checked;
    if (fit == files.end()) {
      problem("corrupt-chunk", oid, c->id.Hex(), pack_name, c->loc.offset,
              pit == packs.end() ? "the index names a pack it does not record" : "its pack file is missing");
      continue;
    }
    report.bytes_checked += kRecordHeaderSize + c->loc.stored_len;
    Status s = CheckRecord(*fit->second, c->id, c->loc, options.quick, &raw);
    if (s.IsCorruption()) problem("corrupt-chunk", oid, c->id.Hex(), pack_name, c->loc.offset, s.message());
    else if (!s.ok()) return s;
  }
  return report;
}

}  // namespace chunkstore
