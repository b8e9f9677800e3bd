// Store: opening and creating stores, the public publish and prepare calls,
// and ref resolution.
#include "chunkstore/store.h"

#include <cctype>
#include <cstring>
#include <iostream>
#include <thread>

#include "ingest/file_prefetch.h"
#include "ingest/ingest.h"
#include "store/store_impl.h"

namespace chunkstore {

using namespace internal;

namespace {

constexpr const char* kIndexFile = "index.db";

bool IsHex(const std::string& s) {
  for (char c : s) {
    const bool digit = c >= '0' && c <= '9';
    const char lower = static_cast<char>(c | 0x20);
    if (!digit && !(lower >= 'a' && lower <= 'f')) return false;
  }
  return !s.empty();
}

}  // namespace

Status internal::CreateIndexFile(Env* env, const std::string& dir, const StoreMeta& meta,
                                 const Options& options) {
  // Built under a temporary name and renamed, so a crash never leaves a
  // half-made index under the real name.
  const std::string fresh = dir + "/index.db.new";
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) env->RemoveFile(fresh + suffix);
  {
    Result<std::unique_ptr<Index>> made = Index::Open(fresh, &meta, options.sync, options.busy_timeout_ms);
    if (!made.ok()) return made.status();
  }
  CHUNKSTORE_RETURN_IF_ERROR(env->RenameFile(fresh, dir + "/" + kIndexFile));
  if (options.sync) CHUNKSTORE_RETURN_IF_ERROR(env->SyncDir(dir));
  return Status::OK();
}

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

Status ValidateName(const std::string& name) {
  if (name.empty()) return Status::InvalidArgument("a name cannot be empty");
  if (name.size() > 1024)
    return Status::InvalidArgument("name is " + std::to_string(name.size()) +
                                   " bytes long; the limit is 1024");
  // Well-formed UTF-8 without control characters (C0, DEL or C1).
  const size_t n = name.size();
  for (size_t i = 0; i < n;) {
    const auto c = static_cast<unsigned char>(name[i]);
    const auto bad_utf8 = [&] {
      return Status::InvalidArgument("name is not valid UTF-8 (byte " + std::to_string(i) + ")");
    };
    if (c < 0x20 || c == 0x7f)
      return Status::InvalidArgument("name contains a control character at byte " +
                                     std::to_string(i));
    if (c == '@')
      return Status::InvalidArgument("name contains '@', which refs use for versions (NAME@N)");
    size_t extra;
    if (c < 0x80) extra = 0;
    else if (c >= 0xc2 && c <= 0xdf) extra = 1;
    else if ((c & 0xf0) == 0xe0) extra = 2;
    else if (c >= 0xf0 && c <= 0xf4) extra = 3;
    else return bad_utf8();
    if (i + extra >= n && extra > 0) return bad_utf8();
    for (size_t k = 1; k <= extra; ++k)
      if ((static_cast<unsigned char>(name[i + k]) & 0xc0) != 0x80) return bad_utf8();
    if (c == 0xc2 && static_cast<unsigned char>(name[i + 1]) < 0xa0)
      return Status::InvalidArgument("name contains a control character at byte " +
                                     std::to_string(i));
    i += extra + 1;
  }
  return Status::OK();
}

