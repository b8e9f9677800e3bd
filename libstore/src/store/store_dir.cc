// SPDX-License-Identifier: Apache-2.0
// Opening directory stores (and in-memory ones, which are directory stores
// over an in-memory Env): creating them, telling a store from a directory
// that only looks like one, migrating stores of schema versions 1 and 2
// (whose index was their only record) to a change log, and bringing an
// index that fell behind its log up to date.
//
// A store is created log first, then the index, then the config file: the
// config marks a store as complete. What a creation interrupted before the
// config leaves behind (an empty log, an empty index, empty folders) is
// recognised and finished; anything that holds data and no config is
// refused, never written over.
#include "base/clock.h"
#include "format/config.h"
#include "format/layout.h"
#include "index/apply.h"
#include "log/directory_log.h"
#include "log/legacy_log.h"
#include "log/segment.h"
#include "store/store_impl.h"

namespace chunkstore::internal {

namespace {

Result<std::string> ReadWholeFile(Env* env, const std::string& path) {
  Result<std::unique_ptr<File>> f = env->OpenFile(path, OpenMode::kRead);
  if (!f.ok()) return f.status();
  Result<uint64_t> size = (*f)->Size();
  if (!size.ok()) return size.status();
  if (*size > (1u << 20)) return Status::Corruption(path + " is far larger than a config");
  std::string s(*size, '\0');
  size_t got = 0;
  CHUNKSTORE_RETURN_IF_ERROR((*f)->ReadAt(0, s.size(), s.data(), &got));
  s.resize(got);
  return s;
}

Status WriteConfigFile(Env* env, const std::string& dir, const StoreConfig& c, bool sync) {
  const std::string path = dir + "/" + kConfigFile, fresh = path + ".new";
  env->RemoveFile(fresh);
  Result<std::unique_ptr<File>> f = env->OpenFile(fresh, OpenMode::kCreateNew);
  if (!f.ok()) return f.status();
  const std::string text = EncodeConfig(c);
  Status s = (*f)->Append(text.data(), text.size());
  if (s.ok() && sync) s = (*f)->Sync();
  f->reset();
  if (s.ok()) s = env->RenameFile(fresh, path);
  if (s.ok() && sync) s = env->SyncDir(dir);
  if (!s.ok()) env->RemoveFile(fresh);
  return s;
}

// An index file for a store (built aside, then renamed into place), empty:
// opening the store replays the log into it.
Status CreateIndexFile(Env* env, const std::string& dir, const StoreMeta& meta, const std::string& store_id,
                       bool sync) {
  const std::string path = dir + "/" + kIndexFile, fresh = path + ".new";
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) env->RemoveFile(fresh + suffix);
  {
    // Filled without a journal and synced once, as a rebuild is: until it
    // is renamed into place the file is nobody's.
    Index::OpenOptions o;
    o.create = &meta;
    o.bulk_load = true;
    Result<std::unique_ptr<Index>> made = Index::Open(fresh, o);
    if (!made.ok()) return made.status();
    CHUNKSTORE_RETURN_IF_ERROR((*made)->SetMeta("store_id", store_id));
    CHUNKSTORE_RETURN_IF_ERROR((*made)->FinishBulkLoad());
  }
  CHUNKSTORE_RETURN_IF_ERROR(env->RenameFile(fresh, path));
  return sync ? env->SyncDir(dir) : Status::OK();
}

bool LogIsOnlyItsCreation(Env* env, const std::string& dir);

// Whether dir's log is only what a creation writes first (one segment,
// one empty checkpoint), and its packs folder holds no pack.
bool OnlyAnInterruptedCreation(Env* env, const std::string& dir) {
  Result<std::vector<std::string>> packs = env->ListDir(dir + "/" + kPacksDir);
  if (packs.ok())
    for (const std::string& n : *packs)
      if (n.rfind("pack-", 0) == 0) return false;
  return LogIsOnlyItsCreation(env, dir);
}

bool LogIsOnlyItsCreation(Env* env, const std::string& dir) {
  Result<std::vector<std::string>> logs = env->ListDir(dir + "/" + kLogDir);
  if (!logs.ok()) return true;
  std::vector<std::string> segments;
  for (const std::string& n : *logs)
    if (IsSegmentName(n, nullptr)) segments.push_back(n);
  if (segments.empty()) return true;
  if (segments.size() != 1 || segments[0] != SegmentName(1)) return false;
  Result<std::unique_ptr<File>> f = env->OpenFile(dir + "/" + kLogDir + "/" + segments[0], OpenMode::kRead);
  if (!f.ok()) return false;
  Result<SegmentScan> scan = ScanSegment(**f, segments[0]);
  if (!scan.ok() || scan->frames.size() != 1) return false;
  Result<ChangeSet> c = DecodeChangeSet(scan->frames[0].payload);
  return c.ok() && c->kind == ChangeSet::kCheckpoint && c->empty();
}

// The first change of a new store's log: a checkpoint of nothing.
ChangeSet EmptyCheckpoint() {
  ChangeSet empty;
  empty.kind = ChangeSet::kCheckpoint;
  empty.time = NowSeconds();
  return empty;
}

Status RemoveLog(Env* env, const std::string& dir) {
  Result<std::vector<std::string>> logs = env->ListDir(dir + "/" + kLogDir);
  if (!logs.ok()) return Status::OK();
  for (const std::string& n : *logs)
    if (IsSegmentName(n, nullptr) || n.size() > 4) env->RemoveFile(dir + "/" + kLogDir + "/" + n);
  return Status::OK();
}

Status CreateStore(Env* env, const std::string& dir, const StoreMeta& meta, bool sync) {
  CHUNKSTORE_RETURN_IF_ERROR(env->CreateDir(dir + "/" + kPacksDir));
  CHUNKSTORE_RETURN_IF_ERROR(env->CreateDir(dir + "/" + kTmpDir));
  // Leftovers of an interrupted creation (checked by the caller) go.
  CHUNKSTORE_RETURN_IF_ERROR(RemoveLog(env, dir));
  env->RemoveFile(dir + "/" + kIndexFile);
  StoreConfig c;
  c.format = kDirectoryCreateFormat;
  c.id = RandomHex(16);
  c.meta = meta;
  CHUNKSTORE_RETURN_IF_ERROR(DirectoryLog::Create(env, dir, c.id, EmptyCheckpoint(), sync));
  CHUNKSTORE_RETURN_IF_ERROR(CreateIndexFile(env, dir, meta, c.id, sync));
  return WriteConfigFile(env, dir, c, sync);
}

// Moves a store whose index is its only record onto a change log: the
// index's whole state becomes the log's first checkpoint. Until the config
// is written the store is still what it was, and an interrupted migration
// is simply done again.
Status Migrate(Env* env, const std::string& dir, Index& index, bool sync) {
  CHUNKSTORE_RETURN_IF_ERROR(RemoveLog(env, dir));
  ChangeSet state;
  {
    ReadTxn read(&index);
    CHUNKSTORE_RETURN_IF_ERROR(read.status());
    Result<ChangeSet> s = Snapshot(index, NowSeconds());
    if (!s.ok()) return s.status();
    state = std::move(*s);
  }
  StoreConfig c;
  c.format = kDirectoryCreateFormat;
  c.id = RandomHex(16);
  c.meta = index.meta();
  CHUNKSTORE_RETURN_IF_ERROR(DirectoryLog::Create(env, dir, c.id, state, sync));
  {
    WriteTxn txn(&index);
    CHUNKSTORE_RETURN_IF_ERROR(txn.status());
    CHUNKSTORE_RETURN_IF_ERROR(index.SetStoreMeta(c.meta, kSchemaVersion));
    CHUNKSTORE_RETURN_IF_ERROR(index.SetMeta("store_id", c.id));
    CHUNKSTORE_RETURN_IF_ERROR(txn.Commit());
  }
  return WriteConfigFile(env, dir, c, sync);
}

Status Refuse(const std::string& dir, const std::string& why) {
  return Status::InvalidArgument(dir + " " + why + "; refusing to use it");
}

// Opens the store under impl->root once its config is in place. fresh: an
// index just made (created, or migrated): its catching up is no news.
Status OpenWithConfig(Store::Impl* impl, const StoreConfig& config, const std::string& index_path, bool fresh) {
  Env* env = impl->env;
  const Options& options = impl->options;
  const std::string& dir = impl->root;
  impl->meta = config.meta;
  impl->store_id = config.id;
  DirectoryLogOptions lo;
  lo.sync = options.sync;
  lo.checkpoint_bytes = options.checkpoint_bytes;
  auto log = std::make_unique<DirectoryLog>(env, dir, config.id, &impl->index, index_path, lo, impl->read_only);
  if (config.format < kDirectoryFormat && index_path != ":memory:" && !impl->read_only) {
    // Read again under the log's hold: another process may have raised it.
    log->SetFormatRaiser([env, dir, sync = options.sync]() -> Status {
      const std::string path = dir + "/" + kConfigFile;
      Result<std::string> text = ReadWholeFile(env, path);
      if (!text.ok()) return text.status();
      Result<StoreConfig> now = DecodeConfig(*text, path);
      if (!now.ok()) return now.status();
      if (now->format >= kDirectoryFormat) return Status::OK();
      now->format = kDirectoryFormat;
      return WriteConfigFile(env, dir, *now, sync);
    });
  }
  if (options.rebuild_index) {
    CHUNKSTORE_RETURN_IF_ERROR(log->RebuildWith(config.meta).WithContext("cannot rebuild the index of " + dir));
    impl->notices.push_back("rebuilt the index of " + dir + " from its change log");
  } else if (index_path == ":memory:") {
    Index::OpenOptions o;
    o.create = &config.meta;
    Result<std::unique_ptr<Index>> index = Index::Open(index_path, o);
    if (!index.ok()) return index.status();
    impl->index.Reset(std::move(*index));
  } else {
    if (!env->FileExists(index_path))
      return Status::Corruption(dir + ": the store's index (" + std::string(kIndexFile) +
                                ") is missing; `chunkstore index rebuild` recreates it from the change log, "
                                "losing nothing");
    Index::OpenOptions o;
    o.busy_timeout_ms = options.busy_timeout_ms;
    o.read_only = impl->read_only;
    Result<std::unique_ptr<Index>> index = Index::Open(index_path, o);
    if (!index.ok()) {
      if (index.status().IsBusy() || index.status().IsIOError() || index.status().IsUnsupported() ||
          index.status().IsNoSpace())
        return index.status().WithContext(dir);
      return Status::Corruption(dir + ": the store's index cannot be read (" + index.status().message() +
                                "); `chunkstore index rebuild` recreates it from the change log, losing nothing");
    }
    Result<std::string> id = (*index)->GetMeta("store_id");
    if (!id.ok()) return id.status();
    if (*id != config.id || (*index)->schema_version() != kSchemaVersion)
      return Status::Corruption(dir + ": the index does not belong to this store's log; `chunkstore index "
                                "rebuild` recreates it from the change log, losing nothing");
    if ((*index)->exclusive())
      impl->notices.push_back("the disk holding " + dir +
                              " is full: reads go on, one command at a time; changes fail until there is room");
    impl->index.Reset(std::move(*index));
  }
  DirectoryLog* dlog = log.get();
  impl->log = std::move(log);
  impl->WireReadWrite();
  if (!impl->read_only) {
    Result<uint64_t> behind = dlog->UnappliedBytes();
    if (!behind.ok()) return behind.status();
    if (*behind > 0) {
      Status caught = impl->log->CatchUp();
      // Reads go on on a full disk; what the index has not caught up with
      // is said, and a write (which needs space anyway) fails on its own.
      if (caught.IsNoSpace()) {
        impl->notices.push_back("the disk holding " + dir + " is full: the index could not catch up with " +
                                std::to_string(*behind) + " bytes of change log, whose changes do not show yet");
        return Status::OK();
      }
      CHUNKSTORE_RETURN_IF_ERROR(caught.WithContext(dir));
      Result<uint64_t> still = dlog->UnappliedBytes();
      if (still.ok() && *still < *behind && !fresh)
        impl->notices.push_back("the index of " + dir + " was behind its change log; it has caught up");
    }
  }
  return Status::OK();
}

}  // namespace

