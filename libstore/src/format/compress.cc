// SPDX-License-Identifier: Apache-2.0
// zlib compression with cheap incompressibility checks (see compress.h).
//
// Two gates keep random data cheap: chunks of 64 KiB and more are judged
// by four 4 KiB samples (skipped if their bytes are as even as random ones,
// otherwise compressed as one unit); smaller ones by their byte histogram
// (collision entropy above 6 bits per byte means deflate cannot save a
// sixteenth). Deflate state is kept per thread and reset, not rebuilt: its
// setup (a 256 KiB window, cleared) costs more than compressing a small chunk.
#include "format/compress.h"

#include <zlib.h>

#include <cstring>

namespace chunkstore::internal {

namespace {

constexpr size_t kSampleSize = 4096;
constexpr size_t kSamples = 4;

// Bytes saved must be at least n/16.
bool WorthIt(size_t raw, size_t packed) { return packed + raw / 16 <= raw; }

class Deflater {
 public:
  ~Deflater() {
    if (level_ >= 0) deflateEnd(&z_);
  }
  // Compresses data into out[0, cap); returns the length, or cap + 1 when
  // it does not fit or zlib fails.
  size_t Run(const uint8_t* data, size_t n, uint8_t* out, size_t cap, int level) {
    if (level_ != level) {
      if (level_ >= 0) deflateEnd(&z_);
      std::memset(&z_, 0, sizeof z_);
      if (deflateInit(&z_, level) != Z_OK) {
        level_ = -1;
        return cap + 1;
      }
      level_ = level;
    } else if (deflateReset(&z_) != Z_OK) {
      return cap + 1;
    }
    z_.next_in = const_cast<Bytef*>(data);
    z_.avail_in = static_cast<uInt>(n);
    z_.next_out = out;
    z_.avail_out = static_cast<uInt>(cap);
    const int rc = deflate(&z_, Z_FINISH);
    return rc == Z_STREAM_END ? cap - z_.avail_out : cap + 1;
  }
  size_t Bound(size_t n) {
    return level_ >= 0 ? deflateBound(&z_, static_cast<uLong>(n)) : compressBound(static_cast<uLong>(n));
  }

 private:
  z_stream z_{};
  int level_ = -1;
};

Deflater& ThreadDeflater() {
  thread_local Deflater d;
  return d;
}

// Sum of squared byte counts: n^2 * sum p^2, so that collision entropy
// -log2(sum p^2) is above b bits per byte when 2^b * result < n^2.
uint64_t SumSquaredCounts(const uint8_t* data, size_t n) {
  uint32_t counts[256] = {};
  for (size_t i = 0; i < n; ++i) ++counts[data[i]];
  uint64_t sum_sq = 0;
  for (uint32_t c : counts) sum_sq += static_cast<uint64_t>(c) * c;
  return sum_sq;
}

// Collision entropy below 6 bits per byte?
bool LooksCompressible(const uint8_t* data, size_t n) {
  return 64 * SumSquaredCounts(data, n) > static_cast<uint64_t>(n) * n;
}

// Collision entropy above 7.95 bits per byte (2^7.95 = 247): bytes as even
// as random ones, which Huffman coding cannot shrink. Random 16 KiB samples
// come out at 7.98; a random 4 KiB block repeated (which LZ matching would
// shrink) at 7.92, so it still goes on to the deflate check.
bool LooksRandom(const uint8_t* data, size_t n) {
  return 247 * SumSquaredCounts(data, n) < static_cast<uint64_t>(n) * n;
}

}  // namespace

bool TryCompress(const uint8_t* data, size_t n, std::vector<uint8_t>* out,
                 const CompressOptions& opts) {
  if (n < 64) return false;  // headers alone eat the gain
  Deflater& z = ThreadDeflater();
  if (opts.sample_first) {
    if (n >= 4 * kSamples * kSampleSize) {
      // Compress samples from the start, the quarters and the end as one
      // unit; if even they do not shrink by 1/16 the whole chunk almost
      // never does.
      uint8_t sample[kSamples * kSampleSize];
      const size_t stride = (n - kSampleSize) / (kSamples - 1);
      for (size_t i = 0; i < kSamples; ++i)
        std::memcpy(sample + i * kSampleSize, data + i * stride, kSampleSize);
      // A histogram costs a fraction of deflating the samples.
      if (LooksRandom(sample, sizeof sample)) return false;
      uint8_t packed[kSamples * kSampleSize + 1024];
      const size_t len = z.Run(sample, sizeof sample, packed, sizeof packed, opts.level);
      if (!WorthIt(sizeof sample, len)) return false;
    } else if (!LooksCompressible(data, n)) {
      return false;
    }
  }
  out->resize(z.Bound(n) + 64);
  const size_t len = z.Run(data, n, out->data(), out->size(), opts.level);
  if (len > out->size() || !WorthIt(n, len)) return false;
  out->resize(len);
  return true;
}

Status Decompress(const uint8_t* data, size_t n, size_t raw_len, std::vector<uint8_t>* out) {
  out->resize(raw_len);
  return Decompress(data, n, raw_len, out->data());
}

Status Decompress(const uint8_t* data, size_t n, size_t raw_len, uint8_t* out) {
  uLongf len = raw_len;
  const int rc = uncompress(out, &len, data, n);
  if (rc != Z_OK || len != raw_len)
    return Status::Corruption("compressed chunk data does not inflate to its recorded length");
  return Status::OK();
}

}  // namespace chunkstore::internal
