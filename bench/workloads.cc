// SPDX-License-Identifier: Apache-2.0
// chunkstore-bench operations over the real library. Inputs are created
// outside the timed regions; each operation's "inside" string says exactly
// what is timed.
#include "workloads.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>

#include "chunkstore/store.h"
#include "format/compress.h"
#include "hash/digest.h"
#include "base/random_bytes.h"

namespace bench {

namespace fs = std::filesystem;
using chunkstore::Options;
using chunkstore::Store;

std::vector<uint8_t> RandomPayload(uint64_t n, uint64_t seed) { return chunkstore::SeededRandomBytes(n, seed); }

namespace {

std::unique_ptr<Store> FreshStore(const std::string& dir) {
  fs::remove_all(dir);
  return Must(Store::Open(dir), "open " + dir);
}

uint64_t TreeBytes(const std::string& dir) {
  uint64_t n = 0;
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) n += e.file_size();
  return n;
}

std::string Num(double v) { return JsonNumber(v); }

// The CPU time of the timed regions, per run (warmups included): all
// cores' (machine) and this process's (own); see CpuMeter.
void AddCpu(Result& r, const CpuMeter& cpu) {
  if (cpu.intervals() == 0) return;
  r.extra.emplace_back("machine_cpu_ms_mean", Num(cpu.machine_ms() / cpu.intervals()));
  r.extra.emplace_back("own_cpu_ms_mean", Num(cpu.own_ms() / cpu.intervals()));
}

void ReadAllOrDie(Store& s, const std::string& ref, std::vector<uint8_t>& buf) {
  auto r = Must(s.OpenReader(ref), "open reader");
  for (;;) {
    auto n = Must(r->Read(buf.data(), buf.size()), "read");
    if (n == 0) break;
  }
}

}  // namespace

void RunFileAndHashControls(Harness& h, const Workload& w) {
  std::vector<uint8_t> buf(64 << 10);
#if defined(__x86_64__)
  // The core's clock while the suite runs. Targets stated as ratios to H
  // follow it; those in absolute units (objects/s, ms, the chunker's MiB/s)
  // do not, and this host's clock moves by a sixth or more over a day.
  if (h.Wanted("yardstick-clock"))
    h.Measure("yardstick-clock",
              "a chain of 250 million dependent 64-bit register additions, one cycle each: "
              "the core clock in GHz is 250 / ms",
              Unit::kNone, 0, [] {
                uint64_t x = 0;
                const uint64_t step = 1;
                Timer t;
                for (int i = 0; i < 62500000; ++i)
                  asm volatile("add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0" : "+r"(x) : "r"(step));
                return t.ms();
              });
#endif
  if (h.Wanted("yardstick-openssl") && ::access("/usr/bin/openssl", X_OK) == 0) {
    const std::string cmd = "/usr/bin/openssl dgst -sha256 " + w.payload_path + " >/dev/null";
    h.Measure("yardstick-openssl",
              "the process `openssl dgst -sha256 FILE` on the cached payload (start-up included): "
              "H, the one-core SHA-256 rate every target is a ratio of",
              Unit::kMiBps, w.size, [&] {
                Timer t;
                if (std::system(cmd.c_str()) != 0) Die("openssl dgst failed", chunkstore::Status::OK());
                return t.ms();
              });
  }
  if (h.Wanted("read-file"))
    h.Measure("read-file", "read the cached payload file with one reusable 64 KiB buffer",
              Unit::kMiBps, w.size, [&] {
                const int fd = ::open(w.payload_path.c_str(), O_RDONLY);
                Timer t;
                while (::read(fd, buf.data(), buf.size()) > 0) {
                }
                const double ms = t.ms();
                ::close(fd);
                return ms;
              });
  // The payload written once to a new file beside the scratch stores, in
  // 1 MiB pieces: with fdatasync, what the disk allows a durable publish
  // (D); without, what taking new data into the page cache costs the
  // writing thread (W), which a durable publish pays beside the hashing.
  // With reserve, the file's blocks are reserved first (fallocate,
  // FALLOC_FL_KEEP_SIZE), as `chunkstore cat` does for a file it writes
  // (W_r).
  auto measure_write = [&](const std::string& name, const std::string& what, bool sync,
                           bool reserve = false) {
    if (!h.Wanted(name)) return;
    const std::string out = w.dir + "/" + name + ".bin";
    std::vector<uint8_t> piece(1 << 20);
    CpuMeter cpu;
    auto& r = h.Measure(name, what, Unit::kMiBps, w.size, [&] {
      const int in = ::open(w.payload_path.c_str(), O_RDONLY);
      cpu.Start();
      Timer t;
      const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (in < 0 || fd < 0) Die("cannot open " + out, chunkstore::Status::OK());
      if (reserve && ::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(w.size)) != 0)
        Die("fallocate failed", chunkstore::Status::OK());
      ssize_t n;
      while ((n = ::read(in, piece.data(), piece.size())) > 0)
        if (::write(fd, piece.data(), static_cast<size_t>(n)) != n) Die("short write", chunkstore::Status::OK());
      if (sync && ::fdatasync(fd) != 0) Die("fdatasync failed", chunkstore::Status::OK());
      ::close(fd);
      const double ms = t.ms();
      cpu.Stop();
      ::close(in);
      ::unlink(out.c_str());
      return ms;
    });
    AddCpu(r, cpu);
  };
  measure_write("write-file-durable",
                "write the cached payload to a new file in 1 MiB pieces and fdatasync it (the "
                "disk's durable write rate, D)",
                true);
  measure_write("write-file-cached",
                "write the cached payload to a new file in 1 MiB pieces, no sync (the system time of "
                "taking new data into the page cache, W)",
                false);
  measure_write("write-file-reserved",
                "reserve the file's blocks (fallocate, keeping its size), then write the cached "
                "payload to it in 1 MiB pieces, no sync (W_r: what `chunkstore cat > FILE` pays to "
                "write)",
                false, true);
  if (h.Wanted("read-hash-twice"))
    h.Measure("read-hash-twice",
              "read the cached file (64 KiB buffer) and update two SHA-256 states with every byte",
              Unit::kMiBps, w.size, [&] {
                const int fd = ::open(w.payload_path.c_str(), O_RDONLY);
                chunkstore::internal::Sha256 a, b;
                Timer t;
                ssize_t n;
                while ((n = ::read(fd, buf.data(), buf.size())) > 0) {
                  a.Update(buf.data(), static_cast<size_t>(n));
                  b.Update(buf.data(), static_cast<size_t>(n));
                }
                a.Finish();
                b.Finish();
                const double ms = t.ms();
                ::close(fd);
                return ms;
              });
}

