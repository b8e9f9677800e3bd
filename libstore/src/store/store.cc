// SPDX-License-Identifier: Apache-2.0
// Store: opening and creating stores, the public publish and prepare calls,
// and ref resolution.
#include "chunkstore/store.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <thread>

#include "format/layout.h"
#include "index/refs.h"
#include "ingest/file_prefetch.h"
#include "ingest/ingest.h"
#include "maintain/gc.h"
#include "maintain/repair.h"
#include "maintain/verify.h"
#include "store/batch_impl.h"
#include "store/store_impl.h"
#include "store/trees.h"

namespace chunkstore {

using namespace internal;

Status internal::CreateDirs(Env* env, const std::string& dir, bool sync) {
  if (env->IsDirectory(dir)) return Status::OK();
  const size_t slash = dir.find_last_of('/');
  const std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : dir.substr(0, slash);
  if (slash != std::string::npos && slash > 0) CHUNKSTORE_RETURN_IF_ERROR(CreateDirs(env, parent, sync));
  CHUNKSTORE_RETURN_IF_ERROR(env->CreateDir(dir));
  // A new directory's entry is in its parent, which is not synced by
  // anything the store does later: without this, power loss could take a
  // whole new store, acknowledged publishes included.
  return sync ? env->SyncDir(parent) : Status::OK();
}

Store::Store(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::~Store() = default;

const ChunkerParams& Store::chunking() const { return impl_->meta.chunking; }
uint32_t Store::inline_max() const { return impl_->meta.inline_max; }
const Compression& Store::compression() const { return impl_->meta.compression; }
const std::string& Store::dir() const { return impl_->dir; }

unsigned internal::ThreadCount(const Options& o) {
  if (o.threads) return o.threads;
  const unsigned hc = std::thread::hardware_concurrency();
  return hc ? hc : 1;
}

void Store::Impl::WireReadWrite() {
  internal::LocalPackOptions po;
  po.sync = options.sync;
  po.pack_target_size = options.pack_target_size;
  if (!packs) packs = internal::NewLocalPackSet(env, root + "/" + internal::kPacksDir, &index, po);
  loader = std::make_unique<internal::ChunkLoader>(&index, packs.get(), log.get(), options.cache_bytes, threads);
  // Only what comes over the network is worth a copy on local disk.
  if (packs->remote() && options.chunk_cache_bytes > 0) {
    const std::string dir = options.chunk_cache_dir.empty() ? root + "/chunks" : options.chunk_cache_dir;
    loader->SetDiskCache(std::make_unique<internal::DiskChunkCache>(dir, options.chunk_cache_bytes));
  }
}

internal::PublishTarget Store::Impl::publish_target() {
  internal::PublishTarget t;
  t.index = &index;
  t.packs = packs.get();
  t.log = log.get();
  t.meta = meta;
  t.threads = threads;
  t.busy_timeout_ms = options.busy_timeout_ms;
  t.owner = this;
  return t;
}

Result<std::unique_ptr<Store>> Store::Open(const std::string& dir, const Options& options) {
  if (dir.empty()) return Status::InvalidArgument("the store directory name is empty");
  CHUNKSTORE_RETURN_IF_ERROR(options.chunking.Validate());
  CHUNKSTORE_RETURN_IF_ERROR(options.compression.Validate());
  CHUNKSTORE_RETURN_IF_ERROR(ValidateInlineMax(EffectiveInlineMax(options.inline_max, options.chunking),
                                               options.chunking));
  const bool bucket = options.blob_store != nullptr || dir.rfind("s3://", 0) == 0 || dir.rfind("http://", 0) == 0 ||
                      dir.rfind("https://", 0) == 0;
  Result<std::shared_ptr<Impl>> impl = bucket ? OpenBucketStore(dir, options) : OpenDirectoryStore(dir, options);
  if (!impl.ok()) return impl.status();
  return std::unique_ptr<Store>(new Store(std::move(*impl)));
}

Result<std::unique_ptr<Store>> Store::OpenInMemory(const Options& options) {
  CHUNKSTORE_RETURN_IF_ERROR(options.chunking.Validate());
  CHUNKSTORE_RETURN_IF_ERROR(options.compression.Validate());
  CHUNKSTORE_RETURN_IF_ERROR(ValidateInlineMax(EffectiveInlineMax(options.inline_max, options.chunking),
                                               options.chunking));
  Result<std::shared_ptr<Impl>> impl = OpenMemoryStore(options);
  if (!impl.ok()) return impl.status();
  return std::unique_ptr<Store>(new Store(std::move(*impl)));
}

const std::vector<std::string>& Store::notices() const { return impl_->notices; }

bool Store::is_bucket() const { return impl_->blobs != nullptr; }

Status Store::Refresh() { return impl_->log->CatchUp(); }

Status Store::RebuildIndex() {
  CHUNKSTORE_RETURN_IF_ERROR(impl_->log->Rebuild());
  impl_->packs->ForgetOpen();
  return Status::OK();
}

Result<GcReport> Store::Gc(const GcOptions& options) {
  internal::GcTarget t;
  t.index = &impl_->index;
  t.packs = impl_->packs.get();
  t.log = impl_->log.get();
  t.busy_timeout_ms = impl_->options.busy_timeout_ms;
  return internal::CollectGarbage(t, options);
}

Result<RepairReport> Store::RepairChunks(Store& from, const RepairOptions& options) {
  // A backup of the store's files has its store id: only this very handle
  // is refused (its copies are the damaged ones).
  if (from.impl_ == impl_) return Status::InvalidArgument("a store cannot be repaired from itself");
  if (impl_->read_only) return Status::Unsupported(dir() + " is read-only; repair writes to it");
  internal::RepairTarget t;
  t.verify.index = &impl_->index;
  t.verify.packs = impl_->packs.get();
  t.verify.log = impl_->log.get();
  t.verify.read = impl_->read_source();
  t.verify.read.disk_cache = false;  // what the bucket holds is checked, not local copies of it
  t.verify.threads = impl_->threads;
  t.meta = impl_->meta;
  t.busy_timeout_ms = impl_->options.busy_timeout_ms;
  Store::Impl* src = from.impl_.get();
  auto fetch = [src](const internal::Digest& id,
                     const std::string& object) -> Result<std::optional<internal::ChunkLoader::Bytes>> {
    Result<std::optional<internal::ChunkLocation>> loc = src->index.Lock()->FindChunk(id);
    if (!loc.ok()) return loc.status();
    if (!loc->has_value()) return std::optional<internal::ChunkLoader::Bytes>();
    // Verified by the loader, and again by the repair: from is input.
    Result<internal::ChunkLoader::Bytes> bytes = src->loader->Load(object, id, **loc, false, false, true);
    if (!bytes.ok()) return bytes.status();
    return std::optional<internal::ChunkLoader::Bytes>(std::move(*bytes));
  };
  return internal::RepairStoreChunks(t, fetch, options);
}

Status Store::QuarantineLogRecord(const std::string& key) { return impl_->log->Quarantine(key); }

Result<VerifyReport> Store::Verify(const VerifyOptions& options_in) {
  VerifyOptions options = options_in;
  for (std::string& ref : options.refs) {
    Result<std::string> expanded = internal::ExpandRef(impl_.get(), ref);
    if (!expanded.ok()) return expanded.status();
    ref = std::move(*expanded);
  }
  internal::VerifyTarget t;
  t.index = &impl_->index;
  t.packs = impl_->packs.get();
  t.log = impl_->log.get();
  t.read = impl_->read_source();
  // What the bucket holds is checked, not local copies of it.
  t.read.disk_cache = false;
  t.threads = impl_->threads;
  return internal::VerifyStore(t, options);
}

Result<std::unique_ptr<Reader>> Store::OpenReader(const std::string& ref_in) {
  Result<std::string> ref = internal::ExpandRef(impl_.get(), ref_in);
  if (!ref.ok()) return ref.status();
  auto db = impl_->index.Lock();
  return internal::OpenObjectReader(impl_->read_source(), *db, *ref, false);
}

std::vector<Result<std::unique_ptr<Reader>>> Store::OpenReaders(const std::vector<std::string>& refs) {
  std::vector<Result<std::unique_ptr<Reader>>> out;
  out.reserve(refs.size());
  const internal::ReadSource source = impl_->read_source();
  std::vector<size_t> paths;  // refs that may be REF:PATH: they read trees, after the snapshot
  {
    auto db = impl_->index.Lock();
    // One read transaction for the whole list: every ref sees the same
    // snapshot, and the index's file locks are taken once, not per ref.
    internal::ReadTxn txn(db.get());
    for (size_t i = 0; i < refs.size(); ++i) {
      const std::string& ref = refs[i];
      if (!txn.status().ok()) {
        out.push_back(txn.status());
        continue;
      }
      const size_t from = ref.rfind("sha256:", 0) == 0 ? 7 : 0;
      if (ref.find(':', from) != std::string::npos) {
        paths.push_back(i);
        out.push_back(Status::Busy("not opened yet"));
        continue;
      }
      out.push_back(internal::OpenObjectReader(source, *db, ref, true));
    }
  }
  for (size_t i : paths) out[i] = OpenReader(refs[i]);
  return out;
}

// ---- publishing ----------------------------------------------------------

namespace {

Result<PublishResult> PublishOne(Store::Impl* impl, Source& source, const std::string& name) {
  PublishSession session(impl->publish_target());
  Result<PublishResult> r = session.AddSource(source, name);
  if (!r.ok()) return r.status();
  CHUNKSTORE_RETURN_IF_ERROR(session.Commit());
  return session.results().front();
}

}  // namespace

Result<PublishResult> Store::PublishFile(const std::string& path, const std::string& name) {
  Result<std::unique_ptr<FileSource>> src = FileSource::Open(path);
  if (!src.ok()) return src.status();
  return PublishOne(impl_.get(), **src, name);
}

Result<PublishResult> Store::PublishBytes(const void* data, size_t n, const std::string& name) {
  BytesSource src(data, n);
  return PublishOne(impl_.get(), src, name);
}

Result<PublishResult> Store::PublishStream(std::istream& in, const std::string& name) {
  StreamSource src(in);
  return PublishOne(impl_.get(), src, name);
}

Result<PublishResult> Store::PublishPull(const PullFn& pull, const std::string& name) {
  PullSource src(pull);
  return PublishOne(impl_.get(), src, name);
}

// ---- batches -------------------------------------------------------------

Batch::Batch(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Batch::~Batch() = default;

std::unique_ptr<Batch> Store::NewBatch() {
  return std::unique_ptr<Batch>(new Batch(std::make_unique<Batch::Impl>(impl_.get())));
}

namespace {
// Small enough that reading ahead beats the ingest pipeline's own reads;
// with kPrefetchDepth files waiting, at most 4 MiB of them.
constexpr size_t kPrefetchFileBytes = 64 * 1024;
constexpr size_t kPrefetchDepth = 64;
}  // namespace

void Batch::Prefetch(std::vector<std::string> paths) {
  impl_->prefetch.reset();
  if (paths.size() < 2 || impl_->failed) return;  // nothing to overlap
  impl_->prefetch = std::make_unique<FilePrefetcher>(std::move(paths), kPrefetchFileBytes, kPrefetchDepth);
}

Result<PublishResult> Batch::AddFile(const std::string& path, const std::string& name) {
  return impl_->AddFile(path, name, {});
}

Result<PublishResult> Batch::AddBytes(const void* data, size_t n, const std::string& name) {
  BytesSource src(data, n);
  return impl_->Add(src, name);
}

Result<PublishResult> Batch::AddStream(std::istream& in, const std::string& name) {
  StreamSource src(in);
  return impl_->Add(src, name);
}

Result<PublishResult> Batch::AddPull(const Store::PullFn& pull, const std::string& name) {
  PullSource src(pull);
  return impl_->Add(src, name);
}

Result<PublishResult> Batch::AddPrepared(const PreparedObject& prepared, const std::string& name) {
  if (impl_->failed) return Status::InvalidArgument("the batch already failed or was committed");
  if (!prepared.state_) return Status::InvalidArgument("the prepared object is empty (moved from?)");
  Result<PublishResult> r = impl_->session.AddPrepared(*prepared.state_, name);
  if (!r.ok()) impl_->failed = true;
  return r;
}

void Batch::SetProgress(std::function<void(uint64_t)> progress) {
  impl_->progress = std::move(progress);
}

void Batch::SetCancel(const std::atomic<bool>* cancelled) { impl_->cancelled = cancelled; }

Result<std::vector<PublishResult>> Batch::Commit() {
  if (impl_->failed) return Status::InvalidArgument("the batch already failed or was committed");
  impl_->failed = true;
  if (impl_->Cancelled()) return Status::IOError("interrupted");
  impl_->prefetch.reset();
  CHUNKSTORE_RETURN_IF_ERROR(impl_->session.Commit());
  for (const auto& [first, root] : impl_->trees) impl_->session.SumNewBytes(first, root);
  if (!impl_->stat_updates.empty() && !impl_->store->read_only) {
    // Best effort: a stat cache that could not be written only means those
    // files are read again next time.
    auto db = impl_->store->index.Lock();
    WriteTxn txn(db.get());
    Status s = txn.status();
    for (size_t i = 0; s.ok() && i < impl_->stat_updates.size(); ++i) s = db->PutStat(impl_->stat_updates[i]);
    if (s.ok()) (void)txn.Commit();
    impl_->stat_updates.clear();
  }
  return impl_->session.TopResults();
}

// ---- prepare -------------------------------------------------------------

PreparedObject::PreparedObject() = default;
PreparedObject::~PreparedObject() = default;
PreparedObject::PreparedObject(PreparedObject&&) noexcept = default;
PreparedObject& PreparedObject::operator=(PreparedObject&&) noexcept = default;

const std::string& PreparedObject::id() const { return state_->id_str; }
uint64_t PreparedObject::size() const { return state_->size; }
std::vector<ChunkInfo> PreparedObject::chunks() const {
  std::vector<ChunkInfo> out;
  uint64_t off = 0;
  for (const auto& e : state_->entries) {
    out.push_back({e.id.Hex(), off, e.length});
    off += e.length;
  }
  return out;
}

Status PreparedState::ReadContent(uint64_t offset, uint8_t* buf, size_t n) const {
  switch (kind) {
    case Kind::kBytes:
      std::memcpy(buf, bytes + offset, n);
      return Status::OK();
    case Kind::kFile: {
      Result<size_t> got = file->ReadAt(offset, buf, n);
      if (!got.ok()) return got.status();
      if (*got != n) return Status::InvalidArgument(file->Describe() + " shrank after it was prepared");
      return Status::OK();
    }
    case Kind::kSpill: {
      size_t got = 0;
      CHUNKSTORE_RETURN_IF_ERROR(spill->ReadAt(offset, n, buf, &got));
      if (got != n) return Status::IOError("the spill file is shorter than what was written to it");
      return Status::OK();
    }
  }
  return Status::OK();
}

namespace {

// Prepare only needs the chunk list: no compression, nothing written.
class PrepareSink final : public IngestSink {
 public:
  bool IsKnown(const Digest&, uint32_t) override { return true; }
  Status Accept(IngestedChunk& c) override {
    entries.push_back({c.id, c.length});
    return Status::OK();
  }
  std::vector<ManifestEntry> entries;
};

// Copies every byte read into a spill file on its way to the chunker.
class TeeSource final : public Source {
 public:
  TeeSource(Source& in, File* spill) : in_(in), spill_(spill) {}
  Result<size_t> Read(uint8_t* buf, size_t n) override {
    Result<size_t> r = in_.Read(buf, n);
    if (r.ok() && *r > 0) {
      Status s = spill_->Append(buf, *r);
      if (!s.ok()) return s.WithContext("cannot write the spill file");
    }
    return r;
  }
  std::optional<uint64_t> Size() const override { return in_.Size(); }
  std::string Describe() const override { return in_.Describe(); }

 private:
  Source& in_;
  File* spill_;
};

}  // namespace

static Result<PreparedObject> RunPrepare(Store::Impl* impl, Source& source,
                                         std::unique_ptr<PreparedObject::State> state) {
  PublishSession hint(impl->publish_target());
  PrepareSink sink;
  IngestConfig cfg;
  cfg.chunking = impl->meta.chunking;
  cfg.compress = Compression::None();
  cfg.threads = impl->threads;
  const std::vector<ManifestEntry> expected = hint.EarlierVersion(source, cfg);
  if (!expected.empty()) cfg.expected = &expected;
  Result<IngestOutcome> out = Ingest(source, cfg, &sink);
  if (!out.ok()) return out.status().WithContext("cannot prepare " + source.Describe());
  state->id = out->object_id;
  state->id_str = out->object_id.ObjectId();
  state->size = out->size;
  state->entries = std::move(sink.entries);
  state->chain = std::move(out->chain);
  state->owner = impl;
  return PreparedObject::State::Wrap(std::move(state));
}

Result<std::vector<ChunkInfo>> ChunkFile(const std::string& path, const ChunkerParams& params) {
  CHUNKSTORE_RETURN_IF_ERROR(params.Validate());
  std::unique_ptr<Source> src;
  if (path == "-") {
    // From the descriptor, not std::cin: a read error must fail, not end
    // the input early.
    src = std::make_unique<PullSource>([](void* buf, size_t n) -> Result<size_t> {
      for (;;) {
        const ssize_t got = ::read(STDIN_FILENO, buf, n);
        if (got >= 0) return static_cast<size_t>(got);
        if (errno != EINTR) return Status::IOError(std::string("cannot read standard input: ") + std::strerror(errno));
      }
    });
  } else {
    Result<std::unique_ptr<FileSource>> f = FileSource::Open(path);
    if (!f.ok()) return f.status();
    src = std::move(*f);
  }
  PrepareSink sink;
  IngestConfig cfg;
  cfg.chunking = params;
  cfg.compress = Compression::None();
  cfg.threads = ThreadCount(Options{});
  Result<IngestOutcome> out = Ingest(*src, cfg, &sink);
  if (!out.ok()) return out.status();
  std::vector<ChunkInfo> chunks;
  uint64_t off = 0;
  for (const auto& e : sink.entries) {
    chunks.push_back({e.id.Hex(), off, e.length});
    off += e.length;
  }
  return chunks;
}

Result<PreparedObject> Store::PrepareFile(const std::string& path) {
  Result<std::unique_ptr<FileSource>> src = FileSource::Open(path);
  if (!src.ok()) return src.status();
  auto state = std::make_unique<PreparedObject::State>();
  state->kind = PreparedObject::State::Kind::kFile;
  Source& s = **src;
  state->file = std::move(*src);
  return RunPrepare(impl_.get(), s, std::move(state));
}

Result<PreparedObject> Store::PrepareBytes(const void* data, size_t n) {
  auto state = std::make_unique<PreparedObject::State>();
  BytesSource bytes(data, n);
  if (n <= impl_->options.spill_threshold) {
    state->kind = PreparedObject::State::Kind::kBytes;
    state->bytes = static_cast<const uint8_t*>(data);
    return RunPrepare(impl_.get(), bytes, std::move(state));
  }
  Result<std::unique_ptr<File>> spill = impl_->env->CreateTempFile(impl_->tmp_dir());
  if (!spill.ok()) return spill.status();
  state->kind = PreparedObject::State::Kind::kSpill;
  state->spill = std::move(*spill);
  TeeSource tee(bytes, state->spill.get());
  return RunPrepare(impl_.get(), tee, std::move(state));
}

Result<PreparedObject> Store::PrepareStream(std::istream& in) {
  auto state = std::make_unique<PreparedObject::State>();
  Result<std::unique_ptr<File>> spill = impl_->env->CreateTempFile(impl_->tmp_dir());
  if (!spill.ok()) return spill.status();
  state->kind = PreparedObject::State::Kind::kSpill;
  state->spill = std::move(*spill);
  StreamSource stream(in);
  TeeSource tee(stream, state->spill.get());
  return RunPrepare(impl_.get(), tee, std::move(state));
}

Result<PublishResult> Store::Publish(const PreparedObject& prepared, const std::string& name) {
  if (!prepared.state_) return Status::InvalidArgument("the prepared object is empty (moved from?)");
  PublishSession session(impl_->publish_target());
  Result<PublishResult> r = session.AddPrepared(*prepared.state_, name);
  if (!r.ok()) return r.status();
  CHUNKSTORE_RETURN_IF_ERROR(session.Commit());
  return session.results().front();
}

// ---- refs ----------------------------------------------------------------

Result<std::string> Store::Resolve(const std::string& ref_in) {
  Result<std::string> ref = ExpandRef(impl_.get(), ref_in);
  if (!ref.ok()) return ref.status();
  Result<Digest> d = ResolveRef(*impl_->index.Lock(), *ref);
  if (!d.ok()) return d.status();
  return d->ObjectId();
}

Result<std::vector<ChunkInfo>> Store::Chunks(const std::string& ref_in) {
  Result<std::string> ref = ExpandRef(impl_.get(), ref_in);
  if (!ref.ok()) return ref.status();
  ObjectRow found;
  Result<Digest> d = ResolveRef(*impl_->index.Lock(), *ref, &found);
  if (!d.ok()) return d.status();
  Result<ObjectRow> row = std::move(found);
  if (IsInline(row->size, row->chunk_count)) return std::vector<ChunkInfo>{};
  Result<std::vector<ManifestEntry>> entries =
      DecodeManifest(*d, row->size, row->manifest.data(), row->manifest.size());
  if (!entries.ok()) return entries.status().WithObject(d->ObjectId());
  std::vector<ChunkInfo> out;
  uint64_t off = 0;
  for (const auto& e : *entries) {
    out.push_back({e.id.Hex(), off, e.length});
    off += e.length;
  }
  return out;
}

}  // namespace chunkstore
