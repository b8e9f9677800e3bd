// SPDX-License-Identifier: Apache-2.0
// The fixture of the bucket store tests: a shared bucket (in memory, a
// directory, or a fresh prefix of a real S3 bucket when built with
// CHUNKSTORE_TEST_S3) behind a blob store that can fail on demand, and
// "machines": stores on it, each with its own cache.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "backend/s3/s3_blob_store.h"
#include "bucket/bucket.h"
#include "bucket/log_keys.h"
#include "chunkstore/blob_store.h"
#include "chunkstore/store.h"
#include "test_util.h"

namespace chunkstore::testing {

// Forwards to another blob store; fails the Nth mutating call (Put,
// PutFile, Delete) and every one after it while `broken` is set.
class FaultyBlobStore final : public BlobStore {
 public:
  explicit FaultyBlobStore(BlobStore* target) : t_(target) {}
  void FailFrom(int n) {
    countdown_ = n;
    broken_ = false;
  }
  void Heal() {
    countdown_ = -1;
    broken_ = false;
  }
  // Every whole-blob GET of a key under prefix fails with an I/O error
  // from now on ("": none does).
  void FailGetsUnder(const std::string& prefix) {
    std::lock_guard<std::mutex> l(mu_);
    fail_gets_under_ = prefix;
  }
  int mutations() const { return mutations_; }
  // Makes every pack upload take at least `ms` and records how many ran
  // at once.
  // Each pack upload takes at least ms; with gather, the first ones also
  // wait (up to 5 s) until gather of them run at once, so that a test of
  // how many overlap does not depend on how fast this machine ingests.
  void SlowPackUploads(int ms, int gather = 0) {
    pack_upload_ms_ = ms;
    pack_upload_gather_ = gather;
  }
  int most_pack_uploads_at_once() const { return most_at_once_; }

  // The next PUT of a log record waits, once WaitUntilHeld has seen it
  // start, until ReleaseHeldPut: a writer whose upload is still under way
  // while other machines list the log.
  void HoldNextLogPut() {
    std::lock_guard<std::mutex> l(hold_mu_);
    hold_armed_ = true;
    held_ = released_ = false;
  }
  void WaitUntilHeld() {
    std::unique_lock<std::mutex> l(hold_mu_);
    hold_cv_.wait(l, [this] { return held_; });
  }
  void ReleaseHeldPut() {
    {
      std::lock_guard<std::mutex> l(hold_mu_);
      released_ = true;
    }
    hold_cv_.notify_all();
  }

  // Every request made through this store since the last ForgetRequests,
  // as "VERB key" (LIST: the prefix listed).
  std::vector<std::string> request_log() {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }
  void ForgetRequests() {
    std::lock_guard<std::mutex> l(mu_);
    requests_.clear();
  }

  // Off: PutIfAbsent is Unsupported, as on a service without conditional
  // writes (stores created then coordinate with lock blobs).
  void SetConditionalWrites(bool on) { conditional_ = on; }
  // PutIfAbsent overwrites and says it stored, as a service that ignores
  // If-None-Match would.
  void IgnoreConditions(bool on) { ignore_conditions_ = on; }