void RunPrepare(Harness& h, const Workload& w) {
  auto store = FreshStore(w.dir + "/prepare-store");
  if (h.Wanted("prepare-file"))
    h.Measure("prepare-file",
              "PrepareFile on the cached payload: chunk, chunk SHA-256s, object SHA-256 "
              "(compression is tried at publish, for new chunks only), then drop the result",
              Unit::kMiBps, w.size, [&] {
                Timer t;
                auto p = Must(store->PrepareFile(w.payload_path), "prepare");
                return t.ms();
              });
  if (h.Wanted("prepare-bytes-spill")) {
    Options o;
    o.spill_threshold = w.size / 2;
    fs::remove_all(w.dir + "/spill-store");
    auto spill = Must(Store::Open(w.dir + "/spill-store", o), "open");
    h.Measure("prepare-bytes-spill",
              "PrepareBytes of the in-memory payload with a spill threshold of half its size: "
              "copy to an anonymous spill file while chunking and hashing, then drop (removes it)",
              Unit::kMiBps, w.size, [&] {
                Timer t;
                auto p = Must(spill->PrepareBytes(w.payload.data(), w.payload.size()), "prepare");
                return t.ms();
              });
  }
  if (h.Wanted("compress-random")) {
    std::vector<uint8_t> out;
    for (bool skip : {true, false}) {
      chunkstore::internal::CompressOptions co;  // the default codec (zstd:3)
      co.sample_first = skip;
      auto& r = h.Measure(skip ? "compress-random" : "compress-random-noskip",
                          skip ? "TryCompress (the default codec) of every 1 MiB piece of the random payload "
                                 "with the sampled incompressibility check"
                               : "TryCompress of every 1 MiB piece of the random payload, "
                                 "compressing each in full (check disabled)",
                          Unit::kMiBps, w.size, [&] {
                            Timer t;
                            for (uint64_t off = 0; off < w.size; off += 1 << 20)
                              chunkstore::internal::TryCompress(
                                  w.payload.data() + off,
                                  static_cast<size_t>(std::min<uint64_t>(1 << 20, w.size - off)), &out, co);
                            return t.ms();
                          });
      (void)r;
    }
  }
}

