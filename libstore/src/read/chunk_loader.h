// SPDX-License-Identifier: Apache-2.0
// ChunkLoader: verified chunk bytes, from wherever the packs are.
//
// Loading chunk C reads its record from its pack and checks, in this order
// (docs/format.md, "Reading and verification"): the record header's magic
// and check; that its chunk id, lengths, codec and xxHash64 are what the
// index says; the xxHash64 of compressed bytes; the inflate; the SHA-256
// of the raw bytes against C. Only then may a byte of C leave. Verified
// chunks of random reads are kept in a bounded LRU cache; buffers come
// from a pool shared by the process; sequential readers verify ahead on a
// pool of workers.
//
// Thread safety: everything is safe for concurrent use.
#pragma once

#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/buffer.h"
#include "base/task_pool.h"
#include "chunkstore/env.h"
#include "format/rows.h"
#include "hash/chain.h"
#include "hash/digest.h"
#include "index/index.h"
#include "log/change_log.h"
#include "packs/pack_set.h"
#include "read/disk_cache.h"

namespace chunkstore::internal {

// A bounded LRU cache of chunks whose SHA-256 has been verified.
class ChunkCache {
 public:
  using Bytes = std::shared_ptr<const Buffer>;
  explicit ChunkCache(size_t budget) : budget_(budget) {}
  Bytes Get(const Digest& id);
  // Keeps bytes as id's, in a copy of their own size where their buffer
  // has much room to spare; returns what the caller should use from then
  // on (the copy, or what the cache already held for id).
  Bytes Put(const Digest& id, Bytes bytes);
  // Whether id is held, without making it more recent.
  bool Contains(const Digest& id);

 private:
  std::mutex mu_;
  const size_t budget_;
  size_t used_ = 0;
  std::list<std::pair<Digest, Bytes>> lru_;  // front = most recent
  std::unordered_map<Digest, std::list<std::pair<Digest, Bytes>>::iterator, DigestHash> map_;
};

// Recycles chunk buffers: a fresh multi-MiB allocation costs page faults
// and zeroing by the kernel on every chunk read, more than a copy of it.
class BufferPool {
 public:
  // The process's pool, shared by every store: a store opened for one
  // read finds buffers that earlier stores have faulted in. Never
  // destroyed, so buffers may outlive any store.
  static BufferPool& Shared();

  // A buffer of at least n bytes that returns to the pool when released.
  std::shared_ptr<Buffer> Get(size_t n);

  // The memory a buffer made for n bytes holds (a pooled one may hold
  // more: the smallest free buffer that fits is handed out).
  static size_t CapacityFor(size_t n);

 private:
  void Put(Buffer* b);
  std::mutex mu_;
  std::vector<std::unique_ptr<Buffer>> free_;
  static constexpr size_t kMaxFree = 16;
};

// Reads the record of chunk id at loc and checks it: header, agreement
// with the index, xxHash64 of the stored bytes and, unless quick or
// check_sha is false, the SHA-256 of the inflated content (left in *raw;
// a caller that passes false must check it). one_read: fetch header and
// payload together (a pack read over the network, where a request costs
// far more than a copy). Corruption says what failed, without naming an
// object.
Status CheckRecord(const File& pack, const Digest& id, const ChunkLocation& loc, bool quick, Buffer* raw,
                   bool check_sha = true, bool one_read = false);

class ChunkLoader {
 public:
  using Bytes = ChunkCache::Bytes;

  // None of the pointers is owned; all must outlive the loader. threads:
  // how many cores to verify on.
  ChunkLoader(IndexHandle* index, PackSet* packs, ChangeLog* log, size_t cache_bytes, unsigned threads);

  // Chunks fetched from a remote pack set go to (and come from) this disk
  // cache as well. Call before the first load.
  void SetDiskCache(std::unique_ptr<DiskChunkCache> disk) { disk_ = std::move(disk); }
  // True when packs are fetched over the network (a bucket).
  bool remote() const { return packs_->remote(); }
  // Whether chunks are also kept on disk (SetDiskCache).
  bool disk_cached() const { return disk_ != nullptr; }