Store::Store(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::~Store() = default;

const ChunkerParams& Store::chunking() const { return impl_->meta.chunking; }
uint32_t Store::inline_max() const { return impl_->meta.inline_max; }
const std::string& Store::dir() const { return impl_->dir; }

unsigned internal::ThreadCount(const Options& o) {
  if (o.threads) return o.threads;
  const unsigned hc = std::thread::hardware_concurrency();
  return hc ? hc : 1;
}

Result<std::unique_ptr<Store>> Store::Open(const std::string& dir_in, const Options& options) {
  if (dir_in.empty()) return Status::InvalidArgument("the store directory name is empty");
  CHUNKSTORE_RETURN_IF_ERROR(options.chunking.Validate());
  CHUNKSTORE_RETURN_IF_ERROR(ValidateInlineMax(EffectiveInlineMax(options.inline_max, options.chunking),
                                               options.chunking));
  if (options.blob_store != nullptr || dir_in.rfind("s3://", 0) == 0) {
    Result<std::shared_ptr<Impl>> bucket = OpenBucketStore(dir_in, options);
    if (!bucket.ok()) return bucket.status();
    return std::unique_ptr<Store>(new Store(std::move(*bucket)));
  }
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  auto impl = std::make_shared<Impl>(options);
  impl->env = options.env ? options.env : Env::Posix();
  impl->dir = impl->root = dir;
  impl->threads = ThreadCount(options);
  Env* env = impl->env;
  const std::string index_path = dir + "/" + kIndexFile;

  if (!env->FileExists(dir)) {
    if (!options.create_if_missing) return Status::NotFound("no store at " + dir);
    CHUNKSTORE_RETURN_IF_ERROR(CreateDirs(env, dir, options.sync));
  }
  if (!env->IsDirectory(dir)) return Status::InvalidArgument(dir + " is not a directory");

  if (!env->FileExists(index_path)) {
    Result<std::vector<std::string>> entries = env->ListDir(dir);
    if (!entries.ok()) return entries.status();
    // An interrupted creation leaves only these behind.
    for (const std::string& e : *entries) {
      if (e != "LOCK" && e != "packs" && e != "tmp" && e.rfind("index.db.new", 0) != 0)
        return Status::InvalidArgument(dir + " is not a chunkstore store (it has no " + kIndexFile +
                                       " and is not empty); refusing to use it");
    }
    if (!options.create_if_missing) return Status::NotFound("no store at " + dir);
    Result<std::unique_ptr<FileLock>> lock = env->LockFile(dir + "/LOCK");
    if (!lock.ok()) return lock.status();
    if (!env->FileExists(index_path)) {  // nobody created it while we waited
      CHUNKSTORE_RETURN_IF_ERROR(env->CreateDir(dir + "/packs"));
      CHUNKSTORE_RETURN_IF_ERROR(env->CreateDir(dir + "/tmp"));
      StoreMeta meta;
      meta.chunking = options.chunking;
      meta.compression = options.compression;
      meta.inline_max = EffectiveInlineMax(options.inline_max, options.chunking);
      CHUNKSTORE_RETURN_IF_ERROR(
          CreateIndexFile(env, dir, meta, options).WithContext("cannot create a store in " + dir));
    }
  } else if (options.error_if_exists) {
    return Status::InvalidArgument(dir + " is already a chunkstore store");
  }
  Result<std::unique_ptr<Index>> index =
      Index::Open(index_path, nullptr, options.sync, options.busy_timeout_ms);
  if (!index.ok()) {
    const Status& s = index.status();
    if (s.IsCorruption() && s.message().find("not a database") != std::string::npos)
      return Status::InvalidArgument(dir + " is not a chunkstore store (" + kIndexFile +
                                     " is not a database)");
    return s.WithContext(dir);
  }
  impl->index = std::move(*index);
  impl->meta = impl->index->meta();
  if (!env->IsDirectory(impl->packs_dir()))
    CHUNKSTORE_RETURN_IF_ERROR(env->CreateDir(impl->packs_dir()));
  if (!env->IsDirectory(impl->tmp_dir())) CHUNKSTORE_RETURN_IF_ERROR(env->CreateDir(impl->tmp_dir()));
  return std::unique_ptr<Store>(new Store(std::move(impl)));
}

Result<std::unique_ptr<Store>> Store::OpenInMemory(const Options& options) {
  CHUNKSTORE_RETURN_IF_ERROR(options.chunking.Validate());
  CHUNKSTORE_RETURN_IF_ERROR(ValidateInlineMax(EffectiveInlineMax(options.inline_max, options.chunking),
                                               options.chunking));
  auto impl = std::make_shared<Impl>(options);
  impl->owned_env = Env::NewMemory();
  impl->env = impl->owned_env.get();
  impl->root = "/mem";
  impl->threads = ThreadCount(options);
  CHUNKSTORE_RETURN_IF_ERROR(impl->env->CreateDir("/mem"));
  CHUNKSTORE_RETURN_IF_ERROR(impl->env->CreateDir(impl->packs_dir()));
  CHUNKSTORE_RETURN_IF_ERROR(impl->env->CreateDir(impl->tmp_dir()));
  StoreMeta meta;
  meta.chunking = options.chunking;
  meta.compression = options.compression;
  meta.inline_max = EffectiveInlineMax(options.inline_max, options.chunking);
  Result<std::unique_ptr<Index>> index = Index::Open(":memory:", &meta, false, 0);
  if (!index.ok()) return index.status();
  impl->index = std::move(*index);
  impl->meta = impl->index->meta();
  return std::unique_ptr<Store>(new Store(std::move(impl)));
}

// ---- publishing ----------------------------------------------------------

namespace {

Result<PublishResult> PublishOne(Store::Impl* impl, Source& source, const std::string& name) {
  PublishSession session(impl);
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

namespace {

// Reports bytes read to a progress callback, at most every 256 KiB.
class ProgressSource final : public Source {
 public:
  ProgressSource(Source& in, const std::function<void(uint64_t)>& fn, uint64_t* total)
      : in_(in), fn_(fn), total_(total), start_(*total) {}
  Result<size_t> Read(uint8_t* buf, size_t n) override {
    Result<size_t> r = in_.Read(buf, n);
    if (r.ok()) {
      *total_ += *r;
      // After a rewind the count drops back and climbs again: report
      // nothing until it passes what was reported, so it never goes back.
      if (*total_ >= reported_ + (256u << 10) || (*r == 0 && *total_ >= reported_)) {
        reported_ = *total_;
        fn_(*total_);
      }
    }
    return r;
  }
  const uint8_t* Whole() const override { return nullptr; }
  std::optional<uint64_t> Size() const override { return in_.Size(); }
  std::string Describe() const override { return in_.Describe(); }
  // Bytes read again after a rewind are counted once.
  bool Rewind(uint64_t offset) override {
    if (!in_.Rewind(offset)) return false;
    *total_ = start_ + offset;
    return true;
  }

 private:
  Source& in_;
  const std::function<void(uint64_t)>& fn_;
  uint64_t* total_;
  uint64_t start_;
  uint64_t reported_ = 0;
};

}  // namespace

struct Batch::Impl {
  explicit Impl(Store::Impl* store) : session(store) {}
  PublishSession session;
  bool failed = false;
  std::function<void(uint64_t)> progress;
  uint64_t progress_total = 0;
  std::unique_ptr<FilePrefetcher> prefetch;

  Result<PublishResult> Add(Source& src_in, const std::string& name) {
    if (failed) return Status::InvalidArgument("the batch already failed or was committed");
    std::optional<ProgressSource> counted;
    if (progress) counted.emplace(src_in, progress, &progress_total);
    Source& src = counted ? static_cast<Source&>(*counted) : src_in;
    Result<PublishResult> r = session.AddSource(src, name);
    if (!r.ok()) failed = true;
    return r;
  }
};

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
  if (impl_->prefetch) {
    std::optional<FilePrefetcher::Item> item = impl_->prefetch->Take(path);
    if (!item) {
      impl_->prefetch.reset();
    } else if (!item->status.ok()) {
      return item->status;  // as below: a bad input does not spoil the batch
    } else if (item->read) {
      BytesSource src(item->bytes.data(), item->bytes.size(), path);
      return impl_->Add(src, name);
    } else if (item->file) {
      return impl_->Add(*item->file, name);
    }
  }
  Result<std::unique_ptr<FileSource>> src = FileSource::Open(path);
  if (!src.ok()) return src.status();  // a missing input does not spoil the batch
  return impl_->Add(**src, name);
}

Result<PublishResult> Batch::AddBytes(const void* data, size_t n, const std::string& name) {
  BytesSource src(data, n);
  return impl_->Add(src, name);
}

Result<PublishResult> Batch::AddStream(std::istream& in, const std::string& name) {
  StreamSource src(in);
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

Result<std::vector<PublishResult>> Batch::Commit() {
  if (impl_->failed) return Status::InvalidArgument("the batch already failed or was committed");
  impl_->failed = true;
  impl_->prefetch.reset();
  CHUNKSTORE_RETURN_IF_ERROR(impl_->session.Commit());
  return impl_->session.results();
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

Status PreparedObject::State::ReadContent(uint64_t offset, uint8_t* buf, size_t n) const {
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
  PrepareSink sink;
  IngestConfig cfg;
  cfg.chunking = impl->meta.chunking;
  cfg.compress = false;
  cfg.threads = impl->threads;
  const std::vector<ManifestEntry> expected = impl->EarlierVersion(source, cfg);
  if (!expected.empty()) cfg.expected = &expected;
  Result<IngestOutcome> out = Ingest(source, cfg, &sink);
  if (!out.ok()) return out.status().WithContext("cannot prepare " + source.Describe());
  state->id = out->object_id;
  state->id_str = out->object_id.ObjectId();
  state->size = out->size;
  state->entries = std::move(sink.entries);
  state->owner = impl;
  return PreparedObject::State::Wrap(std::move(state));
}

Result<std::vector<ChunkInfo>> ChunkFile(const std::string& path, const ChunkerParams& params) {
  CHUNKSTORE_RETURN_IF_ERROR(params.Validate());
  std::unique_ptr<Source> src;
  if (path == "-") {
    src = std::make_unique<StreamSource>(std::cin);
  } else {
    Result<std::unique_ptr<FileSource>> f = FileSource::Open(path);
    if (!f.ok()) return f.status();
    src = std::move(*f);
  }
  PrepareSink sink;
  IngestConfig cfg;
  cfg.chunking = params;
  cfg.compress = false;
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
  PublishSession session(impl_.get());
  Result<PublishResult> r = session.AddPrepared(*prepared.state_, name);
  if (!r.ok()) return r.status();
  CHUNKSTORE_RETURN_IF_ERROR(session.Commit());
  return session.results().front();
}

// ---- refs ----------------------------------------------------------------

Result<Digest> Store::Impl::ResolveRef(const std::string& ref) {
  std::lock_guard<std::mutex> l(db_mu);
  return ResolveLocked(ref, nullptr);
}

Result<Digest> Store::Impl::ResolveLocked(const std::string& ref, ObjectRow* row_out) {
  if (ref.empty()) return Status::InvalidArgument("empty ref");
  std::string hex = ref;
  const bool explicit_id = ref.rfind("sha256:", 0) == 0;
  if (explicit_id) hex = ref.substr(7);
  if (explicit_id && (!IsHex(hex) || hex.size() < 8 || hex.size() > 64))
    return Status::InvalidArgument("malformed object id '" + ref +
                                   "': expected sha256: and 8 to 64 hex digits");
  const bool hex_only = IsHex(hex);
  if (hex_only && hex.size() == 64) {
    Digest d = *Digest::FromHex(hex);
    Result<std::optional<ObjectRow>> row = index->FindObject(d);
    if (!row.ok()) return row.status();
    if (!row->has_value()) return Status::NotFound("no object " + d.ObjectId());
    if (row_out) *row_out = std::move(**row);
    return d;
  }
  if (hex_only && hex.size() >= 8) {
    std::vector<Digest> found;
    {
      Result<std::vector<Digest>> r = index->FindObjectsByPrefix(hex, 11);
      if (!r.ok()) return r.status();
      found = std::move(*r);
    }
    if (found.size() == 1) return Loaded(found[0], row_out);
    if (found.size() > 1) {
      std::string msg = "ambiguous id prefix " + hex + " matches " +
                        (found.size() > 10 ? "more than 10" : std::to_string(found.size())) +
                        " objects:";
      for (size_t i = 0; i < found.size() && i < 10; ++i) msg += " " + found[i].ObjectId();
      return Status::InvalidArgument(msg);
    }
    if (explicit_id) return Status::NotFound("no object with id prefix " + hex);
    // Otherwise it may still be a name that happens to look like hex.
  }
  std::string name = ref;
  int64_t version = 0;
  const size_t at = ref.rfind('@');
  if (at != std::string::npos) {
    name = ref.substr(0, at);
    const std::string v = ref.substr(at + 1);
    if (v == "latest") {
      version = 0;
    } else if (!v.empty() && v.size() <= 18 &&
               v.find_first_not_of("0123456789") == std::string::npos) {
      version = std::stoll(v);
      if (version < 1) return Status::InvalidArgument("version numbers start at 1 in '" + ref + "'");
    } else {
      return Status::InvalidArgument("malformed ref '" + ref +
                                     "': after '@' comes a version number or 'latest'");
    }
  }
  Status valid = ValidateName(name);
  if (!valid.ok()) return valid.WithContext("malformed ref");
  Result<std::optional<NameRow>> row = index->FindName(name, version);
  if (!row.ok()) return row.status();
  if (!row->has_value()) {
    if (version != 0) return Status::NotFound("name " + name + " has no version " + std::to_string(version));
    return Status::NotFound("no object or name matches '" + ref + "'");
  }
  return Loaded((*row)->object, row_out);
}

Result<Digest> Store::Impl::Loaded(const Digest& id, ObjectRow* row_out) {
  if (row_out == nullptr) return id;
  Result<std::optional<ObjectRow>> row = index->FindObject(id);
  if (!row.ok()) return row.status();
  if (!row->has_value()) return Status::NotFound("no object " + id.ObjectId());
  *row_out = std::move(**row);
  return id;
}

Result<ObjectRow> Store::Impl::LoadObject(const Digest& id) {
  std::lock_guard<std::mutex> l(db_mu);
  Result<std::optional<ObjectRow>> row = index->FindObject(id);
  if (!row.ok()) return row.status();
  if (!row->has_value()) return Status::NotFound("no object " + id.ObjectId());
  return std::move(**row);
}

Result<std::string> Store::Resolve(const std::string& ref) {
  Result<Digest> d = impl_->ResolveRef(ref);
  if (!d.ok()) return d.status();
  return d->ObjectId();
}

Result<std::vector<ChunkInfo>> Store::Chunks(const std::string& ref) {
  Result<Digest> d = impl_->ResolveRef(ref);
  if (!d.ok()) return d.status();
  Result<ObjectRow> row = impl_->LoadObject(*d);
  if (!row.ok()) return row.status();
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