void RunPublish(Harness& h, const Workload& w) {
  if (h.Wanted("publish-memory"))
    h.Measure("publish-memory",
              "PublishBytes of the payload into a fresh in-memory store (store creation outside)",
              Unit::kMiBps, w.size, [&] {
                auto s = Must(Store::OpenInMemory(), "open memory");
                Timer t;
                Must(s->PublishBytes(w.payload.data(), w.payload.size()), "publish");
                return t.ms();
              });
  const std::string dir = w.dir + "/publish-store";
  if (h.Wanted("publish-file")) {
    CpuMeter cpu;
    auto& r = h.Measure("publish-file",
                        "create a fresh on-disk store and PublishFile the cached payload, durable "
                        "(pack fsync + directory fsync + SQLite commit in FULL sync)",
                        Unit::kMiBps, w.size, [&] {
                          fs::remove_all(dir);
                          cpu.Start();
                          Timer t;
                          auto s = Must(Store::Open(dir), "open");
                          Must(s->PublishFile(w.payload_path), "publish");
                          s.reset();
                          const double ms = t.ms();
                          cpu.Stop();
                          return ms;
                        });
    AddCpu(r, cpu);
  }
  if (h.Wanted("publish-again")) {
    auto s = FreshStore(dir);
    Must(s->PublishFile(w.payload_path), "publish");
    h.Measure("publish-again", "PublishFile of a payload already in the store (durable commit)",
              Unit::kMiBps, w.size, [&] {
                Timer t;
                auto r = Must(s->PublishFile(w.payload_path), "publish");
                if (r.new_bytes != 0) Die("publish-again wrote bytes", chunkstore::Status::OK());
                return t.ms();
              });
  }
  if (h.Wanted("publish-one-byte-edit")) {
    auto edited = w.payload;
    edited[edited.size() / 2] ^= 0x5a;
    const std::string edited_path = w.dir + "/edited.bin";
    std::ofstream(edited_path, std::ios::binary)
        .write(reinterpret_cast<const char*>(edited.data()), static_cast<std::streamsize>(edited.size()));
    chunkstore::PublishResult last;
    uint64_t appended = 0;
    auto& r = h.Measure("publish-one-byte-edit",
                        "PublishFile of the payload with one byte changed in the middle, into a "
                        "store holding the original (store and original publish outside)",
                        Unit::kMiBps, w.size, [&] {
                          auto s = FreshStore(dir);
                          Must(s->PublishFile(w.payload_path), "publish");
                          s.reset();
                          s = Must(Store::Open(dir), "open");
                          const uint64_t before = TreeBytes(dir);
                          Timer t;
                          last = Must(s->PublishFile(edited_path), "publish");
                          const double ms = t.ms();
                          s.reset();
                          appended = TreeBytes(dir) - before;
                          return ms;
                        });
    r.extra.emplace_back("chunks_total", Num(static_cast<double>(last.chunks)));
    r.extra.emplace_back("chunks_reused", Num(static_cast<double>(last.reused_chunks)));
    r.extra.emplace_back("pack_bytes_appended", Num(static_cast<double>(last.new_bytes)));
    r.extra.emplace_back("store_bytes_appended", Num(static_cast<double>(appended)));
  }
}

