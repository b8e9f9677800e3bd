// SPDX-License-Identifier: Apache-2.0
// chunkstore-bench operations on a bucket store (--s3 s3://BUCKET/PREFIX):
// publish and read throughput to an S3 service, next to the local-disk
// figures of the same run. Every sample works in a fresh prefix with a
// fresh cache, and removes its blobs afterwards (outside the timing), so a
// small test server does not fill up.
#include <algorithm>
#include <cstdio>
#include <atomic>
#include <filesystem>
#include <functional>
#include <random>
#include <thread>

#include "backend/s3/s3_blob_store.h"
#include "bucket/log_keys.h"
#include "chunkstore/store.h"
#include "format/change_set.h"
#include "hash/digest.h"
#include "workloads.h"

namespace bench {

namespace fs = std::filesystem;
using chunkstore::Options;
using chunkstore::Store;

namespace {

// Runs fn(0..n-1) on 16 threads: one request each, many in flight.
void InParallel(size_t n, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&] {
      for (size_t i; (i = next++) < n;) fn(i);
    });
  for (auto& t : threads) t.join();
}

// A fresh prefix under the --s3 URL, and a way to empty it.
class Scratch {
 public:
  Scratch(const Workload& w, const std::string& tag) {
    static std::mt19937_64 rng(std::random_device{}());
    url_ = w.s3_url + "/" + tag + "-" + std::to_string(rng() % 1000000000);
    cache_ = w.dir + "/s3cache-" + tag;
    fs::remove_all(cache_);
  }
  ~Scratch() {
    fs::remove_all(cache_);
    auto where = Must(chunkstore::internal::ParseS3Url(url_), "parse");
    auto opts = Must(chunkstore::internal::ResolveS3Options({}), "s3 settings");
    auto blobs = Must(chunkstore::internal::NewS3BlobStore(where, opts, false), "s3");
    const auto all = Must(blobs->List(""), "list");
    InParallel(all.size(), [&](size_t i) { blobs->Delete(all[i].key); });
  }
  // The bucket's blobs, without a store around them.
  std::unique_ptr<chunkstore::BlobStore> Blobs() const {
    auto where = Must(chunkstore::internal::ParseS3Url(url_), "parse");
    auto opts = Must(chunkstore::internal::ResolveS3Options({}), "s3 settings");
    return Must(chunkstore::internal::NewS3BlobStore(where, opts, false), "s3");
  }
  std::unique_ptr<Store> Open(Options o = {}) {
    o.cache_dir = cache_;
    return Must(Store::Open(url_, o), "open " + url_);
  }
  void DropCache() { fs::remove_all(cache_); }
  const std::string& url() const { return url_; }

 private:
  std::string url_, cache_;
};

}  // namespace

// Writes count log records after the one at key after, one PUT each, 16 in
// flight: record i tags "live/<i/2 % 500>" to one of objects, and the next
// removes that name again. History grows, the live state does not (the
// objects, and at most 500 names).
void WriteChurn(chunkstore::BlobStore& blobs, const std::string& after, uint64_t count,
                const std::vector<std::string>& objects) {
  namespace in = chunkstore::internal;
  int64_t epoch = 0, ms = 0;
  if (!in::ParseLogKey(after, &epoch, &ms)) Die("no log key to write after: " + after, chunkstore::Status::OK());
  // A sequenced log's records are numbered (bucket/log_keys.h).
  const auto config = Must(blobs.Get("config"), "config");
  const bool sequenced = config.find("\nlog sequenced\n") != std::string::npos;
  InParallel(count, [&](size_t i) {
    in::ChangeSet c;
    c.time = 1700000000;
    const std::string name = "live/" + std::to_string(i / 2 % 500);
    if (i % 2 == 0) {
      c.kind = in::ChangeSet::kTag;
      auto id = in::Digest::FromHex(objects[i / 2 % objects.size()].substr(7));  // "sha256:<hex>"
      if (!id) Die("object id", chunkstore::Status::OK());
      c.names.push_back({name, *id, 0, 0});
    } else {
      c.kind = in::ChangeSet::kRemoveName;
      c.removed_names.push_back(name);
    }
    const int64_t at = ms + 1 + static_cast<int64_t>(i);
    const std::string key = sequenced ? in::SequencedKey(epoch, at) : in::LogKeyPrefix(epoch, at) + "-" + in::RandomHex(8);
    const std::string bytes = in::EncodeChangeSet(c, {}, key);
    if (auto s = blobs.Put(key, bytes.data(), bytes.size()); !s.ok()) Die("put " + key, s);
  });
}