Result<std::shared_ptr<Store::Impl>> OpenDirectoryStore(const std::string& dir_in, const Options& options) {
  if (dir_in.empty()) return Status::InvalidArgument("the store directory name is empty");
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  auto impl = std::make_shared<Store::Impl>(options);
  impl->env = options.env ? options.env : Env::Posix();
  impl->dir = impl->root = dir;
  impl->threads = ThreadCount(options);
  impl->read_only = options.read_only;
  Env* env = impl->env;
  const std::string index_path = dir + "/" + kIndexFile, config_path = dir + "/" + kConfigFile;

  if (!env->FileExists(dir)) {
    if (!options.create_if_missing || impl->read_only) return Status::NotFound("no store at " + dir);
    CHUNKSTORE_RETURN_IF_ERROR(CreateDirs(env, dir, options.sync));
  }
  if (!env->IsDirectory(dir)) return Status::InvalidArgument(dir + " is not a directory");

  bool migrated = false;
  for (int attempt = 0; attempt < 2; ++attempt) {
    Result<std::string> text = ReadWholeFile(env, config_path);
    if (text.ok()) {
      if (options.error_if_exists) return Status::InvalidArgument(dir + " is already a chunkstore store");
      Result<StoreConfig> config = DecodeConfig(*text, config_path);
      if (!config.ok()) return config.status();
      if (config->bucket) return Refuse(dir, "holds a bucket store's config");
      CHUNKSTORE_RETURN_IF_ERROR(OpenWithConfig(impl.get(), *config, index_path, migrated));
      return impl;
    }
    if (!text.status().IsNotFound()) return text.status();

    if (env->FileExists(index_path)) {
      // An index and no config: a store of schema version 1 or 2, or the
      // remains of a creation interrupted before its config.
      Index::OpenOptions o;
      o.durable = true;  // until migrated, the index is the store's only record
      o.busy_timeout_ms = options.busy_timeout_ms;
      o.read_only = impl->read_only;
      Result<std::unique_ptr<Index>> index = Index::Open(index_path, o);
      if (!index.ok()) {
        if (index.status().IsInvalidArgument())
          return Refuse(dir, "is not a chunkstore store (" + index.status().message() + ")");
        return index.status().WithContext(dir);
      }
      if ((*index)->schema_version() <= kLastLoglessVersion) {
        if (options.error_if_exists) return Status::InvalidArgument(dir + " is already a chunkstore store");
        if (impl->read_only) {
          impl->meta = (*index)->meta();
          impl->index.Reset(std::move(*index));
          impl->log = std::make_unique<LegacyLog>(&impl->index, dir);
          impl->WireReadWrite();
          return impl;
        }
        Result<std::unique_ptr<FileLock>> lock = env->LockFile(dir + "/" + kCreateLock);
        if (!lock.ok()) return lock.status();
        if (env->FileExists(config_path)) continue;  // migrated by another process meanwhile
        CHUNKSTORE_RETURN_IF_ERROR(Migrate(env, dir, **index, options.sync).WithContext("cannot migrate " + dir));
        impl->notices.push_back("moved the store at " + dir +
                                " to the current format: its objects and names are now in its change log too");
        migrated = true;
        continue;
      }
      if (!OnlyAnInterruptedCreation(env, dir))
        return Refuse(dir, "holds an index and a change log but no config");
    } else {
      Result<std::vector<std::string>> entries = env->ListDir(dir);
      if (!entries.ok()) return entries.status();
      for (const std::string& e : *entries) {
        const bool known = e == kCreateLock || e == kPacksDir || e == kTmpDir || e == kLogDir ||
                           e.rfind(std::string(kIndexFile) + ".new", 0) == 0 || e == std::string(kConfigFile) + ".new";
        if (!known) return Refuse(dir, "is not a chunkstore store (it holds " + e.substr(0, 64) + " and no config)");
      }
      if (!OnlyAnInterruptedCreation(env, dir))
        return Refuse(dir, "holds packs or a change log but no config or index (`chunkstore index rebuild` "
                           "needs the config); it was not made by this chunkstore, or lost files");
    }
    if (!options.create_if_missing || impl->read_only) return Status::NotFound("no store at " + dir);
    Result<std::unique_ptr<FileLock>> lock = env->LockFile(dir + "/" + kCreateLock);
    if (!lock.ok()) return lock.status();
    if (env->FileExists(config_path)) continue;  // created by another process while we waited
    StoreMeta meta;
    meta.chunking = options.chunking;
    meta.compression = options.compression;
    meta.inline_max = EffectiveInlineMax(options.inline_max, options.chunking);
    CHUNKSTORE_RETURN_IF_ERROR(CreateStore(env, dir, meta, options.sync).WithContext("cannot create a store in " + dir));
    // The creator's own open must not refuse the store it just made.
    Options again = options;
    again.error_if_exists = false;
    impl->options = again;
    Result<std::string> made = ReadWholeFile(env, config_path);
    if (!made.ok()) return made.status();
    Result<StoreConfig> config = DecodeConfig(*made, config_path);
    if (!config.ok()) return config.status();
    CHUNKSTORE_RETURN_IF_ERROR(OpenWithConfig(impl.get(), *config, index_path, true));
    impl->options = options;
    return impl;
  }
  return Status::Busy(dir + " changed while it was being opened; try again");
}