void RunRead(Harness& h, const Workload& w) {
  const std::string dir = w.dir + "/read-store";
  std::string id;
  {
    auto s = FreshStore(dir);
    id = Must(s->PublishFile(w.payload_path), "publish").id;
  }
  auto store = Must(Store::Open(dir), "open");
  std::vector<uint8_t> buf(1 << 20);
  if (h.Wanted("read-verified"))
    h.Measure("read-verified",
              "OpenReader + Read of the whole object in 1 MiB reads; every chunk read from its "
              "(cached) pack, xxHash64- and SHA-256-verified, with read-ahead on other threads",
              Unit::kMiBps, w.size, [&] {
                Timer t;
                ReadAllOrDie(*store, id, buf);
                return t.ms();
              });
  if (h.Wanted("range-32k")) {
    std::mt19937_64 rng(w.seed);
    const int kIters = 20;
    std::vector<double> per_op;
    // The chunk a random offset falls in is longer than the average chunk
    // (a long chunk covers more offsets); its size, which the read must
    // hash whole, is what bounds a cold range.
    const std::vector<chunkstore::ChunkInfo> chunks = Must(store->Chunks(id), "chunks");
    double covering_bytes = 0;
    int covering_count = 0;
    auto covering = [&](uint64_t off) {
      auto it = std::upper_bound(chunks.begin(), chunks.end(), off,
                                 [](uint64_t o, const chunkstore::ChunkInfo& c) { return o < c.offset; });
      if (it == chunks.begin()) return;  // an inline object lists no chunks
      covering_bytes += std::prev(it)->length;
      ++covering_count;
    };
    auto& cold = h.Measure(
        "range-32k-cold",
        "Store::Open is outside; inside: OpenReader + ReadAt of 32 KiB at a random offset, "
        "with no chunk in any cache of ours (fresh store handle); mean of 20 per sample",
        Unit::kNone, 0, [&] {
          double total = 0;
          for (int i = 0; i < kIters; ++i) {
            auto s = Must(Store::Open(dir), "open");
            const uint64_t off = rng() % (w.size - (32 << 10));
            covering(off);
            Timer t;
            auto r = Must(s->OpenReader(id), "open reader");
            Must(r->ReadAt(off, buf.data(), 32 << 10), "read");
            total += t.ms();
          }
          return total / kIters;
        });
    if (covering_count > 0)
      cold.extra.emplace_back("covering_chunk_bytes_mean", Num(covering_bytes / covering_count));
    auto reader = Must(store->OpenReader(id), "open reader");
    const uint64_t off = rng() % (w.size - (32 << 10));
    Must(reader->ReadAt(off, buf.data(), 32 << 10), "read");
    h.Measure("range-32k-warm",
              "ReadAt of the same 32 KiB again through an open reader (its chunk already "
              "verified and cached); mean of 1000 per sample",
              Unit::kNone, 0, [&] {
                Timer t;
                for (int i = 0; i < 1000; ++i) Must(reader->ReadAt(off, buf.data(), 32 << 10), "read");
                return t.ms() / 1000;
              });
  }
}

void RunSmallObjects(Harness& h, const Workload& w) {
  const int kObjects = 2000;
  std::vector<std::vector<uint8_t>> small;
  for (int i = 0; i < kObjects; ++i) small.push_back(RandomPayload(256, w.seed * 100000 + i));
  const std::string dir = w.dir + "/small-store";
  std::vector<std::string> ids;
  if (h.Wanted("small-publish"))
    h.Measure("small-publish",
              "2,000 distinct 256-byte PublishBytes in one Batch and one durable commit, into a "
              "fresh on-disk store (created outside)",
              Unit::kObjectsPerSecond, kObjects, [&] {
                auto s = FreshStore(dir);
                Timer t;
                auto b = s->NewBatch();
                for (auto& p : small) Must(b->AddBytes(p.data(), p.size()), "add");
                Must(b->Commit(), "commit");
                return t.ms();
              });
  if (h.Wanted("small-publish-durable")) {
    const int kDurable = 200;
    std::vector<double> lat;
    auto& r = h.Measure("small-publish-durable",
                        "200 distinct 256-byte PublishBytes, each its own durable transaction, into "
                        "a fresh on-disk store (created outside); per-object latency below",
                        Unit::kObjectsPerSecond, kDurable, [&] {
                          auto s = FreshStore(dir);
                          double total = 0;
                          for (int i = 0; i < kDurable; ++i) {
                            Timer t;
                            Must(s->PublishBytes(small[i].data(), small[i].size()), "publish");
                            const double ms = t.ms();
                            lat.push_back(ms);
                            total += ms;
                          }
                          return total;
                        });
    r.extra.emplace_back("latency_p50_ms", Num(Percentile(lat, 50)));
    r.extra.emplace_back("latency_p99_ms", Num(Percentile(lat, 99)));
  }
  if (h.Wanted("small-read") || h.Wanted("small-read-batch")) {
    auto s = FreshStore(dir);
    auto b = s->NewBatch();
    for (auto& p : small) ids.push_back(Must(b->AddBytes(p.data(), p.size()), "add").id);
    Must(b->Commit(), "commit");
    Options o;
    o.cache_bytes = 0;  // every read verifies
    s.reset();
    auto store = Must(Store::Open(dir, o), "open");
    std::vector<uint8_t> buf(256);
    if (h.Wanted("small-read"))
    h.Measure("small-read",
              "OpenReader + Read of each of the 2,000 objects by full id (store open outside; "
              "chunk cache disabled, so every read is verified)",
              Unit::kObjectsPerSecond, kObjects, [&] {
                Timer t;
                for (const auto& id : ids) {
                  auto r = Must(store->OpenReader(id), "open");
                  Must(r->Read(buf.data(), buf.size()), "read");
                }
                return t.ms();
              });
    if (h.Wanted("small-read-batch"))
    h.Measure("small-read-batch",
              "OpenReaders of the 2,000 full ids (one index snapshot), then Read of each (store open "
              "outside; chunk cache disabled, so every read is verified)",
              Unit::kObjectsPerSecond, kObjects, [&] {
                Timer t;
                for (auto& r : store->OpenReaders(ids)) Must(Must(std::move(r), "open")->Read(buf.data(), buf.size()), "read");
                return t.ms();
              });
  }
}

