// SPDX-License-Identifier: Apache-2.0
// zstd and zlib compression with cheap incompressibility checks (see
// compress.h).
//
// Two gates keep random data cheap: chunks of 64 KiB and more are judged
// by four 4 KiB samples (skipped if their bytes are as even as random ones,
// otherwise compressed as one unit); smaller ones by their byte histogram
// (collision entropy above 6 bits per byte means no codec here saves a
// sixteenth). zlib-format chunks are written and read with libdeflate,
// which makes the same format several times faster than zlib itself (a
// whole-buffer API is all a chunk needs). Compressor state is kept per
// thread: its setup costs more than compressing a small chunk.
#include "format/compress.h"

#include <libdeflate.h>
#include <zstd.h>

#include <cstring>
#include <memory>
#include <new>

namespace chunkstore::internal {

namespace {

constexpr size_t kSampleSize = 4096;
constexpr size_t kSamples = 4;
// Samples are judged at no more than this level: they predict whether the
// chunk shrinks, not by how much.
constexpr int kSampleMaxLevel = 3;

// The most a compressed form may take: it must save at least n/16.
size_t Budget(size_t raw) { return raw - raw / 16; }

class ThreadCodecs {
 public:
  ~ThreadCodecs() {
    for (libdeflate_compressor* d : deflaters_)
      if (d) libdeflate_free_compressor(d);
    if (inflater_) libdeflate_free_decompressor(inflater_);
    ZSTD_freeCCtx(zc_);
    ZSTD_freeDCtx(zd_);
  }

  // Compresses into out[0, cap); returns the length, or 0 when it does not
  // fit or the codec fails.
  size_t Compress(Codec codec, int level, const uint8_t* data, size_t n, uint8_t* out, size_t cap) {
    if (codec == Codec::kZlib) {
      // Two kept, for the samples' level and the chunk's, so a store above
      // level 3 does not build a compressor (up to a megabyte) twice a chunk.
      int slot = deflater_levels_[0] == level ? 0 : deflater_levels_[1] == level ? 1 : -1;
      if (slot < 0) {
        slot = next_slot_;
        next_slot_ ^= 1;
        if (deflaters_[slot]) libdeflate_free_compressor(deflaters_[slot]);
        deflaters_[slot] = libdeflate_alloc_compressor(level);
        deflater_levels_[slot] = deflaters_[slot] ? level : -1;
        if (!deflaters_[slot]) return 0;
      }
      return libdeflate_zlib_compress(deflaters_[slot], data, n, out, cap);
    }
    if (codec == Codec::kZstd) {
      if (!zc_ && !(zc_ = ZSTD_createCCtx())) return 0;
      const size_t r = ZSTD_compressCCtx(zc_, out, cap, data, n, level);
      return ZSTD_isError(r) ? 0 : r;
    }
    return 0;
  }

  // At least n bytes of scratch, kept for the thread's next chunks.
  uint8_t* Room(size_t n) {
    if (n > room_size_) {
      room_.reset(new (std::nothrow) uint8_t[n]);
      room_size_ = room_ ? n : 0;
    }
    return room_.get();
  }
  // Long-lived threads (a caller's own) keep no more than a default-size
  // chunk's room after an unusually large one.
  void TrimRoom() {
    if (room_size_ > kKeepRoom) {
      room_.reset();
      room_size_ = 0;
    }
  }

  bool Inflate(Codec codec, const uint8_t* data, size_t n, uint8_t* out, size_t raw_len) {
    if (codec == Codec::kZlib) {
      if (!inflater_ && !(inflater_ = libdeflate_alloc_decompressor())) return false;
      // No actual-length pointer: libdeflate then fails unless the stream
      // fills out exactly.
      return libdeflate_zlib_decompress(inflater_, data, n, out, raw_len, nullptr) == LIBDEFLATE_SUCCESS;
    }
    if (codec == Codec::kZstd) {
      if (!zd_ && !(zd_ = ZSTD_createDCtx())) return false;
      // A frame's own content size is not trusted: the output is bounded by
      // raw_len and must come out exactly that long.
      const size_t r = ZSTD_decompressDCtx(zd_, out, raw_len, data, n);
      return !ZSTD_isError(r) && r == raw_len;
    }
    return false;
  }

