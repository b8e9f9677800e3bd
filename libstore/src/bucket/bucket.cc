// SPDX-License-Identifier: Apache-2.0
// Bucket stores (bucket.h): the config blob, lock blobs, and the change log
// kept as one blob per change set, applied to the local index cache.
#include "bucket/bucket.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <optional>
#include <random>
#include <set>

#include "base/clock.h"
#include "base/task_pool.h"
#include "bucket/log_keys.h"
#include "format/config.h"
#include "format/layout.h"
#include "format/manifest.h"
#include "index/apply.h"

namespace chunkstore::internal {

namespace {

constexpr const char* kConfigKey = "config";
constexpr const char* kLockPrefix = "locks/";
// Keys written once and deleted again to find out what the service can do.
constexpr const char* kProbePrefix = "probe/";

}  // namespace

// ---- locks ---------------------------------------------------------------

BucketLock::BucketLock(BlobStore* blobs, std::string key, std::string body)
    : blobs_(blobs), key_(std::move(key)), body_(std::move(body)) {
  keeper_ = std::thread([this] {
    std::unique_lock<std::mutex> l(mu_);
    while (!cv_.wait_for(l, std::chrono::seconds(BucketLog::kLockRefreshSeconds), [this] { return stop_; })) {
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

// What tells this boot of this machine, and the process ids it can see,
// from every other: the kernel's boot id and the pid namespace. Two
// machines may share a host name, and containers on one host may share it
// with separate process ids. "" where /proc does not say.
std::string PidSpace() {
  static const std::string space = [] {
    std::string boot;
    if (FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
      char line[64] = {0};
      if (std::fgets(line, sizeof line, f)) boot = line;
      std::fclose(f);
    }
    while (!boot.empty() && (boot.back() == '\n' || boot.back() == ' ')) boot.pop_back();
    char ns[64] = {0};
    const ssize_t n = ::readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
    if (boot.empty() || n <= 0) return std::string();
    return "boot " + boot + ", pidns " + std::string(ns, static_cast<size_t>(n));
  }();
  return space;
}

// True when a lock blob's body says it was taken by a process that no
// longer runs, on this boot of this machine and in the process ids this
// process sees: its holder crashed, and the lock need not age. A body
// that does not say all of that (another machine's, a container's, an
// older version's) never does.
bool HolderIsGone(BlobStore* blobs, const std::string& key) {
  Result<std::string> body = blobs->Get(key);
  if (!body.ok()) return body.status().IsNotFound();
  if (PidSpace().empty()) return false;
  const std::string on = " on " + HostName() + ", pid ";
  const size_t at = body->find(on);
  if (at == std::string::npos) return false;
  char* end = nullptr;
  const long pid = std::strtol(body->c_str() + at + on.size(), &end, 10);
  if (std::string(end) != ", " + PidSpace() + "\n") return false;
  return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

}  // namespace

std::string LockHolder(int64_t pid) {
  std::string holder = "on " + HostName() + ", pid " + std::to_string(pid);
  if (!PidSpace().empty()) holder += ", " + PidSpace();
  return holder;
}

Result<std::unique_ptr<BucketLock>> BucketLog::Lock(bool exclusive, int wait_ms) {
  const std::string key =
      std::string(kLockPrefix) + (exclusive ? "exclusive-" : "shared-") + RandomHex(8);
  const std::string body = std::string(exclusive ? "gc " : "writer ") + LockHolder(getpid()) + "\n";
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

bool TakesConditionalWrites(BlobStore* blobs) {
  // Twice on one fresh key, with other bytes the second time: a service
  // that ignores the condition answers both with success.
  const std::string key = std::string(kProbePrefix) + "conditional-" + RandomHex(8);
  const std::string first = "chunkstore probe 1\n", second = "chunkstore probe 2\n";
  Result<bool> a = blobs->PutIfAbsent(key, first.data(), first.size());
  if (!a.ok() || !*a) {
    if (a.ok()) (void)blobs->Delete(key);
    return false;
  }
  Result<bool> b = blobs->PutIfAbsent(key, second.data(), second.size());
  Result<std::string> kept = blobs->Get(key);
  (void)blobs->Delete(key);
  return b.ok() && !*b && kept.ok() && *kept == first;
}

Status LoadBucketConfig(BlobStore* blobs, bool create, bool conditional, const StoreMeta& wanted,
                        const std::string& secret, StoreMeta* meta, std::string* store_id, bool* signed_store,
                        bool* sequenced) {
  Result<std::string> text = blobs->Get(kConfigKey);
  if (!text.ok() && text.status().IsNotFound()) {
    if (!create) return Status::NotFound("no store at " + blobs->Describe());
    StoreConfig c;
    c.bucket = true;
    c.sequenced = conditional && TakesConditionalWrites(blobs);
    c.format = c.sequenced ? kBucketSequencedFormat : kBucketCreateFormat;
    c.id = RandomHex(16);
    c.meta = wanted;
    if (!secret.empty()) c.secret_check = SecretCheck(secret);
    std::string body = EncodeConfig(c);
    if (!secret.empty()) body += "hmac " + HmacSha256(secret, body.data(), body.size()).Hex() + "\n";
    if (c.sequenced) {
      Result<bool> put = blobs->PutIfAbsent(kConfigKey, body.data(), body.size());
      if (!put.ok()) return put.status();
    } else {
      CHUNKSTORE_RETURN_IF_ERROR(blobs->Put(kConfigKey, body.data(), body.size()));
    }
    text = blobs->Get(kConfigKey);  // a concurrent creator may have won
  }
  if (!text.ok()) return text.status();
  Result<StoreConfig> c = DecodeConfig(*text, blobs->Describe() + "/config");
  if (!c.ok()) return c.status();
  if (!c->bucket) return Status::InvalidArgument(blobs->Describe() + " holds a directory store's config");
  *signed_store = !c->secret_check.empty();
  if (!secret.empty()) {
    if (c->secret_check.empty())
      return Status::PermissionDenied(blobs->Describe() + " has no secret; open it without one");
    if (c->secret_check != SecretCheck(secret))
      return Status::PermissionDenied("the secret given is not the secret of " + blobs->Describe());
    // The config's own signature: everything before its last line.
    const size_t at = text->rfind("hmac ");
    if (at == std::string::npos || at == 0 ||
        text->compare(at + 5, 64, HmacSha256(secret, text->data(), at).Hex()) != 0)
      return Status::Corruption(blobs->Describe() + "/config fails its HMAC under the store's secret");
  }
  *meta = c->meta;
  *store_id = c->id;
  *sequenced = c->sequenced;
  return Status::OK();
}

Status RaiseBucketFormat(BlobStore* blobs, const std::string& secret) {
  Result<std::string> text = blobs->Get(kConfigKey);
  if (!text.ok()) return text.status();
  Result<StoreConfig> c = DecodeConfig(*text, blobs->Describe() + "/config");
  if (!c.ok()) return c.status();
  if (c->format >= kBucketTreeFormat) return Status::OK();
  if (!c->secret_check.empty()) {
    // Only a holder of the secret writes to a signed store, and only over
    // a config that is still the store's own.
    if (secret.empty() || c->secret_check != SecretCheck(secret))
      return Status::PermissionDenied("only a holder of the secret of " + blobs->Describe() + " can change it");
    const size_t at = text->rfind("hmac ");
    if (at == std::string::npos || at == 0 || text->compare(at + 5, 64, HmacSha256(secret, text->data(), at).Hex()) != 0)
      return Status::Corruption(blobs->Describe() + "/config fails its HMAC under the store's secret");
  }
  c->format = kBucketTreeFormat;
  std::string body = EncodeConfig(*c);
  if (!c->secret_check.empty()) body += "hmac " + HmacSha256(secret, body.data(), body.size()).Hex() + "\n";
  return blobs->Put(kConfigKey, body.data(), body.size());
}

// ---- the log -------------------------------------------------------------

std::string MissingRecord(const std::string& where, const std::string& key) {
  return where + ": log record " + key.substr(0, 200) +
         " is missing: the log's numbers skip it, so its change is lost (passed over)";
}

std::string LostChangeAdvice(const std::string& key) {
  return "put the record back if a copy exists (bucket versioning, a backup), or accept the loss with "
         "`chunkstore repair quarantine " +
         key.substr(0, 200) + "`";
}

namespace {
bool RemovesSomething(const ChangeSet& change) {
  return !change.removed_objects.empty() || !change.removed_chunks.empty() || !change.removed_packs.empty() ||
         !change.removed_names.empty();
}
}  // namespace

class BucketLog::HeldBucket final : public ChangeLog::Held {
 public:
  HeldBucket(BucketLog* log, std::unique_ptr<BucketLock> lock) : log_(log), lock_(std::move(lock)) {}
  ~HeldBucket() override {
    lock_.reset();
    // A checkpoint takes the store to itself, so it waits until this hold
    // is given up; one that fails (another process holds the store) is
    // tried again after a later commit.
    if (log_->checkpoint_due_.exchange(false)) (void)log_->Checkpoint();
  }
  Status Commit(ChangeSet& change, Applied* applied, bool* made) override {
    return log_->Write(change, applied, made, recheck_, replayed_ ? &replayed_newest_ : nullptr);
  }
  Status Replay(Index& into) override {
    replayed_ = false;
    CHUNKSTORE_RETURN_IF_ERROR(into.PrepareBucketCache());
    bool behind = false;
    std::vector<Problem> problems;
    Status s = log_->Follow(&into, &problems, &behind);
    // A number gone since gc's first replay (a later step follows on from
    // it): the next gc starts from a whole replay, which says what it is.
    if (s.IsNotFound()) return Status::Busy("gc stopped: " + s.message() + "; run gc again");
    CHUNKSTORE_RETURN_IF_ERROR(s);
    // gc deciding without a lost change would delete the packs it names
    // (no record names them), and end any chance of getting it back.
    for (const Problem& p : problems)
      if (p.lost_change) return Status::Corruption("gc stopped: " + p.message + "; " + LostChangeAdvice(p.record));
    if (behind)
      return Status::Busy("the log of " + log_->blobs_->Describe() +
                          " changed meanwhile (two new checkpoints, or a record that arrived out of order); try again");
    Result<std::string> newest = into.NewestApplied();
    if (!newest.ok()) return newest.status();
    replayed_newest_ = *newest;
    replayed_ = true;
    return Status::OK();
  }
  const BucketLock& lock() const { return *lock_; }
  bool held_with_lock() const { return lock_ != nullptr; }

 private:
  BucketLog* log_;
  std::unique_ptr<BucketLock> lock_;
  // The newest record the last replay applied: what a gc decided on.
  std::string replayed_newest_;
  bool replayed_ = false;
};

BucketLog::BucketLog(Env* env, BlobStore* blobs, IndexHandle* index, std::string cache_dir, StoreMeta meta,
                     uint32_t checkpoint_records, std::string secret, bool signed_store, bool sequenced,
                     int64_t retention_seconds)
    : env_(env),
      blobs_(blobs),
      index_(index),
      cache_dir_(std::move(cache_dir)),
      meta_(meta),
      checkpoint_records_(checkpoint_records),
      secret_(std::move(secret)),
      signed_store_(signed_store),
      sequenced_(sequenced),
      retention_seconds_(std::max(retention_seconds, MinimumLogRetentionSeconds())) {}

namespace {
std::atomic<int64_t> g_minimum_retention{2 * BucketLog::kClaimFreshSeconds};
}  // namespace

int64_t MinimumLogRetentionSeconds() { return g_minimum_retention.load(); }
void SetMinimumLogRetentionForTests(int64_t seconds) { g_minimum_retention = seconds; }

BucketLog::~BucketLog() = default;

Result<std::unique_ptr<ChangeLog::Held>> BucketLog::Hold(bool exclusive, int wait_ms) {
  if (signed_store_ && secret_.empty())
    return Status::PermissionDenied(blobs_->Describe() + " signs its changes: changing it takes its secret");
  // A sequenced log needs neither a lock nor a refresh for a writer: its
  // record is stored only as the successor of the newest record this
  // cache applied, so a change made meanwhile by anyone (a gc too) makes
  // the write fail, and the writer follows the log and checks again
  // (Claim) before it tries the next number.
  if (sequenced_ && !exclusive) return std::unique_ptr<Held>(new HeldBucket(this, nullptr));
  Result<std::unique_ptr<BucketLock>> lock = Lock(exclusive, wait_ms);
  if (!lock.ok()) return lock.status();
  // Under the lock no gc runs (or, held exclusively, nothing else), and
  // everything one did is in the log: after this refresh every chunk the
  // index lists is really in the bucket.
  CHUNKSTORE_RETURN_IF_ERROR(CatchUp());
  return std::unique_ptr<Held>(new HeldBucket(this, std::move(*lock)));
}

Result<int64_t> BucketLog::BucketNow(const Held& held) {
  const auto& h = static_cast<const HeldBucket&>(held);
  if (!h.held_with_lock()) return NowSeconds();
  Result<std::vector<BlobInfo>> locks = blobs_->List(h.lock().key());
  if (!locks.ok()) return locks.status();
  if (locks->empty()) return NowSeconds();
  return locks->front().modified;
}

std::string BucketLog::NewLogKey(int64_t epoch, const std::string& newest) const {
  // A record must sort after every record its writer could have seen (a
  // tag after the publish of its object), also within one millisecond and
  // when this clock is behind the writer of the newest one.
  int64_t ms = NowMs(), e = 0, newest_ms = 0;
  if (ParseLogKey(newest, &e, &newest_ms) && e == epoch) ms = std::max(ms, newest_ms + 1);
  return LogKeyPrefix(epoch, ms) + "-" + RandomHex(8);
}

Status BucketLog::WithIndex(Index* scratch, const std::function<Status(Index&)>& fn) {
  if (scratch) return fn(*scratch);
  auto db = index_->Lock();
  return fn(*db);
}

void BucketLog::NoteEpoch(const std::string& key) {
  int64_t e = 0, ms = 0;
  if (ParseLogKey(key, &e, &ms) && e > epoch_.load()) epoch_.store(e);
}

namespace {

// Whether the index applied a record after key whose effects do not
// commute with `effects`: then applying key now would leave the index in
// another state than the log's key order gives.
Result<bool> MeetsALaterRecord(Index& index, const std::string& key, const std::string& effects) {
  Result<std::vector<std::pair<std::string, std::optional<std::string>>>> after = index.AppliedEffectsAfter(key);
  if (!after.ok()) return after.status();
  for (const auto& [later, later_effects] : *after)
    if (!EffectsCommute(effects, later_effects)) return true;
  return false;
}

}  // namespace

Result<std::vector<std::string>> BucketLog::FillNumbers(const std::string& after, std::vector<std::string> keys,
                                                        std::set<std::string>* filled) {
  if (!sequenced_) return keys;
  std::string too_far;
  std::vector<std::string> missing = MissingNumbers(after, keys, &too_far);
  if (!too_far.empty())
    return Status::Corruption(blobs_->Describe() + ": log record " + too_far.substr(0, 200) + " follows more than " +
                              std::to_string(kMostMissingNumbers) +
                              " missing change set numbers; writers claim a number only after the one before it, "
                              "so it was put there another way (see verify; if no writer of this store wrote it, "
                              "move it out of log/)");
  if (missing.empty()) return keys;
  filled->insert(missing.begin(), missing.end());
  std::vector<std::string> all;
  all.reserve(keys.size() + missing.size());
  std::merge(keys.begin(), keys.end(), missing.begin(), missing.end(), std::back_inserter(all));
  return all;
}

Status BucketLog::ApplyKeys(Index* scratch, const std::vector<std::string>& keys, bool* reorder,
                            const std::set<std::string>* filled, std::vector<std::string>* gone) {
  // Records are fetched several at once (each is a round trip) and applied
  // in key order, many to a transaction (a rebuild applies the whole log).
  constexpr size_t kBatch = 128;
  auto fetch = [this](const std::string& key) -> Result<ChangeSet> {
    Result<std::string> bytes = blobs_->Get(key);
    if (!bytes.ok()) return bytes.status().WithContext("cannot read log record " + key);
    Result<ChangeSet> c = DecodeChangeSet(*bytes, secret_, key);
    if (c.ok() && (c->kind == ChangeSet::kCheckpoint || (c->kind == ChangeSet::kCheckpointMark) != IsCheckpointMark(key)))
      c = Status::Corruption("a " + std::string(ChangeKindName(c->kind)) + " where the log has no place for one");
    return c.ok() ? std::move(c) : Result<ChangeSet>(c.status().WithContext(blobs_->Describe() + ": log record " + key));
  };
  for (size_t start = 0; start < keys.size(); start += kBatch) {
    const size_t end = std::min(keys.size(), start + kBatch);
    // The pool's threads keep their connections from one batch (and one
    // refresh) to the next.
    std::vector<std::future<Result<ChangeSet>>> pending;
    pending.reserve(end - start);
    for (size_t i = start; i < end; ++i) pending.push_back(fetchers_.Submit([&fetch, &keys, i] { return fetch(keys[i]); }));
    std::vector<Result<ChangeSet>> fetched;
    fetched.reserve(end - start);
    for (auto& f : pending) fetched.push_back(f.get());
    // A number the listing skipped and a GET does not find either is a
    // record gone from the log (a lag would show it to the GET, which
    // sees what is stored): the log's state is without it.
    std::vector<bool> absent(fetched.size(), false);
    for (size_t i = 0; i < fetched.size(); ++i) {
      if (fetched[i].ok()) continue;
      const std::string& key = keys[start + i];
      if (!gone || !filled || !filled->count(key) || !fetched[i].status().IsNotFound()) return fetched[i].status();
      absent[i] = true;
      gone->push_back(key);
    }
    // The live index is locked for each batch, not across the fetches.
    CHUNKSTORE_RETURN_IF_ERROR(WithIndex(scratch, [&](Index& index) -> Status {
      WriteTxn txn(&index);
      CHUNKSTORE_RETURN_IF_ERROR(txn.status());
      for (size_t i = 0; i < fetched.size(); ++i) {
        if (absent[i]) continue;
        const std::string& key = keys[start + i];
        // Another process sharing this cache may have applied some
        // meanwhile; applying twice would add their names twice.
        Result<bool> applied = index.IsApplied(key);
        if (!applied.ok()) return applied.status();
        if (*applied) continue;
        // Checked in the transaction that applies it: another process
        // sharing this cache may have applied later records meanwhile.
        const std::string effects = RecordEffects(*fetched[i]);
        Result<bool> meets = MeetsALaterRecord(index, key, effects);
        if (!meets.ok()) return meets.status();
        if (*meets) {
          if (reorder) *reorder = true;
          return Status::Busy("log record " + key + " sorts before records this cache applied already");
        }
        Status s = ApplyChange(index, *fetched[i], nullptr);
        if (!s.ok()) return s.WithContext(blobs_->Describe() + ": log record " + key);
        CHUNKSTORE_RETURN_IF_ERROR(index.MarkApplied(key, effects));
        if (IsCheckpointMark(key)) CHUNKSTORE_RETURN_IF_ERROR(index.SetMeta(kCheckpointMeta, key));
      }
      return txn.Commit().WithContext("cannot update the index cache");
    }));
    if (!scratch)
      for (size_t i = start; i < end; ++i) NoteEpoch(keys[i]);
  }
  return Status::OK();
}

Result<std::vector<std::string>> BucketLog::ListLog(const std::string& start_after) {
  Result<std::vector<BlobInfo>> listed = blobs_->List(kLogPrefix, start_after);
  if (!listed.ok()) return listed.status().WithContext("cannot list the log of " + blobs_->Describe());
  std::vector<std::string> keys;
  keys.reserve(listed->size());
  for (const BlobInfo& b : *listed) {
    if (!IsLogKey(b.key, sequenced_))
      return Status::Corruption(blobs_->Describe() + "/" + b.key.substr(0, 200) +
                                " is not a chunkstore log key; move it out of the log");
    keys.push_back(b.key);
  }
  return keys;
}

Status BucketLog::Follow(Index* scratch, std::vector<Problem>* problems, bool* behind, const std::string& known) {
  *behind = false;
  // The cache holds what the log held when it was listed, not when the
  // records were applied (which may take long): a claim's freshness
  // counts from before the listing.
  const int64_t listed_at = SteadyMs();
  std::string newest, mark;
  CHUNKSTORE_RETURN_IF_ERROR(WithIndex(scratch, [&](Index& index) -> Status {
    Result<std::string> n = index.NewestApplied();
    if (!n.ok()) return n.status();
    Result<std::string> m = index.GetMeta(kCheckpointMeta);
    if (!m.ok()) return m.status();
    newest = *n;
    mark = *m;
    return Status::OK();
  }));
  if (newest.empty()) {
    Status s = Bootstrap(scratch, problems);
    if (s.ok() && !scratch) followed_at_ms_ = listed_at;
    return s;
  }
  if (!scratch) NoteEpoch(newest);
  // Listed from a while before the newest record applied, to pick up
  // records of concurrent writers whose clocks run behind. A sequenced
  // log has no such records: a number is claimed only after its
  // predecessor was stored.
  int64_t epoch = 0, ms = 0;
  std::string start_after = newest;
  if (!sequenced_ && ParseLogKey(newest, &epoch, &ms)) start_after = LogKeyPrefix(epoch, ms - kLogLookbackMs);
  Result<std::vector<std::string>> listed = ListLog(start_after);
  if (!listed.ok()) return listed.status();
  // A record known to be stored (a claim of its number was refused) that
  // a lagging listing leaves out is fetched, with the numbers before it.
  if (sequenced_ && known > newest && IsLogKey(known, true)) {
    const auto at = std::lower_bound(listed->begin(), listed->end(), known);
    if (at == listed->end() || *at != known) listed->insert(at, known);
  }
  std::set<std::string> applied;
  CHUNKSTORE_RETURN_IF_ERROR(WithIndex(scratch, [&](Index& index) -> Status {
    Result<std::set<std::string>> a = index.AppliedAfter(start_after);
    if (!a.ok()) return a.status();
    applied = std::move(*a);
    return Status::OK();
  }));
  int new_marks = 0;
  for (const std::string& key : *listed)
    if (!applied.count(key) && IsCheckpointMark(key) && key > mark) ++new_marks;
  // The records before the second-newest checkpoint may be gone: an index
  // that has not seen it may lack some of them.
  if (new_marks >= 2) {
    *behind = true;
    return Status::OK();
  }
  // Past the one checkpoint at most that it has not seen, every number
  // after the newest applied is still in the log. One that is not (no
  // GET finds it) was gone before this cache came to it, or a checkpoint
  // that covers it dropped it meanwhile (its newer mark not yet listed):
  // either way the cache starts again from the newest checkpoint, as a
  // new one would (ApplyKeys returns NotFound; CatchUp rebuilds).
  std::set<std::string> filled;
  Result<std::vector<std::string>> keys = FillNumbers(newest, std::move(*listed), &filled);
  if (!keys.ok()) {
    // Past a checkpoint it has not applied, the gap may be what that
    // checkpoint's cleanup left: a rebuild starts after it. Otherwise the
    // gap is in the log (a rebuild would find it again, at the price of
    // the whole checkpoint).
    if (new_marks == 0) return keys.status();
    *behind = true;
    return Status::OK();
  }
  std::vector<std::string> todo;
  for (std::string& key : *keys)
    if (!applied.count(key)) todo.push_back(std::move(key));
  // A key that sorts before ones applied (its PUT was still under way at
  // the last listing, or its writer's clock runs behind) is applied in
  // place only if it commutes with them: every machine must hold the state
  // of the log in key order.
  bool reorder = false;
  Status s = ApplyKeys(scratch, todo, &reorder, &filled);
  if (reorder) {
    *behind = true;
    return Status::OK();
  }
  if (s.ok() && !scratch) followed_at_ms_ = listed_at;
  return s;
}

Status BucketLog::CatchUp() {
  bool behind = false;
  Status s;
  {
    std::lock_guard<std::mutex> refresh(refresh_mu_);
    s = Follow(nullptr, nullptr, &behind);
  }
  // Far behind, or a record listed was gone when fetched (a checkpoint
  // dropped it meanwhile): start again from the newest checkpoint.
  if (behind || s.IsNotFound()) return Rebuild();
  return s;
}

Status BucketLog::Write(ChangeSet& change, Applied* applied, bool* made,
                        const std::function<Status(Index&, ChangeSet&)>& recheck, const std::string* decided_at) {
  if (made) *made = false;
  CHUNKSTORE_RETURN_IF_ERROR(RaiseFormatFor(change));
  // No refresh of this process may list the new key and apply it between
  // the PUT and the application below.
  std::unique_lock<std::mutex> refresh(refresh_mu_);
  std::string newest;
  {
    auto db = index_->Lock();
    Result<std::string> n = db->NewestApplied();
    if (!n.ok()) return n.status();
    newest = *n;
  }
  std::string key;
  if (sequenced_) {
    // gc decided on its own replay of the log. Another process sharing
    // this cache may have applied a writer's record to it since: claiming
    // after that record would pass it unchecked, where it may reuse what
    // this change removes (a record that took the next number is caught
    // by Claim, this one would not be).
    if (decided_at && *decided_at != newest && change.kind == ChangeSet::kGc && RemovesSomething(change))
      return Status::Busy("another writer changed " + blobs_->Describe() + " while gc ran; run gc again");
    CHUNKSTORE_RETURN_IF_ERROR(Claim(change, newest, made, &key, refresh, recheck));
  } else {
    key = NewLogKey(epoch_.load() + (change.kind == ChangeSet::kGc ? 1 : 0), newest);
    const std::string bytes = EncodeChangeSet(change, secret_, key);
    // A PUT that fails may still have stored the blob (the answer was
    // lost, not the request): from here on whatever the change names is
    // kept.
    if (made) *made = true;
    CHUNKSTORE_RETURN_IF_ERROR(blobs_->Put(key, bytes.data(), bytes.size()));
  }
  // The change is in the bucket now; what follows only updates the cache,
  // and a failure there is repaired by the next refresh.
  auto cache_failed = [&](const Status& s) {
    return s.WithContext("the change is stored in " + blobs_->Describe() +
                         ", but the local index cache could not be updated (it catches up on the next open)");
  };
  // What a change applied elsewhere added is not known here: it counts as
  // added, and a name as the version the cache now shows for it.
  auto applied_elsewhere = [&](Index& db) -> Status {
    if (!applied) return Status::OK();
    applied->added.assign(change.objects.size(), true);
    applied->versions.clear();
    for (const auto& n : change.names) {
      // The newest version that points at the object (later records, in
      // key order, may have added versions above it).
      int64_t version = 0;
      Result<std::optional<NameRow>> row = db.FindName(n.name, 0);
      for (int tries = 0; row.ok() && row->has_value() && tries < 1000; ++tries) {
        if ((*row)->object == n.object) {
          version = (*row)->version;
          break;
        }
        if ((*row)->version <= 1) break;
        row = db.FindName(n.name, (*row)->version - 1);
      }
      if (!row.ok()) return row.status();
      applied->versions.push_back(version);
    }
    return Status::OK();
  };
  bool rebuild = false;
  {
    auto db = index_->Lock();
    WriteTxn txn(db.get());
    if (!txn.status().ok()) return cache_failed(txn.status());
    // Another process sharing this cache may have refreshed in between,
    // applying this record, or records after it.
    Result<bool> seen = db->IsApplied(key);
    if (!seen.ok()) return cache_failed(seen.status());
    if (!*seen) {
      const std::string effects = RecordEffects(change);
      Result<bool> meets = MeetsALaterRecord(*db, key, effects);
      if (!meets.ok()) return cache_failed(meets.status());
      rebuild = *meets;
      if (!rebuild) {
        Status s = ApplyChange(*db, change, applied);
        if (s.ok()) s = db->MarkApplied(key, effects);
        if (!s.ok()) return cache_failed(s);
      }
    } else {
      Status s = applied_elsewhere(*db);
      if (!s.ok()) return cache_failed(s);
    }
    Status s = txn.Commit();
    if (!s.ok()) return cache_failed(s);
    NoteEpoch(key);
    if (checkpoint_records_ > 0 && change.kind != ChangeSet::kGc) {
      Result<std::string> mark = db->GetMeta(kCheckpointMeta);
      // After a refused checkpoint (a lost change: WriteCheckpoint), the
      // next try waits for as many records again, not for every commit.
      Result<std::string> refused = db->GetMeta(kCheckpointRefusedMeta);
      if (mark.ok() && refused.ok() && *refused > *mark) mark = *refused;
      Result<uint64_t> since = mark.ok() ? db->CountAppliedAfter(*mark) : Result<uint64_t>(mark.status());
      if (since.ok() && *since >= checkpoint_records_) checkpoint_due_ = true;
    }
  }
  if (!rebuild) return Status::OK();
  // Applied here now, after records that sort after it, the change would
  // leave this cache in another state than every other machine's: the
  // cache starts again from the newest checkpoint, which applies it in
  // its place.
  refresh.unlock();
  Status s = Rebuild();
  if (!s.ok()) return cache_failed(s);
  auto db = index_->Lock();
  s = applied_elsewhere(*db);
  return s.ok() ? s : cache_failed(s);
}

Status BucketLog::Claim(ChangeSet& change, std::string newest, bool* made, std::string* key,
                        std::unique_lock<std::mutex>& refresh,
                        const std::function<Status(Index&, ChangeSet&)>& recheck) {
  // Enough for a few dozen writers racing for every number; each lost
  // race costs a listing and the records that won.
  constexpr int kMaxClaims = 64;
  thread_local std::mt19937 jitter(std::random_device{}());
  // A cache that has not followed the log for a while may lack a whole
  // checkpoint's worth of records, which may be gone from the bucket (and
  // their numbers free again) once the checkpoint is old enough
  // (DropCovered): follow it first.
  // Follows the log; where that applied records, checks that the change
  // still stands on them.
  auto follow = [&](const std::string& known) -> Status {
    bool behind = false;
    Status s = Follow(nullptr, nullptr, &behind, known);
    if (behind || s.IsNotFound()) {
      // Two checkpoints behind, or a record listed was gone when fetched
      // (a checkpoint dropped it): start again from the newest checkpoint.
      refresh.unlock();
      s = Rebuild();
      refresh.lock();
    }
    CHUNKSTORE_RETURN_IF_ERROR(s);
    std::string now;
    {
      auto db = index_->Lock();
      Result<std::string> n = db->NewestApplied();
      if (!n.ok()) return n.status();
      now = *n;
    }
    if (now == newest) return Status::OK();
    newest = now;
    if (recheck) {
      auto db = index_->Lock();
      CHUNKSTORE_RETURN_IF_ERROR(recheck(*db, change));
    }
    return StillStands(change);
  };
  const int64_t followed = followed_at_ms_.load();
  if (followed < 0 || SteadyMs() - followed > kClaimFreshSeconds * 1000) CHUNKSTORE_RETURN_IF_ERROR(follow({}));
  for (int attempt = 0;; ++attempt) {
    int64_t epoch = 1, seq = 0;
    if (!newest.empty() && !ParseLogKey(newest, &epoch, &seq))
      return Status::Corruption("the index cache's newest log record '" + newest.substr(0, 200) +
                                "' is not a log key; run index rebuild");
    if (seq >= kLastSequence)
      return Status::Corruption("log record " + newest.substr(0, 200) + " of " + blobs_->Describe() +
                                " has the last number a log record can have; was it forged?");
    *key = SequencedKey(epoch, seq + 1);
    const std::string bytes = EncodeChangeSet(change, secret_, *key);
    // An error may still have stored the record (the answer was lost):
    // from here on whatever the change names is kept.
    if (made) *made = true;
    Result<bool> stored = blobs_->PutIfAbsent(*key, bytes.data(), bytes.size());
    if (!stored.ok()) return stored.status().WithContext("cannot write log record " + *key);
    if (*stored) return Status::OK();
    // Another writer's record holds the number: this one is not stored.
    if (made) *made = false;
    if (attempt + 1 >= kMaxClaims)
      return Status::Busy("other writers took " + std::to_string(kMaxClaims) + " log records of " +
                          blobs_->Describe() + " in a row before this change; try again");
    if (attempt >= 2)
      std::this_thread::sleep_for(std::chrono::milliseconds(jitter() % (5u << std::min(attempt, 6))));
    CHUNKSTORE_RETURN_IF_ERROR(follow(*key));
  }
}

Status BucketLog::StillStands(const ChangeSet& change) {
  // gc decided what is garbage from the log as it was: a change made
  // since may use some of it. A gc change that removes nothing (repair
  // chunks: verified copies in new packs) stands whatever came before it;
  // at worst it gives a chunk that became garbage meanwhile a new row,
  // which the next gc drops.
  if (change.kind == ChangeSet::kGc && RemovesSomething(change))
    return Status::Busy("another writer changed " + blobs_->Describe() + " while gc ran; run gc again");
  auto db = index_->Lock();
  ReadTxn txn(db.get());
  CHUNKSTORE_RETURN_IF_ERROR(txn.status());
  std::set<Digest> objects, chunks;
  for (const ObjectRow& o : change.objects) objects.insert(o.id);
  for (const ChangeSet::Chunk& c : change.chunks) chunks.insert(c.id);
  auto held = [&](const Digest& id) -> Result<bool> {
    if (objects.count(id)) return true;
    Result<std::optional<ObjectRow>> row = db->FindObject(id);
    if (!row.ok()) return row.status();
    return row->has_value();
  };
  auto gone = [&](const std::string& what) {
    return Status::Busy(what + " was removed from " + blobs_->Describe() + " meanwhile; try again");
  };
  for (const ObjectRow& o : change.objects) {
    for (const Digest& ref : o.refs) {
      Result<bool> h = held(ref);
      if (!h.ok()) return h.status();
      if (!*h) return gone("object " + ref.ObjectId() + ", which tree " + o.id.ObjectId() + " names,");
    }
    if (o.chunk_count == 0) continue;
    Result<std::vector<ManifestEntry>> entries = DecodeManifest(o.id, o.size, o.manifest.data(), o.manifest.size());
    if (!entries.ok()) return entries.status();
    for (const ManifestEntry& e : *entries) {
      if (chunks.count(e.id)) continue;
      Result<std::optional<ChunkLocation>> loc = db->FindChunk(e.id);
      if (!loc.ok()) return loc.status();
      if (!loc->has_value())
        return Status::Busy("a concurrent gc removed chunk " + e.id.Hex() + ", which this publish reuses; publish again");
    }
  }
  for (const ChangeSet::Name& n : change.names) {
    Result<bool> h = held(n.object);
    if (!h.ok()) return h.status();
    if (!*h) return gone("object " + n.object.ObjectId() + ", which name " + n.name + " is to point at,");
  }
  for (const std::string& name : change.removed_names) {
    Result<std::optional<NameRow>> row = db->FindName(name, 0);
    if (!row.ok()) return row.status();
    if (!row->has_value()) return Status::NotFound("name " + name + " was removed meanwhile");
  }
  for (const Digest& id : change.removed_objects) {
    Result<bool> h = held(id);
    if (!h.ok()) return h.status();
    if (!*h) return Status::NotFound("object " + id.ObjectId() + " was removed meanwhile");
  }
  return Status::OK();
}

namespace {
class NoGcLock final : public FileLock {};
}  // namespace

Result<std::unique_ptr<FileLock>> BucketLog::LockGc() { return std::unique_ptr<FileLock>(new NoGcLock); }

}  // namespace chunkstore::internal
