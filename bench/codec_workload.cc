// SPDX-License-Identifier: Apache-2.0
// The codec frontier: for a real file given with --codec-input, every
// chunk of it (cut with the default chunker) compressed and decoded with
// each codec and level, one thread, as a publish and a read do per chunk.
// What it reports (MiB/s each way, stored bytes per input byte) is what
// the default compression is chosen on (docs/design.md).
//
// Given a directory instead, the units are a tree publish's: every regular
// file below it, one chunk each when smaller than the chunk minimum, cut by
// the chunker otherwise. codec-sha256 times the SHA-256 of every chunk on
// one thread, two chunks at a time interleaved (the fastest this library
// hashes): with the codec figures, the per-byte CPU work that publishing
// (hash, compress) and restoring (decode, hash) cannot do without, whatever
// else they spend (scripts/compare_trees.py, scripts/measure_serve.py).
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "chunkstore/chunker.h"
#include "format/compress.h"
#include "hash/digest.h"
#include "hash/sha256_pair.h"
#include "workloads.h"

namespace bench {

namespace {

std::vector<uint8_t> ReadWhole(const std::string& path) {
  std::vector<uint8_t> data;
  const int fd = ::open(path.c_str(), O_RDONLY);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) Die("codec input", chunkstore::Status::IOError("cannot open " + path));
  data.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < data.size()) {
    const ssize_t n = ::read(fd, data.data() + got, data.size() - got);
    if (n <= 0) Die("codec input", chunkstore::Status::IOError("cannot read " + path));
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  return data;
}

// Every regular file below a directory (symlinks not followed), appended
// to *data in path order, with its chunks' offsets and lengths.
std::vector<std::string>* g_files;
int NoteFile(const char* path, const struct stat* st, int type, struct FTW*) {
  if (type == FTW_F && S_ISREG(st->st_mode)) g_files->push_back(path);
  return 0;
}

void ReadTree(const std::string& dir, std::vector<uint8_t>* data, std::vector<std::pair<size_t, size_t>>* chunks) {
  std::vector<std::string> files;
  g_files = &files;
  if (::nftw(dir.c_str(), NoteFile, 64, FTW_PHYS) != 0)
    Die("codec input", chunkstore::Status::IOError("cannot walk " + dir));
  std::sort(files.begin(), files.end());
  const chunkstore::ChunkerParams params;
  for (const std::string& f : files) {
    const std::vector<uint8_t> bytes = ReadWhole(f);
    const size_t base = data->size();
    data->insert(data->end(), bytes.begin(), bytes.end());
    if (bytes.size() < params.min_size) {
      chunks->emplace_back(base, bytes.size());
      continue;
    }
    chunkstore::Chunker chunker{params};
    for (size_t pos = 0; pos < bytes.size();) {
      const size_t n = chunker.Next(bytes.data() + pos, bytes.size() - pos, true);
      chunks->emplace_back(base + pos, n);
      pos += n;
    }
  }
}

}  // namespace

void RunCodecs(Harness& h, const Workload& w) {
  if (w.codec_input.empty()) return;
  bool any = h.Wanted("codec-sha256");
  for (const std::string& spec : w.codecs)
    any = any || h.Wanted("codec-" + spec + "-compress") || h.Wanted("codec-" + spec + "-decode");
  if (!any) return;
  using chunkstore::internal::Codec;
  std::vector<uint8_t> data;
  std::vector<std::pair<size_t, size_t>> chunks;  // offset, length
  struct stat st {};
  if (::stat(w.codec_input.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    ReadTree(w.codec_input, &data, &chunks);
  } else {
    data = ReadWhole(w.codec_input);
    chunkstore::Chunker chunker{chunkstore::ChunkerParams{}};
    for (size_t pos = 0; pos < data.size();) {
      const size_t n = chunker.Next(data.data() + pos, data.size() - pos, true);
      chunks.emplace_back(pos, n);
      pos += n;
    }
  }
  if (h.Wanted("codec-sha256")) {
    uint8_t sink = 0;
    auto& hs = h.Measure("codec-sha256",
                         "SHA-256 of every chunk of " + w.codec_input +
                             ", two at a time interleaved (Sha256Pair, as reads and publishes hash), one thread",
                         Unit::kMiBps, static_cast<double>(data.size()), [&] {
                           Timer t;
                           chunkstore::internal::Digest a, b;
                           size_t i = 0;
                           for (; i + 1 < chunks.size(); i += 2) {
                             chunkstore::internal::Sha256Pair(data.data() + chunks[i].first, chunks[i].second, &a,
                                                              data.data() + chunks[i + 1].first, chunks[i + 1].second,
                                                              &b);
                             sink ^= a.bytes[0] ^ b.bytes[0];
                           }
                           if (i < chunks.size())
                             sink ^= chunkstore::internal::Sha256::Of(data.data() + chunks[i].first, chunks[i].second)
                                         .bytes[0];
                           return t.ms();
                         });
    hs.extra.emplace_back("chunks", JsonNumber(static_cast<double>(chunks.size())));
    hs.extra.emplace_back("input_bytes", JsonNumber(static_cast<double>(data.size())));
    hs.extra.emplace_back("sink", JsonNumber(sink));  // the hashes are used, so they are computed
  }
  for (const std::string& spec : w.codecs) {
    if (!h.Wanted("codec-" + spec + "-compress") && !h.Wanted("codec-" + spec + "-decode")) continue;
    const chunkstore::Compression with = Must(chunkstore::Compression::Parse(spec), "--codecs " + spec);
    // One stored form per chunk, kept for the decode half.
    std::vector<std::vector<uint8_t>> packed(chunks.size());
    std::vector<Codec> codecs(chunks.size(), Codec::kRaw);
    uint64_t stored = 0;
    auto& c = h.Measure(
        "codec-" + spec + "-compress", "TryCompress (" + spec + ") of every chunk of " + w.codec_input + ", one thread",
        Unit::kMiBps, static_cast<double>(data.size()), [&] {
          stored = 0;
          Timer t;
          for (size_t i = 0; i < chunks.size(); ++i) {
            codecs[i] =
                chunkstore::internal::TryCompress(data.data() + chunks[i].first, chunks[i].second, &packed[i], {with});
            stored += codecs[i] == Codec::kRaw ? chunks[i].second : packed[i].size();
          }
          return t.ms();
        });
    c.extra.emplace_back("stored_per_input", JsonNumber(static_cast<double>(stored) / data.size()));
    c.extra.emplace_back("input_bytes", JsonNumber(static_cast<double>(data.size())));
    c.extra.emplace_back("chunks", JsonNumber(static_cast<double>(chunks.size())));
    std::vector<uint8_t> out(4u << 20);
    auto& d = h.Measure(
        "codec-" + spec + "-decode",
        "Decompress (" + spec + ") of every compressed chunk of " + w.codec_input + ", raw ones copied, one thread",
        Unit::kMiBps, static_cast<double>(data.size()), [&] {
          Timer t;
          for (size_t i = 0; i < chunks.size(); ++i) {
            if (codecs[i] == Codec::kRaw) {
              std::memcpy(out.data(), data.data() + chunks[i].first, chunks[i].second);
              continue;
            }
            chunkstore::Status s = chunkstore::internal::Decompress(codecs[i], packed[i].data(), packed[i].size(),
                                                                    chunks[i].second, out.data());
            if (!s.ok()) Die("decode " + spec, s);
          }
          return t.ms();
        });
    d.extra.emplace_back("stored_per_input", JsonNumber(static_cast<double>(stored) / data.size()));
  }
}

}  // namespace bench
