// SPDX-License-Identifier: Apache-2.0
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

#include <atomic>
#include <cstdint>
#include <functional>
#include <istream>
#include <memory>
#include <string>
#include <vector>

#include "chunkstore/blob_store.h"
#include "chunkstore/options.h"
#include "chunkstore/status.h"
#include "chunkstore/tree.h"

namespace chunkstore {

struct PublishResult {
  std::string id;             // "sha256:<hex>"
  uint64_t size = 0;          // bytes of content
  uint64_t chunks = 0;        // chunks in the manifest (0: an inline object)
  uint64_t reused_chunks = 0; // chunks that were already stored
  uint64_t new_bytes = 0;     // pack bytes this publish appended (headers included);
                              // a new inline object: its size
  std::string name;           // the name given, if any
  int64_t version = 0;        // the name's new version number (0 if no name)
};

struct ChunkInfo {
  std::string id;  // SHA-256 of the chunk, 64 hex digits
  uint64_t offset = 0;
  uint32_t length = 0;
};

struct ObjectInfo {
  std::string id;
  uint64_t size = 0;
  uint64_t chunks = 0;
  uint64_t stored_bytes = 0;        // pack bytes of its distinct chunks, headers included
                                    // (an inline object: its content's size)
  bool stored_inline = false;       // content kept in the index row, no chunks
  uint64_t compressed_chunks = 0;   // distinct chunks stored compressed
  int64_t created = 0;              // unix seconds of the first publish
  bool pinned = false;              // published without a name: kept until removed
  bool tree = false;                // a tree object: a directory (chunkstore/tree.h)
  std::vector<std::string> names;   // names whose latest version is this object
};

// One version of a catalog name.
struct NameEntry {
  std::string name;
  int64_t version = 0;  // 1 = first
  std::string id;
  uint64_t size = 0;
  int64_t created = 0;  // unix seconds this version was recorded
};

struct GcOptions {
  // Report what would be reclaimed without changing anything.
  bool dry_run = false;
  // Rewrite packs whose live bytes fall below this fraction (default 0.5).
  double compact_below = 0.5;
  // Pack files the index does not know (left by crashed writers) are
  // deleted only once unmodified this long (default 1 hour): a writer's new
  // pack is unknown to the index until its first commit.
  int64_t orphan_grace_seconds = 3600;
  // Called after each pack gc compacts, with the live bytes copied so far
  // and those it means to copy in all, from the calling thread.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct GcReport {
  uint64_t objects_removed = 0;    // unnamed, unpinned objects dropped
  uint64_t chunks_removed = 0;
  uint64_t packs_deleted = 0;
  uint64_t packs_compacted = 0;
  uint64_t packs_merged = 0;       // small packs copied together into bigger ones (bucket stores)
  uint64_t packs_skipped = 0;      // held by a writer right now; next gc takes them
  uint64_t packs_left_for_space = 0;  // sparse packs not compacted: the disk lacked room for their live data
  uint64_t space_needed = 0;       // free bytes the largest of those needs
  uint64_t bytes_reclaimed = 0;    // file bytes freed (or that would be)
  uint64_t uploads_aborted = 0;    // bucket stores: pack uploads killed writers left open
  // Packs not compacted because a live record in them is damaged (among
  // them damaged pack files: short, or a bad header): repair chunks, then
  // gc again.
  uint64_t packs_damaged = 0;
};

struct VerifyOptions {
  // Check the xxHash64 of stored bytes only, not the SHA-256 of content.
  bool quick = false;
  // Objects to check; empty means the whole store (and index vs packs).
  std::vector<std::string> refs;
  // Called now and then with the bytes checked and the objects read so
  // far, from verify's threads, one call at a time.
  std::function<void(uint64_t bytes, uint64_t objects)> progress;
};

struct VerifyProblem {
  std::string kind;       // "corrupt-chunk", "missing-chunk", "bad-manifest", "bad-inline",
                          // "missing-pack", "short-pack", "bad-pack-header",
                          // "dangling-name" (a name version whose object is gone),
                          // "bad-tree" (a tree's content is not the tree its change recorded),
                          // "dangling-tree-entry" (a tree names an object that is gone),
                          // "orphan-pack" (a warning only)
  std::string object_id;  // may be empty
  std::string chunk_id;   // may be empty
  std::string pack;       // pack file name, may be empty
  uint64_t offset = 0;
  std::string message;
};

struct VerifyReport {
  uint64_t objects_checked = 0;
  uint64_t chunks_checked = 0;
  uint64_t bytes_checked = 0;  // stored bytes read (pack records, inline content)
  std::vector<VerifyProblem> problems;
  // True when some problem is damage (anything but a warning).
  bool corrupt() const;
};

struct RepairOptions {
  // Called now and then while the store is checked (as VerifyOptions::
  // progress), from its threads, one call at a time.
  std::function<void(uint64_t bytes, uint64_t objects)> progress;
};

struct RepairReport {
  // Chunks the check found damaged (or missing from the index) that some
  // object needs, or that the index lists.
  uint64_t damaged = 0;
  // Chunk ids (hex) written again from the source's verified copies: the
  // store's row for each now points at the new copy.
  std::vector<std::string> repaired;
  struct Unrepaired {
    std::string chunk_id;              // hex
    std::vector<std::string> objects;  // objects that need it (sha256:<hex>), as the check found them
    std::string reason;                // why the source could not give it
  };
  std::vector<Unrepaired> unrepaired;
  uint64_t bytes_written = 0;  // pack bytes (record headers included)
  std::vector<std::string> packs;  // the packs the repaired chunks went into
  // Damaged pack files (missing, shorter than committed, a bad header):
  // once their damaged chunks are mended, gc rewrites or drops them.
  uint64_t pack_files = 0;
  // Damage the check found that fresh chunk copies cannot mend (a damaged
  // manifest, a tree, a name, the log): verify lists it.
  uint64_t other_problems = 0;
};

struct CopyOptions {
  // Chunks read from the source at once (0, the default: 16 from a bucket
  // store, whose reads wait on the network, else one per core).
  unsigned parallel = 0;
  // The destination commits what it has whenever this many bytes of chunk
  // records were written since its last commit (default 64 MiB), and at
  // the end: a copy that fails or is killed keeps what it committed, and
  // run again sends none of it a second time.
  uint64_t commit_every = 64ull << 20;
  // Called after each object, from the calling thread.
  std::function<void(uint64_t bytes_sent, uint64_t objects_done)> progress;
  // Once *cancel is true the copy stops at its next chunk with IOError
  // "interrupted", keeping what it committed.
  const std::atomic<bool>* cancel = nullptr;
};

struct CopyReport {
  uint64_t objects_copied = 0;   // objects the destination did not hold
  uint64_t objects_present = 0;  // objects it held already (a tree's whole content with it)
  uint64_t chunks_sent = 0;      // chunks written to the destination
  uint64_t chunks_skipped = 0;   // chunks it held already
  uint64_t bytes_sent = 0;       // raw bytes of the chunks sent
  uint64_t name_versions = 0;    // name versions added
  uint64_t commits = 0;          // changes committed at the destination
  uint64_t requests = 0;         // network requests to bucket and http:// stores, both sides
                                 // (0 between directories)
  // Names whose history at the destination was not a beginning of the
  // source's: the source's later versions were added after it.
  std::vector<std::string> diverged;
};

struct ReceiveReport {
  uint64_t objects = 0;         // objects the push added (or added again)
  uint64_t chunks_written = 0;  // chunks the store did not hold
  uint64_t chunks_present = 0;  // chunks it held already
  uint64_t bytes_written = 0;   // raw bytes of the chunks written
  uint64_t name_versions = 0;   // name versions added
};

struct StoreStats {
  uint64_t objects = 0;
  uint64_t names = 0;          // distinct names
  uint64_t chunks = 0;
  uint64_t logical_bytes = 0;  // sum of object sizes
  uint64_t unique_bytes = 0;   // raw bytes of distinct chunks and inline objects
  uint64_t stored_bytes = 0;   // pack bytes of indexed records, headers included,
                               // and the content of inline objects
  uint64_t inline_objects = 0; // objects kept in their index row
  uint64_t inline_bytes = 0;   // their content
  uint64_t pack_count = 0;
  uint64_t pack_bytes = 0;     // size of committed pack data
  uint64_t garbage_bytes = 0;  // pack bytes no indexed chunk uses, and those a killed
                               // writer left (where its free lock proves it gone)
  uint64_t uncommitted_bytes = 0;  // pack bytes of writers at work (not yet in the log),
                                   // or left by one not provably gone
  double dedupe_ratio() const { return unique_bytes ? double(logical_bytes) / unique_bytes : 1.0; }
  double compression_ratio() const {
    const uint64_t payload = stored_bytes - chunks * 64;
    return payload ? double(unique_bytes) / payload : 1.0;
  }
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
// Bytes owned by someone else (see Reader::ReadView).
struct ByteView {
  const uint8_t* data = nullptr;
  size_t size = 0;
};

class Reader {
 public:
  virtual ~Reader() = default;
  virtual const std::string& id() const = 0;
  virtual uint64_t size() const = 0;
  // Reads up to n bytes at the cursor and advances it; 0 at the end.
  virtual Result<size_t> Read(void* buf, size_t n) = 0;
  // Read without the copy: a view of up to n verified bytes at the cursor,
  // never past the end of the chunk holding the cursor, and the cursor
  // moves past them; an empty view at the end. The bytes stay valid until
  // the next call on this reader. Errors as for Read.
  virtual Result<ByteView> ReadView(size_t n) = 0;
  // ReadView across chunks: fills views[0], views[1], ... (max_views at
  // most, one per chunk) with the verified bytes at the cursor, n at most
  // in all, moves the cursor past them, and returns how many it filled (0
  // at the end or for n == 0). Every view stays valid until the next call
  // on this reader, so that they can be handed on together (one writev)
  // without a copy. Errors as for Read; after an error the cursor may have
  // moved past some of the bytes asked for.
  virtual Result<size_t> ReadViews(size_t n, ByteView* views, size_t max_views) {
    if (max_views == 0) return size_t{0};
    Result<ByteView> v = ReadView(n);
    if (!v.ok()) return v.status();
    if (v->size == 0) return size_t{0};
    views[0] = *v;
    return size_t{1};
  }
  // Reads up to n bytes at offset without moving the cursor. Offsets at or
  // past the end read 0 bytes; a range that runs past the end is clipped.
  virtual Result<size_t> ReadAt(uint64_t offset, void* buf, size_t n) = 0;
  // Moves the cursor; InvalidArgument past the end.
  virtual Status Seek(uint64_t offset) = 0;
  virtual uint64_t Tell() const = 0;
  // Sequential reads (Read, ReadView) verify the chunks after the cursor's
  // ahead of time, on other threads, up to the object's end: several chunks
  // (a few MiB), held until read or until the reader is closed or seeks
  // away. All the readers of a process together hold at most about 256
  // MiB read ahead (32 MiB per hardware thread where that is more), one
  // reader at most half of it; past that, a reader verifies only what it
  // is asked for (and, in a whole read, the next chunk), until others give
  // theirs back. Close the readers you are done with. A caller that
  // will stop reading at offset `end` says so here: no chunk that starts
  // at or past `end` is verified ahead from then on. Reads past `end` still
  // work (they verify as they go). Default: the object's end.
  virtual void LimitReadAhead(uint64_t end) { (void)end; }
  // Whether the chunks this reader reads are known to make up the object
  // named by id(): true once a whole read in order (from offset 0 to the
  // end, with no seek or LimitReadAhead in between) has handed out its
  // last byte, which it does only after the object's SHA-256 came out as
  // the id; true from the start for an object of at most one chunk, whose
  // chunk's id is the object's. Once true it stays true: ReadAt of any
  // range then returns the object's bytes, each chunk checked against its
  // own id, without a whole read again.
  virtual bool IdProven() const { return false; }
  // With keep set, sequential reads (Read, ReadView) check each chunk by
  // its own SHA-256, as ReadAt does, and keep it in the store's cache of
  // verified chunks, where ReadAt and other readers of the store find it;
  // they no longer prove the object's id on the way (IdProven stays what
  // it was). For a reader that has proven its object and is about to read
  // it whole again, so that the reads after it need not. Default: off, and
  // a no-op for readers that keep no such cache.
  virtual void KeepInCache(bool keep) { (void)keep; }
  // A hint: whether every chunk holding bytes [offset, offset + length) is
  // in the store's cache of verified chunks now, so that ReadAt of them
  // would neither read a pack nor hash. Another reader of the same store
  // may evict them the next moment; reads stay correct either way. Default
  // (and for readers that keep no such cache): false.
  virtual bool Cached(uint64_t offset, uint64_t length) const {
    (void)offset, (void)length;
    return false;
  }
};

class Batch;

class Store {
 public:
  // Opens the store in directory dir, creating it when missing or empty and
  // options.create_if_missing is set. A directory holding other files, a
  // damaged index or a store of a newer format is refused unchanged.
  //
  // dir "s3://BUCKET/PREFIX" opens a bucket store on S3 (options.s3; the
  // bucket is created when missing and create_if_missing is set), and with
  // options.blob_store set, dir names the cache directory of a bucket store
  // kept in that blob store. A bucket store keeps its index as a cache in
  // options.cache_dir and applies other writers' changes when it opens
  // (and before every change it makes).
  static Result<std::unique_ptr<Store>> Open(const std::string& dir, const Options& options = {});
  // A store with no files at all, gone when the last handle to it is.
  static Result<std::unique_ptr<Store>> OpenInMemory(const Options& options = {});
  // Deletes the directory store at dir if no change was ever committed to
  // it (its log holds only what its creation wrote) and no writer holds
  // it; uncommitted pack files a failed first publish left go with it. For
  // a command that created a store and then failed. Refuses, deleting
  // nothing, a store with any change (InvalidArgument), a directory holding
  // anything a store does not (InvalidArgument), and a store in use
  // (Busy). Not for bucket stores. env: nullptr for the real file system.
  static Status RemoveUnused(const std::string& dir, Env* env = nullptr);

  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // One-pass publish: chunks, hashes and stores as the input is read.
  // name (optional) becomes a new version of that catalog name. Memory use
  // does not depend on the input's size.
  Result<PublishResult> PublishFile(const std::string& path, const std::string& name = {});
  Result<PublishResult> PublishBytes(const void* data, size_t n, const std::string& name = {});
  Result<PublishResult> PublishStream(std::istream& in, const std::string& name = {});
  // pull(buf, n) fills up to n bytes and returns how many; 0 ends the input
  // and an error fails the publish. (An istream cannot tell a read error
  // from the end of its input; a pull over read(2) can.)
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
  // (N-th version, 1 = first) or NAME@latest. A name may hold '@': NAME@N
  // and NAME@latest are versions only when what follows the last '@' is
  // digits or "latest" (a name that ends in "@5" is written "NAME@5@latest").
  // REF:PATH names what sits at PATH inside the tree REF names (a file's
  // object, or a directory's tree): it is taken as such when REF:PATH is
  // not itself a ref and REF, cut at the first ':' that makes it one,
  // names a tree. Every call below that takes a ref takes REF:PATH too.
  Result<std::string> Resolve(const std::string& ref);
  // Opens a verified reader. Checks the manifest (lengths sum to the size;
  // every chunk is indexed) before returning; an inline object's content
  // is verified then.
  Result<std::unique_ptr<Reader>> OpenReader(const std::string& ref);
  // Opens a reader for each ref, as OpenReader does, with one answer per
  // ref in order (a ref that fails does not stop the others). All refs are
  // resolved against one snapshot of the index, taken once: the cheaper
  // way to open many small objects. The index is locked for the call's
  // length; other threads' opens and publishes wait for it.
  std::vector<Result<std::unique_ptr<Reader>>> OpenReaders(const std::vector<std::string>& refs);
  // The object's chunks, in order (none for an inline object).
  Result<std::vector<ChunkInfo>> Chunks(const std::string& ref);

