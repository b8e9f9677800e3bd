// SPDX-License-Identifier: Apache-2.0
// Options: how a store is opened (and, when it is created, shaped).
//
// A plain struct; every field has a default that suits most uses. Fields
// marked "creation" only matter when the store is created: an existing
// store keeps what was recorded in it then.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "chunkstore/chunker.h"
#include "chunkstore/compression.h"

namespace chunkstore {

class BlobStore;
class Env;

// The largest Options::inline_max a store accepts.
constexpr uint32_t kInlineMaxLimit = 4096;

// How to reach an S3-compatible service, for stores opened as
// "s3://BUCKET/PREFIX". Empty fields come from the usual AWS variables.
struct S3Options {
  // Empty: $AWS_ENDPOINT_URL; when that is unset too, AWS itself
  // (https://s3.REGION.amazonaws.com, virtual-hosted addressing). A given
  // endpoint ("http://127.0.0.1:7480") is addressed path-style.
  std::string endpoint;
  // Empty: $AWS_REGION, else $AWS_DEFAULT_REGION, else "us-east-1".
  std::string region;
  // Empty: $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY (both required).
  std::string access_key;
  std::string secret_key;
  // Empty: $AWS_SESSION_TOKEN (optional, for temporary credentials).
  std::string session_token;
  // Certificates (PEM) to trust for an https:// endpoint instead of the
  // system's, for a private CA. Empty: $AWS_CA_BUNDLE, else $SSL_CERT_FILE,
  // else the system's store. Certificates are always verified.
  std::string ca_bundle;
  // Tries of one request on timeouts, 5xx answers and dropped connections,
  // with exponential backoff from 200 ms (default 6: about 6 s in all).
  int max_attempts = 6;
  // A request that moves less than 1 KiB a second for this long fails and
  // is retried (default 30 s).
  int stall_timeout_ms = 30000;
};

struct Options {
  // Creation: FastCDC parameters (default 256 KiB / 1 MiB / 4 MiB, level 1).
  ChunkerParams chunking;
  // Creation: how chunks are compressed, each only when that saves >= 1/16
  // (default zstd level 3; Compression::None() never compresses).
  Compression compression;
  // Creation: objects of at most this many bytes keep their content in
  // their index row, with no chunk row and no pack record (default 512;
  // 0 = never; at most 4096; lowered to chunking.min_size - 1 if that is
  // smaller, so an inline object is always a single chunk's worth). Bucket
  // stores never keep content in their index, which is only a cache there.
  uint32_t inline_max = 512;
  // Create the store when the directory is missing or empty (default true).
  // A non-empty directory that is not a store is never touched.
  bool create_if_missing = true;
  // Fail with InvalidArgument if the store already exists (default false).
  bool error_if_exists = false;
  // fsync pack data and the index before a publish returns (default true).
  // With false, a crash may lose recent publishes, but never corrupts older
  // ones.
  bool sync = true;
  // Threads a publish or prepare uses (0 = one per core, the default).
  unsigned threads = 0;
  // Bytes of verified chunks kept for repeated reads (default 64 MiB).
  size_t cache_bytes = 64u << 20;
  // Prepare of a byte buffer larger than this copies it to a spill file so
  // the caller's buffer need not outlive the call (default 64 MiB).
  size_t spill_threshold = 64u << 20;
  // A pack file stops taking new chunks past this size (default 1 GiB).
  uint64_t pack_target_size = 1ull << 30;
  // How long to wait for another process holding the index or the change
  // log (default 10 s).
  int busy_timeout_ms = 10000;
  // Open without writing anything (default false): for stores on
  // read-only media. Every change fails; the index is read as it is.
  bool read_only = false;
  // Recreate the index from the store's change log while opening (default
  // false): what `chunkstore index rebuild` does. The store's truth is its
  // packs and its log; the index is a cache of them.
  bool rebuild_index = false;
  // A directory store writes a checkpoint of its change log (and drops the
  // log before it) once the changes since the last one take more than this
  // many bytes (default 64 MiB), or more than the checkpoint itself.
  uint64_t checkpoint_bytes = 64ull << 20;
  // File-system access for packs, spill files and locks (default: POSIX).
  // Not owned; must outlive the store.
  Env* env = nullptr;

  // Bucket stores ("s3://BUCKET/PREFIX", or blob_store below).
  S3Options s3;
  // Keep the store in this blob store instead of a directory; Store::Open's
  // argument then names the local cache directory. Not owned; must outlive
  // the store (default none).
  BlobStore* blob_store = nullptr;
  // The local cache of a bucket store: its index (rebuildable from the
  // bucket) and packs being assembled. Default:
  // $XDG_CACHE_HOME/chunkstore/<bucket-and-prefix digest>, else under
  // ~/.cache.
  std::string cache_dir;
  // Bucket and http:// stores: chunks fetched over the network are kept as
  // files in this directory, so that later reads by any process that opens
  // the store find them without a request. Each is checked against its
  // SHA-256 again when read back; the directory is safe to delete at any
  // time. Default: "chunks" in the index cache directory (cache_dir).
  std::string chunk_cache_dir;
  // The most bytes chunk_cache_dir may hold; the least recently read
  // chunks go first (default 1 GiB; 0: no disk cache).
  uint64_t chunk_cache_bytes = 1ull << 30;
  // http:// stores: the bearer token of the server (serve --allow-write
  // --token-file) that lets CopyTo send it what it lacks (default none:
  // the store is only read). Keep it out of command lines.
  std::string http_token;
  // Bucket stores: apply other writers' new log records when the store
  // opens (default true).
  bool refresh_on_open = true;
  // Bucket stores: a new pack is uploaded once it holds this many bytes
  // (default 64 MiB; one PUT below 16 MiB, multipart above).
  uint64_t remote_pack_size = 64ull << 20;
  // Bucket stores: once this many change records follow the newest
  // checkpoint, the next commit writes a new one (default 1000; 0: only gc
  // writes them). A new machine starts from the newest checkpoint and
  // reads only the records after it. Writing one takes the store to
  // itself for a moment; if another process holds it, a later commit
  // tries again.
  uint32_t bucket_checkpoint_records = 1000;
  // Bucket stores, when one is created: whether its writers may claim log
  // records with conditional writes (S3 "If-None-Match: *") instead of
  // taking lock blobs, which saves a publish three requests. Default true:
  // creating the store tries a conditional write twice on a probe key and
  // keeps lock blobs where the service does not refuse the second. Never
  // changes an existing store.
  bool bucket_conditional_writes = true;
  // Bucket stores with a sequenced log: the log records a checkpoint
  // covers are deleted only once the checkpoint is this old by the
  // bucket's clock (default 3600 s). A writer follows the log before it
  // claims a record when it has not followed it for a minute, so it never
  // claims the number of a record deleted under it; this keeps that so
  // (values under 120 are raised to 120).
  uint32_t bucket_log_retention_seconds = 3600;
  // Bucket stores: the store's secret (default none). A store created with
  // one signs every change it records with HMAC-SHA256 under it, and a
  // machine that holds it rejects changes that do not carry a valid
  // signature (Corruption) instead of applying them: only holders of the
  // secret can change what such machines see. Opening a store with the
  // wrong secret, or one that has none, is PermissionDenied; writing to a
  // store that has one without it too. Keep it out of command lines.
  std::string secret;
};

}  // namespace chunkstore
