// zlib compression with a sampled incompressibility check (see compress.h).
#include "compress.h"

#include <zlib.h>

namespace chunkstore::internal {

namespace {

constexpr size_t kSampleSize = 4096;
constexpr size_t kSamples = 4;

// Bytes saved must be at least n/16.
bool WorthIt(size_t raw, size_t packed) { return packed + raw / 16 <= raw; }

size_t Deflate(const uint8_t* data, size_t n, uint8_t* out, size_t cap, int level) {
  uLongf len = cap;
  if (compress2(out, &len, data, n, level) != Z_OK) return cap + 1;
  return len;
}

}  // namespace

bool TryCompress(const uint8_t* data, size_t n, std::vector<uint8_t>* out,
                 const CompressOptions& opts) {
  if (n < 64) return false;  // headers alone eat the gain
  if (opts.sample_first && n >= 4 * kSamples * kSampleSize) {
    // Compress samples from the start, the quarters and the end as one unit;
    // if even they do not shrink by 1/16 the whole chunk almost never does.
    uint8_t sample[kSamples * kSampleSize];
    const size_t stride = (n - kSampleSize) / (kSamples - 1);
    for (size_t i = 0; i < kSamples; ++i)
      std::copy(data + i * stride, data + i * stride + kSampleSize, sample + i * kSampleSize);
    uint8_t packed[kSamples * kSampleSize + 1024];
    const size_t len = Deflate(sample, sizeof sample, packed, sizeof packed, opts.level);
    if (!WorthIt(sizeof sample, len)) return false;
  }
  out->resize(compressBound(n));
  const size_t len = Deflate(data, n, out->data(), out->size(), opts.level);
  if (len > out->size() || !WorthIt(n, len)) return false;
  out->resize(len);
  return true;
}

Status Decompress(const uint8_t* data, size_t n, size_t raw_len, std::vector<uint8_t>* out) {
  out->resize(raw_len);
  uLongf len = raw_len;
  const int rc = uncompress(out->data(), &len, data, n);
  if (rc != Z_OK || len != raw_len)
    return Status::Corruption("compressed chunk data does not inflate to its recorded length");
  return Status::OK();
}

}  // namespace chunkstore::internal
