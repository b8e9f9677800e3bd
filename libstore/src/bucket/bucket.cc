// Bucket stores (see bucket.h): log records, their application to the
// index cache, lock blobs and the config blob.
#include "bucket/bucket.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <chrono>
#include <cstring>
#include <functional>
#include <set>

#include "index/sql.h"

namespace chunkstore::internal {

namespace {

constexpr const char* kConfigKey = "config";
constexpr const char* kLogPrefix = "log/";
constexpr const char* kLockPrefix = "locks/";

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// "log/<epoch>-<ms>-..." -> (epoch, ms); false if the key has another shape.
bool ParseLogKey(const std::string& key, int64_t* epoch, int64_t* ms) {
  if (key.size() < 4 + 10 + 1 + 13 || key.compare(0, 4, kLogPrefix) != 0) return false;
  const std::string e = key.substr(4, 10), m = key.substr(15, 13);
  if (key[14] != '-' || e.find_first_not_of("0123456789") != std::string::npos ||
      m.find_first_not_of("0123456789") != std::string::npos)
    return false;
  *epoch = std::stoll(e);
  *ms = std::stoll(m);
  return true;
}

std::string LogKeyPrefix(int64_t epoch, int64_t ms) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "log/%010lld-%013lld", static_cast<long long>(epoch),
                static_cast<long long>(std::max<int64_t>(ms, 0)));
  return buf;
}

Status Fail(Index* index, const char* what) { return index->Error(what); }

// The newest log key applied to the cache; "" before the first.
Result<std::string> NewestApplied(Index* index, std::mutex* index_mu) {
  std::lock_guard<std::mutex> l(*index_mu);
  Query q(index->db(), "SELECT max(key) FROM applied_log");
  if (!q.ok() || q.use().Step() != SQLITE_ROW) return index->Error("cannot read the index cache");
  return q.use().ColText(0);
}

Result<int64_t> PackIdByName(Index* index, const std::string& name) {
  Query q(index->db(), "SELECT id FROM packs WHERE name = ?1");
  if (!q.ok()) return Fail(index, "cannot look up a pack");
  q.use().Text(1, name);
  const int rc = q.use().Step();
  if (rc == SQLITE_ROW) return q.use().ColInt(0);
  if (rc != SQLITE_DONE) return Fail(index, "cannot look up a pack");
  return int64_t{0};
}

Status Run(Index* index, const char* sql, const std::function<void(Use&)>& bind, const char* what) {
  Query q(index->db(), sql);
  if (!q.ok()) return Fail(index, what);
  bind(q.use());
  if (q.use().Step() != SQLITE_DONE) return Fail(index, what);
  return Status::OK();
}

}  // namespace

