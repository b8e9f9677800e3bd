// Opening bucket stores, and the Store calls that differ between a
// directory and a bucket: where packs are read from, refreshing and
// rebuilding the index cache.
#include <cstdlib>

#include "backend/s3/s3_blob_store.h"
#include "index/sql.h"
#include "store/store_impl.h"

namespace chunkstore {

using namespace internal;

namespace {

std::string DefaultCacheRoot() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/chunkstore";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/chunkstore";
}

// Opens (creating when missing) the cache's index and makes sure it caches
// this bucket: a cache left by another store under the same directory is
// thrown away.
Result<std::unique_ptr<Index>> OpenCacheIndex(Env* env, const std::string& cache,
                                              const StoreMeta& meta, const std::string& store_id,
                                              const Options& options) {
  const std::string path = cache + "/index.db";
  Status last;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!env->FileExists(path)) {
      Result<std::unique_ptr<FileLock>> lock = env->LockFile(cache + "/LOCK");
      if (!lock.ok()) return lock.status();
      if (!env->FileExists(path)) CHUNKSTORE_RETURN_IF_ERROR(CreateIndexFile(env, cache, meta, options));
    }
    Result<std::unique_ptr<Index>> index = Index::Open(path, nullptr, options.sync, options.busy_timeout_ms);
    if (!index.ok()) {
      // A busy database is someone else's working cache, not a damaged one.
      if (index.status().IsBusy()) return index.status();
      last = index.status();
    } else {
      CHUNKSTORE_RETURN_IF_ERROR(PrepareCacheIndex(index->get()));
      std::string cached_id;
      Query q((*index)->db(), "SELECT value FROM meta WHERE key = 'bucket_store_id'");
      if (q.ok() && q.use().Step() == SQLITE_ROW) cached_id = q.use().ColText(0);
      if (cached_id.empty()) {
        Query set((*index)->db(), "INSERT OR IGNORE INTO meta VALUES('bucket_store_id', ?1)");
        if (!set.ok()) return (*index)->Error("cannot prepare the index cache");
        set.use().Text(1, store_id);
        if (set.use().Step() != SQLITE_DONE) return (*index)->Error("cannot prepare the index cache");
        cached_id = store_id;
      }
      if (cached_id == store_id) return index;
      last = Status::InvalidArgument("the cache held another store's index");
    }
    // Unreadable, or another store's: it is only a cache.
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) env->RemoveFile(path + suffix);
  }
  return last.WithContext("cannot set up the index cache in " + cache);
}

}  // namespace

Result<std::shared_ptr<Store::Impl>> internal::OpenBucketStore(const std::string& location,
                                                               const Options& options) {
  auto impl = std::make_shared<Store::Impl>(options);
  impl->env = options.env ? options.env : Env::Posix();
  impl->threads = ThreadCount(options);
  Env* env = impl->env;
  std::string cache = options.cache_dir;
  if (options.blob_store != nullptr) {
    impl->bucket = std::make_unique<Bucket>(nullptr, options.blob_store);
    impl->dir = options.blob_store->Describe();
    if (cache.empty()) cache = location;
  } else {
    Result<S3Location> where = ParseS3Url(location);
    if (!where.ok()) return where.status();
    Result<S3Options> s3 = ResolveS3Options(options.s3);
    if (!s3.ok()) return s3.status();
    Result<std::unique_ptr<BlobStore>> blobs = NewS3BlobStore(*where, *s3, options.create_if_missing);
    if (!blobs.ok()) return blobs.status();
    BlobStore* raw = blobs->get();
    impl->bucket = std::make_unique<Bucket>(std::move(*blobs), raw);
    impl->dir = raw->Describe();
    if (cache.empty()) {
      const std::string who = s3->endpoint + "\n" + where->bucket + "\n" + where->prefix;
      cache = DefaultCacheRoot() + "/" + Sha256::Of(who.data(), who.size()).Hex().substr(0, 16);
    }
  }
  while (cache.size() > 1 && cache.back() == '/') cache.pop_back();
  impl->root = cache;
  if (options.error_if_exists) {
    Result<uint64_t> config = impl->bucket->blobs()->Size("config");
    if (config.ok()) return Status::InvalidArgument(impl->dir + " is already a chunkstore store");
    if (!config.status().IsNotFound()) return config.status();
  }
  StoreMeta wanted;
  wanted.chunking = options.chunking;
  wanted.compression = options.compression;
  // inline_max stays 0: the cache index must be rebuildable from the
  // bucket, so every byte goes into a pack there.
  std::string store_id;
  CHUNKSTORE_RETURN_IF_ERROR(
      impl->bucket->LoadConfig(options.create_if_missing, wanted, &impl->meta, &store_id));
  CHUNKSTORE_RETURN_IF_ERROR(CreateDirs(env, cache));
  Result<std::unique_ptr<Index>> index = OpenCacheIndex(env, cache, impl->meta, store_id, options);
  if (!index.ok()) return index.status().WithContext("the index cache of " + impl->dir);
  impl->index = std::move(*index);
  CHUNKSTORE_RETURN_IF_ERROR(CreateDirs(env, impl->packs_dir()));
  CHUNKSTORE_RETURN_IF_ERROR(CreateDirs(env, impl->tmp_dir()));
  if (options.refresh_on_open) CHUNKSTORE_RETURN_IF_ERROR(impl->Refresh());
  return impl;
}

