// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the change set decoder (both encodings: bucket log
// records of format 1 and change sets), and applying what decodes to an
// index. The input gets a magic in front (its first byte picks which) and
// its correct xxHash64 behind, so the fuzzer explores the parser behind
// the check instead of the check itself.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "format/change_set.h"
#include "hash/digest.h"
#include "index/apply.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chunkstore::internal;
  if (size == 0) return 0;
  const bool v1 = data[0] & 1;
  std::string bytes = v1 ? std::string("CKLOG1\0\0", 8) : std::string("CKCHG2\0\0\0", 9);
  bytes.append(reinterpret_cast<const char*>(data + 1), size - 1);
  const uint64_t check = XxHash64(bytes.data(), bytes.size());
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>(check >> (8 * i)));
  auto c = DecodeChangeSet(bytes);
  if (!c.ok()) return 0;
  // What decodes must re-encode to the same bytes (format 1 re-encodes as
  // a change set, which has more fields).
  if (!v1 && EncodeChangeSet(*c) != bytes) std::abort();
  // And applying it to an index is an answer, never a crash.
  static StoreMeta meta;
  Index::OpenOptions o;
  o.create = &meta;
  auto index = Index::Open(":memory:", o);
  if (!index.ok()) std::abort();
  WriteTxn txn(index->get());
  (void)ApplyChange(**index, *c, nullptr);
  return 0;
}