  Status Put(const std::string& key, const void* data, size_t n) override {
    Note("PUT", key);
    CHUNKSTORE_RETURN_IF_ERROR(Mutate(key));
    MaybeHold(key);
    return t_->Put(key, data, n);
  }
  Result<bool> PutIfAbsent(const std::string& key, const void* data, size_t n) override {
    if (!conditional_) return Status::Unsupported("no conditional writes here");
    Note("PUT", key);
    CHUNKSTORE_RETURN_IF_ERROR(Mutate(key));
    MaybeHold(key);
    if (ignore_conditions_) {
      CHUNKSTORE_RETURN_IF_ERROR(t_->Put(key, data, n));
      return true;
    }
    return t_->PutIfAbsent(key, data, n);
  }
  Status PutFile(const std::string& key, const File& file, uint64_t size) override {
    Note("PUT", key);
    CHUNKSTORE_RETURN_IF_ERROR(Mutate(key));
    if (key.rfind("packs/", 0) != 0 || pack_upload_ms_ == 0) return t_->PutFile(key, file, size);
    const int now = ++pack_uploads_;
    for (int seen = most_at_once_; now > seen && !most_at_once_.compare_exchange_weak(seen, now);) {
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (most_at_once_ < pack_upload_gather_ && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(pack_upload_ms_));
    Status s = t_->PutFile(key, file, size);
    --pack_uploads_;
    return s;
  }
  Status GetRange(const std::string& key, uint64_t offset, size_t n, void* buf, size_t* got) override {
    Note("GET", key);
    std::function<void()> hook;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (on_get_range_ && key.rfind(on_get_range_prefix_, 0) == 0) hook = std::move(on_get_range_), on_get_range_ = nullptr;
    }
    if (hook) hook();
    return t_->GetRange(key, offset, n, buf, got);
  }
  // Runs fn (once) just before the next ranged GET of a key under prefix.
  void OnNextGetRange(const std::string& prefix, std::function<void()> fn) {
    std::lock_guard<std::mutex> l(mu_);
    on_get_range_prefix_ = prefix;
    on_get_range_ = std::move(fn);
  }
  Result<std::string> Get(const std::string& key) override {
    std::function<void()> hook;
    {
      std::lock_guard<std::mutex> l(mu_);
      got_.push_back(key);
      if (!fail_gets_under_.empty() && key.rfind(fail_gets_under_, 0) == 0)
        return Status::IOError("GET " + key + ": 503 Service Unavailable (injected)");
      if (on_get_ && key.rfind(on_get_prefix_, 0) == 0) hook = std::move(on_get_), on_get_ = nullptr;
    }
    Note("GET", key);
    if (hook) hook();
    return t_->Get(key);
  }
  // Runs fn (once) just before the next whole-blob GET of a key under
  // prefix is made: another machine's change that lands between a
  // listing and the reads of what it listed.
  void OnNextGet(const std::string& prefix, std::function<void()> fn) {
    std::lock_guard<std::mutex> l(mu_);
    on_get_prefix_ = prefix;
    on_get_ = std::move(fn);
  }
  // How many whole-blob GETs asked for keys under prefix since the last
  // call to ForgetGets.
  int gets(const std::string& prefix) {
    std::lock_guard<std::mutex> l(mu_);
    int n = 0;
    for (const auto& k : got_) n += k.rfind(prefix, 0) == 0;
    return n;
  }
  void ForgetGets() {
    std::lock_guard<std::mutex> l(mu_);
    got_.clear();
  }
  Result<uint64_t> Size(const std::string& key) override {
    Note("HEAD", key);
    return t_->Size(key);
  }
  Result<std::vector<BlobInfo>> List(const std::string& prefix, const std::string& after) override {
    Note("LIST", prefix);
    std::function<void()> hook;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (on_list_ && prefix == on_list_prefix_) hook = std::move(on_list_), on_list_ = nullptr;
    }
    if (hook) hook();
    Result<std::vector<BlobInfo>> listed = t_->List(prefix, after);
    std::lock_guard<std::mutex> l(mu_);
    if (listed.ok() && !hidden_.empty())
      listed->erase(std::remove_if(listed->begin(), listed->end(),
                                   [this](const BlobInfo& b) { return hidden_.count(b.key) != 0; }),
                    listed->end());
    return listed;
  }
  // Listings leave key out from now on (GET still finds it), as a
  // service whose listings lag behind its writes would; "" shows all again.
  void HideFromListings(const std::string& key) {
    std::lock_guard<std::mutex> l(mu_);
    if (key.empty())
      hidden_.clear();
    else
      hidden_.insert(key);
  }
  // Runs fn (once) just before the next LIST of prefix is made: another
  // machine's change that lands in the middle of a step.
  void OnNextList(const std::string& prefix, std::function<void()> fn) {
    std::lock_guard<std::mutex> l(mu_);
    on_list_prefix_ = prefix;
    on_list_ = std::move(fn);
  }
  Status Delete(const std::string& key) override {
    Note("DELETE", key);
    CHUNKSTORE_RETURN_IF_ERROR(Mutate(key));
    return t_->Delete(key);
  }
  std::string Describe() const override { return t_->Describe(); }
  uint64_t requests() const override { return t_->requests(); }
  Result<std::vector<UploadInfo>> ListUploads(const std::string& prefix) override {
    Note("LIST-UPLOADS", prefix);
    return t_->ListUploads(prefix);
  }
  Status AbortUpload(const UploadInfo& upload) override {
    Note("ABORT", upload.key);
    CHUNKSTORE_RETURN_IF_ERROR(Mutate(upload.key));
    return t_->AbortUpload(upload);
  }

