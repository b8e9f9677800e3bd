// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: Store::Receive on arbitrary push streams, into an
// in-memory store that holds one object already (so that pushes may lean
// on its chunks). Nothing may crash or allocate without bound, and
// whatever a push gets committed must verify: no input can make the store
// hold an object whose bytes are not its id.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "chunkstore/store.h"
#include "format/push_format.h"

namespace {

chunkstore::Store* TheStore() {
  static chunkstore::Store* store = [] {
    chunkstore::Options o;
    o.chunking.min_size = 64;
    o.chunking.avg_size = 256;
    o.chunking.max_size = 1024;
    auto s = chunkstore::Store::OpenInMemory(o);
    if (!s.ok()) std::abort();
    std::string seed(4000, '\0');
    for (size_t i = 0; i < seed.size(); ++i) seed[i] = static_cast<char>((i * 7919) >> 3);
    if (!(*s)->PublishBytes(seed.data(), seed.size(), "seed").ok()) std::abort();
    return s->release();
  }();
  return store;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  chunkstore::Store* store = TheStore();
  // Most inputs lack the magic; give half of them a head start.
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (size > 0 && (data[0] & 1)) bytes = std::string(chunkstore::internal::kPushMagic, 8) + bytes.substr(1);
  auto r = store->Receive(
      [&bytes](uint64_t off, void* buf, size_t n) -> chunkstore::Status {
        if (off > bytes.size() || bytes.size() - off < n) std::abort();  // the reader checked bounds first
        std::memcpy(buf, bytes.data() + off, n);
        return chunkstore::Status::OK();
      },
      bytes.size());
  if (!r.ok()) return 0;
  auto v = store->Verify();
  if (!v.ok() || v->corrupt()) std::abort();
  return 0;
}