  // True if ref resolves to a stored object (malformed refs are errors).
  Result<bool> Exists(const std::string& ref);
  Result<ObjectInfo> Stat(const std::string& ref);
  // The latest version of every name starting with prefix, sorted by name.
  Result<std::vector<NameEntry>> List(const std::string& prefix = {});
  // Objects no name points at, oldest first (for `ls --all`), but for the
  // files and subtrees of trees (unless also published on their own).
  Result<std::vector<ObjectInfo>> ListUnnamed();
  // Every version of a name, newest first. NotFound if the name is unknown.
  Result<std::vector<NameEntry>> History(const std::string& name);
  // Points name at an existing object, as its next version.
  Result<NameEntry> Tag(const std::string& ref, const std::string& name);
  // Forgets a name and its whole history. Objects stay; an object that no
  // name points at and that was never published unnamed becomes garbage.
  Status RemoveName(const std::string& name);
  // Forgets every name listed, with its history, in one change: all of them
  // or, when any is invalid or unknown (NotFound naming each unknown one),
  // none. Repeats count once.
  Status RemoveNames(const std::vector<std::string>& names);
  // Forgets an object and every name version that points at it; its chunks
  // become garbage unless other objects share them.
  Status RemoveObject(const std::string& ref);

  // ---- trees (chunkstore/tree.h) ------------------------------------------
  // Publishes the directory dir as a tree: every regular file as an object
  // (deduplicated as any publish is), every directory as a tree object,
  // symlinks as they are (never followed); sockets, FIFOs, devices and the
  // store's own directory are skipped (options.skipped hears of each). All
  // of it is one change: visible at once, or not at all. The root tree is
  // named name (a new version), or pinned when name is empty; what it
  // holds lives as long as it does. A file unchanged since this store
  // last published it (the stat cache) is not read again unless
  // options.force_hash. InvalidArgument if dir is not a directory; IOError
  // naming the path for anything below it that cannot be read.
  Result<TreePublishResult> PublishTree(const std::string& dir, const std::string& name = {},
                                        const TreePublishOptions& options = {});
  // The directory a ref names (a tree, or REF:PATH of a directory in one),
  // read whole and checked against its id. InvalidArgument if the ref
  // names something other than a tree; Corruption if the tree is damaged.
  Result<Tree> OpenTree(const std::string& ref);
  // What a ref names, as a tree entry: for REF:PATH the entry at PATH (a
  // directory with its tree's mode and mtime); for a tree its root (type
  // directory, empty name); for any other object a file (mode and mtime 0).
  Result<TreeEntry> LookupPath(const std::string& ref);
  // Calls fn for every entry below the tree ref names, depth first in name
  // order, a directory before what it holds, each named by its path from
  // the tree's root. An error from fn stops the walk and is returned.
  Status WalkTree(const std::string& ref, const std::function<Status(const TreeEntry&)>& fn);
  // Recreates what ref names at dest: a tree as a directory (created if
  // missing) with its files, permission bits, mtimes, symlinks and empty
  // directories; any other object (or REF:PATH of a file) as a file. Every
  // byte written is verified first. An existing dest is brought up to
  // date: entries already as the tree has them are left alone, others are
  // replaced (a file through a temporary file and a rename, so it is
  // never seen half written), and with options.delete_extra what the tree
  // lacks is removed. Nothing is ever written outside dest: names come
  // from a checked tree, and no symlink is followed below dest, whether
  // the restore made it or found it there. Not thread safe with other
  // writers of dest.
  Result<RestoreReport> Restore(const std::string& ref, const std::string& dest, const RestoreOptions& options = {});
  // What changed from one tree to another, in path order: entries added,
  // removed, modified, of another type, or with other metadata only.
  // Subtrees with equal ids are not read.
  Result<std::vector<TreeChange>> DiffTrees(const std::string& from, const std::string& to);