Status Store::Impl::Refresh() {
  if (!bucket) return Status::OK();
  return bucket->Refresh(index.get(), &db_mu);
}

Result<std::unique_ptr<BucketLock>> Store::Impl::LockBucketShared() {
  if (!bucket) return std::unique_ptr<BucketLock>();
  Result<std::unique_ptr<BucketLock>> lock = bucket->Lock(false, options.busy_timeout_ms);
  if (!lock.ok()) return lock.status();
  // Under the lock no gc runs, and everything one did is in the log: after
  // this refresh every chunk the index lists is really in the bucket.
  CHUNKSTORE_RETURN_IF_ERROR(Refresh());
  return lock;
}

Result<std::unique_ptr<File>> Store::Impl::OpenPack(const std::string& name, uint64_t size) {
  if (bucket) {
    if (size == 0) {
      Result<uint64_t> got = bucket->blobs()->Size(Bucket::PackKey(name));
      if (!got.ok()) return got.status();
      size = *got;
    }
    return std::unique_ptr<File>(new RemotePackFile(bucket->blobs(), Bucket::PackKey(name), size));
  }
  return env->OpenFile(packs_dir() + "/" + name, OpenMode::kRead);
}

Result<std::vector<std::string>> Store::Impl::ListPackFiles() {
  if (!bucket) return env->ListDir(packs_dir());
  Result<std::vector<BlobInfo>> blobs = bucket->blobs()->List("packs/");
  if (!blobs.ok()) return blobs.status();
  std::vector<std::string> names;
  for (const BlobInfo& b : *blobs) names.push_back(b.key.substr(6));
  return names;
}

Status Store::Refresh() { return impl_->Refresh(); }

bool Store::is_bucket() const { return impl_->bucket != nullptr; }

Status Store::RebuildIndex() {
  Impl* impl = impl_.get();
  if (!impl->bucket)
    return Status::Unsupported("the index of a directory store is the store itself; only a bucket "
                               "store's index cache can be rebuilt");
  {
    std::lock_guard<std::mutex> l(impl->db_mu);
    Index* index = impl->index.get();
    CHUNKSTORE_RETURN_IF_ERROR(index->Begin());
    for (const char* table : {"names", "objects", "chunks", "packs", "applied_log"}) {
      const std::string sql = std::string("DELETE FROM ") + table;
      Status s = index->Exec(sql.c_str());
      if (!s.ok()) {
        index->Rollback();
        return s;
      }
    }
    CHUNKSTORE_RETURN_IF_ERROR(index->Commit());
  }
  {
    std::lock_guard<std::mutex> l(impl->packs_mu);
    impl->read_packs.clear();
  }
  return impl->Refresh();
}

}  // namespace chunkstore