 private:
  static constexpr size_t kKeepRoom = 4u << 20;
  libdeflate_compressor* deflaters_[2] = {nullptr, nullptr};
  int deflater_levels_[2] = {-1, -1};
  int next_slot_ = 0;
  libdeflate_decompressor* inflater_ = nullptr;
  ZSTD_CCtx* zc_ = nullptr;
  ZSTD_DCtx* zd_ = nullptr;
  std::unique_ptr<uint8_t[]> room_;
  size_t room_size_ = 0;
};

ThreadCodecs& Codecs() {
  thread_local ThreadCodecs c;
  return c;
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
// as random ones, which entropy coding cannot shrink. Random 16 KiB samples
// come out at 7.98; a random 4 KiB block repeated (which LZ matching would
// shrink) at 7.92, so it still goes on to the compression check.
bool LooksRandom(const uint8_t* data, size_t n) {
  return 247 * SumSquaredCounts(data, n) < static_cast<uint64_t>(n) * n;
}

}  // namespace

Codec TryCompress(const uint8_t* data, size_t n, std::vector<uint8_t>* out, const CompressOptions& opts) {
  if (!opts.with.enabled() || n < 64) return Codec::kRaw;  // headers alone eat the gain
  const Codec codec = static_cast<Codec>(opts.with.codec);
  const int level = opts.with.level;
  ThreadCodecs& z = Codecs();
  if (opts.sample_first) {
    if (n >= 4 * kSamples * kSampleSize) {
      // Compress samples from the start, the quarters and the end as one
      // unit; if even they do not shrink by 1/16 the whole chunk almost
      // never does.
      uint8_t sample[kSamples * kSampleSize];
      const size_t stride = (n - kSampleSize) / (kSamples - 1);
      for (size_t i = 0; i < kSamples; ++i)
        std::memcpy(sample + i * kSampleSize, data + i * stride, kSampleSize);
      // A histogram costs a fraction of compressing the samples.
      if (LooksRandom(sample, sizeof sample)) return Codec::kRaw;
      uint8_t packed[kSamples * kSampleSize];
      const int sample_level = level < kSampleMaxLevel ? level : kSampleMaxLevel;
      if (z.Compress(codec, sample_level, sample, sizeof sample, packed, Budget(sizeof sample)) == 0)
        return Codec::kRaw;
    } else if (!LooksCompressible(data, n)) {
      return Codec::kRaw;
    }
  }
  // Only a form within the budget is any use, so that is all the room the
  // codec gets: it gives up as soon as it would not fit. It writes into a
  // per-thread buffer and only the result is copied out: a vector sized to
  // the budget would be zero-filled first, and a publish keeps several
  // chunks' compressed forms in flight, each then as resident as its raw
  // chunk (compressed text is a fifth of that).
  const size_t cap = Budget(n);
  uint8_t* room = z.Room(cap);
  if (room == nullptr) return Codec::kRaw;
  const size_t len = z.Compress(codec, level, data, n, room, cap);
  if (len > 0) out->assign(room, room + len);
  z.TrimRoom();
  return len > 0 ? codec : Codec::kRaw;
}

Status Decompress(Codec codec, const uint8_t* data, size_t n, size_t raw_len, std::vector<uint8_t>* out) {
  out->resize(raw_len);
  return Decompress(codec, data, n, raw_len, out->data());
}

Status Decompress(Codec codec, const uint8_t* data, size_t n, size_t raw_len, uint8_t* out) {
  if (codec == Codec::kRaw) return Status::InvalidArgument("a raw chunk has nothing to decompress");
  if (!Codecs().Inflate(codec, data, n, out, raw_len))
    return Status::Corruption(std::string("compressed chunk data (") + CodecName(codec) +
                              ") does not decode to its recorded length");
  return Status::OK();
}

std::string CompressionText(const Compression& c) {
  return c == Compression::Zlib(1) ? "zlib" : c.ToString();
}

const char* CodecName(Codec c) {
  switch (c) {
    case Codec::kRaw: return "raw";
    case Codec::kZlib: return "zlib";
    case Codec::kZstd: return "zstd";
  }
  return "unknown";
}

}  // namespace chunkstore::internal

namespace chunkstore {

Status Compression::Validate() const {
  switch (codec) {
    case Codec::kNone: return Status::OK();
    case Codec::kZlib:
      if (level < 1 || level > 12)
        return Status::InvalidArgument("zlib level " + std::to_string(level) + " is out of range (1 to 12)");
      return Status::OK();
    case Codec::kZstd:
      if (level < 1 || level > 19)
        return Status::InvalidArgument("zstd level " + std::to_string(level) + " is out of range (1 to 19)");
      return Status::OK();
  }
  return Status::InvalidArgument("unknown compression codec");
}

Result<Compression> Compression::Parse(const std::string& text) {
  const size_t colon = text.find(':');
  const std::string name = text.substr(0, colon);
  Compression c;
  if (name == "none") {
    if (colon != std::string::npos) return Status::InvalidArgument("compression 'none' takes no level");
    return None();
  }
  if (name == "zlib") c = Zlib();
  else if (name == "zstd") c = Zstd();
  else
    return Status::InvalidArgument("unknown compression '" + name + "' (expected zstd, zlib or none)");
  if (colon != std::string::npos) {
    const std::string digits = text.substr(colon + 1);
    if (digits.empty() || digits.size() > 2 || digits.find_first_not_of("0123456789") != std::string::npos)
      return Status::InvalidArgument("compression level '" + digits + "' is not a number");
    c.level = std::stoi(digits);
  }
  CHUNKSTORE_RETURN_IF_ERROR(c.Validate());
  return c;
}

std::string Compression::ToString() const {
  switch (codec) {
    case Codec::kNone: return "none";
    case Codec::kZlib: return "zlib:" + std::to_string(level);
    case Codec::kZstd: return "zstd:" + std::to_string(level);
  }
  return "unknown";
}

}  // namespace chunkstore
