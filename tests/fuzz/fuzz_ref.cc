// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: REF parsing and name validation against a small store.
#include <cstdint>
#include <string>

#include "chunkstore/store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static auto store = [] {
    auto s = std::move(chunkstore::Store::OpenInMemory()).value();
    s->PublishBytes("69235", 5, "a");
    s->PublishBytes("95303", 5, "a");  // shares an 8-digit id prefix with the first
    s->PublishBytes("x", 1, "dir/name");
    return s;
  }();
  const std::string ref(reinterpret_cast<const char*>(data), size);
  auto r = store->Resolve(ref);
  if (r.ok() && r->size() != 71) __builtin_trap();
  (void)chunkstore::ValidateName(ref);
  return 0;
}