// A bucket with `records` log records of history and a small live state,
// as automatic checkpoints leave it: one publish of 1,000 objects, then
// churn (WriteChurn) up to `records`, a checkpoint, and 500 records of churn
// after it. Timed: a new machine's first command (Store::Open with a fresh
// cache, then List).
void MeasureBootstrap(Harness& h, const Workload& w, uint64_t records) {
  const std::string op = "s3-bootstrap-" + std::to_string(records);
  if (!h.Wanted(op)) return;
  Scratch s(w, "bootstrap");
  auto blobs = s.Blobs();
  std::vector<std::string> objects;
  {
    auto store = s.Open();
    auto batch = store->NewBatch();
    for (int i = 0; i < 1000; ++i) {
      const auto body = RandomPayload(200, w.seed * 7919 + static_cast<uint64_t>(i));
      objects.push_back(Must(batch->AddBytes(body.data(), body.size()), "add").id);
    }
    Must(batch->Commit(), "commit");
  }
  const auto first = Must(blobs->List("log/"), "list");
  const uint64_t before = records > 500 ? records - 500 : 0;
  WriteChurn(*blobs, first.back().key, before, objects);
  {
    Options o;
    o.bucket_checkpoint_records = 1;  // the next commit writes a checkpoint
    auto store = s.Open(o);
    Must(store->Tag(objects[0], "checkpointed"), "tag");
  }
  const auto marks = Must(blobs->List("checkpoints/"), "list");
  if (marks.empty()) Die(op + ": no checkpoint was written", chunkstore::Status::OK());
  const std::string mark = chunkstore::internal::MarkKey(chunkstore::internal::CheckpointTail(marks.back().key));
  WriteChurn(*blobs, mark, records - before, objects);
  h.Measure(op,
            "a new machine's first command on a bucket store with " + std::to_string(records) +
                " log records of history (tags and removals of 500 names over 1,000 objects; a "
                "checkpoint, then 500 records after it): Store::Open with a fresh cache, then List",
            Unit::kNone, 0, [&] {
              s.DropCache();
              Timer t;
              auto store = s.Open();
              Must(store->List(), "list");
              return t.ms();
            });
}

