// Store::Impl: the shared state behind a Store and its Readers, and the
// internal pieces that publishing and reading are built from.
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "bucket/bucket.h"
#include "base/buffer.h"
#include "chunkstore/env.h"
#include "chunkstore/store.h"
#include "hash/digest.h"
#include "index/index.h"
#include "ingest/ingest.h"
#include "format/manifest.h"
#include "ingest/source.h"
#include "base/task_pool.h"

namespace chunkstore {

namespace internal {

// Unix time in whole seconds (object, name and gc timestamps).
inline int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A bounded LRU cache of chunks whose SHA-256 has been verified.
class ChunkCache {
 public:
  using Bytes = std::shared_ptr<const Buffer>;
  explicit ChunkCache(size_t budget) : budget_(budget) {}
  Bytes Get(const Digest& id);
  void Put(const Digest& id, Bytes bytes);

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

 private:
  void Put(Buffer* b);
  std::mutex mu_;
  std::vector<std::unique_ptr<Buffer>> free_;
  static constexpr size_t kMaxFree = 16;
};

// An open pack file this process appends to, held under an exclusive lock
// so no other writer (thread or process) appends to it at the same time.
struct PackWriter {
  std::string name;
  std::string path;
  int64_t id = 0;          // 0 until the pack's row is committed
  uint64_t committed = 0;  // length covered by committed index rows
  uint64_t size = 0;       // current length, buffered bytes included
  bool needs_dir_sync = false;
  uint64_t written_back = 0;  // size at the last StartWriteBack
  std::unique_ptr<File> file;
  std::unique_ptr<FileLock> lock;
  std::vector<uint8_t> buffer;  // small records are gathered before writing

  Status Append(const uint8_t* header, size_t header_len, const uint8_t* data, size_t n);
  Status Flush();
};

// Reads the record of chunk id at loc and checks it: header, agreement
// with the index, xxHash64 of the stored bytes and, unless quick or
// check_sha is false, the SHA-256 of the inflated content (left in *raw;
// a caller that passes false must check it). Corruption says what failed,
// without naming an object.
Status CheckRecord(const File& pack, const Digest& id, const ChunkLocation& loc, bool quick,
                   Buffer* raw, bool check_sha = true);

}  // namespace internal

struct Store::Impl {
  Options options;
  Env* env = nullptr;
  std::unique_ptr<Env> owned_env;  // in-memory stores
  std::string dir;                 // "" for in-memory; the URL of a bucket store
  std::string root;                // where files live ("/mem" in memory, the cache of a bucket)
  // Set for bucket stores: packs live there, the index is a cache of its log.
  std::unique_ptr<internal::Bucket> bucket;
  unsigned threads = 1;

  std::mutex db_mu;
  std::unique_ptr<internal::Index> index;
  internal::StoreMeta meta;

  std::mutex packs_mu;
  std::unordered_map<int64_t, std::shared_ptr<File>> read_packs;

  std::mutex writers_mu;
  std::vector<std::unique_ptr<internal::PackWriter>> idle_writers;

  // The process's pool (BufferPool::Shared), which outlives every store:
  // cached buffers return to it whenever they are dropped.
  internal::BufferPool& buffers = internal::BufferPool::Shared();
  internal::ChunkCache cache;

  // Read-ahead of sequential readers. Created on first use: its size
  // depends on whether chunks come from disk (one worker a core) or from a
  // bucket (enough requests in flight to hide the network).
  std::once_flag read_ahead_once;
  std::unique_ptr<internal::TaskPool> read_ahead_pool;
  internal::TaskPool& ReadAhead(unsigned workers) {
    // Background: the reader's own thread, which consumes what the pool
    // verifies, should not be preempted by it (TaskPool).
    std::call_once(read_ahead_once,
                   [&] { read_ahead_pool = std::make_unique<internal::TaskPool>(workers, true); });
    return *read_ahead_pool;
  }

  explicit Impl(const Options& o) : options(o), cache(o.cache_bytes) {}

  std::string packs_dir() const { return root + "/packs"; }
  std::string tmp_dir() const { return root + "/tmp"; }

