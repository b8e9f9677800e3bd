// SPDX-License-Identifier: Apache-2.0
// The codec frontier: for a real file given with --codec-input, every
// chunk of it (cut with the default chunker) compressed and decoded with
// each codec and level, one thread, as a publish and a read do per chunk.
// What it reports (MiB/s each way, stored bytes per input byte) is what
// the default compression is chosen on (docs/design.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "chunkstore/chunker.h"
#include "format/compress.h"
#include "workloads.h"

namespace bench {

namespace {

std::vector<uint8_t> ReadWhole(const std::string& path) {
  std::vector<uint8_t> data;
  const int fd = ::open(path.c_str(), O_RDONLY);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0)
    Die("codec input", chunkstore::Status::IOError("cannot open " + path));
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

}  // namespace

void RunCodecs(Harness& h, const Workload& w) {
  if (w.codec_input.empty() || !h.Wanted("codec-")) return;
  using chunkstore::internal::Codec;
  const std::vector<uint8_t> data = ReadWhole(w.codec_input);
  std::vector<std::pair<size_t, size_t>> chunks;  // offset, length
  chunkstore::Chunker chunker{chunkstore::ChunkerParams{}};
  for (size_t pos = 0; pos < data.size();) {
    const size_t n = chunker.Next(data.data() + pos, data.size() - pos, true);
    chunks.emplace_back(pos, n);
    pos += n;
  }
  for (const std::string& spec : w.codecs) {
    const chunkstore::Compression with = Must(chunkstore::Compression::Parse(spec), "--codecs " + spec);
    // One stored form per chunk, kept for the decode half.
    std::vector<std::vector<uint8_t>> packed(chunks.size());
    std::vector<Codec> codecs(chunks.size(), Codec::kRaw);
    uint64_t stored = 0;
    auto& c = h.Measure("codec-" + spec + "-compress",
                        "TryCompress (" + spec + ") of every chunk of " + w.codec_input + ", one thread",
                        Unit::kMiBps, static_cast<double>(data.size()), [&] {
                          stored = 0;
                          Timer t;
                          for (size_t i = 0; i < chunks.size(); ++i) {
                            codecs[i] = chunkstore::internal::TryCompress(data.data() + chunks[i].first,
                                                                          chunks[i].second, &packed[i], {with});
                            stored += codecs[i] == Codec::kRaw ? chunks[i].second : packed[i].size();
                          }
                          return t.ms();
                        });
    c.extra.emplace_back("stored_per_input", JsonNumber(static_cast<double>(stored) / data.size()));
    c.extra.emplace_back("input_bytes", JsonNumber(static_cast<double>(data.size())));
    std::vector<uint8_t> out(4u << 20);
    auto& d = h.Measure("codec-" + spec + "-decode",
                        "Decompress (" + spec + ") of every compressed chunk of " + w.codec_input +
                            ", raw ones copied, one thread",
                        Unit::kMiBps, static_cast<double>(data.size()), [&] {
                          Timer t;
                          for (size_t i = 0; i < chunks.size(); ++i) {
                            if (codecs[i] == Codec::kRaw) {
                              std::memcpy(out.data(), data.data() + chunks[i].first, chunks[i].second);
                              continue;
                            }
                            chunkstore::Status s = chunkstore::internal::Decompress(
                                codecs[i], packed[i].data(), packed[i].size(), chunks[i].second, out.data());
                            if (!s.ok()) Die("decode " + spec, s);
                          }
                          return t.ms();
                        });
    d.extra.emplace_back("stored_per_input", JsonNumber(static_cast<double>(stored) / data.size()));
  }
}

}  // namespace bench