void RunS3(Harness& h, const Workload& w) {
  if (w.s3_url.empty()) return;
  for (uint64_t records : w.bootstrap_records) MeasureBootstrap(h, w, records);
  if (h.Wanted("s3-blob")) {
    // The service's own rate for plain blobs, with nothing of chunkstore's
    // around it: what the store-level figures are bounded by.
    auto where = Must(chunkstore::internal::ParseS3Url(w.s3_url + "/blob-rate"), "parse");
    auto opts = Must(chunkstore::internal::ResolveS3Options({}), "s3 settings");
    auto blobs = Must(chunkstore::internal::NewS3BlobStore(where, opts, true), "s3");
    constexpr size_t kBlob = 16 << 20;
    const size_t count = std::max<size_t>(1, w.size / kBlob);
    h.Measure("s3-blob-put", "PUT of the payload as 16 MiB blobs, one at a time (signed with "
              "its SHA-256, as chunkstore's uploads are)", Unit::kMiBps, static_cast<double>(count * kBlob), [&] {
                Timer t;
                for (size_t i = 0; i < count; ++i)
                  if (auto s = blobs->Put("b" + std::to_string(i), w.payload.data() + i * kBlob, kBlob); !s.ok())
                    Die("put", s);
                return t.ms();
              });
    h.Measure("s3-blob-put-parallel", "PUT of the payload as 16 MiB blobs, 16 in flight (the service's "
              "parallel rate, which a copy into the bucket is measured against)", Unit::kMiBps,
              static_cast<double>(count * kBlob), [&] {
                Timer t;
                InParallel(count, [&](size_t i) {
                  if (auto s = blobs->Put("p" + std::to_string(i), w.payload.data() + i * kBlob, kBlob); !s.ok())
                    Die("put", s);
                });
                return t.ms();
              });
    for (size_t i = 0; i < count; ++i) blobs->Delete("p" + std::to_string(i));
    std::vector<uint8_t> buf(kBlob);
    h.Measure("s3-blob-get", "GET of those 16 MiB blobs, one at a time", Unit::kMiBps,
              static_cast<double>(count * kBlob), [&] {
                Timer t;
                for (size_t i = 0; i < count; ++i) {
                  size_t got = 0;
                  if (auto s = blobs->GetRange("b" + std::to_string(i), 0, kBlob, buf.data(), &got); !s.ok())
                    Die("get", s);
                }
                return t.ms();
              });
    for (size_t i = 0; i < count; ++i) blobs->Delete("b" + std::to_string(i));
  }
  if (h.Wanted("s3-publish"))
    h.Measure("s3-publish",
              "open a new bucket store (fresh prefix and cache) and PublishFile the cached "
              "payload: packs uploaded (multipart above 16 MiB), then one log record",
              Unit::kMiBps, w.size, [&] {
                Scratch s(w, "publish");
                Timer t;
                auto store = s.Open();
                Must(store->PublishFile(w.payload_path), "publish");
                return t.ms();
              });
  if (h.Wanted("s3-copy")) {
    // The payload in a directory store on local disk, copied whole into a
    // new bucket store each sample.
    const std::string src_dir = w.dir + "/s3-copy-source";
    fs::remove_all(src_dir);
    auto src = Must(Store::Open(src_dir), "open " + src_dir);
    Must(src->PublishFile(w.payload_path, "payload"), "publish");
    for (const bool conditional : {true, false}) {
      const std::string name = conditional ? "s3-copy" : "s3-copy-locks";
      if (!h.Wanted(name)) continue;
      h.Measure(name,
                "Store::CopyTo from a directory store holding the payload (named) into a new bucket "
                "store (fresh prefix and cache" +
                    std::string(conditional ? "" : ", created without conditional writes: lock blobs") +
                    "): every chunk read, verified and packed, packs uploaded, then the log record",
                Unit::kMiBps, w.size, [&] {
                  Scratch s(w, "copy");
                  Options o;
                  o.bucket_conditional_writes = conditional;
                  Timer t;
                  auto dst = s.Open(o);
                  auto r = Must(src->CopyTo(*dst), "copy");
                  if (r.objects_copied == 0) Die(name + " copied nothing", chunkstore::Status::OK());
                  return t.ms();
                });
    }
    src.reset();
    fs::remove_all(src_dir);
  }
  if (h.Wanted("s3-publish-again")) {
    Scratch s(w, "again");
    auto store = s.Open();
    Must(store->PublishFile(w.payload_path), "publish");
    h.Measure("s3-publish-again",
              "PublishFile of a payload the bucket store already holds: checked against the "
              "stored chunks (chunk and object SHA-256, no chunker), then one small log record "
              "(conditional write, no lock where the service takes them)",
              Unit::kMiBps, w.size, [&] {
                Timer t;
                auto r = Must(store->PublishFile(w.payload_path), "publish");
                if (r.new_bytes != 0) Die("s3-publish-again wrote bytes", chunkstore::Status::OK());
                return t.ms();
              });
  }
  if (h.Wanted("s3-small-publish")) {
    // A 4 KiB publish from a fresh store handle (as a new process makes
    // one, its cache warm), on a store with a sequenced log and on one
    // created without conditional writes (lock blobs), with the requests
    // each makes.
    for (const bool conditional : {true, false}) {
      const std::string name = conditional ? "s3-small-publish" : "s3-small-publish-locks";
      Scratch s(w, conditional ? "small" : "small-locks");
      auto blobs = s.Blobs();
      Options o;
      o.blob_store = blobs.get();
      o.bucket_conditional_writes = conditional;
      std::mt19937_64 rng(w.seed);
      std::vector<uint8_t> data(4096);
      auto publish_one = [&](int i) {
        for (auto& b : data) b = static_cast<uint8_t>(rng());
        auto store = s.Open(o);
        Must(store->PublishBytes(data.data(), data.size(), "small-" + std::to_string(i)), "publish");
      };
      publish_one(0);  // creates the store
      uint64_t requests = 0;
      int count = 0;
      Result& r = h.Measure(
          name,
          std::string("open the store (cache warm) and publish 4 KiB under a new name, on a store ") +
              (conditional ? "whose log is sequenced (conditional writes, no lock)" : "created without conditional writes (lock blobs)"),
          Unit::kNone, 0, [&] {
            const uint64_t before = blobs->requests();
            Timer t;
            publish_one(++count);
            const double ms = t.ms();
            requests += blobs->requests() - before;
            return ms;
          });
      char per[32];
      std::snprintf(per, sizeof per, "%.2f", static_cast<double>(requests) / std::max(count, 1));
      r.extra.emplace_back("requests_per_publish", per);
    }
  }
  if (h.Wanted("s3-read")) {
    Scratch s(w, "read");
    std::string id;
    {
      auto store = s.Open();
      id = Must(store->PublishFile(w.payload_path), "publish").id;
    }
    std::vector<uint8_t> buf(1 << 20);
    h.Measure("s3-read-verified",
              "open the bucket store (index cache present) and read the whole object in 1 MiB "
              "reads: ranged GETs of every chunk, 16 in flight, each SHA-256-verified",
              Unit::kMiBps, w.size, [&] {
                Timer t;
                auto store = s.Open();
                auto r = Must(store->OpenReader(id), "open reader");
                for (;;)
                  if (Must(r->Read(buf.data(), buf.size()), "read") == 0) break;
                return t.ms();
              });
    std::mt19937_64 rng(w.seed);
    auto store = s.Open();
    h.Measure("s3-range-32k-cold",
              "OpenReader + ReadAt of 32 KiB at a random offset through a fresh store handle "
              "(store open outside): one ranged GET of the covering chunk, verified; mean of 10",
              Unit::kNone, 0, [&] {
                double total = 0;
                for (int i = 0; i < 10; ++i) {
                  auto fresh = s.Open();
                  const uint64_t off = rng() % (w.size - (32 << 10));
                  Timer t;
                  auto r = Must(fresh->OpenReader(id), "open reader");
                  Must(r->ReadAt(off, buf.data(), 32 << 10), "read");
                  total += t.ms();
                }
                return total / 10;
              });
  }
  if (h.Wanted("s3-memory") && !w.memory_sizes.empty()) {
    const uint64_t size = *std::max_element(w.memory_sizes.begin(), w.memory_sizes.end());
    Scratch s(w, "memory");
    Result r;
    r.name = "s3-memory-" + std::to_string(size);
    r.inside = "peak RSS (KiB, VmHWM) of a fresh process that writes a " + std::to_string(size) +
               "-byte random file in 512 KiB pieces, then publishes it to a new bucket store (fresh "
               "prefix and cache); samples_ms holds wall time, three runs";
    MeasurePeakRss(w, size, s.url(), &r);
    h.Add(std::move(r));
  }
}

}  // namespace bench