  Result<std::unique_ptr<internal::PackWriter>> AcquireWriter();
  // A new, locked, empty pack file (header written, not yet in the index).
  Result<std::unique_ptr<internal::PackWriter>> NewPackWriter();
  // gc: moves a pack's indexed chunks to a new pack; the caller holds the
  // old pack's lock and deletes its file afterwards.
  Status CompactPack(const internal::PackRow& old);
  void ReleaseWriter(std::unique_ptr<internal::PackWriter> w, bool clean);

  // Verified bytes of one chunk. object_id names the object in errors.
  Result<internal::ChunkCache::Bytes> LoadChunk(const std::string& object_id,
                                                const internal::Digest& chunk_id,
                                                const internal::ChunkLocation& loc,
                                                bool keep = true);
  // Verifies chunks ids[0, n) (at locs) two at a time, interleaved, a lane
  // starting the next chunk as soon as its own is done (Sha256Lanes), so
  // only the group's last chunk runs partly alone. Calls done(k, bytes)
  // on this thread as each chunk k is settled, in any order; the bytes are
  // not kept in the cache. Null bytes mean the chunk was not verified here
  // (a cache hit, or any check failed): the caller loads it alone with
  // LoadChunk, which says what failed.
  void LoadChunkGroup(const internal::Digest* ids, const internal::ChunkLocation* locs, size_t n,
                      const std::function<void(size_t, internal::ChunkCache::Bytes)>& done);
  Result<std::shared_ptr<File>> PackForRead(int64_t pack_id);
  // A pack by name, for reading: a local file, or a blob of the bucket
  // (NotFound if missing). size is the expected size (0: ask the bucket).
  Result<std::unique_ptr<File>> OpenPack(const std::string& name, uint64_t size = 0);
  // Names of the pack files present (directory entries or bucket keys).
  Result<std::vector<std::string>> ListPackFiles();
  // Bucket stores: applies other writers' new log records. OK otherwise.
  Status Refresh();
  // Bucket stores: a shared lock on the bucket, refreshed cache included.
  // nullptr for other stores.
  Result<std::unique_ptr<internal::BucketLock>> LockBucketShared();

  Result<internal::Digest> ResolveRef(const std::string& ref);
  // As ResolveRef, with db_mu held by the caller; also loads the object's
  // row into *row_out when given.
  Result<internal::Digest> ResolveLocked(const std::string& ref, internal::ObjectRow* row_out);
  Result<internal::Digest> Loaded(const internal::Digest& id, internal::ObjectRow* row_out);
  Result<internal::ObjectRow> LoadObject(const internal::Digest& id);

  // The chunk list of the newest object of the source's size, when the
  // source is large enough for an ingest with cfg to use it (see
  // IngestConfig::expected); empty otherwise, or if the lookup fails: it
  // is only a hint.
  std::vector<internal::ManifestEntry> EarlierVersion(const internal::Source& source,
                                                      const internal::IngestConfig& cfg);
};

namespace internal {

// Collects the chunks and objects of one or more publishes and commits them
// in one index transaction. Pack bytes are written as chunks arrive; the
// pack is synced before the transaction that makes them reachable.
class PublishSession {
 public:
  explicit PublishSession(Store::Impl* store) : store_(store) {}
  ~PublishSession();

  Result<PublishResult> AddSource(Source& source, const std::string& name);
  Result<PublishResult> AddPrepared(const PreparedObject::State& prepared, const std::string& name);
  // Commits everything added; fills in name versions in results().
  Status Commit();
  std::vector<PublishResult>& results() { return results_; }

 private:
  friend class SessionSink;
  Status WriteChunk(const Digest& id, const uint8_t* raw, uint32_t raw_len, bool compressed,
                    const std::vector<uint8_t>& packed, PublishResult* result);
  // Small chunks are not looked up one by one while they arrive (each
  // lookup would be its own read transaction); they wait here and are
  // looked up together, then written if new.
  void Defer(const Digest& id, const uint8_t* raw, uint32_t raw_len, bool compressed,
             const std::vector<uint8_t>& packed, size_t result_index);
  Status ResolvePending(PublishResult* current);
  Status FinishObject(const Digest& id, uint64_t size, std::vector<ManifestEntry> entries,
                      const std::string& name, PublishResult result);
  // An object kept in its index row (size 1 to meta.inline_max).
  Status FinishInline(const Digest& id, std::string content, const std::string& name,
                      PublishResult result);
  void Abort();
  // Bucket stores: takes the shared lock (and refreshes) before the first
  // lookup; sends a full pack on its way while ingest goes on.
  Status EnsureBucketLock();
  Status ShipFullWriter();
  Status CommitToBucket();

