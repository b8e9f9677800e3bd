// Verified reading: fetching a chunk record from its pack, checking it
// (record header, xxHash64 of the stored bytes, inflate, SHA-256 of the raw
// bytes) before any byte leaves, the cache of verified chunks, and the
// Reader cursor with parallel read-ahead for sequential reads.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <future>

#include "format/pack_format.h"
#include "hash/sha256_pair.h"
#include "store/store_impl.h"

namespace chunkstore {

using namespace internal;

// ---- cache ---------------------------------------------------------------

ChunkCache::Bytes ChunkCache::Get(const Digest& id) {
  if (budget_ == 0) return nullptr;  // a disabled cache holds nothing
  std::lock_guard<std::mutex> l(mu_);
  auto it = map_.find(id);
  if (it == map_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void ChunkCache::Put(const Digest& id, Bytes bytes) {
  const size_t n = bytes->size();
  if (n > budget_) return;
  std::lock_guard<std::mutex> l(mu_);
  if (map_.count(id)) return;
  lru_.emplace_front(id, std::move(bytes));
  map_[id] = lru_.begin();
  used_ += n;
  while (used_ > budget_) {
    auto& back = lru_.back();
    used_ -= back.second->size();
    map_.erase(back.first);
    lru_.pop_back();
  }
}

// ---- buffers -------------------------------------------------------------

BufferPool& BufferPool::Shared() {
  static BufferPool* const pool = new BufferPool;
  return *pool;
}

std::shared_ptr<Buffer> BufferPool::Get(size_t n) {
  std::unique_ptr<Buffer> b;
  {
    // Chunk sizes vary around the average: the smallest free buffer that
    // fits, else the largest (grown), so buffers settle at sizes that fit
    // most chunks instead of being reallocated, and faulted in, again.
    std::lock_guard<std::mutex> l(mu_);
    size_t pick = free_.size();
    for (size_t i = 0; i < free_.size(); ++i) {
      const size_t cap = free_[i]->capacity();
      if (pick == free_.size()) {
        pick = i;
        continue;
      }
      const size_t best = free_[pick]->capacity();
      const bool fits = cap >= n, best_fits = best >= n;
      if ((fits && (!best_fits || cap < best)) || (!fits && !best_fits && cap > best)) pick = i;
    }
    if (pick != free_.size()) {
      b = std::move(free_[pick]);
      free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(pick));
    }
  }
  if (!b) b = std::make_unique<Buffer>();
  // Large ones grow in whole MiB: a chunk a little larger than the last
  // still fits.
  b->Resize(n, n < (64u << 10) ? n : (n + (1u << 20) - 1) & ~size_t{(1u << 20) - 1});
  return std::shared_ptr<Buffer>(b.release(), [this](Buffer* p) { Put(p); });
}

void BufferPool::Put(Buffer* b) {
  std::unique_ptr<Buffer> owned(b);
  std::lock_guard<std::mutex> l(mu_);
  if (free_.size() < kMaxFree) free_.push_back(std::move(owned));
}

// ---- chunk loading -------------------------------------------------------

Status internal::CheckRecord(const File& pack, const Digest& id, const ChunkLocation& loc,
                             bool quick, Buffer* raw, bool check_sha) {
  if (loc.stored_len > kMaxRecordLength || loc.raw_len > kMaxRecordLength)
    return Status::Corruption("the index records impossible lengths");
  // Small records come in one read (header and payload); large ones in
  // two, so the payload lands straight in its buffer.
  constexpr uint32_t kOneRead = 64 << 10;
  thread_local Buffer small;
  // Over a network a request costs far more than a copy: one read always.
  const bool one_read = loc.stored_len <= kOneRead || dynamic_cast<const RemotePackFile*>(&pack);
  uint8_t header_bytes[kRecordHeaderSize];
  const uint8_t* header = header_bytes;
  size_t got = 0;
  if (one_read) {
    small.Resize(kRecordHeaderSize + loc.stored_len);
    CHUNKSTORE_RETURN_IF_ERROR(pack.ReadAt(loc.offset, small.size(), small.data(), &got));
    if (got != small.size()) return Status::Corruption("the pack file is truncated");
    header = small.data();
  } else {
    CHUNKSTORE_RETURN_IF_ERROR(pack.ReadAt(loc.offset, kRecordHeaderSize, header_bytes, &got));
    if (got != kRecordHeaderSize) return Status::Corruption("the pack file is truncated");
  }
  Result<RecordHeader> h = DecodeRecordHeader(header, kRecordHeaderSize);
  if (!h.ok()) return h.status();
  if (h->chunk_id != id || h->raw_len != loc.raw_len || h->stored_len != loc.stored_len ||
      h->codec != loc.codec || h->xxh64 != loc.xxh64)
    return Status::Corruption("the record header does not match the index");
  // Raw payloads are read straight into the output; zlib ones into a
  // per-thread scratch buffer first.
  thread_local Buffer scratch;
  const uint8_t* stored;
  if (one_read) {
    stored = small.data() + kRecordHeaderSize;
  } else {
    Buffer* into = loc.codec == Codec::kRaw ? raw : &scratch;
    into->Resize(loc.stored_len);
    CHUNKSTORE_RETURN_IF_ERROR(
        pack.ReadAt(loc.offset + kRecordHeaderSize, loc.stored_len, into->data(), &got));
    if (got != loc.stored_len) return Status::Corruption("the pack file is truncated");
    stored = into->data();
  }
  // The SHA-256 below already covers every stored byte of a raw record;
  // xxHash64 is what a quick check relies on, and what guards zlib input.
  if ((quick || loc.codec != Codec::kRaw) && XxHash64(stored, loc.stored_len) != loc.xxh64)
    return Status::Corruption("stored bytes fail their xxHash64 check");
  if (quick) return Status::OK();
  if (loc.codec == Codec::kZlib) {
    raw->Resize(loc.raw_len);
    CHUNKSTORE_RETURN_IF_ERROR(Decompress(stored, loc.stored_len, loc.raw_len, raw->data()));
  } else if (one_read) {
    raw->Resize(loc.raw_len);
    std::memcpy(raw->data(), stored, loc.raw_len);
  }
  if (check_sha && Sha256::Of(raw->data(), raw->size()) != id)
    return Status::Corruption("content does not match its SHA-256");
  return Status::OK();
}

Result<std::shared_ptr<File>> Store::Impl::PackForRead(int64_t pack_id) {
  {
    std::lock_guard<std::mutex> l(packs_mu);
    auto it = read_packs.find(pack_id);
    if (it != read_packs.end()) return it->second;
  }
  std::optional<PackRow> row;
  {
    std::lock_guard<std::mutex> l(db_mu);
    Result<std::optional<PackRow>> r = index->FindPack(pack_id);
    if (!r.ok()) return r.status();
    row = *r;
  }
  if (!row) return Status::Corruption("the index names pack #" + std::to_string(pack_id) +
                                      ", which it does not record");
  Result<std::unique_ptr<File>> f = OpenPack(row->name, row->size);
  if (!f.ok()) {
    if (f.status().IsNotFound()) return Status::Corruption("pack file " + row->name + " is missing");
    return f.status();
  }
  std::shared_ptr<File> file(std::move(*f));
  std::lock_guard<std::mutex> l(packs_mu);
  read_packs.emplace(pack_id, file);
  return file;
}

Result<ChunkCache::Bytes> Store::Impl::LoadChunk(const std::string& object_id, const Digest& id,
                                                 const ChunkLocation& loc, bool keep) {
  if (ChunkCache::Bytes hit = cache.Get(id)) return hit;
  auto corrupt = [&](const std::string& what) {
    const std::string where = " (pack #" + std::to_string(loc.pack_id) + ", offset " +
                              std::to_string(loc.offset) + ")";
    return Status::Corruption("object " + object_id + ": chunk " + id.Hex() + where + ": " + what,
                              object_id, id.Hex());
  };
  Result<std::shared_ptr<File>> pack = PackForRead(loc.pack_id);
  if (!pack.ok()) {
    if (pack.status().IsCorruption()) return corrupt(pack.status().message());
    return pack.status();
  }
  std::shared_ptr<Buffer> raw = buffers.Get(loc.raw_len);
  Status s = CheckRecord(**pack, id, loc, false, raw.get());
  if (s.IsCorruption()) return corrupt(s.message());
  if (s.IsNotFound() && bucket) return corrupt("its pack is missing from " + dir);
  CHUNKSTORE_RETURN_IF_ERROR(s);
  ChunkCache::Bytes bytes = std::move(raw);
  if (keep) cache.Put(id, bytes);
  return bytes;
}

void Store::Impl::LoadChunkGroup(const Digest* ids, const ChunkLocation* locs, size_t n,
                                 const std::function<void(size_t, ChunkCache::Bytes)>& done) {
  std::vector<std::shared_ptr<Buffer>> raw(n);
  Sha256Lanes(
      n,
      // Reads and checks chunk k just before it is hashed, while its bytes
      // are still in cache; one that cannot be is settled at once.
      [&](size_t k, Sha256Partial& lane) {
        if (!cache.Get(ids[k])) {
          Result<std::shared_ptr<File>> pack = PackForRead(locs[k].pack_id);
          if (pack.ok()) {
            raw[k] = buffers.Get(locs[k].raw_len);
            if (CheckRecord(**pack, ids[k], locs[k], false, raw[k].get(), false).ok()) {
              lane.Start(raw[k]->data(), raw[k]->size());
              return true;
            }
            raw[k].reset();
          }
        }
        done(k, nullptr);
        return false;
      },
      [&](size_t k, const Digest& got) {
        ChunkCache::Bytes verified;
        if (got == ids[k]) verified = std::move(raw[k]);
        raw[k].reset();
        done(k, std::move(verified));
      });
}

// ---- reader --------------------------------------------------------------

namespace {

Status CheckSeek(uint64_t offset, uint64_t size) {
  if (offset > size)
    return Status::InvalidArgument("seek to " + std::to_string(offset) + " is past the end (" +
                                   std::to_string(size) + " bytes)");
  return Status::OK();
}

// An inline object: its content, verified at open, lives in the reader. It
// needs nothing from the store, and opening many small objects is bound by
// per-open costs, so it holds just the content and makes its id string only
// when asked.
class InlineObjectReader final : public Reader {
 public:
  InlineObjectReader(const Digest& id, std::string content) : id_(id), content_(std::move(content)) {}

  const std::string& id() const override {
    if (id_text_.empty()) id_text_ = id_.ObjectId();
    return id_text_;
  }
  uint64_t size() const override { return content_.size(); }
  uint64_t Tell() const override { return pos_; }

  Status Seek(uint64_t offset) override {
    CHUNKSTORE_RETURN_IF_ERROR(CheckSeek(offset, content_.size()));
    pos_ = static_cast<size_t>(offset);
    return Status::OK();
  }

  Result<size_t> Read(void* buf, size_t n) override {
    const size_t got = Copy(pos_, buf, n);
    pos_ += got;
    return got;
  }

  Result<size_t> ReadAt(uint64_t offset, void* buf, size_t n) override { return Copy(offset, buf, n); }

  Result<ByteView> ReadView(size_t n) override {
    const size_t take = std::min(n, content_.size() - pos_);
    ByteView view{reinterpret_cast<const uint8_t*>(content_.data()) + pos_, take};
    pos_ += take;
    return view;
  }

 private:
  size_t Copy(uint64_t offset, void* buf, size_t n) const {
    if (offset >= content_.size() || n == 0) return 0;
    const size_t take = std::min<uint64_t>(n, content_.size() - offset);
    std::memcpy(buf, content_.data() + offset, take);
    return take;
  }

  Digest id_;
  mutable std::string id_text_;
  std::string content_;
  size_t pos_ = 0;
};

class ObjectReader final : public Reader {
 public:
  using Bytes = ChunkCache::Bytes;

  ObjectReader(std::shared_ptr<Store::Impl> store, Digest id, uint64_t size,
               std::vector<ManifestEntry> entries, std::vector<ChunkLocation> locs)
      : store_(std::move(store)),
        id_(id.ObjectId()),
        size_(size),
        entries_(std::move(entries)),
        locs_(std::move(locs)) {
    starts_.reserve(entries_.size());
    uint64_t off = 0;
    for (const auto& e : entries_) {
      starts_.push_back(off);
      off += e.length;
    }
    // Enough chunks in flight to keep every core verifying while the
    // caller copies out the current one; a task verifies a group of up to
    // kGroup, two at a time (SubmitGroup), so each worker holds a group
    // and the next is queued.
    depth_ = std::max(2u, 3 * store_->threads);
    workers_ = store_->threads;
    // From a bucket, fetches wait on the network, not on the cores.
    if (store_->bucket) depth_ = workers_ = std::max(depth_, 16u);
  }

  ~ObjectReader() override { DropAhead(); }

  const std::string& id() const override { return id_; }
  uint64_t size() const override { return size_; }
  uint64_t Tell() const override { return pos_; }

  Status Seek(uint64_t offset) override {
    CHUNKSTORE_RETURN_IF_ERROR(CheckSeek(offset, size_));
    pos_ = offset;
    return Status::OK();
  }

  void LimitReadAhead(uint64_t end) override {
    end = std::min(end, size_);
    // Chunks [0, ahead_end_) may be verified ahead: those starting below end.
    ahead_end_ = end == 0 ? 0 : ChunkAt(end - 1) + 1;
  }

  Result<size_t> Read(void* buf, size_t n) override {
    Result<size_t> r = Copy(pos_, buf, n, true);
    if (r.ok()) pos_ += *r;
    return r;
  }

  Result<size_t> ReadAt(uint64_t offset, void* buf, size_t n) override {
    return Copy(offset, buf, n, false);
  }

  Result<ByteView> ReadView(size_t n) override {
    if (pos_ >= size_ || n == 0) return ByteView{};
    const size_t i = ChunkAt(pos_);
    CHUNKSTORE_RETURN_IF_ERROR(Enter(i, true));
    const size_t within = static_cast<size_t>(pos_ - starts_[i]);
    const size_t take = std::min(n, cur_->size() - within);
    pos_ += take;
    return ByteView{cur_->data() + within, take};
  }

 private:
  // keep: whether the verified chunk goes into the store's cache. Streaming
  // reads would only evict what random reads come back for, so they skip it.
  Result<Bytes> Fetch(size_t i, bool keep = true) {
    Result<Bytes> r = store_->LoadChunk(id_, entries_[i].id, locs_[i], keep);
    if (r.ok() || !r.status().IsCorruption()) return r;
    // A gc may have moved the chunk to another pack since this reader
    // looked it up; only a failure at the chunk's current home counts. In
    // a bucket that gc may have run on another machine: catch up first.
    if (store_->bucket && !store_->Refresh().ok()) return r;
    std::optional<ChunkLocation> now;
    {
      std::lock_guard<std::mutex> l(store_->db_mu);
      Result<std::optional<ChunkLocation>> loc = store_->index->FindChunk(entries_[i].id);
      if (!loc.ok()) return r;
      now = *loc;
    }
    if (!now)
      return Status::NotFound("object " + id_ + ": chunk " + entries_[i].id.Hex() +
                              " is no longer stored (the object was removed and collected while "
                              "being read)");
    if (now->pack_id == locs_[i].pack_id && now->offset == locs_[i].offset) return r;
    locs_[i] = *now;
    return store_->LoadChunk(id_, entries_[i].id, locs_[i], keep);
  }

  // Queues chunks [i, i + n) as one read-ahead task (LoadChunkGroup). Each
  // chunk's future is set as soon as it is settled; one the group did not
  // verify goes through Fetch, whose error names what failed and which
  // looks for a chunk gc has moved.
  void SubmitGroup(size_t i, size_t n) {
    auto promises = std::make_shared<std::vector<std::promise<Result<Bytes>>>>(n);
    for (size_t k = 0; k < n; ++k) ahead_.emplace_back(i + k, (*promises)[k].get_future());
    store_->ReadAhead(workers_).Submit([this, i, n, promises] {
      if (dropping_.load(std::memory_order_acquire)) {  // nobody will take these
        for (size_t k = 0; k < n; ++k) (*promises)[k].set_value(Status::NotFound("read-ahead dropped"));
        return 0;
      }
      internal::Digest ids[kGroup];
      ChunkLocation locs[kGroup];
      for (size_t k = 0; k < n; ++k) {
        ids[k] = entries_[i + k].id;
        locs[k] = locs_[i + k];
      }
      store_->LoadChunkGroup(ids, locs, n, [&](size_t k, Bytes b) {
        (*promises)[k].set_value(b ? Result<Bytes>(std::move(b)) : Fetch(i + k, false));
      });
      return 0;
    });
  }

  // Sequential reads verify the next chunks on other threads while the
  // caller consumes this one; bytes are still handed out in order, and
  // only after their chunk has been verified. Where Sha256Pair
  // interleaves (and the packs are local), each task verifies a group of
  // up to kGroup chunks, and the queue refills a group at a time (between
  // depth_ and depth_ + kGroup - 1 chunks ahead).
  Result<Bytes> FetchSequential(size_t i) {
    while (!ahead_.empty() && ahead_.front().first < i) {
      ahead_.front().second.wait();
      ahead_.pop_front();
    }
    Result<Bytes> r = Status::NotFound("");
    if (!ahead_.empty() && ahead_.front().first == i) {
      r = ahead_.front().second.get();
      ahead_.pop_front();
    } else {
      DropAhead();
      r = Fetch(i, false);
    }
    size_t next = ahead_.empty() ? i + 1 : ahead_.back().first + 1;
    const size_t end = std::min(ahead_end_, entries_.size());
    // Not from a bucket: there a task mostly waits on its fetch, and a
    // group would fetch its chunks one after the other.
    if (Sha256PairInterleaves() && !store_->bucket) {
      while (ahead_.size() < depth_ && next + 1 < end) {
        const size_t n = std::min(kGroup, end - next);
        SubmitGroup(next, n);
        next += n;
      }
    }
    while (ahead_.size() < depth_ && next < end) {
      ahead_.emplace_back(next, store_->ReadAhead(workers_).Submit([this, next]() -> Result<Bytes> {
        if (dropping_.load(std::memory_order_acquire)) return Status::NotFound("read-ahead dropped");
        return Fetch(next, false);
      }));
      ++next;
    }
    return r;
  }

  // Forgets the read-ahead: tasks not yet started skip their work, and
  // this waits for the ones running (they use this reader; pool futures
  // do not wait when destroyed).
  void DropAhead() {
    if (ahead_.empty()) return;
    dropping_.store(true, std::memory_order_release);
    for (auto& f : ahead_) f.second.wait();
    ahead_.clear();
    dropping_.store(false, std::memory_order_release);
  }

  // The chunk holding byte `at` (< size_).
  size_t ChunkAt(uint64_t at) const {
    return static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), at) - starts_.begin() - 1);
  }