Status ApplyLogRecord(Index* index, const LogRecord& r, std::vector<int64_t>* versions) {
  std::vector<int64_t> pack_ids;
  for (const auto& p : r.packs) {
    Result<int64_t> id = PackIdByName(index, p.name);
    if (!id.ok()) return id.status();
    if (*id == 0) id = index->InsertPack(p.name, p.size);
    if (!id.ok()) return id.status();
    pack_ids.push_back(*id);
  }
  for (const auto& c : r.chunks) {
    ChunkLocation loc = c.loc;
    loc.pack_id = pack_ids[c.pack];
    Result<std::optional<ChunkLocation>> have = index->FindChunk(c.id);
    if (!have.ok()) return have.status();
    bool write = !have->has_value() || r.kind == LogRecord::kGc;
    if (!write && (*have)->pack_id != loc.pack_id) {
      // Two writers stored the chunk at once: keep the copy every cache
      // keeps, the one in the pack whose name sorts first.
      Result<std::optional<PackRow>> old = index->FindPack((*have)->pack_id);
      if (!old.ok()) return old.status();
      write = !old->has_value() || r.packs[c.pack].name < (*old)->name;
    }
    if (!write) continue;
    index->NoteChunksRemoved();
    CHUNKSTORE_RETURN_IF_ERROR(Run(index, "DELETE FROM chunks WHERE id = ?1",
                                   [&](Use& u) { u.Id(1, c.id); }, "cannot record a chunk"));
    CHUNKSTORE_RETURN_IF_ERROR(index->InsertChunk(c.id, loc));
  }
  for (const auto& ob : r.objects) {
    Result<bool> added = index->InsertObject(ob);
    if (!added.ok()) return added.status();
  }
  for (const auto& [name, object] : r.names) {
    Result<std::optional<ObjectRow>> ob = index->FindObject(object);
    if (!ob.ok()) return ob.status();
    if (!ob->has_value()) {  // removed by a concurrent writer first
      if (versions) versions->push_back(0);
      continue;
    }
    Result<int64_t> v = index->AddName(name, object, r.time);
    if (!v.ok()) return v.status();
    if (versions) versions->push_back(*v);
  }
  for (const auto& name : r.removed_names)
    CHUNKSTORE_RETURN_IF_ERROR(Run(index, "DELETE FROM names WHERE name = ?1",
                                   [&](Use& u) { u.Text(1, name); }, "cannot remove a name"));
  for (const auto& id : r.removed_objects) {
    for (const char* sql : {"DELETE FROM names WHERE object = ?1", "DELETE FROM objects WHERE id = ?1"})
      CHUNKSTORE_RETURN_IF_ERROR(Run(index, sql, [&](Use& u) { u.Id(1, id); }, "cannot remove an object"));
  }
  if (!r.removed_chunks.empty() || !r.removed_packs.empty()) index->NoteChunksRemoved();
  for (const auto& c : r.removed_chunks)
    CHUNKSTORE_RETURN_IF_ERROR(
        Run(index, "DELETE FROM chunks WHERE id = ?1 AND pack = (SELECT id FROM packs WHERE name = ?2)",
            [&](Use& u) { u.Id(1, c.id).Text(2, c.pack); }, "cannot remove a chunk"));
  for (const auto& p : r.removed_packs) {
    CHUNKSTORE_RETURN_IF_ERROR(
        Run(index, "DELETE FROM chunks WHERE pack = (SELECT id FROM packs WHERE name = ?1)",
            [&](Use& u) { u.Text(1, p); }, "cannot remove a pack"));
    CHUNKSTORE_RETURN_IF_ERROR(Run(index, "DELETE FROM packs WHERE name = ?1",
                                   [&](Use& u) { u.Text(1, p); }, "cannot remove a pack"));
  }
  return Status::OK();
}

Status PrepareCacheIndex(Index* index) {
  return index->Exec("CREATE TABLE IF NOT EXISTS applied_log(key TEXT PRIMARY KEY) WITHOUT ROWID");
}

// ---- locks ---------------------------------------------------------------

BucketLock::BucketLock(BlobStore* blobs, std::string key, std::string body)
    : blobs_(blobs), key_(std::move(key)), body_(std::move(body)) {
  keeper_ = std::thread([this] {
    std::unique_lock<std::mutex> l(mu_);
    while (!cv_.wait_for(l, std::chrono::seconds(Bucket::kLockRefreshSeconds), [this] { return stop_; })) {
      l.unlock();
      blobs_->Put(key_, body_.data(), body_.size());  // a failure only ages the lock
      l.lock();
    }
  });
}

BucketLock::~BucketLock() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  keeper_.join();
  blobs_->Delete(key_);  // if this fails the lock goes stale in 30 minutes
}

namespace {

std::string HostName() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return host;
}

// True when a lock blob's body says it was taken by a process on this host
// that no longer runs: its holder crashed, and the lock need not age.
bool HolderIsGone(BlobStore* blobs, const std::string& key) {
  Result<std::string> body = blobs->Get(key);
  if (!body.ok()) return body.status().IsNotFound();
  const std::string on = " on " + HostName() + ", pid ";
  const size_t at = body->find(on);
  if (at == std::string::npos) return false;
  const long pid = std::strtol(body->c_str() + at + on.size(), nullptr, 10);
  return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

}  // namespace