Result<std::shared_ptr<Store::Impl>> OpenMemoryStore(const Options& options) {
  auto impl = std::make_shared<Store::Impl>(options);
  impl->owned_env = Env::NewMemory();
  impl->env = impl->owned_env.get();
  impl->root = "/mem";
  impl->threads = ThreadCount(options);
  Env* env = impl->env;
  CHUNKSTORE_RETURN_IF_ERROR(env->CreateDir(impl->root));
  StoreMeta meta;
  meta.chunking = options.chunking;
  meta.compression = options.compression;
  meta.inline_max = EffectiveInlineMax(options.inline_max, options.chunking);
  impl->options.sync = false;
  CHUNKSTORE_RETURN_IF_ERROR(env->CreateDir(impl->root + "/" + kPacksDir));
  CHUNKSTORE_RETURN_IF_ERROR(env->CreateDir(impl->root + "/" + kTmpDir));
  StoreConfig c;
  c.format = kDirectoryCreateFormat;
  c.id = RandomHex(16);
  c.meta = meta;
  CHUNKSTORE_RETURN_IF_ERROR(DirectoryLog::Create(env, impl->root, c.id, EmptyCheckpoint(), false));
  CHUNKSTORE_RETURN_IF_ERROR(OpenWithConfig(impl.get(), c, ":memory:", true));
  return impl;
}

}  // namespace chunkstore::internal