  // Makes chunk i the current one, verified.
  Status Enter(size_t i, bool sequential) {
    if (i == cur_index_) return Status::OK();
    Result<Bytes> b = sequential && entries_.size() > 1 ? FetchSequential(i) : Fetch(i);
    if (!b.ok()) return b.status();
    cur_ = std::move(*b);
    cur_index_ = i;
    return Status::OK();
  }

  Result<size_t> Copy(uint64_t offset, void* buf, size_t n, bool sequential) {
    if (offset >= size_ || n == 0) return size_t{0};
    n = static_cast<size_t>(std::min<uint64_t>(n, size_ - offset));
    auto* out = static_cast<uint8_t*>(buf);
    size_t done = 0;
    while (done < n) {
      const uint64_t at = offset + done;
      const size_t i = ChunkAt(at);
      Status entered = Enter(i, sequential);
      // Bytes already verified are handed out; the failure comes back on
      // the next call, which starts at the damaged chunk.
      if (!entered.ok()) return done > 0 ? Result<size_t>(done) : Result<size_t>(entered);
      const size_t within = static_cast<size_t>(at - starts_[i]);
      const size_t take = std::min(n - done, cur_->size() - within);
      std::memcpy(out + done, cur_->data() + within, take);
      done += take;
    }
    return n;
  }