Result<std::unique_ptr<BucketLock>> Bucket::Lock(bool exclusive, int wait_ms) {
  const std::string key =
      std::string(kLockPrefix) + (exclusive ? "exclusive-" : "shared-") + RandomHex(8);
  const std::string body = std::string(exclusive ? "gc" : "writer") + " on " + HostName() +
                           ", pid " + std::to_string(getpid()) + "\n";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  for (;;) {
    CHUNKSTORE_RETURN_IF_ERROR(blobs_->Put(key, body.data(), body.size()));
    Result<std::vector<BlobInfo>> locks = blobs_->List(kLockPrefix);
    if (!locks.ok()) {
      blobs_->Delete(key);
      return locks.status();
    }
    int64_t mine = 0;
    for (const auto& b : *locks)
      if (b.key == key) mine = b.modified;
    std::string conflict;
    for (const auto& b : *locks) {
      if (b.key == key || b.modified < mine - kLockStaleSeconds) continue;
      const bool other_exclusive = b.key.compare(0, 16, "locks/exclusive-") == 0;
      if (!exclusive && !other_exclusive) continue;
      if (HolderIsGone(blobs_, b.key)) {
        blobs_->Delete(b.key);
        continue;
      }
      conflict = b.key;
    }
    if (conflict.empty()) return std::unique_ptr<BucketLock>(new BucketLock(blobs_, key, body));
    blobs_->Delete(key);
    if (exclusive)
      return Status::Busy("another process is using " + blobs_->Describe() + " (lock " + conflict +
                          "); gc needs the store to itself, try again later (locks older than " +
                          std::to_string(kLockStaleSeconds / 60) + " minutes are ignored)");
    if (std::chrono::steady_clock::now() >= deadline)
      return Status::Busy("a gc is running on " + blobs_->Describe() + " (lock " + conflict +
                          "); try again when it is done");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
}

// ---- config --------------------------------------------------------------

Status Bucket::LoadConfig(bool create, const StoreMeta& wanted, StoreMeta* meta,
                          std::string* store_id) {
  Result<std::string> text = blobs_->Get(kConfigKey);
  if (!text.ok() && text.status().IsNotFound()) {
    if (!create) return Status::NotFound("no store at " + blobs_->Describe());
    const ChunkerParams& c = wanted.chunking;
    const std::string body = "chunkstore bucket store\nformat 1\nid " + RandomHex(16) +
                             "\nchunk_min " + std::to_string(c.min_size) + "\nchunk_avg " +
                             std::to_string(c.avg_size) + "\nchunk_max " + std::to_string(c.max_size) +
                             "\nchunk_level " + std::to_string(c.level) + "\ncompression " +
                             (wanted.compression ? "zlib" : "none") + "\n";
    CHUNKSTORE_RETURN_IF_ERROR(blobs_->Put(kConfigKey, body.data(), body.size()));
    text = blobs_->Get(kConfigKey);  // a concurrent creator may have won
  }
  if (!text.ok()) return text.status();
  if (text->rfind("chunkstore bucket store\n", 0) != 0)
    return Status::InvalidArgument(blobs_->Describe() + " has a config blob that is not a chunkstore store's");
  StoreMeta m;
  std::string id, format;
  size_t pos = 0;
  while (pos < text->size()) {
    const size_t nl = text->find('\n', pos);
    const std::string line = text->substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text->size() : nl + 1;
    const size_t sp = line.find(' ');
    if (sp == std::string::npos) continue;
    const std::string k = line.substr(0, sp), v = line.substr(sp + 1);
    auto num = [&] { return static_cast<uint32_t>(std::strtoul(v.c_str(), nullptr, 10)); };
    if (k == "format") format = v;
    else if (k == "id") id = v;
    else if (k == "chunk_min") m.chunking.min_size = num();
    else if (k == "chunk_avg") m.chunking.avg_size = num();
    else if (k == "chunk_max") m.chunking.max_size = num();
    else if (k == "chunk_level") m.chunking.level = static_cast<int>(num());
    else if (k == "compression") m.compression = v == "zlib";
  }
  if (format != "1")
    return Status::Unsupported(blobs_->Describe() + " is bucket store format " + format +
                               "; this chunkstore reads format 1");
  if (id.empty()) return Status::Corruption(blobs_->Describe() + ": the config blob has no store id");
  CHUNKSTORE_RETURN_IF_ERROR(m.chunking.Validate().WithContext("the bucket's config"));
  *meta = m;
  *store_id = id;
  return Status::OK();
}

// ---- log -----------------------------------------------------------------

std::string Bucket::NewLogKey(int64_t epoch, const std::string& newest) const {
  // A record must sort after every record its writer could have seen (a
  // tag after the publish of its object), also within one millisecond and
  // when this clock is behind the writer of the newest one.
  int64_t ms = NowMs(), e = 0, newest_ms = 0;
  if (ParseLogKey(newest, &e, &newest_ms) && e == epoch) ms = std::max(ms, newest_ms + 1);
  return LogKeyPrefix(epoch, ms) + "-" + RandomHex(8);
}

Status Bucket::ApplyKeys(Index* index, std::mutex* index_mu, const std::vector<std::string>& keys) {
  // Records are fetched several at once (each is a round trip) and applied
  // in key order, many to a transaction (a rebuild applies the whole log).
  constexpr size_t kBatch = 64;
  constexpr size_t kFetchers = 8;
  for (size_t start = 0; start < keys.size(); start += kBatch) {
    const size_t end = std::min(keys.size(), start + kBatch);
    std::vector<Result<LogRecord>> fetched(end - start, Status::NotFound(""));
    std::atomic<size_t> next{start};
    auto fetch = [&] {
      for (size_t i; (i = next++) < end;) {
        Result<std::string> bytes = blobs_->Get(keys[i]);
        if (!bytes.ok()) {
          fetched[i - start] = bytes.status().WithContext("cannot read log record " + keys[i]);
          continue;
        }
        Result<LogRecord> r = DecodeLogRecord(*bytes);
        fetched[i - start] =
            r.ok() ? std::move(r) : Result<LogRecord>(r.status().WithContext(blobs_->Describe() + ": log record " + keys[i]));
      }
    };
    std::vector<std::thread> fetchers;
    for (size_t t = 1; t < std::min(kFetchers, end - start); ++t) fetchers.emplace_back(fetch);
    fetch();
    for (std::thread& t : fetchers) t.join();
    std::vector<LogRecord> records;
    for (auto& r : fetched) {
      if (!r.ok()) return r.status();
      records.push_back(std::move(*r));
    }
    std::lock_guard<std::mutex> l(*index_mu);
    CHUNKSTORE_RETURN_IF_ERROR(index->Begin());
    Status s;
    // Another process sharing this cache may have applied some meanwhile;
    // applying twice would add their names twice.
    Query seen(index->db(), "SELECT 1 FROM applied_log WHERE key = ?1");
    if (!seen.ok()) s = index->Error("cannot read the index cache");
    for (size_t i = 0; s.ok() && i < records.size(); ++i) {
      seen.use().Text(1, keys[start + i]);
      const bool applied = seen.use().Step() == SQLITE_ROW;
      seen.use().Reset();
      if (applied) continue;
      s = ApplyLogRecord(index, records[i], nullptr);
      if (s.ok())
        s = Run(index, "INSERT OR IGNORE INTO applied_log VALUES(?1)",
                [&](Use& u) { u.Text(1, keys[start + i]); }, "cannot record an applied log record");
    }
    if (s.ok()) s = index->Commit();
    if (!s.ok()) {
      index->Rollback();
      return s.WithContext("cannot update the index cache");
    }
    for (size_t i = start; i < end; ++i) {
      int64_t e = 0, ms = 0;
      if (ParseLogKey(keys[i], &e, &ms) && e > epoch_.load()) epoch_.store(e);
    }
  }
  return Status::OK();
}

Status Bucket::Refresh(Index* index, std::mutex* index_mu) {
  std::lock_guard<std::mutex> refresh(refresh_mu_);
  Result<std::string> newest = NewestApplied(index, index_mu);
  if (!newest.ok()) return newest.status();
  std::string start_after;
  int64_t epoch = 0, ms = 0;
  if (ParseLogKey(*newest, &epoch, &ms)) {
    if (epoch > epoch_.load()) epoch_.store(epoch);
    start_after = LogKeyPrefix(epoch, ms - kLogLookbackMs);
  }
  Result<std::vector<BlobInfo>> listed = blobs_->List(kLogPrefix, start_after);
  if (!listed.ok()) return listed.status().WithContext("cannot list the log of " + blobs_->Describe());
  std::set<std::string> applied;
  {
    std::lock_guard<std::mutex> l(*index_mu);
    Query q(index->db(), "SELECT key FROM applied_log WHERE key > ?1");
    if (!q.ok()) return index->Error("cannot read the index cache");
    q.use().Text(1, start_after);
    int rc;
    while ((rc = q.use().Step()) == SQLITE_ROW) applied.insert(q.use().ColText(0));
    if (rc != SQLITE_DONE) return index->Error("cannot read the index cache");
  }
  std::vector<std::string> todo;
  for (const BlobInfo& b : *listed)
    if (!applied.count(b.key)) todo.push_back(b.key);
  return ApplyKeys(index, index_mu, todo);
}

Status Bucket::Write(Index* index, std::mutex* index_mu, const LogRecord& r,
                     std::vector<int64_t>* versions) {
  // No refresh of this process may list the new key and apply it between
  // the PUT and the application below.
  std::lock_guard<std::mutex> refresh(refresh_mu_);
  Result<std::string> newest = NewestApplied(index, index_mu);
  if (!newest.ok()) return newest.status();
  const std::string key = NewLogKey(epoch_.load() + (r.kind == LogRecord::kGc ? 1 : 0), *newest);
  const std::string bytes = EncodeLogRecord(r);
  CHUNKSTORE_RETURN_IF_ERROR(blobs_->Put(key, bytes.data(), bytes.size()));
  // The change is in the bucket now; what follows only updates the cache,
  // and a failure there is repaired by the next refresh.
  std::lock_guard<std::mutex> l(*index_mu);
  CHUNKSTORE_RETURN_IF_ERROR(index->Begin());
  Status s;
  bool applied = false;
  {
    // Another process sharing this cache may have refreshed in between.
    Query seen(index->db(), "SELECT 1 FROM applied_log WHERE key = ?1");
    if (!seen.ok()) s = index->Error("cannot read the index cache");
    else {
      seen.use().Text(1, key);
      applied = seen.use().Step() == SQLITE_ROW;
    }
  }
  if (s.ok() && !applied) {
    s = ApplyLogRecord(index, r, versions);
    if (s.ok())
      s = Run(index, "INSERT INTO applied_log VALUES(?1)", [&](Use& u) { u.Text(1, key); },
              "cannot record an applied log record");
  }
  for (size_t i = 0; s.ok() && applied && versions && i < r.names.size(); ++i) {
    Result<std::optional<NameRow>> row = index->FindName(r.names[i].first, 0);
    if (!row.ok()) s = row.status();
    else versions->push_back(row->has_value() && (*row)->object == r.names[i].second ? (*row)->version : 0);
  }
  if (s.ok()) s = index->Commit();
  if (!s.ok()) {
    index->Rollback();
    return s.WithContext("the change is stored in " + blobs_->Describe() +
                         ", but the local index cache could not be updated (it catches up on "
                         "the next open)");
  }
  int64_t e = 0, ms = 0;
  if (ParseLogKey(key, &e, &ms) && e > epoch_.load()) epoch_.store(e);
  return Status::OK();
}

Status Bucket::UploadPack(const std::string& name, const File& file, uint64_t size) {
  Status s = blobs_->PutFile(PackKey(name), file, size);
  if (!s.ok()) return s.WithContext("cannot upload pack " + name);
  return s;
}

}  // namespace chunkstore::internal
