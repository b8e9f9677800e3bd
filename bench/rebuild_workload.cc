// SPDX-License-Identifier: Apache-2.0
// chunkstore-bench "index-rebuild": how fast a directory store's index is
// rebuilt from its change log. The store is made outside the timed region
// through the public API: Workload::rebuild_objects objects of about ten
// chunks each (64-byte minimum, 256-byte average chunks; 2,900-byte objects), published in
// batches of 1,000, so that its log holds checkpoints and change sets as
// a real store's does. Timed: Store::Open with rebuild_index (the log
// replayed into a fresh index, which then replaces the old one) and the
// store's close. The rate is in chunks per second.
#include <filesystem>

#include "base/random_bytes.h"
#include "chunkstore/store.h"
#include "workloads.h"

namespace bench {

namespace fs = std::filesystem;
using chunkstore::Options;
using chunkstore::Store;

void RunRebuild(Harness& h, const Workload& w) {
  if (!h.Wanted("index-rebuild")) return;
  const std::string dir = w.dir + "/rebuild-store";
  fs::remove_all(dir);
  Options o;
  o.chunking.min_size = 64;
  o.chunking.avg_size = 256;
  o.chunking.max_size = 1024;
  o.compression = chunkstore::Compression::None();  // random bytes do not compress; skip trying
  uint64_t chunks = 0, objects = 0;
  {
    auto s = Must(Store::Open(dir, o), "open");
    constexpr uint64_t kBatch = 1000;
    std::vector<uint8_t> body(2900);
    for (uint64_t done = 0; done < w.rebuild_objects;) {
      auto b = s->NewBatch();
      for (uint64_t k = 0; k < kBatch && done < w.rebuild_objects; ++k, ++done) {
        body = chunkstore::SeededRandomBytes(body.size(), w.seed * 1000003 + done);
        char name[64];
        std::snprintf(name, sizeof name, "set/%07llu", static_cast<unsigned long long>(done));
        Must(b->AddBytes(body.data(), body.size(), name), "add");
      }
      Must(b->Commit(), "commit");
    }
    const auto st = Must(s->Stats(), "stats");
    chunks = st.chunks;
    objects = st.objects;
  }
  Options r = o;
  r.rebuild_index = true;
  r.create_if_missing = false;
  auto& res = h.Measure("index-rebuild",
                        "Store::Open(rebuild_index) of a directory store of " + std::to_string(objects) +
                            " objects and " + std::to_string(chunks) + " chunks, and its close; rate in chunks/s",
                        Unit::kObjectsPerSecond, static_cast<double>(chunks), [&] {
                          Timer t;
                          auto s = Must(Store::Open(dir, r), "rebuild");
                          s.reset();
                          return t.ms();
                        });
  res.extra.emplace_back("objects", JsonNumber(static_cast<double>(objects)));
  res.extra.emplace_back("chunks", JsonNumber(static_cast<double>(chunks)));
  uint64_t log_bytes = 0;
  for (auto& e : fs::directory_iterator(dir + "/log"))
    if (e.is_regular_file()) log_bytes += e.file_size();
  res.extra.emplace_back("log_bytes", JsonNumber(static_cast<double>(log_bytes)));
  fs::remove_all(dir);
}

}  // namespace bench