  // Copies objects to another store (any kind: directory, bucket), with
  // everything they need: a tree with all it names, a name with its whole
  // history. refs empty: every name and every object published without a
  // name. Each ref is a name (copied with its history), a prefix ending in
  // '/' (every name under it) or any other ref (that object, kept at the
  // destination as published without a name). Only chunks the destination
  // lacks are read and written; each is verified against its SHA-256 as it
  // is read. An object is committed only with (or after) all its chunks
  // and, for a tree, all it names. Where both stores cut alike (the same
  // chunk parameters) the source's chunks are copied as they are; where
  // they differ, each object the destination lacks is read whole from the
  // source (which proves its id) and cut as the destination cuts, so that
  // its own later publishes of the same content find the same chunks.
  // Either way chunks are compressed as the destination compresses. Name versions keep
  // their numbers and times where the destination's history of the name
  // is a beginning of the source's; otherwise the source's versions after
  // their common beginning are added after the destination's, as new
  // versions (CopyReport::diverged). InvalidArgument when dst is this
  // store. dst may be an http:// store whose server takes writes (serve
  // --allow-write, Options::http_token): what it lacks is then sent as push
  // streams (Receive), one per commit, each checked whole by the server
  // before it commits.
  Result<CopyReport> CopyTo(Store& dst, const std::vector<std::string>& refs = {}, const CopyOptions& options = {});