void RunConcurrentRead(Harness& h, const Workload& w) {
  if (!h.Wanted("concurrent-read")) return;
  const std::string dir = w.dir + "/concurrent-store";
  std::vector<std::string> ids;
  const uint64_t each = std::max<uint64_t>(w.size / 8, 1 << 20);
  {
    auto s = FreshStore(dir);
    for (int i = 0; i < 8; ++i) {
      auto p = RandomPayload(each, w.seed * 7 + i);
      ids.push_back(Must(s->PublishBytes(p.data(), p.size()), "publish").id);
    }
  }
  Options o;
  o.cache_bytes = 0;
  auto store = Must(Store::Open(dir, o), "open");
  const size_t kRange = 256 << 10;
  const int kReadsPerThread = 32;
  for (int threads : {1, 2, 4, 8}) {
    std::vector<double> lat;
    std::mutex mu;
    auto& r = h.Measure(
        "concurrent-read-" + std::to_string(threads),
        std::to_string(threads) + " threads, each OpenReader + ReadAt of 32 random 256 KiB ranges "
        "of its own object (cache disabled: every range verified)",
        Unit::kMiBps, static_cast<double>(threads) * kReadsPerThread * kRange, [&] {
          std::vector<std::thread> pool;
          Timer t;
          for (int k = 0; k < threads; ++k) {
            pool.emplace_back([&, k] {
              std::mt19937_64 rng(w.seed + k);
              std::vector<uint8_t> buf(kRange);
              std::vector<double> mine;
              for (int i = 0; i < kReadsPerThread; ++i) {
                Timer one;
                auto rd = Must(store->OpenReader(ids[k % ids.size()]), "open");
                Must(rd->ReadAt(rng() % (each - kRange), buf.data(), kRange), "read");
                mine.push_back(one.ms());
              }
              std::lock_guard<std::mutex> l(mu);
              lat.insert(lat.end(), mine.begin(), mine.end());
            });
          }
          for (auto& th : pool) th.join();
          return t.ms();
        });
    r.extra.emplace_back("latency_p50_ms", Num(Percentile(lat, 50)));
    r.extra.emplace_back("latency_p99_ms", Num(Percentile(lat, 99)));
  }
}

void RunCatalog(Harness& h, const Workload& w) {
  if (!h.Wanted("catalog")) return;
  auto store = Must(Store::OpenInMemory(), "open");
  {
    auto b = store->NewBatch();
    for (int i = 0; i < 10000; ++i) {
      const std::string body = "object " + std::to_string(i);
      char name[64];
      std::snprintf(name, sizeof name, "data/set-%05d", i);
      Must(b->AddBytes(body.data(), body.size(), name), "add");
    }
    Must(b->Commit(), "commit");
    auto b2 = store->NewBatch();
    for (int v = 0; v < 1000; ++v) {
      const std::string body = "version " + std::to_string(v);
      Must(b2->AddBytes(body.data(), body.size(), "history/long"), "add");
    }
    Must(b2->Commit(), "commit");
  }
  std::mt19937_64 rng(w.seed);
  h.Measure("catalog-lookup", "Resolve of a random name among 10,000; mean of 1000 per sample",
            Unit::kNone, 0, [&] {
              Timer t;
              for (int i = 0; i < 1000; ++i) {
                char name[64];
                std::snprintf(name, sizeof name, "data/set-%05d", static_cast<int>(rng() % 10000));
                Must(store->Resolve(name), "resolve");
              }
              return t.ms() / 1000;
            });
  h.Measure("catalog-ls-10000", "List() of 10,000 names (latest versions, sorted)", Unit::kObjectsPerSecond,
            10000, [&] {
              Timer t;
              auto l = Must(store->List(), "list");
              if (l.size() != 10001) Die("list size", chunkstore::Status::OK());
              return t.ms();
            });
  h.Measure("catalog-history-1000", "History() of a name with 1,000 versions", Unit::kObjectsPerSecond, 1000,
            [&] {
              Timer t;
              Must(store->History("history/long"), "history");
              return t.ms();
            });
}

