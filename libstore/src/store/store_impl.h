// SPDX-License-Identifier: Apache-2.0
// Store::Impl: the pieces a store is made of, wired together. Each piece
// lives in its own folder and knows nothing of the others beyond their
// interfaces (libstore/src/README.md):
//
//   index   the SQLite index, a cache of the log (index/)
//   log     where changes are kept: log segments or a bucket's log blobs
//   packs   where chunk records are kept: pack files or pack blobs
//   loader  verified chunk reads, the chunk cache and read-ahead (read/)
//
// Readers keep an Impl alive (ReadSource::keep_alive), so they stay valid
// after the Store object is gone.
#pragma once

#include <memory>
#include <string>

#include "chunkstore/blob_store.h"
#include "chunkstore/env.h"
#include "chunkstore/store.h"
#include "index/index.h"
#include "log/change_log.h"
#include "packs/pack_set.h"
#include "read/chunk_loader.h"
#include "read/reader.h"
#include "write/prepared.h"
#include "write/publish_session.h"

namespace chunkstore {

struct Store::Impl : std::enable_shared_from_this<Store::Impl> {
  Options options;
  Env* env = nullptr;
  std::unique_ptr<Env> owned_env;   // in-memory stores
  std::string dir;                  // "" for in-memory; the URL of a bucket store
  std::string root;                 // where local files live ("/mem" in memory, a bucket's cache)
  std::unique_ptr<BlobStore> owned_blobs;  // an s3:// store's
  BlobStore* blobs = nullptr;       // set for bucket stores
  unsigned threads = 1;
  bool read_only = false;
  std::string push_url;             // http:// stores: where CopyTo sends pushes (BASE/push)
  internal::StoreMeta meta;
  std::string store_id;
  // What opening the store noticed and mended (Store::notices).
  std::vector<std::string> notices;

  internal::IndexHandle index;
  std::unique_ptr<internal::ChangeLog> log;
  std::unique_ptr<internal::PackSet> packs;
  std::unique_ptr<internal::ChunkLoader> loader;

  explicit Impl(const Options& o) : options(o) {}

  // Builds packs and loader once index and log are set.
  void WireReadWrite();
  internal::PublishTarget publish_target();
  internal::ReadSource read_source() { return {shared_from_this(), loader.get()}; }
  std::string tmp_dir() const { return root + "/tmp"; }
};

struct PreparedObject::State : internal::PreparedState {
  // A nested class may reach PreparedObject's private members.
  static PreparedObject Wrap(std::unique_ptr<State> state) {
    PreparedObject p;
    p.state_ = std::move(state);
    return p;
  }
};

namespace internal {

// Threads for ingest and reads: options.threads, else one per core.
unsigned ThreadCount(const Options& o);
// Creates dir and any missing parents; with sync, each new directory's
// entry is made durable in its parent.
Status CreateDirs(Env* env, const std::string& dir, bool sync = false);

// Store::Open for bucket stores (store_bucket.cc).
Result<std::shared_ptr<Store::Impl>> OpenBucketStore(const std::string& location, const Options& options);

// inner, with every write refused as PermissionDenied saying why (blob_view.cc).
std::unique_ptr<BlobStore> NewReadOnlyBlobStore(std::unique_ptr<BlobStore> inner, std::string why);
// Store::Open for directory stores (store_dir.cc), and in-memory ones.
Result<std::shared_ptr<Store::Impl>> OpenDirectoryStore(const std::string& dir, const Options& options);
Result<std::shared_ptr<Store::Impl>> OpenMemoryStore(const Options& options);

}  // namespace internal

}  // namespace chunkstore