  // Takes in a push stream (docs/format.md, "Push streams"): what CopyTo
  // sends an http:// store, handed here by `serve --allow-write` (POST
  // /push). read_at(offset, buf, n) must read exactly n bytes of the
  // stream, which is `size` bytes long. The stream is untrusted input:
  // every chunk is checked against its id, and every object's whole
  // content against its id (chunks the push does not carry are read from
  // this store, verified); a tree must decode and name only objects the
  // push or the store holds, and so must every name version. Only then is
  // all of it committed, as one change. Any fault is an error naming the
  // record (Corruption for bytes that are not what they claim, NotFound
  // for a chunk or object the push leans on that this store lacks), and
  // the store is left as it was. Thread safety: as Publish.
  Result<ReceiveReport> Receive(const std::function<Status(uint64_t, void*, size_t)>& read_at, uint64_t size);

  // This store as a read-only bucket (docs/format.md, "Bucket layout"), for
  // `serve` to hand to machines that open it as an http:// store: a bucket
  // store's own bucket, or for a directory store its config, the
  // checkpoints and records of its two newest log segments and its packs
  // up to their committed lengths, made from its files as they are at each
  // call. Every write is PermissionDenied. Unsupported for an in-memory
  // store. Thread safe; keeps the store's internals alive.
  Result<std::unique_ptr<BlobStore>> OpenBlobView();