  std::shared_ptr<Store::Impl> store_;
  std::string id_;
  uint64_t size_;
  std::vector<ManifestEntry> entries_;
  std::vector<ChunkLocation> locs_;
  std::vector<uint64_t> starts_;
  uint64_t pos_ = 0;
  Bytes cur_;
  size_t cur_index_ = SIZE_MAX;
  // Chunks per read-ahead task where they are verified in pairs: the
  // lanes are refilled within a group, so only a group's end runs alone.
  static constexpr size_t kGroup = 4;
  unsigned depth_ = 1;
  unsigned workers_ = 1;
  size_t ahead_end_ = SIZE_MAX;  // chunks at or past this index are not read ahead
  std::deque<std::pair<size_t, std::future<Result<Bytes>>>> ahead_;
  // Set while DropAhead waits: queued read-ahead tasks then do nothing.
  std::atomic<bool> dropping_{false};
};

}  // namespace

namespace {

// Verifies an inline object's content and hands it to a reader.
Result<std::unique_ptr<Reader>> InlineReader(const Digest& id, ObjectRow* row) {
  Status s = CheckInline(id, row->size, row->manifest);
  if (!s.ok()) {
    const std::string oid = id.ObjectId();
    return Status::Corruption("object " + oid + ": " + s.message(), oid);
  }
  return std::unique_ptr<Reader>(new InlineObjectReader(id, std::move(row->manifest)));
}

// Resolves ref and gathers what a reader needs; db_mu held by the caller.
Status OpenLocked(Store::Impl* impl, const std::string& ref, Digest* id, ObjectRow* row,
                  std::vector<ManifestEntry>* entries, std::vector<ChunkLocation>* locs) {
  Result<Digest> found = impl->ResolveLocked(ref, row);
  if (!found.ok()) return found.status();
  *id = *found;
  const std::string oid = id->ObjectId();
  if (IsInline(row->size, row->chunk_count)) return Status::OK();  // the caller checks it
  Result<std::vector<ManifestEntry>> decoded =
      DecodeManifest(*id, row->size, row->manifest.data(), row->manifest.size());
  if (!decoded.ok())
    return Status::Corruption("object " + oid + ": " + decoded.status().message(), oid);
  if (decoded->size() != row->chunk_count)
    return Status::Corruption("object " + oid + ": manifest lists " + std::to_string(decoded->size()) +
                                  " chunks, index says " + std::to_string(row->chunk_count),
                              oid);
  locs->reserve(decoded->size());
  for (const auto& e : *decoded) {
    Result<std::optional<ChunkLocation>> loc = impl->index->FindChunk(e.id);
    if (!loc.ok()) return loc.status();
    if (!loc->has_value())
      return Status::Corruption("object " + oid + ": chunk " + e.id.Hex() + " is not in the index", oid,
                                e.id.Hex());
    if ((*loc)->raw_len != e.length)
      return Status::Corruption("object " + oid + ": chunk " + e.id.Hex() +
                                    " has a different length in the index than in the manifest",
                                oid, e.id.Hex());
    locs->push_back(**loc);
  }
  *entries = std::move(*decoded);
  return Status::OK();
}

// Opens one ref; db_mu held by the caller. A full id naming an object of at
// most one chunk needs one query; any other ref needs a read transaction
// (one snapshot for the ref, the manifest and every chunk location), which
// this opens itself unless the caller already holds one (in_read).
Result<std::unique_ptr<Reader>> OpenHeld(const std::shared_ptr<Store::Impl>& impl, const std::string& ref,
                                         bool in_read) {
  ObjectRow row;
  std::vector<ChunkLocation> locs;
  std::vector<ManifestEntry> entries;
  Digest id;
  std::optional<Digest> full;
  if (ref.size() == 71 && ref.rfind("sha256:", 0) == 0) full = Digest::FromHex(std::string_view(ref).substr(7));
  else if (ref.size() == 64) full = Digest::FromHex(ref);
  if (full) {
    auto found = impl->index->FindObjectAndFirstChunk(*full);
    if (!found.ok()) return found.status();
    if (found->has_value() && (*found)->first.chunk_count <= 1) {
      row = std::move((*found)->first);
      id = *full;
      if (IsInline(row.size, row.chunk_count)) return InlineReader(id, &row);
      const std::string oid = id.ObjectId();
      Result<std::vector<ManifestEntry>> decoded =
          DecodeManifest(id, row.size, row.manifest.data(), row.manifest.size());
      if (!decoded.ok())
        return Status::Corruption("object " + oid + ": " + decoded.status().message(), oid);
      if (decoded->size() != row.chunk_count)
        return Status::Corruption("object " + oid + ": manifest and index disagree on the chunk count", oid);
      if (!decoded->empty()) {
        const ManifestEntry& e = decoded->front();
        if (!(*found)->second)
          return Status::Corruption("object " + oid + ": chunk " + e.id.Hex() + " is not in the index", oid,
                                    e.id.Hex());
        if ((*found)->second->raw_len != e.length)
          return Status::Corruption("object " + oid + ": chunk " + e.id.Hex() +
                                        " has a different length in the index than in the manifest",
                                    oid, e.id.Hex());
        locs.push_back(*(*found)->second);
      }
      return std::unique_ptr<Reader>(new ObjectReader(impl, id, row.size, std::move(*decoded), std::move(locs)));
    }
  }
  Index* index = impl->index.get();
  if (!in_read) CHUNKSTORE_RETURN_IF_ERROR(index->BeginRead());
  Status s = OpenLocked(impl.get(), ref, &id, &row, &entries, &locs);
  if (!in_read) index->Rollback();
  CHUNKSTORE_RETURN_IF_ERROR(s);
  if (IsInline(row.size, row.chunk_count)) return InlineReader(id, &row);
  return std::unique_ptr<Reader>(new ObjectReader(impl, id, row.size, std::move(entries), std::move(locs)));
}

}  // namespace

Result<std::unique_ptr<Reader>> Store::OpenReader(const std::string& ref) {
  std::lock_guard<std::mutex> l(impl_->db_mu);
  return OpenHeld(impl_, ref, false);
}

std::vector<Result<std::unique_ptr<Reader>>> Store::OpenReaders(const std::vector<std::string>& refs) {
  std::vector<Result<std::unique_ptr<Reader>>> out;
  out.reserve(refs.size());
  std::lock_guard<std::mutex> l(impl_->db_mu);
  // One read transaction for the whole list: every ref sees the same
  // snapshot, and the index's file locks are taken once, not per ref.
  Status began = impl_->index->BeginRead();
  for (const auto& ref : refs) {
    if (began.ok()) out.push_back(OpenHeld(impl_, ref, true));
    else out.push_back(began);
  }
  if (began.ok()) impl_->index->Rollback();
  return out;
}

}  // namespace chunkstore
