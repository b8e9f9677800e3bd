// SPDX-License-Identifier: Apache-2.0
// Copying objects between stores (store.h, Store::CopyTo): only what the
// destination lacks, verified as it is read, committed in pieces so that a
// copy that stops keeps what it did.
//
// Objects are handled depth first, a tree's members before the tree, so a
// tree is never committed before what it names. For each object the
// destination lacks, its chunks the destination lacks are loaded from the
// source (each checked against its SHA-256 by the loader) a few at a time
// on a pool of threads and written by one publish session. Its whole
// content is hashed in the same pass, in order (the chunks the destination
// holds read there, or from the source where the destination is a
// bucket), and its row follows its chunks only once that hash is its id:
// the source's manifest with the chain states computed here. The session
// commits whenever it has written commit_every bytes, and a new one goes
// on: chunks committed earlier are then found in the destination, and a
// rerun after a failure finds them too. To an http:// store the same
// happens through a push sink (copy_sink.h): each commit is one push
// stream, which the server checks whole (ids included) before committing
// it.
#include <algorithm>
#include <chrono>
#include <deque>
#include <future>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "base/task_pool.h"
#include "format/manifest.h"
#include "format/tree.h"
#include "hash/sha256_pair.h"
#include "index/refs.h"
#include "ingest/source.h"
#include "read/reader.h"
#include "store/copy_sink.h"
#include "store/store_impl.h"
#include "store/trees.h"

namespace chunkstore {

using namespace internal;

namespace {

class Copier {
 public:
  Copier(Store::Impl* src, Store::Impl* dst, const CopyOptions& o, CopyReport* report)
      : src_(src), dst_(dst), o_(o), report_(report),
        parallel_(o.parallel ? o.parallel : src->blobs ? 16 : std::max(1u, src->threads)), pool_(parallel_),
        sink_(dst->push_url.empty() ? NewSessionSink(dst) : NewPushSink(dst)) {
    const ChunkerParams& a = src->meta.chunking;
    const ChunkerParams& b = dst->meta.chunking;
    rechunk_ = a.min_size != b.min_size || a.avg_size != b.avg_size || a.max_size != b.max_size || a.level != b.level;
    prove_ = dst->push_url.empty();
  }

  // Copies id and everything it needs; pinned: kept at the destination as
  // published without a name.
  Status Object(const Digest& id, bool pinned, int depth = 0);
  // Copies a name's whole history (its objects first).
  Status Name(const std::string& name);
  Status Finish() { return Commit(); }
  uint64_t sink_requests() const { return sink_->requests(); }

 private:
  Status Commit() {
    bool committed = false;
    Status s = sink_->Commit(&committed);
    if (committed) ++report_->commits;
    return s;
  }
  // Commits once enough has been written since the last commit.
  Status MaybeCommit() {
    if (sink_->pending_bytes() >= o_.commit_every) return Commit();
    return Status::OK();
  }
  bool Cancelled() const { return o_.cancel && o_.cancel->load(std::memory_order_relaxed); }
  // An object the session is about to name (a tree's member, a name's
  // version): in the session, or checked to be in the destination and
  // checked again at commit. An earlier commit of this copy put it there,
  // and until something names it a gc there may take it.
  Status Named(const Digest& id) { return sink_->Named(id); }
  // Whether the destination holds id as it should be (a tree as a tree);
  // *pinned says whether it is pinned there.
  Result<bool> DstHas(const Digest& id, bool tree, bool* pinned) {
    auto db = dst_->index.Lock();
    Result<std::optional<ObjectRow>> row = db->FindObject(id);
    if (!row.ok()) return row.status();
    if (!row->has_value()) return false;
    *pinned = (*row)->pinned;
    if (!tree) return true;
    return db->IsTree(id);
  }
  // Adds the chunks of an object the destination lacks; with prove_, also
  // hashes its whole content against its id and puts the chain states
  // computed here into *m.
  Status Chunks(const ObjectRow& row, Manifest* m);
  // A chunk of the object in hand, verified: into the sink if add (the
  // destination lacks it), counted as sent or skipped.
  Status Added(const Digest& id, bool add, const Buffer& b) {
    if (!add) return Status::OK();
    Result<bool> written = sink_->AddChunk(id, b.data(), static_cast<uint32_t>(b.size()));
    if (!written.ok()) return written.status();
    if (*written) {
      ++report_->chunks_sent;
      report_->bytes_sent += b.size();
    } else {
      ++report_->chunks_skipped;
    }
    return Status::OK();
  }