  // Verified bytes of one chunk; object_id names the object in errors.
  // keep: whether the chunk goes into the cache. disk: whether it may come
  // from the disk cache, and go into it when fetched over the network
  // (ReadSource::disk_cache). check_sha false: the record is checked
  // (its header against the index; a compressed record's xxHash64 before
  // it is decoded) but not the SHA-256 of its content, which the caller
  // must check before it trusts a byte (a copy hashes each chunk in the
  // same pass as its object); such bytes never enter a cache, and keep
  // and disk are ignored. A cache hit is verified bytes either way.
  Result<Bytes> Load(const std::string& object_id, const Digest& chunk_id, const ChunkLocation& loc,
                     bool keep = true, bool disk = true, bool check_sha = true);
  // How a chunk read in a group is proven when it is read as part of a
  // whole object (hash/chain.h): not by its own SHA-256 but as a link of
  // its object's chain, the whole blocks inside it from the state the
  // manifest gives. skip: bytes of the chunk before its first block
  // boundary; blocks: whole blocks after it, inside the chunk.
  struct ChainLink {
    ChainState from;  // invalid: no block boundary inside the chunk
    uint32_t skip = 0;
    uint32_t blocks = 0;
  };
  // One chunk of a LoadRun: key is what done() is called with; chained:
  // proven by its link, not its own SHA-256.
  struct RunItem {
    size_t key = 0;
    Digest id;
    ChunkLocation loc;
    bool chained = false;
    ChainLink link;
  };
  // Verifies chunks two at a time, interleaved, as next(&item, last)
  // hands them out (a reader's read-ahead queue, shared by several
  // workers): a lane whose chunk is done takes the next one, and a lane
  // left alone asks again between stretches (Sha256LanesWhile). next
  // returns false when no chunk is waiting; with last, no other chunk is
  // in hand and false ends the run. Calls done(key, bytes, z) on this
  // thread as each chunk is settled, in any order; the bytes are not kept
  // in the memory cache. Null bytes mean the chunk was not verified here
  // (a cache hit, or any check failed): the caller loads it alone with
  // Load, which says what failed. A chained chunk's record is checked as
  // always but its SHA-256 is not: z is the chain state its link reaches,
  // and the bytes are proven only once the caller's link checks hold
  // (they must never enter a cache).
  void LoadRun(const std::function<bool(RunItem*, bool)>& next, bool disk,
               const std::function<void(size_t, Bytes, const ChainState&)>& done);
  // LoadRun of one chunk; link null: proven by its own SHA-256.
  void LoadOne(const Digest& id, const ChunkLocation& loc, const ChainLink* link, bool disk,
               const std::function<void(Bytes, const ChainState&)>& done);
  // Where a chunk is now (a gc may have moved it since it was looked up;
  // on a bucket, another machine's gc: the log is caught up first).
  // nullopt: no longer stored at all.
  Result<std::optional<ChunkLocation>> Relocate(const Digest& chunk_id);
  // Keeps bytes proven to be chunk_id's (by their own SHA-256) in the
  // memory cache; returns what the caller should use from then on.
  Bytes Keep(const Digest& chunk_id, Bytes bytes) { return cache_.Put(chunk_id, std::move(bytes)); }
  // Whether chunk_id's verified bytes are in the memory cache now.
  bool Cached(const Digest& chunk_id) { return cache_.Contains(chunk_id); }

  // Read-ahead of sequential readers: how many chunks to keep in flight,
  // and on how many workers. From a bucket, fetches wait on the network,
  // not on the cores.
  unsigned read_ahead_depth() const;
  unsigned read_ahead_workers() const;
  // Whether chunks should be verified ahead in interleaved groups (local
  // packs and a CPU that interleaves SHA-256).
  bool group_reads() const;
  TaskPool& ReadAhead();

 private:
  IndexHandle* index_;
  PackSet* packs_;
  ChangeLog* log_;
  unsigned threads_;
  BufferPool& buffers_ = BufferPool::Shared();
  ChunkCache cache_;
  std::unique_ptr<DiskChunkCache> disk_;
  std::once_flag read_ahead_once_;
  std::unique_ptr<TaskPool> read_ahead_;
};

}  // namespace chunkstore::internal
