// SPDX-License-Identifier: Apache-2.0
// BlobStore: the narrow interface a bucket store keeps its data behind.
//
// A store opened on a bucket ("s3://BUCKET/PREFIX", or any BlobStore passed
// in Options::blob_store) keeps everything in immutable blobs: pack files,
// log records and the store's config, each written once under a fresh key
// and never modified (docs/format.md, "Bucket layout"). The store logic
// only needs these few calls, so S3, a directory and memory (and test
// wrappers that inject faults) behave alike.
//
// Keys are relative to the store's root ("packs/pack-….pack", "log/…").
//
// Thread safety: implementations are safe for concurrent use.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chunkstore/status.h"

namespace chunkstore {

class File;

struct BlobInfo {
  std::string key;
  uint64_t size = 0;
  int64_t modified = 0;  // unix seconds, by the blob store's clock
};

// A multipart upload begun and neither completed nor aborted.
struct UploadInfo {
  std::string key;       // as List gives keys
  std::string id;        // the service's upload id
  int64_t started = 0;   // unix seconds, by the blob store's clock
};

class BlobStore {
 public:
  virtual ~BlobStore() = default;

  // Stores n bytes under key. When it returns OK the blob is durable and
  // visible whole to every client; on failure no partial blob is visible.
  virtual Status Put(const std::string& key, const void* data, size_t n) = 0;
  // Stores n bytes under key only if no blob has that key, atomically:
  // of two writers racing for one key, exactly one gets true; the other
  // gets false and the blob stays the winner's. A write whose answer was
  // lost and whose retry found the key taken is true when the blob holds
  // these bytes. Unsupported where the service cannot promise this (the
  // default); a bucket store then coordinates its writers with lock blobs.
  virtual Result<bool> PutIfAbsent(const std::string& key, const void* data, size_t n) {
    (void)key, (void)data, (void)n;
    return Status::Unsupported("this blob store has no conditional writes");
  }
  // As Put, with the first size bytes of file.
  virtual Status PutFile(const std::string& key, const File& file, uint64_t size) = 0;
  // Reads up to n bytes at offset into buf; *got is short only at the end
  // of the blob. NotFound if there is no such blob.
  virtual Status GetRange(const std::string& key, uint64_t offset, size_t n, void* buf,
                          size_t* got) = 0;
  // The whole blob. NotFound if there is no such blob.
  virtual Result<std::string> Get(const std::string& key) = 0;
  // The blob's size; NotFound if there is no such blob.
  virtual Result<uint64_t> Size(const std::string& key) = 0;
  // Every blob whose key starts with prefix and sorts after start_after
  // (all of them when it is empty), in key order.
  virtual Result<std::vector<BlobInfo>> List(const std::string& prefix,
                                             const std::string& start_after = {}) = 0;
  // Removes a blob; OK when it did not exist.
  virtual Status Delete(const std::string& key) = 0;
  // Where the blobs live, for messages ("s3://bucket/prefix").
  virtual std::string Describe() const = 0;
  // Network requests made so far, each attempt counted (a retry too); 0
  // for blob stores that make none (the default). Thread safe.
  virtual uint64_t requests() const { return 0; }
  // Uploads under prefix still open: a writer killed mid-upload leaves
  // one, whose parts the service keeps (and bills) until it is aborted.
  // None for blob stores that write whole blobs at once (the default).
  virtual Result<std::vector<UploadInfo>> ListUploads(const std::string& prefix) {
    (void)prefix;
    return std::vector<UploadInfo>{};
  }
  // Aborts an open upload, dropping its parts; OK if it is gone already.
  virtual Status AbortUpload(const UploadInfo& upload) {
    (void)upload;
    return Status::OK();
  }
};

// A fresh, empty blob store in memory (tests, examples).
std::unique_ptr<BlobStore> NewMemoryBlobStore();

// Blobs as files under dir (created as needed), each written to a temporary
// file, fsynced and renamed into place: a bucket store on a shared file
// system, or on local disk for tests. Modification times are the files'.
std::unique_ptr<BlobStore> NewDirectoryBlobStore(const std::string& dir);

}  // namespace chunkstore