  // Reclaims the space of chunks no live object needs. Safe against crashes
  // at any point and against readers and publishers in other processes; one
  // gc runs at a time per store (Busy otherwise).
  Result<GcReport> Gc(const GcOptions& options = {});
  // Mends damaged chunks from another store's copies (a replica, a backup
  // of the store's files, or a scratch store the original files were
  // published into with the same chunk parameters). Checks this store as
  // a full Verify does; then, for every chunk found damaged or missing
  // that from holds, loads from's copy, verifies it against its SHA-256,
  // writes it (compressed as this store compresses) into a new pack made
  // durable first, and commits one change that points the chunk's row at
  // the new copy (a gc change, format.md). Nothing is removed: the damaged
  // record stays where it was, unreferenced, for gc. A chunk from lacks,
  // or holds damaged too, is listed in RepairReport::unrepaired and this
  // store is left as it was for it. Corruption, before anything is
  // written, when the index differs from the log (index rebuild first).
  // Holds gc's lock for the whole run (Busy if a gc runs); readers and
  // publishers go on meanwhile. InvalidArgument when from is this store,
  // Unsupported when this store is read-only.
  Result<RepairReport> RepairChunks(Store& from, const RepairOptions& options = {});
  // Re-reads and checks stored data (see VerifyOptions). A damaged store is
  // reported in the result, not as an error; errors mean verify itself
  // could not run.
  Result<VerifyReport> Verify(const VerifyOptions& options = {});
  // Bucket stores: moves a damaged log record (its key, "log/...", as the
  // error that stopped a refresh names it) to quarantine/, losing only its
  // change, so that every machine can read the log again; verify reports
  // it from then on (log-cut-short, a warning). Refuses a record that
  // passes its checks (InvalidArgument). A record missing from the middle
  // of a sequenced log (verify: "is missing"; gc and checkpoints refuse to
  // go on over it) is recorded in quarantine/ the same way and its number
  // taken by an empty change set; NotFound for a number past the newest.
  // Holds the bucket's exclusive lock. A store whose log cannot be read
  // opens with Options::refresh_on_open = false for this. Unsupported on
  // directories.
  Status QuarantineLogRecord(const std::string& key);
  Result<StoreStats> Stats();