  Store::Impl* store_;
  std::unique_ptr<PackWriter> writer_;
  std::vector<std::pair<Digest, ChunkLocation>> new_chunks_;
  std::unordered_set<Digest, DigestHash> written_;
  std::vector<Digest> reused_;  // taken from the index, re-checked at commit
  // Taken before the first lookup; if the index's mark is the same at
  // commit, nothing can have removed a reused chunk and the re-check is
  // skipped (local stores).
  std::optional<Index::ChangeMark> mark_;
  const Index* mark_index_ = nullptr;
  Status TakeMark();
  struct Pending {
    Digest id;
    uint32_t raw_len;
    bool compressed;
    std::vector<uint8_t> bytes;  // raw, or the zlib form when compressed
    size_t result;               // index into results_ (or the object being added)
  };
  std::vector<Pending> pending_;
  std::unordered_set<Digest, DigestHash> pending_ids_;
  size_t pending_bytes_ = 0;
  std::vector<ObjectRow> objects_;
  std::vector<std::pair<std::string, Digest>> names_;  // "" for no name
  std::vector<PublishResult> results_;
  bool done_ = false;
  // Bucket stores only.
  std::unique_ptr<BucketLock> bucket_lock_;
  struct Shipped {
    std::string name;
    uint64_t size = 0;
    std::unique_ptr<PackWriter> writer;  // until its upload ends
    std::future<Status> upload;
  };
  std::vector<Shipped> shipped_;  // full packs, uploading or uploaded
  Status upload_error_;           // the first failed upload
  // Ends finished uploads (their staging files go), and waits for the
  // oldest while more than in_flight are running.
  Status ReapUploads(size_t in_flight);
};

}  // namespace internal

namespace internal {

// Threads for ingest and reads: options.threads, else one per core.
unsigned ThreadCount(const Options& o);
// Creates dir and any missing parents; with sync, each new directory's
// entry is made durable in its parent.
Status CreateDirs(Env* env, const std::string& dir, bool sync = false);
// Creates dir/index.db for meta, atomically (built aside, then renamed).
Status CreateIndexFile(Env* env, const std::string& dir, const StoreMeta& meta,
                       const Options& options);
// gc's verdict, from one read of the index inside the caller's
// transaction: objects no name or pin keeps, chunks no live manifest
// lists (with their pack ids), and every pack's live bytes.
struct PackUse {
  PackRow row;
  uint64_t live_bytes = 0;  // record bytes of chunks still needed
};
struct Garbage {
  std::vector<Digest> dead_objects;
  std::vector<std::pair<Digest, int64_t>> dead_chunks;
  std::map<int64_t, PackUse> packs;
};
Status FindGarbage(Index* index, Garbage* out);
// Store::Gc for bucket stores (gc_bucket.cc).
Result<GcReport> BucketGc(Store::Impl* impl, const GcOptions& options);

// Store::Open for bucket stores (store_bucket.cc).
Result<std::shared_ptr<Store::Impl>> OpenBucketStore(const std::string& location,
                                                     const Options& options);

}  // namespace internal

struct PreparedObject::State {
  enum class Kind { kFile, kBytes, kSpill };
  internal::Digest id;
  std::string id_str;
  uint64_t size = 0;
  std::vector<internal::ManifestEntry> entries;
  Kind kind = Kind::kBytes;
  std::unique_ptr<internal::FileSource> file;
  const uint8_t* bytes = nullptr;
  std::unique_ptr<File> spill;
  const Store::Impl* owner = nullptr;

  // A nested class may reach PreparedObject's private members.
  static PreparedObject Wrap(std::unique_ptr<State> state) {
    PreparedObject p;
    p.state_ = std::move(state);
    return p;
  }

  // Reads n bytes of the original content at offset.
  Status ReadContent(uint64_t offset, uint8_t* buf, size_t n) const;
};

}  // namespace chunkstore