int MemoryChild(const std::string& dir, uint64_t size, uint64_t seed, const std::string& store_url) {
  const std::string path = dir + "/input.bin";
  {
    // Written in pieces so the child's own input creation stays small.
    std::ofstream f(path, std::ios::binary);
    std::mt19937_64 rng(seed);
    std::vector<uint64_t> block(1 << 16);
    for (uint64_t done = 0; done < size;) {
      for (auto& v : block) v = rng();
      const uint64_t n = std::min<uint64_t>(size - done, block.size() * 8);
      f.write(reinterpret_cast<const char*>(block.data()), static_cast<std::streamsize>(n));
      done += n;
    }
  }
  bool corrupt = false;
  if (store_url.empty()) {
    auto store = Must(Store::Open(dir + "/store"), "open");
    auto prepared = Must(store->PrepareFile(path), "prepare");
    Must(store->Publish(prepared), "publish");
    chunkstore::VerifyOptions vo;
    corrupt = Must(store->Verify(vo), "verify").corrupt();
  } else {
    chunkstore::Options o;
    o.cache_dir = dir + "/cache";
    auto store = Must(Store::Open(store_url, o), "open " + store_url);
    Must(store->PublishFile(path, "memory"), "publish");
  }
  // The kernel's ru_maxrss of a forked child counts the parent's pages
  // copied before exec, so the child reports its own high-water mark.
  std::ifstream status("/proc/self/status");
  std::ofstream out(dir + "/peak_rss_kib");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) out << std::stoull(line.substr(6)) << "\n";
  return corrupt ? 4 : 0;
}

void MeasurePeakRss(const Workload& w, uint64_t size, const std::string& store_url, Result* r) {
  std::vector<double> rss;
  for (int run = 0; run < 3; ++run) {
    const std::string dir = w.dir + "/memory-" + std::to_string(run);
    fs::remove_all(dir);
    fs::create_directories(dir);
    Timer t;
    const pid_t pid = ::fork();
    if (pid == 0) {
      const std::string n = std::to_string(size), seed = std::to_string(w.seed);
      if (store_url.empty())
        ::execl(w.self.c_str(), w.self.c_str(), "--memory-child", dir.c_str(), n.c_str(), seed.c_str(),
                static_cast<char*>(nullptr));
      else
        ::execl(w.self.c_str(), w.self.c_str(), "--memory-child", dir.c_str(), n.c_str(), seed.c_str(),
                (store_url + "/run-" + std::to_string(run)).c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    r->samples_ms.push_back(t.ms());
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      Die("memory child failed for size " + std::to_string(size), chunkstore::Status::OK());
    double kib = 0;
    std::ifstream(dir + "/peak_rss_kib") >> kib;
    rss.push_back(kib);
    fs::remove_all(dir);
  }
  r->extra.emplace_back("peak_rss_kib_median", Num(Median(rss)));
  std::string all = "[";
  for (size_t i = 0; i < rss.size(); ++i) all += (i ? ", " : "") + Num(rss[i]);
  r->extra.emplace_back("peak_rss_kib", all + "]");
  r->extra.emplace_back("payload_bytes", Num(static_cast<double>(size)));
}

void RunMemory(Harness& h, const Workload& w) {
  if (!h.Wanted("memory")) return;
  for (uint64_t size : w.memory_sizes) {
    Result r;
    r.name = "memory-" + std::to_string(size);
    r.inside = "peak RSS (KiB, VmHWM) of a fresh process that writes a " + std::to_string(size) +
               "-byte random file in 512 KiB pieces, then prepares, publishes and verifies it in a "
               "new on-disk store; samples_ms holds wall time, three runs";
    MeasurePeakRss(w, size, "", &r);
    h.Add(std::move(r));
  }
}

}  // namespace bench
