// SPDX-License-Identifier: Apache-2.0
// Opening bucket stores: the blob store, the config, and the local cache
// (its index, and the staging folder of packs being written).
#include <cstdlib>

#include "backend/s3/s3_blob_store.h"
#include "bucket/bucket.h"
#include "format/config.h"
#include "format/layout.h"
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
  const std::string path = cache + "/" + kIndexFile;
  Status last;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!env->FileExists(path)) {
      Result<std::unique_ptr<FileLock>> lock = env->LockFile(cache + "/" + kCreateLock);
      if (!lock.ok()) return lock.status();
      if (!env->FileExists(path)) {
        // Built aside and renamed, so no process opens a half-made cache.
        const std::string fresh = path + ".new";
        for (const char* suffix : {"", "-wal", "-shm", "-journal"}) env->RemoveFile(fresh + suffix);
        Index::OpenOptions o;
        o.create = &meta;
        Result<std::unique_ptr<Index>> made = Index::Open(fresh, o);
        if (!made.ok()) return made.status();
        made->reset();
        CHUNKSTORE_RETURN_IF_ERROR(env->RenameFile(fresh, path));
      }
    }
    Index::OpenOptions o;
    o.busy_timeout_ms = options.busy_timeout_ms;
    Result<std::unique_ptr<Index>> index = Index::Open(path, o);
    if (!index.ok()) {
      // A busy database is someone else's working cache, not a damaged one.
      if (index.status().IsBusy()) return index.status();
      last = index.status();
    } else {
      CHUNKSTORE_RETURN_IF_ERROR((*index)->PrepareBucketCache());
      Result<std::string> cached_id = (*index)->GetMeta("bucket_store_id");
      if (!cached_id.ok()) return cached_id.status();
      if (cached_id->empty()) {
        CHUNKSTORE_RETURN_IF_ERROR((*index)->SetMeta("bucket_store_id", store_id));
        *cached_id = store_id;
      }
      // A cache from before the change log knows no name versions of its
      // own: it is only a cache, so it is made again.
      if (*cached_id == store_id && (*index)->schema_version() == kSchemaVersion) return index;
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
    impl->blobs = options.blob_store;
    impl->dir = options.blob_store->Describe();
    if (cache.empty()) cache = location;
  } else if (location.rfind("http://", 0) == 0 || location.rfind("https://", 0) == 0) {
    // A store `serve` serves: a bucket at BASE/blobs, spoken to as S3 (its
    // subset of ListObjectsV2 and ranged GETs), read-only. The signature is
    // there only because the client always signs; the server ignores it.
    std::string base = location;
    while (!base.empty() && base.back() == '/') base.pop_back();
    const size_t scheme = base.find("://") + 3;
    if (base.find('/', scheme) != std::string::npos || base.size() <= scheme)
      return Status::InvalidArgument("an http store is http://HOST:PORT, not " + location);
    S3Location where;
    where.bucket = "blobs";
    S3Options s3 = options.s3;
    s3.endpoint = base;
    if (s3.region.empty()) s3.region = "us-east-1";
    s3.access_key = "chunkstore";
    s3.secret_key = "chunkstore";
    s3.session_token.clear();
    if (s3.ca_bundle.empty()) {
      if (const char* ca = std::getenv("AWS_CA_BUNDLE"); ca && *ca) s3.ca_bundle = ca;
      else if (const char* cert = std::getenv("SSL_CERT_FILE"); cert && *cert) s3.ca_bundle = cert;
    }
    Result<std::unique_ptr<BlobStore>> blobs = NewS3BlobStore(where, s3, false);
    if (!blobs.ok()) return blobs.status();
    impl->owned_blobs = NewReadOnlyBlobStore(
        std::move(*blobs), base + " is a served store, read-only; change the store it serves instead");
    impl->blobs = impl->owned_blobs.get();
    impl->dir = base;
    impl->push_url = base + "/push";
    if (cache.empty()) cache = DefaultCacheRoot() + "/" + Sha256::Of(base.data(), base.size()).Hex().substr(0, 16);
  } else {
    Result<S3Location> where = ParseS3Url(location);
    if (!where.ok()) return where.status();
    Result<S3Options> s3 = ResolveS3Options(options.s3);
    if (!s3.ok()) return s3.status();
    Result<std::unique_ptr<BlobStore>> blobs = NewS3BlobStore(*where, *s3, options.create_if_missing);
    if (!blobs.ok()) return blobs.status();
    impl->owned_blobs = std::move(*blobs);
    impl->blobs = impl->owned_blobs.get();
    impl->dir = impl->blobs->Describe();
    if (cache.empty()) {
      const std::string who = s3->endpoint + "\n" + where->bucket + "\n" + where->prefix;
      cache = DefaultCacheRoot() + "/" + Sha256::Of(who.data(), who.size()).Hex().substr(0, 16);
    }
  }
  while (cache.size() > 1 && cache.back() == '/') cache.pop_back();
  impl->root = cache;
  if (options.error_if_exists) {
    Result<uint64_t> config = impl->blobs->Size("config");
    if (config.ok()) return Status::InvalidArgument(impl->dir + " is already a chunkstore store");
    if (!config.status().IsNotFound()) return config.status();
  }
  StoreMeta wanted;
  wanted.chunking = options.chunking;
  wanted.compression = options.compression;
  // inline_max stays 0: objects travel in packs on a bucket.
  bool signed_store = false, sequenced = false;
  CHUNKSTORE_RETURN_IF_ERROR(LoadBucketConfig(impl->blobs, options.create_if_missing,
                                              options.bucket_conditional_writes, wanted, options.secret,
                                              &impl->meta, &impl->store_id, &signed_store, &sequenced));
  CHUNKSTORE_RETURN_IF_ERROR(CreateDirs(env, cache));
  Result<std::unique_ptr<Index>> index = OpenCacheIndex(env, cache, impl->meta, impl->store_id, options);
  if (!index.ok()) return index.status().WithContext("the index cache of " + impl->dir);
  impl->index.Reset(std::move(*index));
  CHUNKSTORE_RETURN_IF_ERROR(CreateDirs(env, cache + "/" + kPacksDir));
  if (const uint64_t swept = SweepStagedPacks(env, cache + "/" + kPacksDir))
    impl->notices.push_back("removed " + std::to_string(swept) + " staged packs that killed publishes left in " +
                            cache + "/" + kPacksDir);
  CHUNKSTORE_RETURN_IF_ERROR(CreateDirs(env, impl->tmp_dir()));
  impl->log = std::make_unique<BucketLog>(env, impl->blobs, &impl->index, cache, impl->meta, options.bucket_checkpoint_records, options.secret,
                                          signed_store, sequenced, options.bucket_log_retention_seconds);
  impl->log->SetFormatRaiser(
      [blobs = impl->blobs, secret = options.secret]() { return RaiseBucketFormat(blobs, secret); });
  BucketPackOptions po;
  po.remote_pack_size = options.remote_pack_size;
  impl->packs = NewBucketPackSet(env, impl->blobs, cache + "/" + kPacksDir, &impl->index, po);
  impl->WireReadWrite();
  // A cache filled without checking signatures (before this machine held
  // the secret) may hold what a forger wrote: made again, checked.
  bool rebuild = options.rebuild_index;
  if (!options.secret.empty()) {
    Result<std::string> checked = impl->index.Lock()->GetMeta("checked_with");
    if (!checked.ok()) return checked.status();
    if (*checked != SecretCheck(options.secret)) rebuild = true;
  }
  if (rebuild) {
    CHUNKSTORE_RETURN_IF_ERROR(impl->log->Rebuild().WithContext("cannot rebuild the index cache of " + impl->dir));
    if (!options.secret.empty())
      CHUNKSTORE_RETURN_IF_ERROR(impl->index.Lock()->SetMeta("checked_with", SecretCheck(options.secret)));
    if (options.rebuild_index) impl->notices.push_back("rebuilt the index cache of " + impl->dir + " from its log");
  } else if (options.refresh_on_open) {
    CHUNKSTORE_RETURN_IF_ERROR(impl->log->CatchUp());
  }
  return impl;
}

}  // namespace chunkstore
