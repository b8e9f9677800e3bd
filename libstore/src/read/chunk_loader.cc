// SPDX-License-Identifier: Apache-2.0
// ChunkLoader (chunk_loader.h): fetching a chunk record from its pack and
// checking it (record header, xxHash64 of the stored bytes, inflate,
// SHA-256 of the raw bytes) before any byte leaves, the cache of verified
// chunks, and the process's buffer pool.
#include "read/chunk_loader.h"

#include <algorithm>
#include <cstring>

#include "format/pack_format.h"
#include "hash/sha256_pair.h"

namespace chunkstore::internal {

// ---- cache ---------------------------------------------------------------

ChunkCache::Bytes ChunkCache::Get(const Digest& id) {
  if (budget_ == 0) return nullptr;  // a disabled cache holds nothing
  std::lock_guard<std::mutex> l(mu_);
  auto it = map_.find(id);
  if (it == map_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

bool ChunkCache::Contains(const Digest& id) {
  if (budget_ == 0) return false;
  std::lock_guard<std::mutex> l(mu_);
  return map_.count(id) != 0;
}

ChunkCache::Bytes ChunkCache::Put(const Digest& id, Bytes bytes) {
  if (budget_ == 0 || bytes->size() > budget_) return bytes;  // could never be kept
  // A pooled buffer may be far larger than the chunk in it (a pool hands
  // out the smallest free buffer that fits, and large ones grow in whole
  // MiB): kept as it is, the cache would hold that slack, and count it,
  // for as long as the chunk stays, and hold fewer chunks than its budget
  // allows. A chunk that leaves more than an eighth of its buffer unused is
  // kept in a copy of its own size, which the caller gets back too, so the
  // pooled buffer returns to the pool as soon as the caller lets go.
  if (bytes->capacity() - bytes->size() > bytes->size() / 8) {
    if (Bytes held = Get(id)) return held;
    bytes = Buffer::ExactCopy(bytes->data(), bytes->size());
  }
  // What the buffer holds on to, not what it is filled with.
  const size_t n = bytes->capacity();
  if (n > budget_) return bytes;
  std::list<std::pair<Digest, Bytes>> evicted;  // freed after the lock: an unmap takes time
  {
    std::lock_guard<std::mutex> l(mu_);
    if (auto it = map_.find(id); it != map_.end()) return it->second->second;
    lru_.emplace_front(id, bytes);
    map_[id] = lru_.begin();
    used_ += n;
    while (used_ > budget_) {
      used_ -= lru_.back().second->capacity();
      map_.erase(lru_.back().first);
      evicted.splice(evicted.begin(), lru_, std::prev(lru_.end()));
    }
  }
  return bytes;
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
  b->Resize(n, CapacityFor(n));
  return std::shared_ptr<Buffer>(b.release(), [this](Buffer* p) { Put(p); });
}

size_t BufferPool::CapacityFor(size_t n) {
  // Large ones grow in whole MiB: a chunk a little larger than the last
  // still fits.
  return ChunkMemorySize(n < (64u << 10) ? n : (n + (1u << 20) - 1) & ~size_t{(1u << 20) - 1});
}

void BufferPool::Put(Buffer* b) {
  std::unique_ptr<Buffer> owned(b);
  std::lock_guard<std::mutex> l(mu_);
  if (free_.size() < kMaxFree) free_.push_back(std::move(owned));
}

// ---- chunk loading -------------------------------------------------------

Status CheckRecord(const File& pack, const Digest& id, const ChunkLocation& loc, bool quick, Buffer* raw,
                   bool check_sha, bool one_read_always) {
  if (loc.stored_len > kMaxRecordLength || loc.raw_len > kMaxRecordLength)
    return Status::Corruption("the index records impossible lengths");
  // Small records come in one read (header and payload); large ones in
  // two, so the payload lands straight in its buffer.
  constexpr uint32_t kOneRead = 64 << 10;
  thread_local Buffer small;
  const bool one_read = loc.stored_len <= kOneRead || one_read_always;
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
  // Raw payloads are read straight into the output; compressed ones into a
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
  // xxHash64 is what a quick check relies on, and what guards decoder input.
  if ((quick || loc.codec != Codec::kRaw) && XxHash64(stored, loc.stored_len) != loc.xxh64)
    return Status::Corruption("stored bytes fail their xxHash64 check");
  if (quick) return Status::OK();
  if (loc.codec != Codec::kRaw) {
    raw->Resize(loc.raw_len);
    CHUNKSTORE_RETURN_IF_ERROR(Decompress(loc.codec, stored, loc.stored_len, loc.raw_len, raw->data()));
  } else if (one_read) {
    raw->Resize(loc.raw_len);
    std::memcpy(raw->data(), stored, loc.raw_len);
  }
  if (check_sha && Sha256::Of(raw->data(), raw->size()) != id)
    return Status::Corruption("content does not match its SHA-256");
  return Status::OK();
}

Result<ChunkCache::Bytes> ChunkLoader::Load(const std::string& object_id, const Digest& id,
                                            const ChunkLocation& loc, bool keep, bool disk, bool check_sha) {
  if (ChunkCache::Bytes hit = cache_.Get(id)) return hit;
  if (!check_sha) keep = disk = false;  // unproven bytes go nowhere but to the caller
  // Before any buffer is sized by them: a location comes from the log,
  // which is input.
  if (loc.raw_len > kMaxRecordLength || loc.stored_len > kMaxRecordLength)
    return Status::Corruption("object " + object_id + ": chunk " + id.Hex() + ": the index records impossible lengths (" +
                                  std::to_string(loc.stored_len) + " stored, " + std::to_string(loc.raw_len) + ")",
                              object_id, id.Hex());
  if (disk_ && disk) {
    std::shared_ptr<Buffer> b = buffers_.Get(loc.raw_len);
    if (disk_->Get(id, loc.raw_len, b.get())) {
      if (Sha256::Of(b->data(), b->size()) == id) {
        ChunkCache::Bytes bytes = std::move(b);
        return keep ? cache_.Put(id, std::move(bytes)) : bytes;
      }
      disk_->Drop(id);
    }
  }
  Result<std::shared_ptr<File>> pack = packs_->ForRead(loc.pack_id);
  auto corrupt = [&](const std::string& what) {
    std::string where = " (";
    if (Result<std::optional<PackRow>> row = index_->Lock()->FindPack(loc.pack_id); row.ok() && row->has_value())
      where += "pack " + (*row)->name.substr(0, 64);
    else
      where += "a pack the index does not record";
    where += ", offset " + std::to_string(loc.offset) + ")";
    return Status::Corruption("object " + object_id + ": chunk " + id.Hex() + where + ": " + what, object_id,
                              id.Hex());
  };
  if (!pack.ok()) {
    if (pack.status().IsCorruption()) return corrupt(pack.status().message());
    return pack.status();
  }
  std::shared_ptr<Buffer> raw = buffers_.Get(loc.raw_len);
  Status s = CheckRecord(**pack, id, loc, false, raw.get(), check_sha, packs_->remote());
  if (s.IsCorruption()) return corrupt(s.message());
  if (s.IsNotFound()) return corrupt("its pack is missing from " + packs_->Describe());
  CHUNKSTORE_RETURN_IF_ERROR(s);
  if (disk_ && disk) disk_->Put(id, raw->data(), raw->size());
  ChunkCache::Bytes bytes = std::move(raw);
  return keep ? cache_.Put(id, std::move(bytes)) : bytes;
}

void ChunkLoader::LoadOne(const Digest& id, const ChunkLocation& loc, const ChainLink* link, bool disk_ok,
                          const std::function<void(ChunkCache::Bytes, const ChainState&)>& done) {
  bool given = false;
  LoadRun(
      [&](RunItem* item, bool) {
        if (given) return false;
        given = true;
        item->id = id;
        item->loc = loc;
        item->chained = link != nullptr;
        if (link) item->link = *link;
        return true;
      },
      disk_ok, [&](size_t, ChunkCache::Bytes b, const ChainState& z) { done(std::move(b), z); });
}

void ChunkLoader::LoadRun(const std::function<bool(RunItem*, bool)>& next, bool disk_ok,
                          const std::function<void(size_t, ChunkCache::Bytes, const ChainState&)>& done) {
  // A lane holds one chunk at a time, so two slots hold every chunk in
  // hand: the one a lane is filled with is always free.
  struct Slot {
    bool used = false;
    RunItem item;
    std::shared_ptr<Buffer> raw;
    bool from_disk = false;  // checked by the same SHA-256, but not written back
  };
  Slot slots[2];
  const ChainState none;
  auto settle = [&](Slot& s, ChunkCache::Bytes bytes, const ChainState& z) {
    s.raw.reset();
    s.used = false;
    done(s.item.key, std::move(bytes), z);
  };
  Sha256LanesWhile(
      // Reads and checks a chunk just before it is hashed, while its bytes
      // are still in cache; one that cannot be is settled at once.
      [&](Sha256Partial& lane, size_t* k, bool last) {
        const size_t at = slots[0].used ? 1 : 0;
        Slot& s = slots[at];
        if (!next(&s.item, last)) return LaneStart::kNone;
        s.used = true;
        s.from_disk = false;
        *k = at;
        const RunItem& c = s.item;
        // Chained (unproven) bytes never touch the disk cache.
        DiskChunkCache* disk = c.chained || !disk_ok ? nullptr : disk_.get();
        if (c.loc.raw_len > kMaxRecordLength || c.loc.stored_len > kMaxRecordLength) {
          settle(s, nullptr, none);  // Load says what is wrong
          return LaneStart::kSettled;
        }
        if (disk && !cache_.Get(c.id)) {
          s.raw = buffers_.Get(c.loc.raw_len);
          if (disk->Get(c.id, c.loc.raw_len, s.raw.get())) {
            s.from_disk = true;
            lane.Start(s.raw->data(), s.raw->size());
            return LaneStart::kStarted;
          }
          s.raw.reset();
        }
        if (c.chained || !cache_.Get(c.id)) {
          Result<std::shared_ptr<File>> pack = packs_->ForRead(c.loc.pack_id);
          if (pack.ok()) {
            s.raw = buffers_.Get(c.loc.raw_len);
            if (CheckRecord(**pack, c.id, c.loc, false, s.raw.get(), false, packs_->remote()).ok()) {
              if (!c.chained) {
                lane.Start(s.raw->data(), s.raw->size());
                return LaneStart::kStarted;
              }
              const ChainLink& l = c.link;
              if (l.from.valid && l.blocks > 0 && uint64_t{l.skip} + 64ull * l.blocks <= s.raw->size()) {
                lane.StartFrom(l.from, s.raw->data() + l.skip, 64ull * l.blocks);
                return LaneStart::kStarted;
              }
              // No whole block inside: its link is the state it starts from.
              settle(s, std::move(s.raw), l.blocks == 0 ? l.from : none);
              return LaneStart::kSettled;
            }
            s.raw.reset();
          }
        }
        settle(s, nullptr, none);
        return LaneStart::kSettled;
      },
      [&](size_t at, Sha256Partial& lane) {
        Slot& s = slots[at];
        if (s.item.chained) {
          const ChainState z = lane.FinishChain();
          settle(s, std::move(s.raw), z);
          return;
        }
        DiskChunkCache* disk = disk_ok ? disk_.get() : nullptr;
        if (lane.Finish() == s.item.id) {
          if (disk && !s.from_disk) disk->Put(s.item.id, s.raw->data(), s.raw->size());
          settle(s, std::move(s.raw), none);
          return;
        }
        if (s.from_disk) disk->Drop(s.item.id);  // the caller fetches it again with Load
        settle(s, nullptr, none);
      });
}

ChunkLoader::ChunkLoader(IndexHandle* index, PackSet* packs, ChangeLog* log, size_t cache_bytes, unsigned threads)
    : index_(index), packs_(packs), log_(log), threads_(threads ? threads : 1), cache_(cache_bytes) {}

Result<std::optional<ChunkLocation>> ChunkLoader::Relocate(const Digest& chunk_id) {
  // On a bucket the gc that moved it may have run on another machine.
  if (packs_->remote()) CHUNKSTORE_RETURN_IF_ERROR(log_->CatchUp());
  auto db = index_->Lock();
  return db->FindChunk(chunk_id);
}

unsigned ChunkLoader::read_ahead_depth() const {
  // Enough chunks in flight to keep every core verifying while the caller
  // copies out the current one: a worker verifies two chunks at a time,
  // and as many again are verified or waiting, so that a worker whose
  // chunks were short finds more while the caller waits for a long one.
  // (Three per worker left the cores idle about a tenth of a read.)
  // From a bucket, at least sixteen fetches wait on the network at once.
  return packs_->remote() ? std::max(3 * threads_, 16u) : std::max(2u, 4 * threads_);
}

unsigned ChunkLoader::read_ahead_workers() const { return packs_->remote() ? read_ahead_depth() : threads_; }

// From a bucket a task mostly waits on its fetch, and a group would fetch
// its chunks one after the other.
bool ChunkLoader::group_reads() const { return Sha256PairInterleaves() && !packs_->remote(); }

TaskPool& ChunkLoader::ReadAhead() {
  // Background: the reader's own thread, which consumes what the pool
  // verifies, should not be preempted by it (TaskPool).
  std::call_once(read_ahead_once_,
                 [&] { read_ahead_ = std::make_unique<TaskPool>(read_ahead_workers(), true); });
  return *read_ahead_;
}

}  // namespace chunkstore::internal