  // Bucket stores: applies what other writers published since this store
  // opened or last refreshed. OK and nothing done for other stores.
  Status Refresh();
  // Recreates the index from the store's change log (a directory's log/,
  // a bucket's log blobs): the same objects, names and chunks, whatever
  // happened to the index. The index is replaced only once the new one is
  // whole. Other processes using the store meanwhile see the new index
  // when they next open it.
  Status RebuildIndex();

  // The chunking this store uses (fixed when it was created).
  const ChunkerParams& chunking() const;
  // How this store compresses the chunks it writes (chosen at creation).
  const Compression& compression() const;
  // Objects of 1 to inline_max() bytes are kept in their index row (0: none).
  uint32_t inline_max() const;
  // The directory, the s3:// URL of a bucket store, or "" for an
  // in-memory store.
  const std::string& dir() const;
  // True for a store kept in a bucket (or other BlobStore).
  bool is_bucket() const;
  // What opening the store noticed and mended, one sentence each: an index
  // that had fallen behind the change log and caught up, a store moved to
  // the current format. Empty for an ordinary open.
  const std::vector<std::string>& notices() const;

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
  Result<PublishResult> AddPull(const Store::PullFn& pull, const std::string& name = {});
  Result<PublishResult> AddPrepared(const PreparedObject& prepared, const std::string& name = {});
  // A hint that the next AddFile calls will be for these paths, in this
  // order (publishing a directory, say). A helper thread then opens and
  // reads files of up to 64 KiB ahead (larger ones it only opens), at most
  // 64 at a time, so the system calls of one overlap the hashing and
  // indexing of those before it. An
  // AddFile of a path other than the next one listed drops the rest of the
  // hint. Results and errors are those of AddFile without the hint; a file
  // read ahead is read a little before its AddFile call.
  void Prefetch(std::vector<std::string> paths);
  // Called with the total input bytes read so far, from the publishing
  // thread, at most every few hundred KiB. Set before Add*.
  void SetProgress(std::function<void(uint64_t bytes)> progress);
  // Once *cancelled is true (set from any thread, or a signal handler),
  // the Add reading input fails at its next read with IOError
  // "interrupted", and so do later Adds and Commit; a Commit already
  // under way finishes. Destroying the failed batch drops the pack bytes
  // it wrote. cancelled must outlive the batch (nullptr: never).
  void SetCancel(const std::atomic<bool>* cancelled);
  // A directory as a tree, as Store::PublishTree does, within the batch.
  // The result's version is filled in by Commit (in the PublishResult
  // Commit returns for it).
  Result<TreePublishResult> AddTree(const std::string& dir, const std::string& name = {},
                                    const TreePublishOptions& options = {});
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

// Validates a catalog name: 1 to 1024 bytes of UTF-8, no control
// characters. ('@' is allowed; see Store::Resolve for how refs read it.)
Status ValidateName(const std::string& name);

}  // namespace chunkstore
