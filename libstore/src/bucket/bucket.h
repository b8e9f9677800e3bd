// Bucket stores: a store whose packs, manifests and catalog live in a
// BlobStore (S3), with the local SQLite index as a cache rebuilt from it.
//
// The bucket holds (docs/format.md, "Bucket layout"):
//   config                 what the store was created with, and its id
//   packs/pack-<hex>.pack  immutable pack files, same format as on disk
//   log/<epoch>-<ms>-<hex> log records: every change to the store, each a
//                          blob written once (publishes with their new
//                          chunks, manifests and names; tags; removals; gc)
//   locks/<kind>-<hex>     lock blobs: writers take "shared", gc takes
//                          "exclusive"
// Applying every log record in key order to an empty index gives the
// store's index; a cache applies the records it has not seen yet.
//
// Thread safety: Bucket is safe for concurrent use; it serializes index
// access through Store::Impl::db_mu like everything else.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chunkstore/blob_store.h"
#include "chunkstore/env.h"
#include "index/index.h"

namespace chunkstore {
struct Options;
}

namespace chunkstore::internal {

// One change to the store, as written to log/. Sections that do not apply
// to a kind stay empty. See docs/format.md for the encoding.
struct LogRecord {
  enum Kind : uint8_t { kPublish = 1, kTag = 2, kRemoveName = 3, kRemoveObject = 4, kGc = 5 };
  Kind kind = kPublish;
  int64_t time = 0;  // unix seconds, by the writer's clock
  struct Pack {
    std::string name;
    uint64_t size = 0;
  };
  struct Chunk {
    Digest id;
    uint32_t pack = 0;  // index into packs
    ChunkLocation loc;  // pack_id unused
  };
  struct RemovedChunk {
    Digest id;
    std::string pack;  // only the row in this pack goes
  };
  std::vector<Pack> packs;                            // publish; gc: new packs
  std::vector<Chunk> chunks;                          // publish: new; gc: moved
  std::vector<ObjectRow> objects;                     // publish
  std::vector<std::pair<std::string, Digest>> names;  // publish, tag
  std::vector<std::string> removed_names;             // remove-name
  std::vector<Digest> removed_objects;                // remove-object, gc
  std::vector<RemovedChunk> removed_chunks;           // gc
  std::vector<std::string> removed_packs;             // gc
};

std::string EncodeLogRecord(const LogRecord& r);
Result<LogRecord> DecodeLogRecord(const std::string& bytes);

// Applies a record inside the caller's write transaction. Names added get
// their version numbers in *versions (in the record's order). Applying is
// idempotent for chunk, pack and object rows; a chunk stored twice by two
// concurrent writers resolves to the copy in the pack with the smaller
// name, so every cache agrees whatever order it saw the records in.
Status ApplyLogRecord(Index* index, const LogRecord& r, std::vector<int64_t>* versions);

// A pack in the bucket, read with ranged GETs.
class RemotePackFile final : public File {
 public:
  RemotePackFile(BlobStore* blobs, std::string key, uint64_t size)
      : blobs_(blobs), key_(std::move(key)), size_(size) {}
  Status Append(const void*, size_t) override { return Unsupported(); }
  Status ReadAt(uint64_t offset, size_t n, void* buf, size_t* got) const override {
    return blobs_->GetRange(key_, offset, n, buf, got);
  }
  Status Sync() override { return Unsupported(); }
  Status Truncate(uint64_t) override { return Unsupported(); }
  Result<uint64_t> Size() const override { return size_; }

 private:
  static Status Unsupported() { return Status::Unsupported("packs in a bucket are immutable"); }
  BlobStore* blobs_;
  std::string key_;
  uint64_t size_;
};

// A lock blob held until destroyed; refreshed in the background so that
// long publishes never look stale to a gc.
class BucketLock {
 public:
  ~BucketLock();
  const std::string& key() const { return key_; }

 private:
  friend class Bucket;
  BucketLock(BlobStore* blobs, std::string key, std::string body);
  BlobStore* blobs_;
  std::string key_, body_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread keeper_;
};

class Bucket {
 public:
  // A lock older than this (by the bucket's clock) belongs to a crashed
  // process; holders refresh theirs every kLockRefreshSeconds.
  static constexpr int64_t kLockStaleSeconds = 30 * 60;
  static constexpr int64_t kLockRefreshSeconds = 5 * 60;
  // Log keys are listed from this far before the newest one applied, to
  // pick up records of concurrent writers whose clocks run behind.
  static constexpr int64_t kLogLookbackMs = 15 * 60 * 1000;

  Bucket(std::unique_ptr<BlobStore> owned, BlobStore* blobs)
      : owned_(std::move(owned)), blobs_(blobs) {}

  BlobStore* blobs() const { return blobs_; }

  // Reads or (when create) writes the config blob. *meta gets the store's
  // chunking and compression; *store_id its id.
  Status LoadConfig(bool create, const StoreMeta& wanted, StoreMeta* meta, std::string* store_id);

  // Takes a shared (publishers, catalog changes) or exclusive (gc) lock;
  // Busy when the other kind is held. Shared locks wait up to wait_ms for
  // a gc to finish.
  Result<std::unique_ptr<BucketLock>> Lock(bool exclusive, int wait_ms);

  // Applies log records this cache has not seen. index_mu guards index.
  Status Refresh(Index* index, std::mutex* index_mu);
  // Writes a record to the bucket, then applies it to the cache.
  Status Write(Index* index, std::mutex* index_mu, const LogRecord& r,
               std::vector<int64_t>* versions);
  // Uploads a finished pack.
  Status UploadPack(const std::string& name, const File& file, uint64_t size);
  static std::string PackKey(const std::string& name) { return "packs/" + name; }

  // The gc epoch the cache has reached (records of a gc start a new one).
  int64_t epoch() const { return epoch_.load(); }

 private:
  Status ApplyKeys(Index* index, std::mutex* index_mu, const std::vector<std::string>& keys);
  // newest: the newest key applied to the cache ("" if none).
  std::string NewLogKey(int64_t epoch, const std::string& newest) const;

  std::unique_ptr<BlobStore> owned_;
  BlobStore* blobs_;
  std::mutex refresh_mu_;  // one refresh at a time
  std::atomic<int64_t> epoch_{0};
};

// Creates the cache tables a bucket store's index needs (idempotent).
Status PrepareCacheIndex(Index* index);

}  // namespace chunkstore::internal