 private:
  void MaybeHold(const std::string& key) {
    if (key.rfind("log/", 0) != 0) return;
    std::unique_lock<std::mutex> l(hold_mu_);
    if (!hold_armed_) return;
    hold_armed_ = false;
    held_ = true;
    hold_cv_.notify_all();
    hold_cv_.wait(l, [this] { return released_; });
  }
  void Note(const char* verb, const std::string& key) {
    std::lock_guard<std::mutex> l(mu_);
    requests_.push_back(std::string(verb) + " " + key);
  }
  Status Mutate(const std::string& key) {
    std::lock_guard<std::mutex> l(mu_);
    ++mutations_;
    // Lock blobs are let through: a failure there is a clean refusal up
    // front, and releasing them must not fail the test's later steps.
    if (key.rfind("locks/", 0) == 0) return Status::OK();
    if (countdown_ > 0 && --countdown_ == 0) broken_ = true;
    if (broken_) return Status::IOError("injected failure writing " + key);
    return Status::OK();
  }
  BlobStore* t_;
  std::mutex mu_;
  std::string fail_gets_under_;
  std::set<std::string> hidden_;
  int countdown_ = -1;
  bool broken_ = false;
  int mutations_ = 0;
  std::vector<std::string> got_, requests_;
  std::string on_list_prefix_, on_get_range_prefix_, on_get_prefix_;
  std::function<void()> on_list_, on_get_range_, on_get_;
  std::mutex hold_mu_;
  std::condition_variable hold_cv_;
  bool hold_armed_ = false, held_ = false, released_ = false;
  std::atomic<int> pack_upload_ms_{0}, pack_upload_gather_{0}, pack_uploads_{0}, most_at_once_{0};
  std::atomic<bool> conditional_{true}, ignore_conditions_{false};
};

// Where the shared bucket lives. The *Locks ones refuse conditional
// writes, so that stores made on them keep a log of time-ordered keys
// whose writers take lock blobs (the protocol for services without them).
enum class Backend { kMemory, kDirectory, kS3, kMemoryLocks, kS3Locks };

inline std::string BackendName(const ::testing::TestParamInfo<Backend>& p) {
  switch (p.param) {
    case Backend::kMemory: return "Memory";
    case Backend::kDirectory: return "Directory";
    case Backend::kS3: return "S3";
    case Backend::kMemoryLocks: return "MemoryLocks";
    case Backend::kS3Locks: return "S3Locks";
  }
  return "Unknown";
}

// Instantiates a bucket suite on every backend, on those whose stores
// take lock blobs, or on those whose stores claim numbered log records.
#ifdef CHUNKSTORE_TEST_S3
#define CHUNKSTORE_ON_EVERY_BUCKET(suite) \
  INSTANTIATE_TEST_SUITE_P(S3, suite, ::testing::Values(Backend::kS3, Backend::kS3Locks), testing::BackendName)
#define CHUNKSTORE_ON_LOCKED_BUCKETS(suite) \
  INSTANTIATE_TEST_SUITE_P(S3, suite, ::testing::Values(Backend::kS3Locks), testing::BackendName)
#define CHUNKSTORE_ON_SEQUENCED_BUCKETS(suite) \
  INSTANTIATE_TEST_SUITE_P(S3, suite, ::testing::Values(Backend::kS3), testing::BackendName)
#else
#define CHUNKSTORE_ON_EVERY_BUCKET(suite)                                                                        \
  INSTANTIATE_TEST_SUITE_P(Local, suite,                                                                         \
                           ::testing::Values(Backend::kMemory, Backend::kDirectory, Backend::kMemoryLocks), \
                           testing::BackendName)
#define CHUNKSTORE_ON_LOCKED_BUCKETS(suite) \
  INSTANTIATE_TEST_SUITE_P(Local, suite, ::testing::Values(Backend::kMemoryLocks), testing::BackendName)
#define CHUNKSTORE_ON_SEQUENCED_BUCKETS(suite) \
  INSTANTIATE_TEST_SUITE_P(Local, suite, ::testing::Values(Backend::kMemory, Backend::kDirectory), testing::BackendName)
#endif

class BucketTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::kMemory || GetParam() == Backend::kMemoryLocks) {
      backend_ = NewMemoryBlobStore();
    } else if (GetParam() == Backend::kDirectory) {
      backend_ = NewDirectoryBlobStore(dir_ / "bucket");
    } else {
      OpenS3();
    }
    // Tests ask for logs whose checkpoints drop what they cover at once.
    internal::SetMinimumLogRetentionForTests(0);
    faulty_ = std::make_unique<FaultyBlobStore>(backend_.get());
    faulty_->SetConditionalWrites(GetParam() != Backend::kMemoryLocks && GetParam() != Backend::kS3Locks);
  }

  void OpenS3() {
#ifdef CHUNKSTORE_TEST_S3
    const char* bucket = std::getenv("CHUNKSTORE_TEST_S3_BUCKET");
    ASSERT_NE(bucket, nullptr) << "set CHUNKSTORE_TEST_S3_BUCKET (scripts/s3-test.sh does)";
    internal::S3Location where;
    where.bucket = bucket;
    where.prefix = "t-" + RandomHex();
    auto opts = internal::ResolveS3Options(S3Options{});
    ASSERT_TRUE(opts.ok()) << opts.status().ToString();
    auto blobs = internal::NewS3BlobStore(where, *opts, true);
    ASSERT_TRUE(blobs.ok()) << blobs.status().ToString();
    backend_ = std::move(*blobs);
#else
    FAIL() << "built without CHUNKSTORE_TEST_S3";
#endif
  }

  static std::string RandomHex() {
    auto b = RandomBytes(8, static_cast<uint64_t>(std::random_device{}()));
    std::string s;
    for (uint8_t c : b) s += "0123456789abcdef"[c & 15];
    return s;
  }

  // A store on the shared bucket with its own cache (one "machine").
  std::unique_ptr<Store> OpenMachine(const std::string& cache, Options o = SmallChunks()) {
    o.blob_store = faulty_.get();
    o.remote_pack_size = 256 << 10;  // several packs per publish
    auto s = Store::Open(cache, o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }

  // Flips one bit of the blob at key, as damage on the way or at rest would.
  void FlipBit(const std::string& key, size_t at = 20) {
    auto bytes = backend_->Get(key);
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    ASSERT_LT(at, bytes->size());
    (*bytes)[at] ^= 1;
    ASSERT_TRUE(backend_->Put(key, bytes->data(), bytes->size()).ok());
  }

  // A machine with its cache in dir_/a publishes d as "x" and e as "y" (one
  // log record each); the second record is then damaged. The records'
  // keys, oldest first (empty if a step failed).
  std::vector<std::string> TwoRecordsTheSecondDamaged(const std::vector<uint8_t>& d, const std::vector<uint8_t>& e) {
    {
      auto a = OpenMachine(dir_ / "a");
      if (!a) return {};
      EXPECT_TRUE(a->PublishBytes(d.data(), d.size(), "x").ok());
      EXPECT_TRUE(a->PublishBytes(e.data(), e.size(), "y").ok());
    }
    auto logs = backend_->List("log/");
    EXPECT_TRUE(logs.ok());
    if (!logs.ok() || logs->size() != 2) return {};
    FlipBit((*logs)[1].key);
    return {(*logs)[0].key, (*logs)[1].key};
  }

  // Whether the store on the bucket claims numbered log records (its
  // config says "log sequenced"): where the service takes conditional
  // writes and the backend lets them through.
  bool Sequenced() {
    auto config = backend_->Get("config");
    EXPECT_TRUE(config.ok()) << "no store on the bucket yet";
    return config.ok() && config->find("\nlog sequenced\n") != std::string::npos;
  }

  // A key for a log record the store's writers did not write: in a
  // sequenced log the next number (where a forger would put one, as one
  // far past the numbers is refused for the gap), otherwise one that sorts
  // after all of theirs.
  std::string ForeignLogKey() {
    if (!Sequenced()) return "log/0000000000-9999999999999-00000000000000ff";
    int64_t newest = 0;
    auto listed = backend_->List("log/");
    EXPECT_TRUE(listed.ok());
    for (const BlobInfo& b : listed.ok() ? *listed : std::vector<BlobInfo>{}) {
      int64_t epoch = 0, seq = 0;
      if (internal::ParseLogKey(b.key, &epoch, &seq)) newest = std::max(newest, seq);
    }
    return internal::SequencedKey(1, newest + 1);
  }

  size_t CountBlobs(const std::string& prefix) {
    auto l = backend_->List(prefix);
    EXPECT_TRUE(l.ok());
    return l.ok() ? l->size() : 0;
  }

  std::unique_ptr<BlobStore> backend_;
  std::unique_ptr<FaultyBlobStore> faulty_;
  TempDir dir_;
};

}  // namespace chunkstore::testing
