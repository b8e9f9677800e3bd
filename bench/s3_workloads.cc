// chunkstore-bench operations on a bucket store (--s3 s3://BUCKET/PREFIX):
// publish and read throughput to an S3 service, next to the local-disk
// figures of the same run. Every sample works in a fresh prefix with a
// fresh cache, and removes its blobs afterwards (outside the timing), so a
// small test server does not fill up.
#include <algorithm>
#include <filesystem>
#include <random>

#include "chunkstore/store.h"
#include "backend/s3/s3_blob_store.h"
#include "workloads.h"

namespace bench {

namespace fs = std::filesystem;
using chunkstore::Options;
using chunkstore::Store;

namespace {

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
    for (const auto& b : Must(blobs->List(""), "list")) blobs->Delete(b.key);
  }
  std::unique_ptr<Store> Open() {
    Options o;
    o.cache_dir = cache_;
    return Must(Store::Open(url_, o), "open " + url_);
  }
  void DropCache() { fs::remove_all(cache_); }
  const std::string& url() const { return url_; }

 private:
  std::string url_, cache_;
};

}  // namespace

void RunS3(Harness& h, const Workload& w) {
  if (w.s3_url.empty()) return;
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
  if (h.Wanted("s3-publish-again")) {
    Scratch s(w, "again");
    auto store = s.Open();
    Must(store->PublishFile(w.payload_path), "publish");
    h.Measure("s3-publish-again",
              "PublishFile of a payload the bucket store already holds: checked against the "
              "stored chunks (chunk and object SHA-256, no chunker), a lock blob, a log refresh "
              "and one small log record",
              Unit::kMiBps, w.size, [&] {
                Timer t;
                auto r = Must(store->PublishFile(w.payload_path), "publish");
                if (r.new_bytes != 0) Die("s3-publish-again wrote bytes", chunkstore::Status::OK());
                return t.ms();
              });
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