  Store::Impl* src_;
  Store::Impl* dst_;
  const CopyOptions& o_;
  CopyReport* report_;
  const unsigned parallel_;
  TaskPool pool_;
  TaskPool hasher_{1};  // proofs: one object's content hashed in order
  std::unique_ptr<CopySink> sink_;
  // The destination cuts differently: objects are read whole and cut as
  // it cuts, so that its own later publishes of the same content find
  // the same chunks.
  bool rechunk_ = false;
  // The source's chunk lists are input: a copy into a store this process
  // opened proves each object's id from its bytes before it adds its row
  // (a server proves a push itself). An object whose list names the
  // chunks of other content would otherwise become the destination's row
  // for that id, and a later publish of the real content would find the
  // id there and store nothing.
  bool prove_ = true;
  std::unordered_set<Digest, DigestHash> done_;  // objects handled by this copy
  uint64_t objects_done_ = 0;
};

// What a copy says of a chunk whose destination copy is damaged: the copy
// stops (its proof needs every byte), and this mends the destination.
constexpr const char* kMendHint =
    "`chunkstore --store DST repair chunks --from SRC` writes it again from the source's good copy";

Status Copier::Chunks(const ObjectRow& row, Manifest* m) {
  const std::string oid = row.id.ObjectId();
  const std::vector<ManifestEntry>& entries = m->entries;
  // Where each distinct chunk is: at the source (it must be), and at the
  // destination if it holds it already.
  struct Where {
    ChunkLocation src;
    std::optional<ChunkLocation> dst;
    size_t last = 0;  // its last place in the object
  };
  std::unordered_map<Digest, Where, DigestHash> where;
  std::vector<size_t> to_add;  // first places of the chunks the destination lacks
  {
    auto src_db = src_->index.Lock();
    for (size_t i = 0; i < entries.size(); ++i) {
      auto [at, fresh] = where.try_emplace(entries[i].id);
      at->second.last = i;
      if (!fresh) continue;
      Result<std::optional<ChunkLocation>> loc = src_db->FindChunk(entries[i].id);
      if (!loc.ok()) return loc.status();
      if (!loc->has_value())
        return Status::Corruption("object " + oid + ": chunk " + entries[i].id.Hex() + " is not in the source's index",
                                  oid, entries[i].id.Hex());
      at->second.src = **loc;
    }
  }
  {
    auto dst_db = dst_->index.Lock();
    std::unordered_set<Digest, DigestHash> seen;
    for (size_t i = 0; i < entries.size(); ++i) {
      if (!seen.insert(entries[i].id).second) continue;
      Result<std::optional<ChunkLocation>> have = dst_db->FindChunk(entries[i].id);
      if (!have.ok()) return have.status();
      where[entries[i].id].dst = *have;
      if (have->has_value() || sink_->Sent(entries[i].id)) ++report_->chunks_skipped;
      else to_add.push_back(i);
    }
  }
  // Without proof (a push, which its server proves) only the chunks the
  // destination lacks are read; with it, every place in order.
  std::vector<size_t> places;
  if (prove_) {
    places.resize(entries.size());
    for (size_t i = 0; i < places.size(); ++i) places[i] = i;
  } else {
    places = to_add;
  }
  std::unordered_set<size_t> adding(to_add.begin(), to_add.end());
  // A chunk the destination holds is read there for the proof when the
  // destination is on this machine, and from the source otherwise. With
  // proof, a load checks the record but not the SHA-256: each chunk's own
  // hash runs in the same pass as the object's (Sha256Stream::
  // UpdateAlongside), on a thread of its own, in order, and a chunk is
  // added only once its hash is its id. A chunk that comes again later in
  // the object is kept, verified, until then (up to kKeptBytes).
  constexpr size_t kKeptBytes = 64u << 20;
  std::unordered_map<Digest, ChunkLoader::Bytes, DigestHash> kept;
  size_t kept_bytes = 0;
  struct Loaded {
    size_t place;
    bool verified;  // kept from an earlier place
    bool at_dst;    // read from the destination
    std::future<Result<ChunkLoader::Bytes>> bytes;
  };
  auto load = [this, oid, &where, &entries, &kept](size_t i, bool add) {
    const Where& w = where.at(entries[i].id);
    if (auto k = kept.find(entries[i].id); k != kept.end()) {
      std::promise<Result<ChunkLoader::Bytes>> ready;
      ready.set_value(k->second);
      return Loaded{i, true, false, ready.get_future()};
    }
    ChunkLoader* from = src_->loader.get();
    ChunkLocation loc = w.src;
    const bool at_dst = !add && w.dst && !dst_->blobs;
    if (at_dst) {
      from = dst_->loader.get();
      loc = *w.dst;
    }
    const bool check_sha = !prove_;
    return Loaded{i, false, at_dst, pool_.Submit([from, oid, id = entries[i].id, loc, check_sha] {
                    return from->Load(oid, id, loc, false, false, check_sha);
                  })};
  };
  Sha256Stream hash;
  uint64_t hashed = 0;
  struct Hashing {
    size_t place;
    ChunkLoader::Bytes bytes;
    std::future<Status> checked;
  };
  std::deque<Hashing> hashing;
  std::deque<Loaded> inflight;
  struct Drain {  // what uses the stream and the buffers ends first, whatever the way out
    std::deque<Loaded>& loads;
    std::deque<Hashing>& hashes;
    ~Drain() {
      for (auto& l : loads) l.bytes.wait();
      for (auto& h : hashes) h.checked.wait();
    }
  } drain{inflight, hashing};
  // Takes the oldest chunk whose hash is done into the sink.
  auto settle = [&]() -> Status {
    Hashing h = std::move(hashing.front());
    hashing.pop_front();
    CHUNKSTORE_RETURN_IF_ERROR(h.checked.get());
    return Added(entries[h.place].id, adding.count(h.place) > 0, *h.bytes);
  };
  const size_t window = 2 * parallel_;
  size_t next = 0;
  while (next < places.size() || !inflight.empty()) {
    while (inflight.size() < window && next < places.size()) {
      inflight.push_back(load(places[next], adding.count(places[next]) > 0));
      ++next;
    }
    Loaded front = std::move(inflight.front());
    inflight.pop_front();
    const size_t i = front.place;
    if (Cancelled()) {
      front.bytes.wait();  // its buffer goes with it
      return Status::IOError("interrupted");
    }
    Result<ChunkLoader::Bytes> bytes = front.bytes.get();
    if (bytes.ok() && (*bytes)->size() != entries[i].length)
      bytes = Status::Corruption("object " + oid + ": chunk " + entries[i].id.Hex() + " is " +
                                     std::to_string((*bytes)->size()) + " bytes, not the " +
                                     std::to_string(entries[i].length) + " its chunk list says",
                                 oid, entries[i].id.Hex());
    if (!bytes.ok()) {
      if (front.at_dst && bytes.status().IsCorruption())
        return Status::Corruption(bytes.status().message() + " (the destination's copy; " + kMendHint + ")",
                                  bytes.status().object_id(), bytes.status().chunk_id());
      return bytes.status();
    }
    if (!prove_) {
      CHUNKSTORE_RETURN_IF_ERROR(Added(entries[i].id, adding.count(i) > 0, **bytes));
      continue;
    }
    const bool check_own = !front.verified;
    const std::string where_read =
        front.at_dst ? std::string("the destination's copy does not match its SHA-256 (") + kMendHint + ")"
                     : std::string("the source's copy does not match its SHA-256");
    hashing.push_back({i, *bytes,
                       hasher_.Submit([&hash, &hashed, held = *bytes, id = entries[i].id, oid, check_own,
                                       where_read]() -> Status {
                         const uint8_t* p = held->data();
                         size_t left = held->size();
                         hash.MarkChunk();
                         Sha256Partial own;
                         if (check_own) {
                           own.Start(p, left);
                           while (left > 0 && own.HasBlocks()) {
                             const size_t used = hash.UpdateAlongside(p, left, own);
                             p += used;
                             left -= used;
                           }
                         }
                         hash.Update(p, left);
                         hashed += held->size();
                         if (check_own && own.Finish() != id)
                           return Status::Corruption("object " + oid + ": chunk " + id.Hex() + ": " + where_read,
                                                     oid, id.Hex());
                         return Status::OK();
                       })});
    // What comes again stays, verified, once its hash is done.
    while (!hashing.empty() &&
           (hashing.size() > window ||
            hashing.front().checked.wait_for(std::chrono::seconds(0)) == std::future_status::ready)) {
      const size_t at = hashing.front().place;
      ChunkLoader::Bytes held = hashing.front().bytes;
      CHUNKSTORE_RETURN_IF_ERROR(settle());
      const Where& w = where.at(entries[at].id);
      if (w.last > at && !kept.count(entries[at].id) && kept_bytes + held->size() <= kKeptBytes) {
        kept_bytes += held->size();
        kept.emplace(entries[at].id, std::move(held));
      }
    }
  }
  while (!hashing.empty()) CHUNKSTORE_RETURN_IF_ERROR(settle());
  if (!prove_) return Status::OK();
  const Digest got = hash.Finish();
  if (hashed != row.size || got != row.id)
    return Status::Corruption("object " + oid + ": the source's chunk list for it makes other content (sha256:" +
                                  got.Hex() + ", " + std::to_string(hashed) + " bytes)",
                              oid);
  // The chain states as computed here, not as the source gave them.
  m->chain = std::move(hash.chain());
  return Status::OK();
}

Status Copier::Object(const Digest& id, bool pinned, int depth) {
  if (depth > kMaxTreeDepth) return Status::Corruption("trees nest deeper than " + std::to_string(kMaxTreeDepth) + " levels");
  if (!done_.insert(id).second) return Status::OK();
  if (Cancelled()) return Status::IOError("interrupted");
  const std::string oid = id.ObjectId();
  ObjectRow row;
  {
    auto db = src_->index.Lock();
    Result<ObjectRow> r = LoadObject(*db, id);
    if (!r.ok()) return r.status();
    row = std::move(*r);
    Result<bool> tree = db->IsTree(id);
    if (!tree.ok()) return tree.status();
    if (*tree) {
      Result<std::vector<Digest>> refs = db->TreeRefsOf(id);
      if (!refs.ok()) return refs.status();
      row.tree = true;
      row.refs = std::move(*refs);
    }
  }
  bool pinned_there = false;
  Result<bool> have = DstHas(id, row.tree, &pinned_there);
  if (!have.ok()) return have.status();
  if (*have && (!pinned || pinned_there)) {
    // A tree the destination holds holds everything it names already.
    ++report_->objects_present;
    return Status::OK();
  }
  for (const Digest& child : row.refs) CHUNKSTORE_RETURN_IF_ERROR(Object(child, false, depth + 1));
  for (const Digest& child : row.refs) CHUNKSTORE_RETURN_IF_ERROR(Named(child));
  ObjectRole role;
  role.member = !pinned;
  role.tree = row.tree;
  role.refs = row.refs;
  if (IsInline(row.size, row.chunk_count)) {
    // Content in the row: checked, then stored as the destination stores
    // small objects (inline, or as a chunk on a bucket).
    CHUNKSTORE_RETURN_IF_ERROR(CheckInline(id, row.size, row.manifest));
    CHUNKSTORE_RETURN_IF_ERROR(sink_->AddWhole(id, row.manifest, role));
    if (*have) ++report_->objects_present;
    else ++report_->objects_copied;
  } else if (rechunk_ && !*have) {
    // A whole read in order, which also proves the object's id, through
    // the destination's own ingest.
    Result<std::unique_ptr<Reader>> reader = [&] {
      auto db = src_->index.Lock();
      ReadSource once = src_->read_source();
      once.disk_cache = false;
      return OpenObjectReader(once, *db, oid, false);
    }();
    if (!reader.ok()) return reader.status();
    Reader* r = reader->get();
    PullSource source([this, r](void* buf, size_t n) -> Result<size_t> {
      if (Cancelled()) return Status::IOError("interrupted");
      return r->Read(buf, n);
    });
    uint64_t written = 0, reused = 0;
    CHUNKSTORE_RETURN_IF_ERROR(sink_->AddSource(id, row.size, source, role, &written, &reused));
    report_->chunks_sent += written;
    report_->chunks_skipped += reused;
    report_->bytes_sent += row.size;
    ++report_->objects_copied;
  } else {
    // An object the destination has, copied to be pinned there: only the
    // pin is new, and the destination's own row goes with it, never the
    // source's unproven chunk list.
    ObjectRow use = row;
    if (*have && prove_) {
      auto db = dst_->index.Lock();
      Result<ObjectRow> mine = LoadObject(*db, id);
      if (!mine.ok()) return mine.status();
      use = std::move(*mine);
    }
    if (IsInline(use.size, use.chunk_count)) {
      CHUNKSTORE_RETURN_IF_ERROR(CheckInline(id, use.size, use.manifest));
      CHUNKSTORE_RETURN_IF_ERROR(sink_->AddWhole(id, use.manifest, role));
      ++report_->objects_present;
      ++objects_done_;
      if (o_.progress) o_.progress(report_->bytes_sent, objects_done_);
      return MaybeCommit();
    }
    Result<Manifest> m = DecodeManifestWithChain(id, use.size, use.manifest.data(), use.manifest.size());
    if (!m.ok()) return Status::Corruption("object " + oid + ": " + m.status().message(), oid);
    if (m->entries.size() != use.chunk_count)
      return Status::Corruption("object " + oid + ": its manifest and its row disagree on its chunks", oid);
    if (!*have) CHUNKSTORE_RETURN_IF_ERROR(Chunks(row, &*m));
    CHUNKSTORE_RETURN_IF_ERROR(sink_->AddObject(id, use.size, *m, role));
    if (*have) ++report_->objects_present;
    else ++report_->objects_copied;
  }
  ++objects_done_;
  if (o_.progress) o_.progress(report_->bytes_sent, objects_done_);
  return MaybeCommit();
}

Status Copier::Name(const std::string& name) {
  std::vector<NameListing> src_history, dst_history;
  {
    Result<std::vector<NameListing>> h = src_->index.Lock()->History(name);
    if (!h.ok()) return h.status();
    src_history = std::move(*h);
  }
  {
    Result<std::vector<NameListing>> h = dst_->index.Lock()->History(name);
    if (!h.ok()) return h.status();
    dst_history = std::move(*h);
  }
  // Oldest first.
  std::reverse(src_history.begin(), src_history.end());
  std::reverse(dst_history.begin(), dst_history.end());
  size_t common = 0;
  while (common < src_history.size() && common < dst_history.size() &&
         src_history[common].row.version == dst_history[common].row.version &&
         src_history[common].row.object == dst_history[common].row.object)
    ++common;
  if (common < dst_history.size()) report_->diverged.push_back(name);
  for (size_t i = common; i < src_history.size(); ++i) {
    const NameRow& v = src_history[i].row;
    CHUNKSTORE_RETURN_IF_ERROR(Object(v.object, false));
    CHUNKSTORE_RETURN_IF_ERROR(Named(v.object));
    CHUNKSTORE_RETURN_IF_ERROR(sink_->AddNameVersion(name, v.object, v.created));
    ++report_->name_versions;
  }
  return MaybeCommit();
}

}  // namespace

Result<CopyReport> Store::CopyTo(Store& dst, const std::vector<std::string>& refs, const CopyOptions& options) {
  if (dst.impl_ == impl_ || dst.impl_->store_id == impl_->store_id)
    return Status::InvalidArgument("the source and the destination are the same store");
  if (dst.impl_->read_only) return Status::InvalidArgument("the destination " + dst.dir() + " is read-only");
  if (!dst.impl_->push_url.empty() && dst.impl_->options.http_token.empty())
    return Status::InvalidArgument("copying to " + dst.dir() +
                                   " needs the token of its server (serve --allow-write --token-file)");
  // What to copy, settled before anything is: names, then objects.
  std::vector<std::string> names;
  std::vector<Digest> objects;
  if (refs.empty()) {
    Result<std::vector<NameListing>> all = impl_->index.Lock()->ListLatest("");
    if (!all.ok()) return all.status();
    for (const NameListing& n : *all) names.push_back(n.row.name);
    Result<std::vector<ObjectRow>> unnamed = impl_->index.Lock()->ListUnnamed();
    if (!unnamed.ok()) return unnamed.status();
    for (const ObjectRow& o : *unnamed)
      if (o.pinned) objects.push_back(o.id);
  }
  for (const std::string& ref : refs) {
    if (!ref.empty() && ref.back() == '/') {
      Result<std::vector<NameListing>> under = impl_->index.Lock()->ListLatest(ref);
      if (!under.ok()) return under.status();
      if (under->empty()) return Status::NotFound("no name starts with " + ref);
      for (const NameListing& n : *under) names.push_back(n.row.name);
      continue;
    }
    if (ValidateName(ref).ok()) {
      Result<std::optional<NameRow>> n = impl_->index.Lock()->FindName(ref, 0);
      if (!n.ok()) return n.status();
      if (n->has_value()) {
        names.push_back(ref);
        continue;
      }
    }
    Result<std::string> id = Resolve(ref);
    if (!id.ok()) return id.status();
    objects.push_back(*Digest::FromHex(std::string_view(*id).substr(7)));
  }
  CopyReport report;
  auto requests = [&] {
    return (impl_->blobs ? impl_->blobs->requests() : 0) + (dst.impl_->blobs ? dst.impl_->blobs->requests() : 0);
  };
  const uint64_t requests_before = requests();
  Copier copier(impl_.get(), dst.impl_.get(), options, &report);
  Status s;
  for (const std::string& n : names) {
    s = copier.Name(n);
    if (!s.ok()) break;
  }
  for (size_t i = 0; s.ok() && i < objects.size(); ++i) s = copier.Object(objects[i], true);
  // What was done before a failure is committed all the same: a rerun
  // then finds it.
  Status committed = copier.Finish();
  report.requests = requests() - requests_before + copier.sink_requests();
  CHUNKSTORE_RETURN_IF_ERROR(s);
  CHUNKSTORE_RETURN_IF_ERROR(committed);
  return report;
}

}  // namespace chunkstore
