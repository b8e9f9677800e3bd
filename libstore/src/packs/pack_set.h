// SPDX-License-Identifier: Apache-2.0
// PackSet: where a store's pack files live, and the one place that knows
// whether that is a directory or a bucket.
//
// Readers open packs by the index's pack id (ForRead); publishers get
// writers (Acquire), append chunk records, and Seal them, which makes their
// bytes durable where readers will look (an fsync, or an upload) before the
// change that names them is committed; gc lists, locks, rewrites and
// removes packs. Every pack name taken from the index or a listing is
// checked against the pattern the store writes (format/layout.h) before it
// becomes a path or a key.
//
// Thread safety: safe for concurrent use. A PackWriter belongs to one
// thread at a time.
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "chunkstore/env.h"
#include "chunkstore/status.h"
#include "index/index.h"

namespace chunkstore::internal {

// A pack file this process appends to. Local writers hold the pack's
// exclusive lock, so no other writer (thread or process) appends at once;
// a bucket's writers fill a staging file in the cache, uploaded whole.
struct PackWriter {
  std::string name;
  std::string path;        // the file being appended to
  uint64_t committed = 0;  // length the log has committed (bytes past it are garbage)
  uint64_t size = 0;       // current length, buffered bytes included
  bool is_new = false;     // created by this writer: its directory entry needs a sync
  uint64_t written_back = 0;  // size at the last StartWriteBack
  std::unique_ptr<File> file;
  std::unique_ptr<FileLock> lock;
  std::vector<uint8_t> buffer;  // small records are gathered before writing

  Status Append(const uint8_t* header, size_t header_len, const uint8_t* data, size_t n);
  Status Flush();
};

// A pack file present in the store, committed or not.
struct PackFile {
  std::string name;     // passed IsPackName (or is a .new file being made)
  uint64_t size = 0;
  int64_t modified = 0;  // unix seconds, by the storage's clock
};

class PackSet {
 public:
  virtual ~PackSet() = default;

  // ---- reading -----------------------------------------------------------
  // The pack with this index id, opened once and kept. Corruption if the
  // index has no such pack, or names it with a name no pack has, or its
  // file is missing.
  Result<std::shared_ptr<File>> ForRead(int64_t pack_id);
  // Forgets open packs (after gc removed some, or a rebuild renumbered
  // them).
  void ForgetOpen();
  void ForgetOpen(int64_t pack_id);
  // A pack by name; NotFound if it is not there. size: its expected length
  // (0: ask).
  virtual Result<std::unique_ptr<File>> Open(const std::string& name, uint64_t size) = 0;
  // Whether a read is a request over a network (read whole records in one
  // request, keep many in flight) rather than a local pread.
  virtual bool remote() const = 0;
  // Where the packs are, for messages.
  virtual std::string Describe() const = 0;

  // ---- publishing --------------------------------------------------------
  // A writer to append records to: a pack with room that nobody else
  // appends to, or a new one.
  virtual Result<std::unique_ptr<PackWriter>> Acquire() = 0;
  // A new, empty pack (header written), not yet part of the store.
  virtual Result<std::unique_ptr<PackWriter>> New() = 0;
  // Past this size a publish seals its writer and goes on in a new one.
  virtual uint64_t seal_at() const = 0;
  // Makes everything appended to w durable where readers will find it.
  // May finish later (an upload): the future says how it went. w stays
  // the caller's; its file must not change until the future is ready.
  virtual std::future<Status> Seal(PackWriter& w) = 0;
  // Done with w. committed: the log now names its bytes up to w->size;
  // otherwise bytes past w->committed are dropped.
  virtual void Release(std::unique_ptr<PackWriter> w, bool committed) = 0;
  // Lets go of writers kept for reuse (gc wants their locks).
  virtual void DropIdleWriters() = 0;

  // ---- maintenance -------------------------------------------------------
  // Every pack file present, committed or not.
  virtual Result<std::vector<PackFile>> List() = 0;
  // The exclusive right to rewrite or remove a pack: nobody appends to it
  // while the lock is held. Busy if a writer holds it; NotFound if gone.
  virtual Result<std::unique_ptr<FileLock>> LockForMaintenance(const std::string& name) = 0;
  // Whether a maintenance lock proves that no writer has the pack: true
  // where every writer holds its pack's lock from creation to commit (a
  // directory's flocks), false where locks are not shared (a bucket).
  virtual bool LockProvesNoWriter() const = 0;
  // Cuts a pack file back to length, dropping a killed writer's tail (the
  // caller holds its maintenance lock). Unsupported where packs are
  // immutable.
  virtual Status CutTail(const std::string& name, uint64_t length) = 0;
  // Deletes a pack file (the caller holds its maintenance lock, or knows
  // nobody can use it).
  virtual Status Remove(const std::string& name) = 0;
  // The time by the storage's clock (for ages of pack files).
  virtual Result<int64_t> Now() = 0;
  // Room left for new packs (UINT64_MAX where there is no such limit).
  virtual uint64_t FreeBytes() = 0;
  // Aborts uploads of packs still open and begun at or before older_than (by the
  // storage's clock): what writers killed mid-upload left. Returns how
  // many. Nothing to do where packs are not uploaded.
  virtual Result<uint64_t> AbortStaleUploads(int64_t older_than) {
    (void)older_than;
    return uint64_t{0};
  }

 protected:
  explicit PackSet(IndexHandle* index) : index_(index) {}
  IndexHandle* index_;

 private:
  std::mutex open_mu_;
  std::unordered_map<int64_t, std::shared_ptr<File>> open_;
};

struct LocalPackOptions {
  bool sync = true;                        // fsync sealed packs (and the directory of new ones)
  uint64_t pack_target_size = 1ull << 30;  // a pack takes no new writer past this size
};

// The packs of a directory store: files in dir, one flock each.
std::unique_ptr<PackSet> NewLocalPackSet(Env* env, std::string dir, IndexHandle* index, LocalPackOptions options);

}  // namespace chunkstore::internal
