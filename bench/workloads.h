// SPDX-License-Identifier: Apache-2.0
// The chunkstore-bench operations. Each states what its timed region holds.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "chunkstore/status.h"
#include "harness.h"

namespace bench {

struct Workload {
  uint64_t size = 32u << 20;  // payload bytes
  uint64_t seed = 1;
  std::string dir;            // scratch directory (exists)
  std::string payload_path;   // the payload as a file in dir
  std::vector<uint8_t> payload;
  std::vector<uint64_t> memory_sizes = {256, 256ull << 20, 1ull << 30};
  std::string self;           // path of this executable, for child processes
  uint64_t rebuild_objects = 100000;  // objects of the index-rebuild store
  std::vector<uint64_t> bootstrap_records = {1000, 100000};  // histories of s3-bootstrap-N
  std::string codec_input;    // a real file for the codec-* operations ("" skips them)
  std::vector<std::string> codecs = {"zlib:1", "zlib:6", "zstd:1", "zstd:3", "zstd:6", "zstd:12"};
  std::string s3_url;         // s3://BUCKET/PREFIX for the s3-* operations ("" skips them)
};

std::vector<uint8_t> RandomPayload(uint64_t n, uint64_t seed);

// Benchmarks stop at the first failure, saying what failed.
[[noreturn]] inline void Die(const std::string& what, const chunkstore::Status& s) {
  std::fprintf(stderr, "chunkstore-bench: %s: %s\n", what.c_str(), s.ToString().c_str());
  std::exit(1);
}

template <typename T>
T Must(chunkstore::Result<T> r, const std::string& what) {
  if (!r.ok()) Die(what, r.status());
  return std::move(r).value();
}

void RunFileAndHashControls(Harness& h, const Workload& w);
void RunPrepare(Harness& h, const Workload& w);
void RunPublish(Harness& h, const Workload& w);
void RunRead(Harness& h, const Workload& w);
void RunSmallObjects(Harness& h, const Workload& w);
void RunConcurrentRead(Harness& h, const Workload& w);
void RunCatalog(Harness& h, const Workload& w);
void RunMemory(Harness& h, const Workload& w);
void RunS3(Harness& h, const Workload& w);
void RunRebuild(Harness& h, const Workload& w);
void RunCodecs(Harness& h, const Workload& w);

// The child side of RunMemory: prepare, publish and verify a file of the
// given size in a fresh store under dir; returns the exit code.
// With a store URL (s3://...), publishes there instead (the cache in dir),
// and skips the verify.
int MemoryChild(const std::string& dir, uint64_t size, uint64_t seed, const std::string& store_url = "");
// Runs MemoryChild in a fresh process three times: r's samples_ms get the
// wall times, its extras the peak RSS (median and each run, KiB) and the
// payload size.
void MeasurePeakRss(const Workload& w, uint64_t size, const std::string& store_url, Result* r);

}  // namespace bench