namespace chunkstore {

Status Store::RemoveUnused(const std::string& dir_in, Env* env) {
  using namespace internal;
  if (!env) env = Env::Posix();
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (dir.empty() || dir.rfind("s3://", 0) == 0) return Status::InvalidArgument("not a directory store: " + dir);
  auto refuse = [&](const std::string& why) {
    return Status::InvalidArgument("not removing " + dir + ": " + why);
  };
  if (!env->FileExists(dir + "/" + kConfigFile)) return refuse("it is not a chunkstore store");
  // Every commit takes the log's lock: held, no change can arrive while the
  // log is judged and the files go.
  Result<std::unique_ptr<FileLock>> log_lock = env->TryLockFile(dir + "/" + kLogLock);
  if (!log_lock.ok()) return log_lock.status().IsBusy() ? Status::Busy(dir + " is in use") : log_lock.status();
  // Strictly: a log that cannot be listed, or holds no segment, is not
  // one that is known to be only its creation.
  Result<std::vector<std::string>> logs = env->ListDir(dir + "/" + kLogDir);
  if (!logs.ok()) return logs.status().WithContext("not removing " + dir);
  if (std::count_if(logs->begin(), logs->end(), [](const std::string& n) { return IsSegmentName(n, nullptr); }) != 1 ||
      !LogIsOnlyItsCreation(env, dir))
    return refuse("changes were committed to it");
  Result<std::vector<std::string>> top = env->ListDir(dir);
  if (!top.ok()) return top.status();
  for (const std::string& e : *top) {
    const bool known = e == kConfigFile || e == kIndexFile || e == std::string(kIndexFile) + "-wal" ||
                       e == std::string(kIndexFile) + "-shm" || e == kCreateLock || e == kGcLock ||
                       e == kLogDir || e == kPacksDir || e == kTmpDir;
    if (!known) return refuse("it holds " + e.substr(0, 64) + ", which is not a store's");
  }
  // Pack files no change names: a failed publish's, gone only if no writer
  // holds them.
  std::vector<std::unique_ptr<FileLock>> pack_locks;
  std::vector<std::string> files;
  for (const char* sub : {kPacksDir, kTmpDir, kLogDir}) {
    Result<std::vector<std::string>> names = env->ListDir(dir + "/" + sub);
    if (!names.ok()) {
      if (names.status().IsNotFound()) continue;
      return names.status().WithContext("not removing " + dir);
    }
    for (const std::string& n : *names) {
      const std::string path = dir + "/" + sub + "/" + n;
      if (env->IsDirectory(path)) return refuse(std::string(sub) + "/" + n.substr(0, 64) + " is a directory");
      if (std::string(sub) == kPacksDir) {
        const bool fresh = n.size() > 4 && n.compare(n.size() - 4, 4, ".new") == 0;
        if (!IsPackName(fresh ? n.substr(0, n.size() - 4) : n))
          return refuse("packs/ holds " + n.substr(0, 64) + ", which is not a pack");
        Result<std::unique_ptr<FileLock>> l = env->TryLockExistingFile(path);
        if (!l.ok()) return Status::Busy(dir + " is in use (a writer holds " + n + ")");
        pack_locks.push_back(std::move(*l));
      }
      if (std::string(sub) + "/" + n != kLogLock) files.push_back(path);
    }
  }
  for (const std::string& f : files) CHUNKSTORE_RETURN_IF_ERROR(env->RemoveFile(f));
  pack_locks.clear();
  for (const std::string& e : *top)
    if (e != kLogDir && e != kPacksDir && e != kTmpDir) env->RemoveFile(dir + "/" + e);
  CHUNKSTORE_RETURN_IF_ERROR(env->RemoveFile(dir + "/" + kLogLock));
  log_lock->reset();
  for (const char* sub : {kPacksDir, kTmpDir, kLogDir}) CHUNKSTORE_RETURN_IF_ERROR(env->RemoveDir(dir + "/" + sub));
  return env->RemoveDir(dir);
}

}  // namespace chunkstore
