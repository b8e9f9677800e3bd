// libFuzzer target: the bucket log record decoder. The input gets the
// record magic in front and its correct xxHash64 behind, so the fuzzer
// explores the parser behind the check instead of the check itself.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "bucket/bucket.h"
#include "hash/digest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chunkstore::internal;
  std::string bytes("CKLOG1\0\0", 8);
  bytes.append(reinterpret_cast<const char*>(data), size);
  const uint64_t check = XxHash64(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>(check >> (8 * i)));
  auto r = DecodeLogRecord(bytes);
  // What decodes must re-encode to the same bytes.
  if (r.ok() && EncodeLogRecord(*r) != bytes) std::abort();
  return 0;
}
