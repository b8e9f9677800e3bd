// Store: publish payloads as content-addressed objects and read them back
// verified.
//
// An object is named by the SHA-256 of its content, "sha256:<64 hex>", which
// matches what sha256sum prints. Its bytes are cut into chunks by FastCDC;
// each distinct chunk is stored once. Every byte a Reader returns belongs to
// a chunk whose SHA-256 was checked after it was read from disk.
//
// Errors: no exceptions. Calls return Status or Result<T> (status.h).
// NotFound: unknown ref, name or file. InvalidArgument: malformed ref,
// name, range, ambiguous id prefix. Corruption: stored data failed
// verification (the Status names the object and chunk). IOError: the OS
// failed. Busy: another process held the store past the busy timeout.
// Unsupported: the store was written by a newer format.
//
// Thread safety: a Store may be used from many threads at once for every
// call. A Reader is a cursor: use each from one thread at a time (open one
// per thread). Readers keep the store's internals alive and stay valid after
// the Store object is destroyed. Several processes may open one store
// directory at once; publishes from each are atomic and never interleave
// within a pack file.
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <memory>
#include <string>
#include <vector>

#include "chunkstore/options.h"
#include "chunkstore/status.h"

namespace chunkstore {

struct PublishResult {
  std::string id;             // "sha256:<hex>"
  uint64_t size = 0;          // bytes of content
  uint64_t chunks = 0;        // chunks in the manifest
  uint64_t reused_chunks = 0; // chunks that were already stored
  uint64_t new_bytes = 0;     // pack bytes this publish appended (headers included)
  std::string name;           // the name given, if any
  int64_t version = 0;        // the name's new version number (0 if no name)
};

struct ChunkInfo {
  std::string id;  // SHA-256 of the chunk, 64 hex digits
  uint64_t offset = 0;
  uint32_t length = 0;
};

// The result of Store::Prepare*: the object's id and chunk list, computed
// without writing to the store. Publish it with Store::Publish. Move-only.
class PreparedObject {
 public:
  PreparedObject();
  ~PreparedObject();
  PreparedObject(PreparedObject&&) noexcept;
  PreparedObject& operator=(PreparedObject&&) noexcept;

  const std::string& id() const;
  uint64_t size() const;
  std::vector<ChunkInfo> chunks() const;

  struct State;  // internal

 private:
  friend class Store;
  friend class Batch;
  std::unique_ptr<State> state_;
};

// A verified read cursor over one object.
class Reader {
 public:
  virtual ~Reader() = default;
  virtual const std::string& id() const = 0;
  virtual uint64_t size() const = 0;
  // Reads up to n bytes at the cursor and advances it; 0 at the end.
  virtual Result<size_t> Read(void* buf, size_t n) = 0;
  // Reads up to n bytes at offset without moving the cursor. Offsets at or
  // past the end read 0 bytes; a range that runs past the end is clipped.
  virtual Result<size_t> ReadAt(uint64_t offset, void* buf, size_t n) = 0;
  // Moves the cursor; InvalidArgument past the end.
  virtual Status Seek(uint64_t offset) = 0;
  virtual uint64_t Tell() const = 0;
};

class Batch;

class Store {
 public:
  // Opens the store in directory dir, creating it when missing or empty and
  // options.create_if_missing is set. A directory holding other files, a
  // damaged index or a store of a newer format is refused unchanged.
  static Result<std::unique_ptr<Store>> Open(const std::string& dir, const Options& options = {});
  // A store with no files at all, gone when the last handle to it is.
  static Result<std::unique_ptr<Store>> OpenInMemory(const Options& options = {});

  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // One-pass publish: chunks, hashes and stores as the input is read.
  // name (optional) becomes a new version of that catalog name. Memory use
  // does not depend on the input's size.
  Result<PublishResult> PublishFile(const std::string& path, const std::string& name = {});
  Result<PublishResult> PublishBytes(const void* data, size_t n, const std::string& name = {});
  Result<PublishResult> PublishStream(std::istream& in, const std::string& name = {});
  // pull(buf, n) fills up to n bytes and returns how many; 0 ends the input.
  using PullFn = std::function<Result<size_t>(void* buf, size_t n)>;
  Result<PublishResult> PublishPull(const PullFn& pull, const std::string& name = {});

  // Two-phase publish: the id first, the commit later. A file is re-read at
  // Publish (which fails with InvalidArgument if it changed meanwhile). A
  // stream, and a buffer over options.spill_threshold, are copied to a
  // private spill file in the store, removed when the PreparedObject dies.
  // A buffer under the threshold must stay alive and unchanged until Publish.
  Result<PreparedObject> PrepareFile(const std::string& path);
  Result<PreparedObject> PrepareBytes(const void* data, size_t n);
  Result<PreparedObject> PrepareStream(std::istream& in);
  Result<PublishResult> Publish(const PreparedObject& prepared, const std::string& name = {});

  // Many publishes, one index transaction: Add* calls write chunk data as
  // they go; nothing becomes visible until Commit, and a Batch destroyed
  // without Commit leaves the store as it was.
  std::unique_ptr<Batch> NewBatch();

  // Resolves a ref to "sha256:<hex>". Refs: "sha256:<64 hex>", a unique hex
  // prefix of >= 8 digits (with or without "sha256:"), a name, NAME@N
  // (N-th version, 1 = first) or NAME@latest.
  Result<std::string> Resolve(const std::string& ref);
  // Opens a verified reader. Checks the manifest (lengths sum to the size;
  // every chunk is indexed) before returning.
  Result<std::unique_ptr<Reader>> OpenReader(const std::string& ref);
  // The object's chunks, in order.
  Result<std::vector<ChunkInfo>> Chunks(const std::string& ref);

  // The chunking this store uses (fixed when it was created).
  const ChunkerParams& chunking() const;
  // The directory, or "" for an in-memory store.
  const std::string& dir() const;

  struct Impl;  // internal

 private:
  explicit Store(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

// A group of publishes committed together (see Store::NewBatch). Use one
// Batch from one thread at a time; the Store must outlive it.
class Batch {
 public:
  ~Batch();
  // As the Store calls of the same names. The results' version fields are
  // filled in by Commit.
  Result<PublishResult> AddFile(const std::string& path, const std::string& name = {});
  Result<PublishResult> AddBytes(const void* data, size_t n, const std::string& name = {});
  Result<PublishResult> AddStream(std::istream& in, const std::string& name = {});
  Result<PublishResult> AddPrepared(const PreparedObject& prepared, const std::string& name = {});
  // Makes every added object visible at once, durably. After Commit (or a
  // failed Add), the batch accepts nothing more.
  Result<std::vector<PublishResult>> Commit();

  struct Impl;  // internal

 private:
  friend class Store;
  explicit Batch(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Cuts a file ("-" for standard input) into chunks with the given
// parameters and hashes each, without any store.
Result<std::vector<ChunkInfo>> ChunkFile(const std::string& path, const ChunkerParams& params);

// Validates a catalog name: 1 to 1024 bytes of UTF-8, no control characters,
// no '@' (it separates versions in refs).
Status ValidateName(const std::string& name);

}  // namespace chunkstore
